declare module 'tessera:engine/types@0.3.0' {
  /**
   * The verified caller of a request, established by the host from the bearer token.
   */
  export interface Caller {
    tenantId: string,
    workspaceId?: string,
    userId: string,
    /**
     * `owner`, `editor` or `viewer`.
     */
    role: string,
    /**
     * `user`, `guest` or `agent`.
     */
    tokenType: string,
    correlationId: string,
  }
  /**
   * An HTTP request under the engine's prefix: for `GET /chat/api/v1/webhooks?limit=5`
   * the chat engine sees path `/api/v1/webhooks` and query `limit=5`.
   */
  export interface Request {
    method: string,
    path: string,
    query: string,
    headers: Array<[string, string]>,
    body: Uint8Array,
  }
  export interface Response {
    status: number,
    headers: Array<[string, string]>,
    body: Uint8Array,
  }
  /**
   * What an engine says about itself.
   */
  export interface Descriptor {
    /**
     * Unique engine code; also its path prefix (`/chat/…`).
     */
    code: string,
    name: string,
    version: string,
    requiresTenantProvision: boolean,
    requiresUserProvision: boolean,
    /**
     * Event types delivered to `on-event`, e.g. `entity.created`, `message.created`.
     */
    subscriptions: Array<string>,
    /**
     * Where `outbound-http.fetch` may go, as `scheme://host[:port]` patterns; a URL is
     * allowed when one pattern matches it. The scheme (`http` or `https`) must match
     * exactly. The host is a name (`api.example.com`), `*.example.com` (any subdomain,
     * not the apex), `*` (any host) or an IP literal (`127.0.0.1`, `[::1]`). The port is
     * a number, `*` (any port), or absent (the scheme's default port: 443 or 80). So
     * `https://*` allows any HTTPS host on port 443, `https://*:*` any HTTPS URL,
     * `http://localhost:8080` one plain-HTTP origin. Empty (the default): no outbound
     * HTTP at all. The host's operator may replace the list
     * (`TESSERA_ENGINE_OUTBOUND_HOSTS`), and private addresses stay refused unless the
     * host allows them, whatever the list says. A malformed pattern refuses the engine.
     */
    outboundHosts: Array<string>,
  }
  export interface TenantInfo {
    tenantId: string,
    /**
     * The tenant's slug.
     */
    tenantShortId: string,
    name: string,
  }
  export interface UserInfo {
    tenantId: string,
    userId: string,
    email: string,
    firstName: string,
    lastName: string,
    /**
     * `user`, `guest` or `agent`.
     */
    userType: string,
  }
  /**
   * An event from the host's bus.
   */
  export interface Event {
    id: string,
    eventType: string,
    tenantId: string,
    /**
     * RFC 3339 UTC.
     */
    occurredAt: string,
    actorId?: string,
    correlationId: string,
    /**
     * JSON object.
     */
    payload: string,
  }
  /**
   * What a declared setting holds; the host checks an operator's value against it before
   * the engine loads.
   * # Variants
   * 
   * ## `"text"`
   * 
   * Any text.
   * ## `"integer"`
   * 
   * A signed 64-bit decimal integer.
   * ## `"boolean"`
   * 
   * `true` or `false`.
   * ## `"integer-list"`
   * 
   * Non-negative decimal integers separated by commas (`30000,120000`).
   */
  export type SettingKind = 'text' | 'integer' | 'boolean' | 'integer-list';
  /**
   * An operator setting an engine declares (`describe-settings`) and reads with
   * `settings.get`. The operator sets it as `TESSERA_ENGINES__<CODE>__<NAME>` (the engine code
   * and the name upper-cased, `-` as `_`), e.g. `TESSERA_ENGINES__DRIVE__MAX_UPLOAD_BYTES`.
   */
  export interface Setting {
    /**
     * 1 to 64 of `a-z`, `0-9` and `-`, starting with a letter; unique within the engine.
     */
    name: string,
    kind: SettingKind,
    /**
     * The value when the operator sets none (`none`: unset); must fit `kind`.
     */
    defaultValue?: string,
    /**
     * What it does, for operators (shown in the engine list).
     */
    description: string,
    /**
     * Never shown back (API keys, passwords): the engine list says only whether it is set.
     */
    secret: boolean,
  }
  /**
   * A host capability beyond storage that an engine asks for (`describe-permissions`); the
   * operator may narrow who gets it.
   * # Variants
   * 
   * ## `"send-mail"`
   * 
   * `mail-transport.send`: mail out through the operator's SMTP relay. Granted to the
   * engines that ask, unless the operator names the engines (`TESSERA_SMTP_ENGINES`).
   */
  export type Permission = 'send-mail';
  /**
   * A job the engine scheduled, now due.
   */
  export interface Job {
    id: string,
    tenantId: string,
    payload: Uint8Array,
    /**
     * 1 on the first run; higher when a previous run failed or the host stopped mid-run.
     */
    attempt: number,
  }
}
