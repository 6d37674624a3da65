// The console's DOM helpers: elements are built from data with `h`, never from HTML strings
// (nothing the API returns is parsed as markup), plus forms whose errors follow the API's
// shapes: a 422's field errors next to their fields, anything else in the form's notice.

import { ApiError, describeError } from "./api.js";

/** An element `tag` with attributes (`on…` are listeners) and children (text, nodes, arrays). */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (name === "class") {
      element.className = value;
    } else if (value === true) {
      element.setAttribute(name, "");
    } else {
      element.setAttribute(name, String(value));
    }
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else if (child instanceof Node) element.append(child);
    else element.append(document.createTextNode(String(child)));
  }
}

let uniqueCounter = 0;
/** A fresh id for labels and descriptions. */
export function uniqueId(prefix) {
  uniqueCounter += 1;
  return `${prefix}-${uniqueCounter}`;
}

/** A labelled input: `{name, label, type, value, hint, required, autocomplete, …}`. */
export function field({ name, label, hint, ...input }) {
  const id = uniqueId(`field-${name}`);
  const hintId = hint ? `${id}-hint` : null;
  const errorId = `${id}-error`;
  const control = input.options
    ? h("select", { id, name, required: input.required, "aria-describedby": hintId },
        input.options.map(([value, text]) =>
          h("option", { value, selected: value === input.value }, text)))
    : h("input", {
        id, name, type: input.type ?? "text", value: input.value, required: input.required,
        autocomplete: input.autocomplete ?? "off", inputmode: input.inputmode,
        pattern: input.pattern, minlength: input.minlength, maxlength: input.maxlength,
        placeholder: input.placeholder, spellcheck: "false",
        "aria-describedby": hintId,
      });
  return h("div", { class: "field", "data-field": name },
    h("label", { for: id }, label),
    control,
    hint ? h("p", { class: "hint", id: hintId }, hint) : null,
    h("p", { class: "field-error", id: errorId, hidden: true }));
}

/** A group of checkboxes named `name`, one per `[value, text]`. */
export function checkboxes({ name, legend, choices, checked = [] }) {
  return h("fieldset", { class: "checks", "data-field": name },
    h("legend", {}, legend),
    choices.map(([value, text]) =>
      h("label", {}, h("input", { type: "checkbox", name, value, checked: checked.includes(value) }), text)),
    h("p", { class: "field-error", hidden: true }));
}

/** A region where a view says what happened (errors read out at once, successes politely). */
export function notice() {
  return h("div", { class: "notice", role: "status", "aria-live": "polite" });
}

/** Shows `message` in `region` as `kind` (`error`, `ok`, `warn`); empty hides it. */
export function say(region, message, kind = "ok") {
  region.className = `notice ${message ? kind : ""}`;
  region.setAttribute("role", kind === "error" ? "alert" : "status");
  region.textContent = message ?? "";
}

/** Clears the field errors of `form`. */
export function clearFieldErrors(form) {
  for (const error of form.querySelectorAll(".field-error")) {
    error.hidden = true;
    error.textContent = "";
  }
  for (const control of form.querySelectorAll("[aria-invalid]")) {
    control.removeAttribute("aria-invalid");
    const errorId = control.dataset.errorId;
    if (errorId) {
      const described = (control.getAttribute("aria-describedby") ?? "")
        .split(" ").filter((id) => id && id !== errorId);
      if (described.length) control.setAttribute("aria-describedby", described.join(" "));
      else control.removeAttribute("aria-describedby");
    }
  }
}

/** Puts a 422's `errors` next to their fields; true when at least one field was found. */
export function showFieldErrors(form, errors) {
  let shown = false;
  for (const [name, messages] of Object.entries(errors ?? {})) {
    const wrapper = form.querySelector(`[data-field="${CSS.escape(name)}"]`);
    if (!wrapper) continue;
    const error = wrapper.querySelector(".field-error");
    error.id ||= uniqueId(`error-${name}`);
    error.textContent = messages.join(" ");
    error.hidden = false;
    for (const control of wrapper.querySelectorAll("input, select, textarea")) {
      control.setAttribute("aria-invalid", "true");
      control.dataset.errorId = error.id;
      const described = (control.getAttribute("aria-describedby") ?? "").split(" ").filter(Boolean);
      control.setAttribute("aria-describedby", [...described, error.id].join(" "));
    }
    shown = true;
  }
  if (shown) form.querySelector('[aria-invalid="true"]')?.focus();
  return shown;
}

/**
 * A form that calls `submit(values, form)` on submit, with its button disabled meanwhile; an
 * API error shows next to its fields (422) or in the form's notice region.
 */
export function form({ label, fields, submitText, submit, className }) {
  const region = notice();
  const button = h("button", { type: "submit" }, submitText);
  const element = h("form", { class: className, "aria-label": label, novalidate: true },
    region, fields, h("div", { class: "actions" }, button));
  element.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearFieldErrors(element);
    say(region, "");
    button.disabled = true;
    try {
      const message = await submit(formValues(element), element);
      if (typeof message === "string") say(region, message, "ok");
    } catch (error) {
      reportError(region, error, element);
    } finally {
      button.disabled = false;
    }
  });
  return element;
}

/** Shows `error` in `region`: field errors beside their fields when `form` has them. */
export function reportError(region, error, formElement) {
  if (error instanceof ApiError && error.status === 422 && formElement
      && showFieldErrors(formElement, error.body?.errors)) {
    say(region, error.message, "error");
    return;
  }
  if (error instanceof ApiError && error.sessionEnded) return; // the sign-in screen took over
  say(region, describeError(error), "error");
  if (!(error instanceof ApiError)) console.error(error);
}

/** The values of a form: one string per name, an array for checkbox groups. */
export function formValues(formElement) {
  const values = {};
  for (const control of formElement.elements) {
    if (!control.name) continue;
    if (control.type === "checkbox") {
      values[control.name] ??= [];
      if (control.checked) values[control.name].push(control.value);
    } else {
      values[control.name] = control.value;
    }
  }
  return values;
}

/** A table with a caption, column headers and one row per item (its cells, or a `tr`). */
export function table({ caption, columns, rows, empty }) {
  if (!rows.length) return h("p", { class: "hint" }, empty);
  return h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": caption },
    h("table", {},
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, columns.map((column) => h("th", { scope: "col" }, column)))),
      h("tbody", {}, rows.map((row) => (row instanceof Node ? row : tableRow(row))))));
}

/** A table row of `cells`, with `attributes`. */
export function tableRow(cells, attributes = {}) {
  return h("tr", attributes, cells.map((cell) => h("td", {}, cell)));
}

/** A badge: `kind` is `ok`, `bad` or `warn`. */
export function badge(text, kind) {
  return h("span", { class: `badge ${kind ?? ""}` }, text);
}

/** A timestamp as the reader's locale shows it, with the exact value on hover. */
export function when(timestamp) {
  if (!timestamp) return "—";
  const date = new Date(timestamp);
  if (Number.isNaN(date.getTime())) return String(timestamp);
  return h("time", { datetime: timestamp, title: timestamp }, date.toLocaleString());
}

/** A button that runs `action`, disabled while it runs, its outcome said in `region`. */
export function actionButton(text, region, action, attributes = {}) {
  const button = h("button", { type: "button", ...attributes }, text);
  button.addEventListener("click", async () => {
    button.disabled = true;
    say(region, "");
    try {
      const message = await action();
      if (typeof message === "string") say(region, message, "ok");
    } catch (error) {
      reportError(region, error);
    } finally {
      button.disabled = false;
    }
  });
  return button;
}

/** Replaces the children of `element` with `children`. */
export function replace(element, ...children) {
  element.replaceChildren();
  append(element, children);
}
