// The test kit (`@tessera/engine/testkit`): run an engine in node, without a host or a
// component build, against in-memory fakes of every host import (`fakes.js`) that keep the
// host's semantics, as the Rust SDK's `engines/sdk/src/testkit/mod.rs`. `node --test` then
// drives its routes, jobs and event handlers through the same `guest` export the component
// has:
//
//   import { TestHost } from '@tessera/engine/testkit';
//   const host = new TestHost(engine);
//   const ada = Context.forTests('tenant-1', 'ada', 'editor');
//   assert.equal(host.post(ada, '/api/v1/notes', { title: 'x' }).status, 201);
//
// Each call is a unit of work as on the host: what a request writes, publishes (on the bus and
// to realtime topics) and schedules is kept only when it answers 2xx or 3xx (a job, an event or
// a lifecycle call: when it does not throw). `realtimeEvents()` reads what reached the engine's
// topics, `authorizeSubscription(ctx, topic)` asks the engine as the host does when a client
// subscribes. One TestHost at a time: a new one starts empty and binds the kit to its fakes.

import { compareCodePoints, utf8Decode, utf8Encode } from '../bytes.js';
import { Context } from '../context.js';
import { exportGuest } from '../guest.js';
import { beginCall, resetScanLimits, setBackend } from '../host.js';
import { checkApiDescription } from './api.js';
import { FakeHost, ImportError, parseTopicPattern, topicMatches } from './fakes.js';

export { checkApiDescription } from './api.js';
export { FakeHost, ImportError, parseTopicPattern, topicMatches } from './fakes.js';
export { Context };

/** What the host makes of a client's subscription (`TestHost.authorizeSubscription`). */
export const Subscription = Object.freeze({
  /** The engine's `authorizeSubscription` answered `true`: subscribed. */
  ALLOWED: 'allowed',
  /** It answered anything else, or threw: an `error` frame with status 403. */
  FORBIDDEN: 'forbidden',
  /** None of the engine's topic patterns match: 404, without asking the engine. */
  UNKNOWN_TOPIC: 'unknown-topic',
});

/** The WIT caller of `ctx`. */
function callerOf(ctx) {
  return {
    tenantId: ctx.tenantId,
    workspaceId: ctx.workspaceId ?? undefined,
    userId: ctx.userId,
    role: ctx.role,
    tokenType: ctx.tokenType,
    correlationId: ctx.correlationId,
  };
}

/** What a route answered. */
export class TestResponse {
  constructor(status, headers, body) {
    this.status = status;
    this.headers = headers;
    this.body = body;
  }

  /** The body as text. */
  text() {
    return utf8Decode(this.body);
  }

  /** The body as JSON (`null` when it is empty or not JSON). */
  json() {
    try {
      return JSON.parse(this.text());
    } catch {
      return null;
    }
  }

  /** The value of header `name` (case-insensitive), or `undefined`. */
  header(name) {
    const wanted = name.toLowerCase();
    const found = this.headers.find(([key]) => key.toLowerCase() === wanted);
    return found ? found[1] : undefined;
  }
}

/** A failed lifecycle, event or job call: its `err` reason. */
export class CallFailed extends Error {
  constructor(reason) {
    super(reason);
    this.name = 'CallFailed';
    this.reason = reason;
  }
}

function reasonOf(error) {
  if (error && typeof error === 'object' && Object.prototype.hasOwnProperty.call(error, 'payload')) {
    return String(error.payload);
  }
  return `the engine trapped: ${error instanceof Error ? error.message : String(error)}`;
}

/** An engine (see `defineEngine`) served by in-memory fakes of the host. */
export class TestHost {
  /**
   * A host with nothing stored, the engine's declared settings at their defaults, its
   * `outboundHosts` allowed, no canned HTTP answers and no mail relay. Throws when the engine
   * declares a malformed topic pattern: the host would not load it.
   */
  constructor(engine) {
    this.engine = engine;
    this.guest = exportGuest(engine);
    this.fake = new FakeHost();
    this.fake.topics = this.guest.describeTopics().map(parseTopicPattern);
    const descriptor = this.guest.describe();
    this.fake.outboundHosts = [...descriptor.outboundHosts];
    for (const setting of this.guest.describeSettings()) {
      if (setting.defaultValue !== undefined) this.fake.settings.set(setting.name, setting.defaultValue);
    }
    setBackend(this.fake.backend);
    resetScanLimits();
  }

  /** The engine's descriptor, as the host reads it. */
  describe() {
    return this.guest.describe();
  }

  /**
   * The engine's API description (`describe-api`), parsed, after the checks the host makes
   * when it loads the engine (throws what the host would refuse it for).
   */
  api() {
    const text = this.guest.describeApi();
    checkApiDescription(text);
    return JSON.parse(text);
  }

  /** The engine's topic patterns (`describe-topics`). */
  topics() {
    return this.guest.describeTopics();
  }

  /**
   * Asks as the host does when `ctx`'s client subscribes to the engine's `topic` (named without
   * the engine code: `conversation.c1`): `Subscription.UNKNOWN_TOPIC` when no pattern of
   * `topics()` matches it, else the engine's `authorizeSubscription`, called as a read-only
   * call of its own (nothing it writes or publishes is kept; throwing refuses).
   */
  authorizeSubscription(ctx, topic) {
    if (!topicMatches(this.fake.topics, topic)) return Subscription.UNKNOWN_TOPIC;
    const outcome = this.call(
      ctx.tenantId,
      ctx.userId,
      () => this.guest.authorizeSubscription(callerOf(ctx), topic),
      () => false,
    );
    return outcome.error === undefined && outcome.value === true ? Subscription.ALLOWED : Subscription.FORBIDDEN;
  }

  /** Sets a setting as the operator would, or one of the host's own (`storage.scan-page`, …). */
  setSetting(name, value) {
    this.fake.settings.set(name, String(value));
    resetScanLimits();
  }

  /** Lets `mail-transport.send` succeed (a relay, and this engine allowed). */
  allowMail() {
    this.fake.mailAllowed = true;
  }

  /** Answers outbound `method url` with `status` and `body` (bytes, text) from now on. */
  respond(method, url, status, body = '', headers = []) {
    const bytes = typeof body === 'string' ? utf8Encode(body) : Uint8Array.from(body);
    this.canned(method, url, { response: { status, headers, body: bytes, elapsedMs: 1 } });
  }

  /** Fails outbound `method url` with `reason`, as the host does when no response came. */
  failOutbound(method, url, reason) {
    this.canned(method, url, { error: reason });
  }

  canned(method, url, answer) {
    this.fake.responses = this.fake.responses.filter(
      (held) => !(held.method.toUpperCase() === method.toUpperCase() && held.url === url),
    );
    this.fake.responses.push({ method, url, ...answer });
  }

  /**
   * Serves one call of the engine in `tenantId`; what it buffered commits when `succeeded`
   * says so of its outcome. Returns `{value}` or `{error}` (what the export threw).
   */
  call(tenantId, actorId, run, succeeded) {
    setBackend(this.fake.backend);
    this.fake.begin(tenantId, actorId);
    let outcome;
    try {
      outcome = { value: run() };
    } catch (error) {
      outcome = { error };
    }
    this.fake.end(outcome.error === undefined && succeeded(outcome.value));
    return outcome;
  }

  /** Runs an export that answers `result<_, string>`: throws `CallFailed` on `err`. */
  lifecycle(tenantId, run) {
    const outcome = this.call(tenantId, undefined, run, () => true);
    if (outcome.error !== undefined) throw new CallFailed(reasonOf(outcome.error));
  }

  /** `provision-tenant` of `{tenantId, tenantShortId?, name?}`. */
  provisionTenant({ tenantId, tenantShortId = tenantId, name = tenantId }) {
    this.lifecycle(tenantId, () => this.guest.provisionTenant({ tenantId, tenantShortId, name }));
  }

  /** `deprovision-tenant`. */
  deprovisionTenant(tenantId) {
    this.lifecycle(tenantId, () => this.guest.deprovisionTenant(tenantId));
  }

  /** `provision-user` of `{tenantId, userId, email?, firstName?, lastName?, userType?}`. */
  provisionUser({ tenantId, userId, email = `${userId}@example.com`, firstName = '', lastName = '', userType = 'user' }) {
    this.lifecycle(tenantId, () =>
      this.guest.provisionUser({ tenantId, userId, email, firstName, lastName, userType }),
    );
  }

  /** `deprovision-user`. */
  deprovisionUser(tenantId, userId) {
    this.lifecycle(tenantId, () => this.guest.deprovisionUser(tenantId, userId));
  }

  /**
   * A request to the engine's route `pathAndQuery` (`/api/v1/…?…`, as the host passes it:
   * without the `/<code>` prefix) from the caller `ctx` (a `Context`), with `headers` and
   * `body` (bytes or text).
   */
  request(ctx, method, pathAndQuery, { headers = [], body = new Uint8Array() } = {}) {
    const at = pathAndQuery.indexOf('?');
    const path = at < 0 ? pathAndQuery : pathAndQuery.slice(0, at);
    const query = at < 0 ? '' : pathAndQuery.slice(at + 1);
    const caller = callerOf(ctx);
    const request = {
      method,
      path,
      query,
      headers: headers.map(([name, value]) => [name, value]),
      body: typeof body === 'string' ? utf8Encode(body) : Uint8Array.from(body),
    };
    const outcome = this.call(
      ctx.tenantId,
      ctx.userId,
      () => this.guest.handle(caller, request),
      (response) => response.status >= 200 && response.status < 400,
    );
    if (outcome.error !== undefined) {
      const message = reasonOf(outcome.error);
      return new TestResponse(500, [['content-type', 'application/json']], utf8Encode(JSON.stringify({ message })));
    }
    const { status, headers: answered, body: bytes } = outcome.value;
    return new TestResponse(status, answered.map(([name, value]) => [name, value]), Uint8Array.from(bytes));
  }

  /** `GET pathAndQuery`. */
  get(ctx, pathAndQuery) {
    return this.request(ctx, 'GET', pathAndQuery);
  }

  /** `DELETE pathAndQuery`. */
  delete(ctx, pathAndQuery) {
    return this.request(ctx, 'DELETE', pathAndQuery);
  }

  withJson(ctx, method, pathAndQuery, value) {
    return this.request(ctx, method, pathAndQuery, {
      headers: [['content-type', 'application/json']],
      body: utf8Encode(JSON.stringify(value)),
    });
  }

  /** `POST pathAndQuery` with `value` as JSON. */
  post(ctx, pathAndQuery, value) {
    return this.withJson(ctx, 'POST', pathAndQuery, value);
  }

  /** `PATCH pathAndQuery` with `value` as JSON. */
  patch(ctx, pathAndQuery, value) {
    return this.withJson(ctx, 'PATCH', pathAndQuery, value);
  }

  /** `PUT pathAndQuery` with `value` as JSON. */
  put(ctx, pathAndQuery, value) {
    return this.withJson(ctx, 'PUT', pathAndQuery, value);
  }

  /**
   * Delivers `event` to `on-event`, as the host delivers an event the engine subscribed to:
   * `{id, eventType, tenantId, payload (object or text), occurredAt?, actorId?,
   * correlationId?}`. Throws `CallFailed` when the engine answers `err`.
   */
  deliver({ id, eventType, tenantId, payload = {}, occurredAt = '2026-01-01T00:00:00.000000Z', actorId = undefined, correlationId = 'test' }) {
    const event = {
      id,
      eventType,
      tenantId,
      occurredAt,
      actorId,
      correlationId,
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    };
    this.lifecycle(tenantId, () => this.guest.onEvent(event));
  }

  /**
   * Runs the jobs due at `nowUnixMs` (in the order they are due), each a call of its own: a
   * job that succeeds is gone, one that fails stays with its attempt counted. Returns each
   * job run with its outcome: `[{job, ok, error?}]`.
   */
  runDueJobs(nowUnixMs = Date.now()) {
    const due = this.fake.jobs.filter((job) => job.atUnixMs <= nowUnixMs).sort((a, b) => a.atUnixMs - b.atUnixMs);
    const ran = [];
    for (const job of due) {
      const attempt = job.attempt + 1;
      const outcome = this.call(
        job.tenantId,
        undefined,
        () => this.guest.runJob({ id: job.id, tenantId: job.tenantId, payload: Uint8Array.from(job.payload), attempt }),
        () => true,
      );
      if (outcome.error === undefined) {
        this.fake.jobs = this.fake.jobs.filter((held) => held.id !== job.id);
        ran.push({ job: { ...job }, ok: true });
      } else {
        const held = this.fake.jobs.find((candidate) => candidate.id === job.id);
        if (held) held.attempt = attempt;
        ran.push({ job: { ...job }, ok: false, error: reasonOf(outcome.error) });
      }
    }
    return ran;
  }

  /** The jobs scheduled and not run (or failed) yet: `{id, tenantId, atUnixMs, payload, attempt}`. */
  jobs() {
    return this.fake.jobs.map((job) => ({ ...job }));
  }

  /** The events the engine published and committed, in order: `{tenantId, eventType, payload, actorId}`. */
  published() {
    return this.fake.published.map((event) => ({ ...event }));
  }

  /**
   * The realtime events the engine published and committed (`publish`, `publishToUser`), in
   * order: `{tenantId, topic, userId, eventType, data}` (`userId` set when only that user's
   * subscriptions hear it).
   */
  realtimeEvents() {
    return this.fake.realtimeSent
      .filter((sent) => sent.kind === 'event')
      .map(({ tenantId, topic, userId, eventType, data }) => ({ tenantId, topic, userId, eventType, data }));
  }

  /** The subscriptions the engine ended and committed (`endSubscriptions`): `{tenantId, topic, userId}`. */
  endedSubscriptions() {
    return this.fake.realtimeSent
      .filter((sent) => sent.kind === 'end')
      .map(({ tenantId, topic, userId }) => ({ tenantId, topic, userId }));
  }

  /** Forgets the realtime events and ended subscriptions captured so far. */
  clearRealtime() {
    this.fake.realtimeSent = [];
  }

  /** The outbound requests the engine made. */
  outboundRequests() {
    return [...this.fake.requests];
  }

  /** The mail the engine handed to the relay. */
  mails() {
    return [...this.fake.mails];
  }

  /** What the engine logged: `{level, message}`. */
  logs() {
    return [...this.fake.logs];
  }

  /** The committed bytes under `key` in `tenantId`'s storage, or `undefined`. */
  stored(tenantId, key) {
    const bytes = this.fake.tenants.get(tenantId)?.entries.get(key);
    return bytes === undefined ? undefined : Uint8Array.from(bytes);
  }

  /** The committed JSON value under `key`, or `undefined`. */
  storedJson(tenantId, key) {
    const bytes = this.stored(tenantId, key);
    return bytes === undefined ? undefined : JSON.parse(utf8Decode(bytes));
  }

  /** The committed keys of `tenantId`'s storage under `prefix`, in order. */
  storedKeys(tenantId, prefix = '') {
    const entries = this.fake.tenants.get(tenantId)?.entries;
    if (!entries) return [];
    return [...entries.keys()].filter((key) => key.startsWith(prefix)).sort(compareCodePoints);
  }

  /** The committed blob under `key` in `tenantId`. */
  blob(tenantId, key) {
    const bytes = this.fake.tenants.get(tenantId)?.blobs.get(key);
    return bytes === undefined ? undefined : Uint8Array.from(bytes);
  }

  /**
   * Runs `fn` as a call of the engine in `tenantId` (its unit commits when `fn` returns): for
   * tests of an engine's own functions that use the host imports directly. Returns what `fn`
   * returned; rethrows what it threw.
   */
  inCall(tenantId, fn) {
    const outcome = this.call(
      tenantId,
      undefined,
      () => {
        beginCall();
        return fn();
      },
      () => true,
    );
    if (outcome.error !== undefined) throw outcome.error;
    return outcome.value;
  }
}
