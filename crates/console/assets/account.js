// The signed-in user's own account: password, authenticator app (TOTP) with its recovery
// codes, passkeys, and signing out everywhere.

import { api, endSession } from "./api.js";
import { actionButton, field, form, h, notice, replace, table, when } from "./dom.js";
import { create, passkeysAvailable } from "./webauthn.js";

export async function view({ refresh }) {
  const passkeys = await api("GET", "/auth/api/v1/auth/mfa/webauthn/credentials")
    .then((answer) => answer.data)
    .catch(() => null);
  return [
    h("h1", {}, "Account"),
    passwordSection(),
    totpSection(),
    passkeys ? passkeySection(passkeys, refresh) : null,
    sessionsSection(),
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

function sessionsSection() {
  const region = notice();
  return h("section", { class: "card", "aria-labelledby": "account-sessions" },
    h("h2", { id: "account-sessions" }, "Sessions"),
    h("p", {}, "Signing out everywhere ends every session of your account, this one included."),
    region,
    h("div", { class: "actions" }, actionButton("Sign out everywhere", region, async () => {
      await api("POST", "/auth/api/v1/auth/logout/all");
      endSession();
      window.dispatchEvent(new HashChangeEvent("hashchange"));
    }, { class: "danger" })));
}
