// Engines: what this host runs for the tenant (code, version, where it came from) and, for
// owners, an engine's declared settings with their effective values (secrets only say "set").

import { api, isOwner } from "./api.js";
import { badge, h, table } from "./dom.js";

export async function list({ query, navigate }) {
  const engines = (await api("GET", "/core/api/v1/engines")).data;
  const chosen = query.get("code");
  const details = chosen && isOwner()
    ? (await api("GET", `/core/api/v1/engines/${encodeURIComponent(chosen)}`)).data
    : null;
  return [
    h("h1", {}, "Engines"),
    table({
      caption: "Engines loaded on this host",
      columns: ["Engine", "Version", "Source", "State", "Provisioned per"],
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
    }));
}
