// The glue between an engine (a plain object, see `defineEngine`) and the component's `guest`
// export, with the defaults of the Rust SDK's `Engine` trait (`engines/sdk/src/engine.rs`):
// the component entry says `export const guest = exportGuest(engine)`.
//
// Every export catches what the engine throws: an exception escaping an export is a trap (the
// host answers 502 and logs only "wasm `unreachable`"; stdout and stderr are discarded), so
// `handle` logs the stack through the `log` import and answers 500 `Server Error.`, a
// lifecycle, event or job hook that throws fails its call with `err(message)` (nothing it
// buffered commits; a job is retried), and `authorizeSubscription` that throws refuses (logged).

import { utf8Decode } from './bytes.js';
import { Context } from './context.js';
import { beginCall, log, reasonOf, storage } from './host.js';
import { Response } from './http.js';
import { ApiError, Request } from './request.js';
import { forgetUser, recordTenant, recordUser } from './tenancy.js';
import { MESSAGE_SERVER_ERROR, ValidationErrors } from './wire.js';

const SETTING_KINDS = ['text', 'integer', 'boolean', 'integer-list'];
const PERMISSIONS = ['send-mail'];

/** A job the engine scheduled, now due. */
export class Job {
  constructor({ id, tenantId, payload, attempt }) {
    this.id = id;
    this.tenantId = tenantId;
    /** The payload given to `schedule` (bytes). */
    this.payload = payload;
    /** 1 on the first run; higher when a previous run failed or the host stopped mid-run. */
    this.attempt = attempt;
  }

  /** The payload as UTF-8 text. */
  text() {
    return utf8Decode(this.payload);
  }

  /** The payload parsed as JSON. */
  json() {
    return JSON.parse(this.text());
  }
}

/** An event from the host's bus; `payload` is the parsed JSON object (text when not JSON). */
export class Event {
  constructor({ id, eventType, tenantId, occurredAt, actorId, correlationId, payload }) {
    this.id = id;
    this.eventType = eventType;
    this.tenantId = tenantId;
    /** RFC 3339 UTC. */
    this.occurredAt = occurredAt;
    this.actorId = actorId ?? undefined;
    this.correlationId = correlationId;
    let parsed = payload;
    if (typeof payload === 'string') {
      try {
        parsed = JSON.parse(payload);
      } catch {
        parsed = payload;
      }
    }
    this.payload = parsed;
  }
}

/** What a failing export throws: componentize-js answers `err` with its `payload`. */
class GuestError extends Error {
  constructor(message) {
    super(message);
    this.name = 'GuestError';
    Object.defineProperty(this, 'payload', { value: message, enumerable: true });
  }
}

/**
 * Checks an engine definition and fills in its defaults:
 *
 * - `descriptor`: `{code, name, version, requiresTenantProvision?, requiresUserProvision?,
 *   subscriptions?, outboundHosts?}`;
 * - `router`: a `Router` (answers `handle` and describes the API), `schemas`: the named JSON
 *   Schemas its operations refer to;
 * - `settings`: `[{name, kind, defaultValue?, description, secret?}]`, `permissions`:
 *   `['send-mail']`;
 * - `topics`: the realtime topic patterns the engine owns (`describe-topics`), named without
 *   the engine code: dot-separated segments of ASCII letters, digits, `_` and `-`, a segment
 *   `*` matching any one (`['conversation.*', 'me']`; clients subscribe to `<code>.<topic>`);
 * - hooks, each optional: `handle(ctx, request)`, `authorizeSubscription(ctx, topic)` (whether
 *   the caller may subscribe to one of `topics`; anything but `true` refuses; default: deny),
 *   `provisionTenant(tenant)`, `deprovisionTenant(tenantId)`, `provisionUser(user)`,
 *   `deprovisionUser(tenantId, userId)`, `onEvent(event)`, `runJob(job)`. A hook fails its
 *   call by throwing.
 */
export function defineEngine(engine) {
  const descriptor = engine.descriptor;
  if (!descriptor || !descriptor.code || !descriptor.name || !descriptor.version) {
    throw new TypeError('an engine has a descriptor with code, name and version');
  }
  for (const setting of engine.settings ?? []) {
    if (!SETTING_KINDS.includes(setting.kind)) {
      throw new TypeError(`setting ${setting.name}: kind is one of ${SETTING_KINDS.join(', ')}`);
    }
  }
  for (const permission of engine.permissions ?? []) {
    if (!PERMISSIONS.includes(permission)) throw new TypeError(`unknown permission ${permission}`);
  }
  if (!Array.isArray(engine.topics ?? []) || (engine.topics ?? []).some((topic) => typeof topic !== 'string')) {
    throw new TypeError('topics is a list of topic patterns (strings)');
  }
  return engine;
}

/** The defaults of the lifecycle hooks (as the Rust SDK's `Engine` trait). */
export const DEFAULT_HOOKS = {
  /** Records the tenant under `tenant`. */
  provisionTenant(tenant) {
    recordTenant(tenant);
  },
  /** Deletes all of the engine's storage for the tenant. */
  deprovisionTenant() {
    storage.deletePrefix('');
  },
  /** Records the user under `users/<user_id>`. */
  provisionUser(user) {
    recordUser(user);
  },
  /** Removes `users/<user_id>` and everything under it. */
  deprovisionUser(tenantId, userId) {
    forgetUser(userId);
  },
  onEvent() {},
  runJob() {},
  /** Denies every subscription. */
  authorizeSubscription() {
    return false;
  },
};

function describeError(error) {
  if (!(error instanceof Error)) return reasonOf(error);
  // V8 starts the stack with the message; SpiderMonkey (the component) does not.
  const head = `${error.name}: ${error.message}`;
  const stack = String(error.stack ?? '').trimEnd();
  return stack.startsWith(head) ? stack : `${head}\n${stack}`;
}

function isThenable(value) {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.then === 'function';
}

function toWit(response) {
  return { status: response.status, headers: response.headers.map(([name, value]) => [String(name), String(value)]), body: response.body };
}

function serverError() {
  return toWit(Response.error(500, MESSAGE_SERVER_ERROR));
}

/** The engine's answer as the WIT `response`, or a logged 500 when it is not one. */
function answer(response) {
  if (isThenable(response)) {
    log.error('request failed: the handler returned a Promise; handlers are synchronous');
    return serverError();
  }
  if (!(response instanceof Response)) {
    const shaped = response && Number.isInteger(response.status) && Array.isArray(response.headers ?? []);
    if (!shaped) {
      log.error(`request failed: the handler returned ${typeof response}, not a Response`);
      return serverError();
    }
    response = new Response(response.status, response.headers ?? [], response.body);
  }
  if (!Number.isInteger(response.status) || response.status < 100 || response.status > 999) {
    log.error(`request failed: the handler answered status ${response.status}`);
    return serverError();
  }
  return toWit(response);
}

/**
 * The object the component exports as `guest` (`export const guest = exportGuest(engine)`):
 * the WIT functions in componentize-js's shapes, over the engine's hooks and router.
 */
export function exportGuest(definition) {
  const engine = defineEngine(definition);
  const hooks = { ...DEFAULT_HOOKS };
  for (const name of Object.keys(DEFAULT_HOOKS)) {
    if (typeof engine[name] === 'function') hooks[name] = engine[name].bind(engine);
  }
  let api;

  /** Runs a lifecycle, event or job hook: `ok` when it returns, `err(message)` when it throws. */
  function run(name, ...args) {
    beginCall();
    let result;
    try {
      result = hooks[name](...args);
    } catch (error) {
      const reason = reasonOf(error);
      if (!(error instanceof ApiError) && !(error instanceof ValidationErrors)) {
        log.error(`${name} failed: ${describeError(error)}`);
      }
      throw new GuestError(reason);
    }
    if (isThenable(result)) {
      log.error(`${name} returned a Promise; hooks are synchronous`);
      throw new GuestError(`${name} returned a Promise; hooks are synchronous`);
    }
  }

  return {
    describe() {
      const d = engine.descriptor;
      return {
        code: d.code,
        name: d.name,
        version: d.version,
        requiresTenantProvision: Boolean(d.requiresTenantProvision),
        requiresUserProvision: Boolean(d.requiresUserProvision),
        subscriptions: [...(d.subscriptions ?? [])],
        outboundHosts: [...(d.outboundHosts ?? [])],
      };
    },

    describeApi() {
      api ??= engine.router ? JSON.stringify(engine.router.openapi(engine.schemas ?? {})) : '{}';
      return api;
    },

    describeSettings() {
      return (engine.settings ?? []).map((setting) => ({
        name: setting.name,
        kind: setting.kind,
        defaultValue: setting.defaultValue ?? undefined,
        description: setting.description ?? '',
        secret: Boolean(setting.secret),
      }));
    },

    describePermissions() {
      return [...(engine.permissions ?? [])];
    },

    describeTopics() {
      return [...(engine.topics ?? [])];
    },

    authorizeSubscription(caller, topic) {
      beginCall();
      try {
        const allowed = hooks.authorizeSubscription(new Context(caller), topic);
        if (isThenable(allowed)) {
          log.error('authorizeSubscription returned a Promise; hooks are synchronous');
          return false;
        }
        return allowed === true;
      } catch (error) {
        try {
          log.error(`authorizeSubscription ${topic} failed: ${describeError(error)}`);
        } catch {
          // Refused either way.
        }
        return false;
      }
    },

    handle(caller, request) {
      beginCall();
      try {
        const ctx = new Context(caller);
        const plain = new Request(request.method, request.path, request.query, request.headers, request.body);
        let response;
        if (typeof engine.handle === 'function') response = engine.handle(ctx, plain);
        else if (engine.router) response = engine.router.handle(ctx, plain.method, plain.path, plain);
        else response = Response.error(404, 'Not found.');
        return answer(response);
      } catch (error) {
        if (error instanceof ValidationErrors) return toWit(Response.invalid(error));
        if (error instanceof ApiError) return toWit(Response.error(error.status, error.message));
        try {
          log.error(`request failed: ${describeError(error)}`);
        } catch {
          // Nothing more to do: the answer is a 500 either way.
        }
        return serverError();
      }
    },

    provisionTenant(tenant) {
      run('provisionTenant', { tenantId: tenant.tenantId, tenantShortId: tenant.tenantShortId, name: tenant.name });
    },

    deprovisionTenant(tenantId) {
      run('deprovisionTenant', tenantId);
    },

    provisionUser(user) {
      run('provisionUser', {
        tenantId: user.tenantId,
        userId: user.userId,
        email: user.email,
        firstName: user.firstName,
        lastName: user.lastName,
        userType: user.userType,
      });
    },

    deprovisionUser(tenantId, userId) {
      run('deprovisionUser', tenantId, userId);
    },

    onEvent(event) {
      run('onEvent', new Event(event));
    },

    runJob(job) {
      run('runJob', new Job(job));
    },
  };
}
