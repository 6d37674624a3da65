// Members (owners): the tenant's accounts with their roles, a form to create one (a first
// password the person changes once signed in), and each member's role changed in place.

import { api, session } from "./api.js";
import { badge, field, form, h, notice, reportError, say, table, when } from "./dom.js";

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
      columns: ["E-mail", "Name", "Role", "State", "Member since"],
      rows: members.map((member) => [
        member.email,
        `${member.first_name} ${member.last_name}`.trim() || "—",
        roleSelect(member, member.user_id === me, region, refresh),
        member.disabled ? badge("disabled", "bad") : badge("active", "ok"),
        when(member.member_since),
      ]),
      empty: "No members.",
    }),
    createForm,
  ];
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
