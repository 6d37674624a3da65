// The audit log (owners): the tenant's trail, newest first: the host's sign-in and member
// events and the engines' audited operations (`x-tessera-audit`), filtered by engine, event
// and user and paged by cursor; the filters and the page live in the address, so a reload or
// a sign-in comes back to the same place. The first page follows the realtime topic
// `core.audit`: a new entry the filters take appears at the top without a reload.

import { api } from "./api.js";
import { badge, h, replace, table, tableRow, when } from "./dom.js";
import { follow } from "./realtime.js";

const LIVE_STATES = {
  connecting: "Connecting for live entries…",
  live: "Live: new entries appear as they are recorded.",
  reconnecting: "Reconnecting… entries recorded meanwhile will appear.",
  ended: "Not live: reload to see new entries.",
};

function entryCells(entry) {
  return [
    when(entry.created_at),
    entry.engine ? h("span", {}, entry.event, " ", badge(`${entry.engine} engine`)) : entry.event,
    entry.user_id ? h("code", {}, entry.user_id) : "—",
    entry.login ?? "—",
    entry.client_ip ?? "—",
    Object.keys(entry.details ?? {}).length
      ? h("code", {}, Object.entries(entry.details).map(([key, value]) => `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`).join("; "))
      : "—",
  ];
}

const COLUMNS = ["When", "Event", "User", "Login", "Address", "Details"];
const CAPTION = "Audit entries, newest first";

const EVENTS = [
  "login.succeeded", "login.failed", "account.locked_out", "mfa.challenged", "mfa.succeeded",
  "mfa.failed", "mfa.recovery_code_used", "mfa.enabled", "mfa.disabled", "token.refreshed",
  "token.refresh_reused", "session.logged_out", "session.logged_out_everywhere",
  "session.evicted", "context.switched", "password.changed", "password.change_failed",
  "password.reset_requested", "password.reset", "password.reset_failed",
  "magic_link.requested", "magic_link.used", "magic_link.failed", "passkey.used",
  "passkey.failed", "member.created", "member.role_changed", "session.revoked",
  "member.mfa_reset", "member.disabled", "member.enabled", "workspace.created",
];

// The audited operations of every loaded engine, by engine code (what the filters offer).
async function engineEvents() {
  const engines = (await api("GET", "/core/api/v1/engines")).data.filter((engine) => engine.is_active);
  const details = await Promise.all(engines.map((engine) =>
    api("GET", `/core/api/v1/engines/${encodeURIComponent(engine.code)}`).then((answer) => answer.data, () => null)));
  return details
    .filter((engine) => engine && engine.audited_operations.length)
    .map((engine) => ({ code: engine.code, name: engine.name, events: engine.audited_operations.map((operation) => operation.event) }));
}

export async function list({ query, navigate, onLeave }) {
  const filters = {
    engine: query.get("engine") ?? "",
    event: query.get("event") ?? "",
    user_id: query.get("user_id") ?? "",
  };
  const [page, engines] = await Promise.all([
    api("GET", "/auth/api/v1/audit", { query: { ...filters, cursor: query.get("cursor"), limit: 50 } }),
    engineEvents(),
  ]);
  const option = (name) => h("option", { value: name, selected: name === filters.event }, name);
  const event = h("select", { id: "audit-event", name: "event" },
    h("option", { value: "" }, "All events"),
    h("optgroup", { label: "Sign-in and members" }, EVENTS.map(option)),
    engines.map((engine) => h("optgroup", { label: `${engine.name} engine` }, engine.events.map(option))));
  const engine = h("select", { id: "audit-engine", name: "engine" },
    h("option", { value: "" }, "Any source"),
    engines.map((known) => h("option", { value: known.code, selected: known.code === filters.engine }, `${known.name} engine`)));
  const user = h("input", { id: "audit-user", name: "user_id", value: filters.user_id, spellcheck: "false", autocomplete: "off" });
  const filterForm = h("form", { class: "card", "aria-label": "Filter the audit log" },
    h("div", { class: "grid" },
      h("div", { class: "field" }, h("label", { for: "audit-engine" }, "Source"), engine),
      h("div", { class: "field" }, h("label", { for: "audit-event" }, "Event"), event),
      h("div", { class: "field" }, h("label", { for: "audit-user" }, "User id"), user)),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Filter")));
  filterForm.addEventListener("submit", (submitted) => {
    submitted.preventDefault();
    navigate("/audit", { engine: engine.value, event: event.value, user_id: user.value.trim() });
  });
  const next = page.meta?.has_more ? page.meta.next_cursor : null;
  const row = (entry) => tableRow(entryCells(entry), { "data-entry-id": entry.id });
  const shown = new Set(page.data.map((entry) => entry.id));
  const listing = h("div", { "data-testid": "audit-entries" }, table({
    caption: CAPTION,
    columns: COLUMNS,
    rows: page.data.map(row),
    empty: "No entries match.",
  }));
  // A new entry goes at the top of the first page, when the filters take it.
  const takes = (entry) => (!filters.engine || entry.engine === filters.engine)
    && (!filters.event || entry.event === filters.event)
    && (!filters.user_id || entry.user_id === filters.user_id);
  const show = (entry) => {
    if (shown.has(entry.id) || !takes(entry)) return;
    shown.add(entry.id);
    const body = listing.querySelector("tbody");
    if (!body) {
      replace(listing, table({ caption: CAPTION, columns: COLUMNS, rows: [row(entry)], empty: "" }));
      return;
    }
    const before = [...body.rows].find((other) => (other.querySelector("time")?.getAttribute("datetime") ?? "") <= entry.created_at);
    body.insertBefore(row(entry), before ?? null);
  };
  let live = null;
  if (!query.get("cursor")) {
    live = h("p", { class: "hint", "data-testid": "live-state", "data-state": "connecting" }, LIVE_STATES.connecting);
    const subscription = follow("core.audit", {
      onEvent: (event) => show(event.data),
      // Whatever was recorded while not listening: read the first page again.
      onSync: () => api("GET", "/auth/api/v1/audit", { query: { ...filters, limit: 50 } })
        .then((fresh) => fresh.data.slice().reverse().forEach(show), () => {}),
      onState: (state) => {
        live.dataset.state = state;
        live.textContent = LIVE_STATES[state];
      },
    });
    onLeave(() => subscription.close());
  }
  return [
    h("h1", {}, "Audit log"),
    filterForm,
    live,
    listing,
    h("div", { class: "actions" },
      query.get("cursor") ? h("a", { href: `#/audit?${new URLSearchParams(filters)}` }, "Newest") : null,
      next ? h("a", { href: `#/audit?${new URLSearchParams({ ...filters, cursor: next })}` }, "Older entries") : null),
  ];
}
