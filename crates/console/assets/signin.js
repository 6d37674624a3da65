// The sign-in screen: the host's own flows (password, then the second factor the account has:
// TOTP, a recovery code, a passkey or an e-mailed code; a passkey alone), or the operator's
// token. Nothing is remembered between visits: the session lives in memory.

import { ApiError, api, describeError, startOperatorSession, startUserSession } from "./api.js";
import { field, form, h, notice, replace, reportError, say } from "./dom.js";
import { assert, passkeysAvailable } from "./webauthn.js";

const METHOD_NAMES = {
  totp: "Authenticator app code",
  recovery_code: "Recovery code",
  webauthn: "Passkey or security key",
  otp: "Code sent by e-mail",
};

/** Turns a 401 of a sign-in step into what it means there. */
function explain401(message) {
  return (error) => {
    if (error instanceof ApiError && error.status === 401) {
      throw new ApiError(401, { message }, { correlationId: error.correlationId });
    }
    throw error;
  };
}

/** The sign-in screen; `signedIn()` is called once a session has started. */
export function signIn({ reason, signedIn }) {
  const region = notice();
  const body = h("div", {});
  const main = h("main", { id: "content", tabindex: "-1" },
    h("div", { class: "signin" },
      h("h1", { tabindex: "-1" }, "Sign in to Tessera"),
      region,
      body));
  if (reason) say(region, reason, "warn");

  const showAccount = () => replace(body, accountForm());
  const showOperator = () => replace(body, operatorForm());

  function accountForm() {
    const passkeyRegion = notice();
    const passwordForm = form({
      label: "Sign in with your password",
      className: "card",
      fields: [
        field({ name: "login", label: "E-mail", type: "email", autocomplete: "username", required: true }),
        field({ name: "password", label: "Password", type: "password", autocomplete: "current-password", required: true }),
      ],
      submitText: "Sign in",
      submit: async ({ login, password }) => {
        const answer = await api("POST", "/auth/api/v1/auth/login", { body: { login, password }, anonymous: true })
          .catch(explain401("Wrong e-mail or password."));
        await finish(answer);
      },
    });
    const passkeyButton = h("button", { type: "button", class: "secondary" }, "Sign in with a passkey");
    passkeyButton.addEventListener("click", async () => {
      say(passkeyRegion, "");
      try {
        const started = await api("POST", "/auth/api/v1/auth/passkey/start", { anonymous: true });
        const credential = await assert(started.data.options);
        const answer = await api("POST", "/auth/api/v1/auth/passkey/finish", {
          body: { challenge_id: started.data.challenge_id, credential }, anonymous: true,
        });
        await finish(answer);
      } catch (error) {
        reportError(passkeyRegion, error);
      }
    });
    const passkeys = h("div", { hidden: true }, passkeyRegion, h("div", { class: "actions" }, passkeyButton));
    api("GET", "/auth/api/v1/auth/config", { anonymous: true })
      .then((config) => {
        passkeys.hidden = !(passkeysAvailable() && config.data.mfa_methods.includes("webauthn"));
      })
      .catch(() => {});
    const operatorLink = h("button", { type: "button", class: "link" }, "Sign in as the operator");
    operatorLink.addEventListener("click", showOperator);
    return [passwordForm, passkeys, h("p", {}, operatorLink)];
  }

  function operatorForm() {
    const back = h("button", { type: "button", class: "link" }, "Sign in with an account");
    back.addEventListener("click", showAccount);
    return [
      form({
        label: "Sign in as the operator",
        className: "card",
        fields: [
          field({
            name: "operator_token", label: "Operator token", type: "password", required: true,
            hint: "Printed by `tessera admin operator-token` on a host of this installation.",
          }),
        ],
        submitText: "Sign in",
        submit: async ({ operator_token: token }) => {
          await startOperatorSession(token.trim());
          signedIn();
        },
      }),
      h("p", {}, back),
    ];
  }

  /** A login's answer: a token set (done) or an MFA challenge (the second step). */
  async function finish(answer) {
    if (answer.data.access_token) {
      await startUserSession(answer.data, answer.meta?.services);
      signedIn();
      return;
    }
    replace(body, secondFactor(answer.data));
    body.querySelector("input")?.focus();
  }

  function secondFactor({ mfa_token: mfaToken, methods }) {
    const offered = [...methods, ...(methods.includes("totp") ? ["recovery_code"] : [])];
    const step = h("div", {});
    const choose = (method) => replace(step, methodForm(method));
    const choices = offered.length > 1
      ? h("div", { class: "actions", role: "group", "aria-label": "Other ways to confirm" },
          offered.map((method) => {
            const button = h("button", { type: "button", class: "secondary" }, METHOD_NAMES[method] ?? method);
            button.addEventListener("click", () => {
              choose(method);
              step.querySelector("input, button")?.focus();
            });
            return button;
          }))
      : null;
    choose(offered[0]);
    return [h("p", {}, "Your account asks for a second step."), step, choices];

    function methodForm(method) {
      if (method === "webauthn") {
        const region = notice();
        const go = h("button", { type: "button" }, "Use a passkey");
        go.addEventListener("click", async () => {
          say(region, "");
          try {
            const challenge = await api("POST", "/auth/api/v1/auth/mfa/webauthn/challenge", {
              body: { mfa_token: mfaToken }, anonymous: true,
            });
            const credential = await assert(challenge.data.options);
            await finish(await api("POST", "/auth/api/v1/auth/mfa/verify", {
              body: { mfa_token: mfaToken, method: "webauthn", credential }, anonymous: true,
            }));
          } catch (error) {
            reportError(region, error);
          }
        });
        return h("div", { class: "card" }, h("h2", {}, METHOD_NAMES.webauthn), region, go);
      }
      const extra = [];
      if (method === "otp") {
        const region = notice();
        const send = h("button", { type: "button", class: "secondary" }, "Send me a code");
        send.addEventListener("click", async () => {
          try {
            await api("POST", "/auth/api/v1/auth/mfa/otp/send", { body: { mfa_token: mfaToken }, anonymous: true });
            say(region, "A code is on its way to your e-mail address.");
          } catch (error) {
            say(region, describeError(error), "error");
          }
        });
        extra.push(region, h("div", { class: "actions" }, send));
      }
      return h("div", {}, extra, form({
        label: METHOD_NAMES[method] ?? method,
        className: "card",
        fields: [
          field({
            name: "code", label: METHOD_NAMES[method] ?? "Code", required: true,
            autocomplete: method === "recovery_code" ? "off" : "one-time-code",
            inputmode: method === "recovery_code" ? "text" : "numeric",
          }),
        ],
        submitText: "Confirm",
        submit: async ({ code }) => {
          await finish(await api("POST", "/auth/api/v1/auth/mfa/verify", {
            body: { mfa_token: mfaToken, method, code: code.trim() }, anonymous: true,
          }).catch(explain401("That code is not right, or the sign-in took too long: try again.")));
        },
      }));
    }
  }

  showAccount();
  return main;
}
