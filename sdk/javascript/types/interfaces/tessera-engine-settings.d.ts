declare module 'tessera:engine/settings@0.3.0' {
  /**
   * The setting `name`, or `none` when it is not set (or not a setting). Names:
   * a name the engine declared: the operator's value (`TESSERA_ENGINES__<CODE>__<NAME>`),
   * else its default. The host's own settings, named with a dot:
   * `webhook.retry-schedule-ms`: the delays before automatic attempts 2, 3, … of a webhook
   * delivery, in milliseconds, comma-separated (`TESSERA_WEBHOOK_RETRY_SCHEDULE`; default
   * `30000,120000,600000,1800000`).
   * `engine.max-body-bytes`: the largest request body the host passes to an engine route
   * (`TESSERA_ENGINE_MAX_BODY_BYTES`; larger bodies get 413 before the engine runs).
   * `mail-transport.available`: `true` when `mail-transport.send` may succeed for this engine
   * (the host has an SMTP relay and the operator allows the engine), `false` otherwise.
   * `storage.scan-page`: most entries one `storage.scan` returns (`TESSERA_ENGINE_SCAN_PAGE`;
   * default 1000).
   * `storage.scan-budget`: most entries the scans of one call return together
   * (`TESSERA_ENGINE_SCAN_BUDGET`; default 10000).
   */
  export function get(name: string): string | undefined;
}
