// Workflows: the tenant's workflows with their state, and a workflow's runs with their
// failures; owners activate and deactivate them (creating one stays with the API).

import { api, isOwner } from "./api.js";
import { actionButton, badge, h, notice, table, when } from "./dom.js";

export async function list({ query }) {
  const page = await api("GET", "/core/api/v1/workflows", { query: { page: query.get("page") } });
  const meta = page.meta ?? {};
  const current = meta.current_page ?? 1;
  return [
    h("h1", {}, "Workflows"),
    table({
      caption: "Workflows, newest first",
      columns: ["Name", "Trigger", "State", "Created"],
      rows: page.data.map((workflow) => [
        h("a", { href: `#/workflows/${encodeURIComponent(workflow.id)}` }, workflow.name),
        workflow.trigger_event + (workflow.family ? ` (${workflow.family})` : ""),
        workflow.is_active ? badge("active", "ok") : badge("inactive"),
        when(workflow.created_at),
      ]),
      empty: "No workflows yet.",
    }),
    h("div", { class: "actions" },
      current > 1 ? h("a", { href: `#/workflows?page=${current - 1}` }, "Newer") : null,
      meta.last_page && current < meta.last_page ? h("a", { href: `#/workflows?page=${current + 1}` }, "Older") : null),
  ];
}

export async function detail({ params, refresh }) {
  const id = encodeURIComponent(params.id);
  const [workflow, runs] = await Promise.all([
    api("GET", `/core/api/v1/workflows/${id}`).then((answer) => answer.data),
    api("GET", `/core/api/v1/workflows/${id}/runs`).then((answer) => answer.data),
  ]);
  const region = notice();
  const toggle = workflow.is_active ? "deactivate" : "activate";
  return [
    h("h1", {}, workflow.name),
    h("p", {}, h("a", { href: "#/workflows" }, "All workflows")),
    h("section", { class: "card", "aria-label": "Workflow" },
      h("dl", { class: "facts" },
        h("dt", {}, "Trigger"), h("dd", {}, workflow.trigger_event),
        h("dt", {}, "Family"), h("dd", {}, workflow.family ?? "any"),
        h("dt", {}, "State"), h("dd", {}, workflow.is_active ? badge("active", "ok") : badge("inactive")),
        h("dt", {}, "Description"), h("dd", {}, workflow.description ?? "—"),
        h("dt", {}, "Actions"), h("dd", {}, h("code", {}, JSON.stringify(workflow.actions)))),
      region,
      isOwner()
        ? h("div", { class: "actions" }, actionButton(toggle === "activate" ? "Activate" : "Deactivate", region, async () => {
            await api("POST", `/core/api/v1/workflows/${id}/${toggle}`);
            await refresh(toggle === "activate" ? "Workflow activated." : "Workflow deactivated.");
          }))
        : null),
    h("h2", {}, "Runs"),
    table({
      caption: "Runs, newest first",
      columns: ["Started", "Status", "Actions done", "Error"],
      rows: runs.map((run) => [
        when(run.started_at),
        run.status === "completed" ? badge("completed", "ok") : badge(run.status, "bad"),
        run.actions_executed,
        run.error ?? "—",
      ]),
      empty: "No runs yet.",
    }),
  ];
}
