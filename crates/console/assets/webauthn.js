// Passkeys in the browser: the host's WebAuthn options (W3C Level 3 JSON) turned into what
// `navigator.credentials` takes, and the credential it returns turned back into JSON.

/** True when this browser can use passkeys. */
export function passkeysAvailable() {
  return typeof window.PublicKeyCredential === "function" && !!navigator.credentials;
}

const fromBase64Url = (text) => {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const padded = base64 + "=".repeat((4 - (base64.length % 4)) % 4);
  return Uint8Array.from(atob(padded), (char) => char.charCodeAt(0)).buffer;
};

const toBase64Url = (buffer) =>
  btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

function requestOptions(json) {
  if (PublicKeyCredential.parseRequestOptionsFromJSON) {
    return PublicKeyCredential.parseRequestOptionsFromJSON(json);
  }
  return {
    ...json,
    challenge: fromBase64Url(json.challenge),
    allowCredentials: (json.allowCredentials ?? []).map((credential) => ({ ...credential, id: fromBase64Url(credential.id) })),
  };
}

function creationOptions(json) {
  if (PublicKeyCredential.parseCreationOptionsFromJSON) {
    return PublicKeyCredential.parseCreationOptionsFromJSON(json);
  }
  return {
    ...json,
    challenge: fromBase64Url(json.challenge),
    user: { ...json.user, id: fromBase64Url(json.user.id) },
    excludeCredentials: (json.excludeCredentials ?? []).map((credential) => ({ ...credential, id: fromBase64Url(credential.id) })),
  };
}

function credentialJson(credential) {
  if (typeof credential.toJSON === "function") return credential.toJSON();
  const response = {};
  for (const name of ["clientDataJSON", "authenticatorData", "signature", "userHandle", "attestationObject"]) {
    if (credential.response[name]) response[name] = toBase64Url(credential.response[name]);
  }
  if (credential.response.getTransports) response.transports = credential.response.getTransports();
  return {
    id: credential.id,
    rawId: toBase64Url(credential.rawId),
    type: credential.type,
    response,
    clientExtensionResults: credential.getClientExtensionResults(),
    authenticatorAttachment: credential.authenticatorAttachment ?? undefined,
  };
}

/** Asks the browser for an assertion with the host's request `options` (`{publicKey}`). */
export async function assert(options) {
  const credential = await navigator.credentials.get({ publicKey: requestOptions(options.publicKey) });
  return credentialJson(credential);
}

/** Asks the browser to create a passkey with the host's creation `options` (`{publicKey}`). */
export async function create(options) {
  const credential = await navigator.credentials.create({ publicKey: creationOptions(options.publicKey) });
  return credentialJson(credential);
}
