/// <reference path="./tessera-engine-types.d.ts" />
declare module 'tessera:engine/guest@0.2.0' {
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
  export type Caller = import('tessera:engine/types@0.2.0').Caller;
  export type Request = import('tessera:engine/types@0.2.0').Request;
  export type Response = import('tessera:engine/types@0.2.0').Response;
  export type Descriptor = import('tessera:engine/types@0.2.0').Descriptor;
  export type TenantInfo = import('tessera:engine/types@0.2.0').TenantInfo;
  export type UserInfo = import('tessera:engine/types@0.2.0').UserInfo;
  export type Event = import('tessera:engine/types@0.2.0').Event;
  export type Job = import('tessera:engine/types@0.2.0').Job;
  export type Setting = import('tessera:engine/types@0.2.0').Setting;
  export type Permission = import('tessera:engine/types@0.2.0').Permission;
}
