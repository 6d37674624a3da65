declare module 'tessera:engine/outbound-http@0.3.0' {
  /**
   * `err` when no HTTP response was obtained (refused by policy, DNS, connect, TLS,
   * timeout), with the reason.
   */
  export function fetch(request: OutboundRequest): OutboundResponse;
  /**
   * Checks, without sending anything, that `fetch` could reach `url` now: a valid http(s)
   * URL the engine's outbound hosts allow, whose host is not (an IP literal of, or a name
   * resolving only to) a non-public address unless the host allows private targets. A name
   * that does not resolve at all passes: `fetch` checks again on every connection. `err`
   * says why not.
   */
  export function checkTarget(url: string): void;
  export interface OutboundRequest {
    method: string,
    url: string,
    headers: Array<[string, string]>,
    body: Uint8Array,
    timeoutMs: number,
  }
  export interface OutboundResponse {
    status: number,
    headers: Array<[string, string]>,
    body: Uint8Array,
    elapsedMs: number,
  }
}
