// The console's API client: the session lives in this module's memory only (never in web
// storage or a readable cookie: a reload signs out), access tokens are
// refreshed before they expire and once after a 401, and every failure becomes an `ApiError`
// carrying the API's own shapes (`{message}`, a 422's `errors`, a 429's `Retry-After`).

/** An answer other than 2xx, or no answer at all (`status` 0). */
export class ApiError extends Error {
  constructor(status, body, { retryAfter = null, correlationId = null, sessionEnded = false } = {}) {
    super(body?.message ?? (status ? `HTTP ${status}` : "The server could not be reached."));
    this.status = status;
    this.body = body;
    this.retryAfter = retryAfter;
    this.correlationId = correlationId;
    this.sessionEnded = sessionEnded;
  }
}

/** What to tell a person about `error`, plainly. */
export function describeError(error) {
  if (!(error instanceof ApiError)) return `Something went wrong in the console: ${error.message}`;
  const reference = error.correlationId ? ` (reference ${error.correlationId})` : "";
  switch (true) {
    case error.status === 0:
      return "The server could not be reached. Check the connection and try again.";
    case error.status === 401:
      return error.message;
    case error.status === 403:
      return `Not allowed: ${error.message}`;
    case error.status === 404:
      return `Not found: ${error.message}`;
    case error.status === 429:
      return `Too many requests: try again in ${error.retryAfter ?? "a few"} seconds.`;
    case error.status >= 500:
      return `The server could not do this (${error.status}): ${error.message}${reference}`;
    default:
      return error.message;
  }
}

let current = null; // {kind: "user"|"operator", accessToken, refreshToken, expiresAt, me, memberships, services}
let refreshing = null;
let sessionEndedListener = () => {};

/** The signed-in session, or null. */
export function session() {
  return current;
}

/** Called with a reason when the session ends by itself (expired, revoked). */
export function onSessionEnded(listener) {
  sessionEndedListener = listener;
}

/** Starts a user's session from a token set (`data` of login, verify, refresh). */
export async function startUserSession(tokenSet, services) {
  current = {
    kind: "user",
    accessToken: tokenSet.access_token,
    refreshToken: tokenSet.refresh_token,
    expiresAt: Date.now() + tokenSet.expires_in * 1000,
    services: services ?? {},
    me: null,
    memberships: [],
  };
  await loadIdentity();
  return current;
}

/** Reads who the session's tokens speak for, and the tenants and workspaces they may switch to. */
export async function loadIdentity() {
  const [me, memberships] = await Promise.all([
    api("GET", "/auth/api/v1/auth/me"),
    api("GET", "/auth/api/v1/auth/memberships").catch(() => ({ data: [] })),
  ]);
  current.me = me.data;
  current.memberships = memberships.data;
}

/**
 * Scopes the session to another tenant and/or workspace (`switch-context`): the new token set
 * replaces the old one, and the identity is read again.
 */
export async function switchContext(target) {
  const tokens = (await api("POST", "/auth/api/v1/auth/switch-context", { body: target })).data;
  current.accessToken = tokens.access_token;
  current.refreshToken = tokens.refresh_token;
  current.expiresAt = Date.now() + tokens.expires_in * 1000;
  await loadIdentity();
}

/** Starts an operator's session with the operator token (`tessera admin operator-token`). */
export async function startOperatorSession(operatorToken) {
  const candidate = { kind: "operator", accessToken: operatorToken, me: null };
  const previous = current;
  current = candidate;
  try {
    // The hosts list is the cheapest operator call: it proves the token.
    await api("GET", "/core/api/operator/hosts", { endsSession: false });
  } catch (error) {
    current = previous;
    throw error;
  }
  return current;
}

/** Ends the session here (the caller has already told the server, when it could). */
export function endSession() {
  current = null;
}

/**
 * Calls the API. `body` is sent as JSON; `query` is an object of parameters (empty ones
 * left out). Resolves to the parsed JSON (null for 204); rejects with an `ApiError`.
 */
export async function api(method, path, { body, query, anonymous = false, endsSession = true } = {}) {
  const url = new URL(path, window.location.origin);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, value);
  }
  if (!anonymous && current?.kind === "user" && current.expiresAt - Date.now() < 30_000) {
    await refresh().catch(() => {});
  }
  let response = await send(method, url, body, anonymous);
  if (response.status === 401 && !anonymous && current) {
    const renewed = current.kind === "user" && (await refresh().then(() => true, () => false));
    if (renewed) response = await send(method, url, body, anonymous);
    if (response.status === 401 && endsSession) {
      const error = await toError(response);
      current = null;
      error.sessionEnded = true;
      sessionEndedListener(error.message);
      throw error;
    }
  }
  if (!response.ok) throw await toError(response);
  if (response.status === 204) return null;
  const type = response.headers.get("content-type") ?? "";
  return type.includes("json") ? response.json() : response.text();
}

async function send(method, url, body, anonymous) {
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (!anonymous && current) headers.authorization = `Bearer ${current.accessToken}`;
  try {
    return await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
    });
  } catch {
    throw new ApiError(0, null);
  }
}

async function toError(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = { message: `HTTP ${response.status}` };
  }
  const retryAfter = Number.parseInt(response.headers.get("retry-after") ?? "", 10);
  return new ApiError(response.status, body, {
    retryAfter: Number.isFinite(retryAfter) ? retryAfter : null,
    correlationId: response.headers.get("x-correlation-id"),
  });
}

/** One refresh at a time, shared by every request that needs it. */
function refresh() {
  if (!current || current.kind !== "user") return Promise.reject(new Error("no session"));
  refreshing ??= (async () => {
    const session = current;
    const response = await send("POST", new URL("/auth/api/v1/auth/refresh", window.location.origin),
      { refresh_token: session.refreshToken }, true);
    if (!response.ok) throw await toError(response);
    const tokens = (await response.json()).data;
    if (current === session) {
      session.accessToken = tokens.access_token;
      session.refreshToken = tokens.refresh_token;
      session.expiresAt = Date.now() + tokens.expires_in * 1000;
    }
  })().finally(() => {
    refreshing = null;
  });
  return refreshing;
}

/** True when the signed-in user may manage the tenant (owners). */
export function isOwner() {
  return current?.kind === "user" && current.me?.role === "owner" && current.me?.type === "user";
}

/** True when the signed-in user may write (owners and editors). */
export function canWrite() {
  return current?.kind === "user" && ["owner", "editor"].includes(current.me?.role)
    && current.me?.type === "user";
}
