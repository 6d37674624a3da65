// The console's entry: the hash router (`#/path?query`, so a page's place survives a sign-in),
// the shell (header, navigation by role), and the sign-in screen whenever there is no session.

import { api, endSession, isOwner, onSessionEnded, session, switchContext } from "./api.js";
import { h, notice, replace, reportError, say } from "./dom.js";
import { signIn } from "./signin.js";
import * as members from "./members.js";
import * as webhooks from "./webhooks.js";
import * as audit from "./audit.js";
import * as account from "./account.js";
import * as engines from "./engines.js";
import * as workflows from "./workflows.js";
import * as workspaces from "./workspaces.js";
import * as usage from "./usage.js";
import * as operator from "./operator.js";

const anyUser = () => session()?.kind === "user";
const anOperator = () => session()?.kind === "operator";

/** Every screen: its path pattern, title, who may see it, and whether it is in the menu. */
const routes = [
  { path: "/", title: "Overview", allowed: anyUser, menu: true, view: overview },
  { path: "/members", title: "Members", allowed: isOwner, menu: true, view: members.list },
  { path: "/workspaces", title: "Workspaces", allowed: anyUser, menu: true, view: workspaces.list },
  { path: "/webhooks", title: "Webhooks", allowed: isOwner, menu: true, view: webhooks.list },
  { path: "/webhooks/:id", title: "Webhook", allowed: isOwner, view: webhooks.detail },
  { path: "/dead-letters", title: "Dead letters", allowed: isOwner, menu: true, view: webhooks.deadLetters },
  { path: "/workflows", title: "Workflows", allowed: anyUser, menu: true, view: workflows.list },
  { path: "/workflows/:id", title: "Workflow", allowed: anyUser, view: workflows.detail },
  { path: "/engines", title: "Engines", allowed: anyUser, menu: true, view: engines.list },
  { path: "/usage", title: "Usage", allowed: isOwner, menu: true, view: usage.view },
  { path: "/audit", title: "Audit log", allowed: isOwner, menu: true, view: audit.list },
  { path: "/account", title: "Account", allowed: anyUser, menu: true, view: account.view },
  { path: "/operator", title: "Tenants", allowed: anOperator, menu: true, view: operator.tenants },
  { path: "/operator/hosts", title: "Hosts", allowed: anOperator, menu: true, view: operator.hosts },
  { path: "/operator/engines", title: "Published engines", allowed: anOperator, menu: true, view: operator.engines },
  { path: "/operator/usage", title: "Usage", allowed: anOperator, menu: true, view: operator.usage },
  { path: "/operator/health", title: "Health", allowed: anOperator, menu: true, view: operator.health },
];

/** The current place: path, its parameters and its query. */
export function place() {
  const raw = window.location.hash.replace(/^#/, "") || "/";
  const [path, search = ""] = raw.split("?", 2);
  return { path, query: new URLSearchParams(search) };
}

/** Goes to `path` with `query` (an object; empty values left out). */
export function navigate(path, query = {}) {
  const search = new URLSearchParams(
    Object.entries(query).filter(([, value]) => value !== undefined && value !== null && value !== ""));
  const hash = `#${path}${search.size ? `?${search}` : ""}`;
  if (window.location.hash === hash) render();
  else window.location.hash = hash;
}

function match(path) {
  for (const route of routes) {
    const names = [];
    const pattern = new RegExp(`^${route.path.replace(/:(\w+)/g, (_, name) => {
      names.push(name);
      return "([^/]+)";
    })}$`);
    const found = pattern.exec(path);
    if (found) {
      const params = Object.fromEntries(names.map((name, index) => [name, decodeURIComponent(found[index + 1])]));
      return { route, params };
    }
  }
  return null;
}

const app = document.getElementById("app");
let renderCount = 0;
let pendingFlash = null;
/** What the screen on show does when it is left (a page closing its live updates). */
let leaving = [];

function runAll(cleanups) {
  for (const cleanup of cleanups.splice(0)) {
    try {
      cleanup();
    } catch (error) {
      console.error(error);
    }
  }
}

/**
 * Draws the screen for the current place (or the sign-in screen, saying `reason`); `flash`
 * is said at the top of the redrawn page (what the action that redrew it did). The screen
 * left first runs what it registered with `onLeave`.
 */
export async function render(reason, flash) {
  const ticket = ++renderCount;
  runAll(leaving);
  flash ??= pendingFlash;
  pendingFlash = null;
  const current = session();
  if (!current) {
    document.title = "Sign in · Tessera console";
    replace(app, signIn({ reason, signedIn: () => render() }));
    app.dataset.state = "signin";
    app.dataset.interactiveMs ||= String(Math.round(performance.now()));
    app.querySelector("h1")?.focus();
    return;
  }
  const { path, query } = place();
  const found = match(path);
  const home = current.kind === "operator" ? "/operator" : "/";
  if (path === "/" && current.kind === "operator") return navigate(home);
  const main = h("main", { id: "content", tabindex: "-1" });
  replace(app, shell(current, path), main);
  app.dataset.state = "loading";
  let title = "Not found";
  try {
    if (!found) {
      replace(main, h("h1", {}, "Not found"), h("p", {}, "There is no such page. ", h("a", { href: `#${home}` }, "Go to the start")));
    } else if (!found.route.allowed()) {
      title = found.route.title;
      replace(main, h("h1", {}, found.route.title),
        h("p", { class: "notice warn" }, "This page is not available to your account."));
    } else {
      title = found.route.title;
      const cleanups = [];
      let content;
      try {
        content = await found.route.view({
          params: found.params, query, navigate, refresh: (message) => render(undefined, message),
          onLeave: (cleanup) => cleanups.push(cleanup),
        });
      } catch (error) {
        runAll(cleanups);
        throw error;
      }
      // Drawn too late (another screen was asked for meanwhile): left at once.
      if (ticket !== renderCount) return runAll(cleanups);
      leaving = cleanups;
      replace(main, content);
      if (flash) {
        const region = notice();
        main.querySelector("h1")?.after(region);
        say(region, flash, "ok");
      }
    }
  } catch (error) {
    if (ticket !== renderCount || !session()) return;
    const region = notice();
    replace(main, h("h1", {}, title), region);
    reportError(region, error);
  }
  document.title = `${main.querySelector("h1")?.textContent ?? title} · Tessera console`;
  app.dataset.state = "ready";
  app.dataset.interactiveMs ||= String(Math.round(performance.now()));
  main.querySelector("h1")?.setAttribute("tabindex", "-1");
  main.querySelector("h1")?.focus({ preventScroll: true });
}

function shell(current, path) {
  const who = current.kind === "operator"
    ? "Operator"
    : `${current.me.email} · ${current.me.role}`;
  const menu = routes.filter((route) => route.menu && route.allowed());
  const signOut = h("button", { type: "button", class: "secondary" }, "Sign out");
  signOut.addEventListener("click", async () => {
    if (current.kind === "user") await api("POST", "/auth/api/v1/auth/logout").catch(() => {});
    endSession();
    render("You have signed out.");
  });
  return [
    h("header", { class: "top" },
      h("span", { class: "brand" }, "Tessera console"),
      h("span", { class: "who", "data-testid": "who" }, who),
      current.kind === "user" ? contextSwitcher(current) : null,
      signOut),
    h("nav", { class: "main", "aria-label": "Main" },
      h("ul", {}, menu.map((route) => {
        const active = route.path === path || (route.path !== "/" && path.startsWith(`${route.path}/`)
          && !menu.some((other) => other !== route && other.path.length > route.path.length && path.startsWith(other.path)));
        return h("li", {}, h("a", { href: `#${route.path}`, "aria-current": active ? "page" : null }, route.title));
      }))),
  ];
}

/**
 * The tenant and workspace the session is scoped to, as a select of every place the user may
 * switch to; choosing one switches (new tokens) and goes to the overview, since the page's
 * data belonged to the place left.
 */
function contextSwitcher(current) {
  const places = current.memberships.flatMap((membership) => {
    const workspaces = membership.workspaces.length ? membership.workspaces : [null];
    return workspaces.map((workspace) => ({
      value: JSON.stringify({ tenant_id: membership.tenant_id, workspace_id: workspace?.id ?? null }),
      label: `${membership.tenant_name}${workspace ? ` · ${workspace.name}` : ""} (${membership.role})`,
      selected: membership.current && (workspace ? workspace.current || (!current.me.workspace_id && workspace.is_default) : true),
    }));
  });
  if (places.length < 2) return null;
  const region = h("span", { class: "visually-hidden", role: "status" });
  const select = h("select", { "aria-label": "Tenant and workspace", "data-testid": "context" },
    places.map((place) => h("option", { value: place.value, selected: place.selected }, place.label)));
  select.addEventListener("change", async () => {
    select.disabled = true;
    const target = JSON.parse(select.value);
    try {
      const label = select.selectedOptions[0]?.textContent ?? "the chosen place";
      await switchContext(Object.fromEntries(Object.entries(target).filter(([, value]) => value)));
      // Said on the overview, whichever way it is drawn.
      pendingFlash = `Now in ${label}.`;
      if (place().path === "/") render();
      else window.location.hash = "#/";
    } catch (error) {
      select.disabled = false;
      region.textContent = error.message;
    }
  });
  return h("span", { class: "context" }, select, region);
}

async function overview() {
  const { me, memberships } = session();
  const tenant = memberships.find((membership) => membership.current);
  const workspace = tenant?.workspaces.find((candidate) => candidate.current)
    ?? tenant?.workspaces.find((candidate) => candidate.is_default && !me.workspace_id);
  const [metrics, engineList] = await Promise.all([
    api("GET", "/core/api/metrics").catch(() => null),
    api("GET", "/core/api/v1/engines").catch(() => null),
  ]);
  const facts = [
    ["E-mail", me.email],
    ["Role", me.role],
    ["Tenant", tenant ? `${tenant.tenant_name} (${tenant.tenant_slug})` : h("code", {}, me.tenant_id)],
    ["Workspace", workspace ? workspace.name : me.workspace_id ? h("code", {}, me.workspace_id) : "—"],
  ];
  return [
    h("h1", {}, "Overview"),
    h("section", { class: "card", "aria-labelledby": "overview-you" },
      h("h2", { id: "overview-you" }, "You"),
      h("dl", { class: "facts" }, facts.map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]))),
    h("section", { class: "grid", "aria-label": "At a glance" },
      stat("Engines loaded", engineList ? engineList.data.length : "—"),
      stat("Events processed", metrics?.data?.events_processed ?? "—"),
      stat("Workflow runs completed", metrics?.data?.workflows_executed ?? "—"),
      stat("Workflow runs failed", metrics?.data?.workflows_failed ?? "—")),
  ];
}

function stat(label, value) {
  return h("div", { class: "card" }, h("div", { class: "hint" }, label), h("div", { class: "stat" }, value));
}

onSessionEnded(() => render("Your session has ended. Sign in again to go back where you were."));
// The skip link moves the focus; it must not change the address (the router's).
document.querySelector(".skip-link")?.addEventListener("click", (event) => {
  event.preventDefault();
  document.getElementById("content")?.focus();
});
window.addEventListener("hashchange", () => render());
render();
