// Members (owners): the tenant's accounts with their roles, a form to create one (a first
// password the person changes once signed in), each member's role changed in place, and for
// an account of this tenant alone its second factors reset and the account disabled or
// enabled (the API answers 409, said plainly, for an account other tenants share).

import { api, session } from "./api.js";
import { actionButton, badge, field, form, h, notice, reportError, say, table, when } from "./dom.js";

const ROLES = [["owner", "Owner"], ["editor", "Editor"], ["viewer", "Viewer"]];

export async function list({ refresh }) {
  const members = (await api("GET", "/auth/api/v1/members")).data;
  const region = notice();
  const createForm = form({
    label: "Add a member",
    className: "card",
    fields: [
      h("h2", {}, "Add a member"),
      field({ name: "email", label: "Their e-mail", type: "email", required: true }),
      field({ name: "first_name", label: "First name" }),
      field({ name: "last_name", label: "Last name" }),
      field({ name: "role", label: "Their role", options: ROLES, value: "editor" }),
      field({
        name: "password", label: "First password", type: "password", autocomplete: "new-password",
        required: true, hint: "Tell it to them another way; they change it from their account page.",
      }),
    ],
    submitText: "Add member",
    submit: async (values) => {
      const member = (await api("POST", "/auth/api/v1/members", { body: values })).data;
      await refresh(`${member.email} added as ${member.role}.`);
    },
  });
  const me = session().me.user_id;
  return [
    h("h1", {}, "Members"),
    region,
    table({
      caption: "Members of this tenant",
      columns: ["E-mail", "Name", "Role", "State", "Member since", "Access"],
      rows: members.map((member) => [
        member.email,
        `${member.first_name} ${member.last_name}`.trim() || "—",
        roleSelect(member, member.user_id === me, region, refresh),
        member.disabled ? badge("disabled", "bad") : badge("active", "ok"),
        when(member.member_since),
        member.user_id === me ? h("span", { class: "hint" }, "you") : accessActions(member, region, refresh),
      ]),
      empty: "No members.",
    }),
    createForm,
  ];
}

/** Reset second factors, disable or enable: each asks first, then says what it did. */
function accessActions(member, region, refresh) {
  const path = (action) => `/auth/api/v1/members/${encodeURIComponent(member.user_id)}/${action}`;
  const act = (text, action, question, done, unchanged) => actionButton(text, region, async () => {
    if (!window.confirm(question)) return undefined;
    const result = (await api("POST", path(action))).data;
    const ended = result.sessions_ended ? ` ${result.sessions_ended} session(s) ended.` : "";
    await refresh(`${result.changed ? done : unchanged}${ended}`);
    return undefined;
  }, { class: "secondary", "aria-label": `${text} for ${member.email}` });
  return h("div", { class: "actions" },
    act("Reset MFA", "mfa/reset", `Remove every second factor of ${member.email} and sign them out everywhere?`,
      `${member.email}'s second factors were removed.`, `${member.email} had no second factor to remove.`),
    member.disabled
      ? act("Enable", "enable", `Let ${member.email} sign in again?`,
        `${member.email} can sign in again.`, `${member.email} could sign in already.`)
      : act("Disable", "disable", `Disable ${member.email}? They are signed out everywhere and cannot sign in.`,
        `${member.email} is disabled.`, `${member.email} was disabled already.`));
}

/** A member's role as a select that saves on change. */
function roleSelect(member, isMe, region, refresh) {
  const select = h("select", { "aria-label": `Role of ${member.email}` },
    ROLES.map(([value, text]) => h("option", { value, selected: value === member.role }, text)));
  select.addEventListener("change", async () => {
    select.disabled = true;
    say(region, "");
    try {
      const changed = (await api("PATCH", `/auth/api/v1/members/${encodeURIComponent(member.user_id)}`, {
        body: { role: select.value },
      })).data;
      await refresh(`${changed.email} is now ${changed.role}${isMe ? " (sign in again to use the new role)" : ""}.`);
    } catch (error) {
      select.value = member.role;
      select.disabled = false;
      reportError(region, error);
    }
  });
  return select;
}
