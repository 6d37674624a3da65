// Engines: what this host runs for the tenant (code, version, where it came from) and, for
// owners, the tenant's provisioning on each (with a retry when one failed) and an engine's
// declared settings with their effective values (secrets only say "set") and audited
// operations.

import { api, isOwner } from "./api.js";
import { actionButton, badge, h, notice, table } from "./dom.js";

// The tenant's overall status, and each engine's (`provisioned`, `failed`, `not_provisioned`).
const PROVISIONING_KIND = {
  completed: "ok", provisioned: "ok", in_progress: "warn", pending: "warn", not_provisioned: "warn",
  partial_failure: "bad", failed: "bad",
};

export async function list({ query, navigate, refresh }) {
  const owner = isOwner();
  const [engines, tenant] = await Promise.all([
    api("GET", "/core/api/v1/engines").then((answer) => answer.data),
    owner ? api("GET", "/core/api/v1/tenant").then((answer) => answer.data) : null,
  ]);
  const chosen = query.get("code");
  const details = chosen && owner
    ? (await api("GET", `/core/api/v1/engines/${encodeURIComponent(chosen)}`)).data
    : null;
  const provisioning = tenant?.provisioning;
  const region = notice();
  const provisioned = (engine) => {
    if (!engine.requires_tenant_provision) return "not needed";
    const state = provisioning?.engines?.[engine.code];
    if (!state) return badge("not provisioned", "warn");
    return h("span", {}, badge(state.status.replaceAll("_", " "), PROVISIONING_KIND[state.status]),
      state.error ? [" ", h("span", { class: "hint" }, state.error)] : null);
  };
  const retry = provisioning && provisioning.status !== "completed"
    ? h("div", { class: "actions" }, actionButton("Retry provisioning", region, async () => {
      const retried = (await api("POST", "/core/api/v1/tenant/provisioning/retry")).data;
      await refresh(`Provisioning retried: ${retried.status.replaceAll("_", " ")}.`);
    }))
    : null;
  return [
    h("h1", {}, "Engines"),
    region,
    owner && provisioning
      ? h("p", {}, "This tenant's provisioning: ", badge(provisioning.status.replaceAll("_", " "), PROVISIONING_KIND[provisioning.status]))
      : null,
    retry,
    table({
      caption: "Engines loaded on this host",
      columns: ["Engine", "Version", "Source", "State", "Provisioned per", ...(owner ? ["This tenant"] : [])],
      rows: engines.map((engine) => [
        isOwner()
          ? h("a", { href: `#/engines?code=${encodeURIComponent(engine.code)}`, onclick: (event) => {
              event.preventDefault();
              navigate("/engines", { code: engine.code });
            } }, `${engine.name} (${engine.code})`)
          : `${engine.name} (${engine.code})`,
        engine.version,
        engine.source === "published" ? `published v${engine.published_version}` : (engine.source ?? "not loaded here"),
        engine.is_active ? badge("active", "ok") : badge("inactive", "bad"),
        [engine.requires_tenant_provision ? "tenant" : null, engine.requires_user_provision ? "user" : null]
          .filter(Boolean).join(", ") || "—",
        ...(owner ? [provisioned(engine)] : []),
      ]),
      empty: "No engines are loaded.",
    }),
    details ? settings(details) : null,
  ];
}

function settings(engine) {
  return h("section", { class: "card", "aria-labelledby": "engine-settings" },
    h("h2", { id: "engine-settings" }, `${engine.name}: settings`),
    h("dl", { class: "facts" },
      h("dt", {}, "World"), h("dd", {}, engine.world),
      h("dt", {}, "Operations"), h("dd", {}, engine.operations),
      h("dt", {}, "Subscribes to"), h("dd", {}, engine.subscriptions.join(", ") || "—"),
      h("dt", {}, "May call"), h("dd", {}, engine.outbound_hosts.join(", ") || "—")),
    table({
      caption: `Declared settings of ${engine.code}`,
      columns: ["Setting", "Variable", "Kind", "Value", "Default", "Description"],
      rows: engine.settings.map((setting) => [
        setting.name,
        h("code", {}, setting.variable),
        setting.kind,
        setting.secret ? (setting.is_set ? "set (secret)" : "not set") : (setting.value ?? "not set"),
        setting.default_value ?? "—",
        setting.description,
      ]),
      empty: "This engine declares no settings.",
    }),
    table({
      caption: `Audited operations of ${engine.code}`,
      columns: ["Event in the audit log", "Operation"],
      rows: engine.audited_operations.map((operation) => [
        h("code", {}, operation.event),
        h("code", {}, `${operation.method} ${operation.path}`),
      ]),
      empty: "This engine marks no operation as audited.",
    }));
}
