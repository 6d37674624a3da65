// Workspaces: the tenant's workspaces (every member), a form to add one (owners), and a
// switch into any of them (a new token set scoped to it, through `switch-context`).

import { api, isOwner, loadIdentity, session, switchContext } from "./api.js";
import { actionButton, badge, field, form, h, notice, table, when } from "./dom.js";

export async function list({ refresh }) {
  const workspaces = (await api("GET", "/auth/api/v1/workspaces")).data;
  const region = notice();
  const current = session().me.workspace_id;
  const createForm = isOwner()
    ? form({
      label: "Add a workspace",
      className: "card",
      fields: [h("h2", {}, "Add a workspace"), field({ name: "name", label: "Workspace name", required: true })],
      submitText: "Add workspace",
      submit: async (values) => {
        const workspace = (await api("POST", "/auth/api/v1/workspaces", { body: values })).data;
        // The header's switcher offers it at once.
        await loadIdentity();
        await refresh(`Workspace ${workspace.name} added.`);
      },
    })
    : null;
  return [
    h("h1", {}, "Workspaces"),
    region,
    table({
      caption: "Workspaces of this tenant",
      columns: ["Name", "", "Created", ""],
      rows: workspaces.map((workspace) => [
        workspace.name,
        [workspace.is_default ? badge("default") : null, workspace.id === current ? badge("current", "ok") : null],
        when(workspace.created_at),
        workspace.id === current
          ? "—"
          : actionButton("Switch", region, async () => {
            await switchContext({ workspace_id: workspace.id });
            await refresh(`Now in the workspace ${workspace.name}.`);
          }, { class: "secondary", "aria-label": `Switch to the workspace ${workspace.name}` }),
      ]),
      empty: "No workspaces.",
    }),
    createForm,
  ];
}
