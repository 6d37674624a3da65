// The signed-in user's own account: password, authenticator app (TOTP) with its recovery
// codes, passkeys, and their sessions (each device signed in, ended one by one or all at once).

import { api, endSession } from "./api.js";
import { actionButton, badge, field, form, h, notice, replace, table, when } from "./dom.js";
import { create, passkeysAvailable } from "./webauthn.js";

export async function view({ refresh }) {
  const [passkeys, sessions] = await Promise.all([
    api("GET", "/auth/api/v1/auth/mfa/webauthn/credentials").then((answer) => answer.data).catch(() => null),
    api("GET", "/auth/api/v1/auth/sessions").then((answer) => answer.data),
  ]);
  return [
    h("h1", {}, "Account"),
    passwordSection(),
    totpSection(),
    passkeys ? passkeySection(passkeys, refresh) : null,
    sessionsSection(sessions, refresh),
  ];
}

function passwordSection() {
  return h("section", { class: "card", "aria-labelledby": "account-password" },
    h("h2", { id: "account-password" }, "Password"),
    form({
      label: "Change your password",
      fields: [
        field({ name: "current_password", label: "Current password", type: "password", autocomplete: "current-password", required: true }),
        field({ name: "password", label: "New password", type: "password", autocomplete: "new-password", required: true }),
      ],
      submitText: "Change password",
      submit: async (values, element) => {
        await api("POST", "/auth/api/v1/auth/password/change", { body: values });
        element.reset();
        return "Password changed. Your other sessions have ended.";
      },
    }));
}

function totpSection() {
  const step = h("div", {});
  const region = notice();
  const start = actionButton("Set up an authenticator app", region, async () => {
    const setup = (await api("POST", "/auth/api/v1/auth/mfa/totp/setup")).data;
    replace(step,
      h("p", {}, "Add this key to your authenticator app, then enter the code it shows."),
      h("p", { class: "secret mono", "data-testid": "totp-secret" }, setup.secret),
      h("p", { class: "hint" }, "Or open: ", h("code", {}, setup.otpauth_url)),
      form({
        label: "Confirm the authenticator app",
        fields: [field({ name: "code", label: "Code from the app", inputmode: "numeric", autocomplete: "one-time-code", required: true })],
        submitText: "Turn on",
        submit: async ({ code }) => {
          const confirmed = (await api("POST", "/auth/api/v1/auth/mfa/totp/confirm", { body: { code: code.trim() } })).data;
          replace(step,
            h("p", { role: "status" }, "Authenticator app on. Keep these recovery codes somewhere safe; each works once:"),
            h("ul", { class: "codes", "data-testid": "recovery-codes" }, confirmed.recovery_codes.map((recovery) => h("li", {}, recovery))));
        },
      }));
    step.querySelector("input")?.focus();
  });
  const disable = form({
    label: "Turn off the authenticator app",
    fields: [field({ name: "code", label: "Current code, to turn it off", inputmode: "numeric", autocomplete: "one-time-code", required: true })],
    submitText: "Turn off",
    submit: async ({ code }, element) => {
      await api("DELETE", "/auth/api/v1/auth/mfa/totp", { body: { code: code.trim() } });
      element.reset();
      return "Authenticator app turned off.";
    },
  });
  return h("section", { class: "card", "aria-labelledby": "account-totp" },
    h("h2", { id: "account-totp" }, "Authenticator app"),
    region, h("div", { class: "actions" }, start), step,
    h("details", {}, h("summary", {}, "Turn it off"), disable));
}

function passkeySection(passkeys, refresh) {
  const region = notice();
  const register = form({
    label: "Add a passkey",
    fields: [field({ name: "name", label: "Name for this passkey", placeholder: "e.g. laptop" })],
    submitText: "Add a passkey",
    submit: async ({ name }) => {
      const started = (await api("POST", "/auth/api/v1/auth/mfa/webauthn/register/start")).data;
      const credential = await create(started.options);
      await api("POST", "/auth/api/v1/auth/mfa/webauthn/register/finish", { body: { credential, name: name || undefined } });
      await refresh("Passkey added.");
    },
  });
  return h("section", { class: "card", "aria-labelledby": "account-passkeys" },
    h("h2", { id: "account-passkeys" }, "Passkeys"),
    region,
    table({
      caption: "Your passkeys",
      columns: ["Name", "Added", "Last used", ""],
      rows: passkeys.map((passkey) => [
        passkey.name,
        when(passkey.created_at),
        when(passkey.last_used_at),
        actionButton("Remove", region, async () => {
          await api("DELETE", `/auth/api/v1/auth/mfa/webauthn/credentials/${encodeURIComponent(passkey.id)}`);
          await refresh("Passkey removed.");
        }, { class: "secondary", "aria-label": `Remove passkey ${passkey.name}` }),
      ]),
      empty: "No passkeys yet.",
    }),
    passkeysAvailable() ? register : h("p", { class: "hint" }, "This browser cannot create passkeys."));
}

/** What a `User-Agent` says of the device, shortly (the whole string on hover). */
function device(userAgent) {
  if (!userAgent) return "—";
  const browser = /(Firefox|Edg|Chrome|Chromium|Safari|curl|python-requests|reqwest)\/[\d.]+/.exec(userAgent)?.[0] ?? userAgent.slice(0, 40);
  return h("span", { title: userAgent }, browser);
}

function sessionsSection(sessions, refresh) {
  const region = notice();
  const signOutEverywhere = () => {
    endSession();
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  };
  return h("section", { class: "card", "aria-labelledby": "account-sessions" },
    h("h2", { id: "account-sessions" }, "Sessions"),
    h("p", {}, "Every device signed in to your account. Ending a session signs that device out; signing out everywhere ends every session, this one included."),
    region,
    table({
      caption: "Your active sessions, newest first",
      columns: ["Signed in", "Last active", "Address", "Device", ""],
      rows: sessions.map((item) => [
        h("span", {}, when(item.created_at), item.current ? [" ", badge("this session", "ok")] : null),
        when(item.last_active_at),
        item.client_ip ?? "—",
        device(item.user_agent),
        actionButton("End", region, async () => {
          await api("DELETE", `/auth/api/v1/auth/sessions/${encodeURIComponent(item.id)}`);
          if (item.current) return signOutEverywhere();
          await refresh("Session ended.");
        }, { class: "secondary", "aria-label": item.current ? "End this session" : `End the session signed in ${item.created_at}` }),
      ]),
      empty: "No active session.",
    }),
    h("div", { class: "actions" }, actionButton("Sign out everywhere", region, async () => {
      await api("POST", "/auth/api/v1/auth/logout/all");
      signOutEverywhere();
    }, { class: "danger" })));
}
