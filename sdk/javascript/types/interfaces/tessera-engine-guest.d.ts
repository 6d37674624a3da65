/// <reference path="./tessera-engine-types.d.ts" />
declare module 'tessera:engine/guest@0.3.0' {
  export function describe(): Descriptor;
  /**
   * The engine's HTTP API: an OpenAPI 3.1 document as JSON text, with `paths` relative to the
   * engine's prefix (`/api/v1/notes`, served as `/notes/api/v1/notes`) and its schemas in
   * `components.schemas` under plain names (`Note`, served as `notes.Note`; `$ref`s point at
   * `#/components/schemas/<Name>`). The host checks it when the engine loads (an engine whose
   * description is malformed is refused), prefixes it and merges it into
   * `/api/openapi.json`. `{}` documents nothing.
   */
  export function describeApi(): string;
  /**
   * The operator settings the engine reads with `settings.get`.
   */
  export function describeSettings(): Array<Setting>;
  /**
   * The capabilities the engine asks for.
   */
  export function describePermissions(): Array<Permission>;
  /**
   * The topic patterns the engine owns, by name without the engine code: dot-separated
   * segments of letters, digits, `_` and `-`, where a segment `*` matches any one segment
   * (`conversation.*`, `me`). A subscription to a topic no pattern matches is refused (404)
   * without calling the engine. Empty: the engine publishes nothing.
   */
  export function describeTopics(): Array<string>;
  /**
   * Whether `caller` may subscribe to `topic` (its name without the engine code). Called
   * when a client subscribes, and again when the caller's role changes; anything but `true`
   * (including a trap) refuses. A call of its own, read-only: its writes are not kept.
   */
  export function authorizeSubscription(caller: Caller, topic: string): boolean;
  export function handle(caller: Caller, request: Request): Response;
  export function provisionTenant(tenant: TenantInfo): void;
  export function deprovisionTenant(tenantId: string): void;
  export function provisionUser(user: UserInfo): void;
  export function deprovisionUser(tenantId: string, userId: string): void;
  /**
   * An event the engine subscribed to. The events due to an engine in one tenant are
   * delivered in batches: up to 32 `on-event` calls one after another on one instance (each
   * a call of its own, with its correlation id and scan budget), whose effects commit as
   * one unit together with the deliveries' completions, all or nothing. When one returns
   * `err` (or traps, or the batch runs out of time), nothing the batch buffered since its
   * last synchronisation point is kept: the event fails alone (first of its batch) or is
   * delivered alone next, and the batch's other events are delivered again. An event
   * published again while its delivery waits or runs is not delivered twice.
   */
  export function onEvent(event: Event): void;
  export function runJob(job: Job): void;
  export type Caller = import('tessera:engine/types@0.3.0').Caller;
  export type Request = import('tessera:engine/types@0.3.0').Request;
  export type Response = import('tessera:engine/types@0.3.0').Response;
  export type Descriptor = import('tessera:engine/types@0.3.0').Descriptor;
  export type TenantInfo = import('tessera:engine/types@0.3.0').TenantInfo;
  export type UserInfo = import('tessera:engine/types@0.3.0').UserInfo;
  export type Event = import('tessera:engine/types@0.3.0').Event;
  export type Job = import('tessera:engine/types@0.3.0').Job;
  export type Setting = import('tessera:engine/types@0.3.0').Setting;
  export type Permission = import('tessera:engine/types@0.3.0').Permission;
}
