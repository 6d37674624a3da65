// The operator's pages (the operator token, as `tessera admin` uses it): the tenants (create,
// disable, enable, delete after typing the slug again), the cluster's hosts and what each
// runs, the engines published to the cluster with their versions (activate, deactivate, roll
// back), every tenant's usage, and the health of the host answering with the key figures at a
// glance.

import { api } from "./api.js";
import { actionButton, badge, field, form, h, notice, table, when } from "./dom.js";

const STATUS_KIND = { live: "ok", stopped: "warn", gone: "bad", ok: "ok", degraded: "warn", down: "bad" };

export async function hosts() {
  const listed = (await api("GET", "/core/api/operator/hosts")).data;
  return [
    h("h1", {}, "Hosts"),
    table({
      caption: "Hosts of this installation",
      columns: ["Address", "Status", "Version", "Started", "Last heartbeat", "Engines"],
      rows: listed.map((host) => [
        h("span", { class: "mono" }, host.listen_address),
        badge(host.status, STATUS_KIND[host.status]),
        host.version,
        when(host.started_at),
        when(host.heartbeat_at),
        host.engines.map((engine) => `${engine.code} ${engine.version} (${engine.sha256.slice(0, 12)})`).join(", ") || "—",
      ]),
      empty: "No hosts are registered.",
    }),
  ];
}

export async function engines({ query, navigate, refresh }) {
  const releases = (await api("GET", "/core/api/operator/engines")).data;
  const chosen = query.get("code");
  const versions = chosen
    ? (await api("GET", `/core/api/operator/engines/${encodeURIComponent(chosen)}/versions`)).data
    : null;
  const region = notice();
  const act = (code, path, body, done) => actionButton(done[0], region, async () => {
    await api("POST", `/core/api/operator/engines/${encodeURIComponent(code)}/${path}`, { body });
    await refresh(done[1]);
  }, { class: "secondary", "aria-label": `${done[0]} ${code}${body ? ` version ${body.version}` : ""}` });
  return [
    h("h1", {}, "Published engines"),
    h("p", { class: "hint" }, "Publish with `tessera admin engine publish FILE.wasm`; every host runs each code's active version."),
    region,
    table({
      caption: "Published engine codes",
      columns: ["Code", "Active version", "Previous", "Changed", ""],
      rows: releases.map((release) => [
        h("a", { href: `#/operator/engines?code=${encodeURIComponent(release.code)}`, onclick: (event) => {
          event.preventDefault();
          navigate("/operator/engines", { code: release.code });
        } }, release.code),
        release.active_version ? `v${release.active_version}` : badge("deactivated", "warn"),
        release.previous_version ? `v${release.previous_version}` : "—",
        when(release.changed_at),
        h("div", { class: "actions" },
          release.previous_version ? act(release.code, "rollback", undefined, ["Roll back", `${release.code} rolled back.`]) : null,
          release.active_version ? act(release.code, "deactivate", undefined, ["Deactivate", `${release.code} deactivated.`]) : null),
      ]),
      empty: "Nothing is published: each host runs its own plugins directory.",
    }),
    versions ? h("section", { "aria-labelledby": "versions-heading" },
      h("h2", { id: "versions-heading" }, `Versions of ${chosen}`),
      table({
        caption: `Published versions of ${chosen}, newest first`,
        columns: ["Version", "Engine version", "SHA-256", "Size", "Published", ""],
        rows: versions.map((version) => [
          `v${version.version}`,
          version.engine_version,
          h("span", { class: "mono" }, version.sha256),
          `${Math.round(version.size_bytes / 1024)} KiB`,
          when(version.published_at),
          version.active ? badge("active", "ok")
            : act(chosen, "activate", { version: version.version }, ["Activate", `${chosen} v${version.version} activated.`]),
        ]),
        empty: "No versions.",
      })) : null,
  ];
}

function stat(label, value) {
  return h("div", { class: "card" }, h("div", { class: "hint" }, label), h("div", { class: "stat" }, value));
}

export async function usage({ query, navigate }) {
  const days = query.get("days") ?? "1";
  const totals = (await api("GET", "/core/api/operator/usage", { query: { days } })).data;
  const choose = h("select", { id: "operator-usage-days", name: "days" },
    [["1", "Today"], ["7", "7 days"], ["30", "30 days"]].map(([value, text]) => h("option", { value, selected: value === days }, text)));
  choose.addEventListener("change", () => navigate("/operator/usage", { days: choose.value }));
  return [
    h("h1", {}, "Usage"),
    h("div", { class: "field" }, h("label", { for: "operator-usage-days" }, "Period"), choose),
    table({
      caption: "Tenants by engine calls, busiest first",
      columns: ["Tenant", "Engine calls", "Limits hit"],
      rows: totals.map((tenant) => [
        tenant.slug ? h("span", { class: "mono" }, tenant.slug) : h("code", {}, `${tenant.tenant_id} (deleted)`),
        tenant.engine_calls,
        tenant.limits_hit,
      ]),
      empty: "No tenant used anything in this period.",
    }),
  ];
}

export async function health() {
  const [extended, summary, hostList, tenantList, today] = await Promise.all([
    api("GET", "/core/api/health/extended"),
    api("GET", "/core/api/health"),
    api("GET", "/core/api/operator/hosts").then((answer) => answer.data),
    api("GET", "/core/api/operator/tenants").then((answer) => answer.data),
    api("GET", "/core/api/operator/usage", { query: { days: 1 } }).then((answer) => answer.data),
  ]);
  const live = hostList.filter((host) => host.status === "live").length;
  const sum = (field) => today.reduce((total, tenant) => total + tenant[field], 0);
  const checks = [
    ["Database", extended.checks.database],
    ["Cache", extended.checks.cache],
    ...Object.entries(extended.checks.workers ?? {}).map(([name, status]) => [`Worker: ${name}`, status]),
  ];
  return [
    h("h1", {}, "Health"),
    h("p", {}, "This host: ", badge(extended.status, STATUS_KIND[extended.status]), ` · version ${summary.version}`),
    h("section", { class: "grid", "aria-label": "At a glance" },
      stat("Hosts live", `${live} of ${hostList.length}`),
      stat("Tenants", `${tenantList.length}${tenantList.some((tenant) => tenant.disabled_at) ? ` (${tenantList.filter((tenant) => tenant.disabled_at).length} disabled)` : ""}`),
      stat("Engine calls today", sum("engine_calls")),
      stat("Limits hit today", sum("limits_hit"))),
    table({
      caption: "Checks",
      columns: ["Check", "Status"],
      rows: checks.map(([name, status]) => [name, badge(status, STATUS_KIND[status])]),
      empty: "No checks.",
    }),
  ];
}

export async function tenants({ refresh }) {
  const listed = (await api("GET", "/core/api/operator/tenants")).data;
  const region = notice();
  const path = (tenant, action) => `/core/api/operator/tenants/${encodeURIComponent(tenant.slug)}${action}`;
  return [
    h("h1", {}, "Tenants"),
    region,
    table({
      caption: "Tenants of this installation",
      columns: ["Slug", "Name", "Members", "State", "Created", ""],
      rows: listed.map((tenant) => [
        h("span", { class: "mono" }, tenant.slug),
        tenant.name,
        tenant.members,
        tenant.disabled_at ? badge("disabled", "bad") : badge("active", "ok"),
        when(tenant.created_at),
        h("div", { class: "actions" },
          tenant.disabled_at
            ? actionButton("Enable", region, async () => {
                await api("POST", path(tenant, "/enable"));
                await refresh(`${tenant.slug} enabled.`);
              }, { class: "secondary", "aria-label": `Enable ${tenant.slug}` })
            : actionButton("Disable", region, async () => {
                await api("POST", path(tenant, "/disable"));
                await refresh(`${tenant.slug} disabled: its members cannot sign in to it.`);
              }, { class: "secondary", "aria-label": `Disable ${tenant.slug}` })),
      ]),
      empty: "No tenants yet.",
    }),
    form({
      label: "Delete a tenant",
      className: "card",
      fields: [
        h("h2", {}, "Delete a tenant"),
        h("p", { class: "hint" }, "Erases all of the tenant's data on every engine, its log, search documents and memberships. There is no undo."),
        field({ name: "slug", label: "Slug of the tenant to delete", required: true }),
        field({ name: "confirm", label: "Type the slug again", required: true }),
      ],
      submitText: "Delete tenant",
      submit: async ({ slug, confirm }) => {
        const deleted = (await api("DELETE", `/core/api/operator/tenants/${encodeURIComponent(slug.trim())}`, {
          query: { confirm: confirm.trim() },
        })).data;
        await refresh(`${deleted.slug} deleted: ${deleted.members} members, ${deleted.entities} entities, ${deleted.events} events removed.`);
      },
    }),
    form({
      label: "Create a tenant",
      className: "card",
      fields: [
        h("h2", {}, "Create a tenant"),
        field({ name: "slug", label: "Slug", required: true, hint: "Lower-case letters, digits and inner hyphens; 2 to 63 characters." }),
        field({ name: "name", label: "Name", required: true }),
      ],
      submitText: "Create tenant",
      submit: async (values) => {
        const created = (await api("POST", "/core/api/operator/tenants", { body: values })).data;
        await refresh(`${created.slug} created (provisioning ${created.provisioning.status}).`);
      },
    }),
  ];
}
