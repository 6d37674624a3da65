declare module 'tessera:engine/events@0.3.0' {
  /**
   * `payload` is a JSON object. The event's `actor-id` is the user whose request the
   * current call serves (`handle`); `none` from jobs, events and provisioning.
   */
  export function publish(eventType: string, payload: string): void;
}
