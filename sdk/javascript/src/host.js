// Typed wrappers of every import of the world `tessera:engine/engine@0.3.0`, over a swappable
// backend: inside the component the real WIT imports (`in-component.js` binds them), in tests the
// in-memory fakes of the test kit. The backend has componentize-js's shapes: an interface per
// key (`storage`, `blobs`, `scheduler`, `events`, `realtime`, `outboundHttp`, `vault`,
// `settings`, `mailTransport`, `log`) with camelCase functions, `Uint8Array` for `list<u8>`, `bigint` for
// 64-bit integers, `undefined` for `none`, and an `err` thrown with the string in `.payload`.
// The wrappers take and give plain numbers and text too, and throw a `HostError` naming the
// operation when the host answers `err`.
//
// Each import is scoped by the host to this engine and the tenant of the current call; what a
// call writes, publishes and schedules commits when it succeeds (see `wit/engine.wit`).

import { toBytes, toOptionalBytes, utf8Decode, utf8Encode } from './bytes.js';

let current = undefined;

/** Binds the wrappers to `backend` (the WIT imports, or the test kit's fakes). */
export function setBackend(backend) {
  current = backend;
}

/** The backend in use, or `undefined`. */
export function getBackend() {
  return current;
}

function backend() {
  if (!current) {
    throw new HostError(
      'host',
      'no host: inside the component, import the kit from its component entry; in tests, drive the engine through TestHost',
    );
  }
  return current;
}

/** A host import answered `err` (or a stored value could not be decoded). */
export class HostError extends Error {
  constructor(operation, reason) {
    super(`${operation} failed: ${reason}`);
    this.name = 'HostError';
    this.operation = operation;
    this.reason = reason;
  }
}

/** The reason an import's `err` carries (componentize-js puts it in `.payload`). */
export function reasonOf(error) {
  if (error && typeof error === 'object' && Object.prototype.hasOwnProperty.call(error, 'payload')) {
    return String(error.payload);
  }
  if (error instanceof Error) return error.message;
  return String(error);
}

function call(operation, interfaceName, functionName, ...args) {
  const api = backend()[interfaceName];
  try {
    return api[functionName](...args);
  } catch (error) {
    if (error instanceof HostError) throw error;
    throw new HostError(operation, reasonOf(error));
  }
}

function u64(value, what) {
  if (typeof value === 'bigint') return value;
  if (!Number.isInteger(value) || value < 0) throw new TypeError(`${what} must be a non-negative integer, not ${value}`);
  return BigInt(value);
}

function s64(value, what) {
  if (typeof value === 'bigint') return value;
  if (!Number.isInteger(value)) throw new TypeError(`${what} must be an integer, not ${value}`);
  return BigInt(value);
}

function u32(value, what) {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) {
    throw new TypeError(`${what} must be an unsigned 32-bit integer, not ${value}`);
  }
  return value;
}

function count(value) {
  return typeof value === 'bigint' ? Number(value) : value;
}

function jsonBytes(operation, key, value) {
  let text;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new HostError(operation, `${key}: ${reasonOf(error)}`);
  }
  if (text === undefined) throw new HostError(operation, `${key}: the value has no JSON`);
  return utf8Encode(text);
}

/** Decodes the JSON value read under `key`; the error names the key. */
export function decodeJson(key, bytes) {
  try {
    return JSON.parse(utf8Decode(bytes, true));
  } catch (error) {
    throw new HostError('storage.decode', `${key}: ${reasonOf(error)}`);
  }
}

function jobs(list) {
  return (list ?? []).map(([at, payload]) => [u64(at, 'a job time'), toBytes(payload)]);
}

/** The default limits of scans, when the host does not say (`storage.scan-page`, `-budget`). */
export const DEFAULT_SCAN_LIMITS = Object.freeze({ page: 1000, budget: 10000 });

let scanned = 0;
let limits = undefined;

/** Starts a new call's count of scanned entries (the guest glue calls it for every call). */
export function beginCall() {
  scanned = 0;
}

/** Forgets the host's scan limits read so far (the test kit, when a test changes them). */
export function resetScanLimits() {
  limits = undefined;
}

function positiveSetting(name, fallback) {
  const value = settings.get(name);
  const number = value === undefined ? NaN : Number(value);
  return Number.isInteger(number) && number >= 0 ? number : fallback;
}

/** Write `KEEP` or `DELETE` from `storage.updateJson`'s `change` to keep or remove the key. */
const KEEP = Symbol('keep');
const DELETE = Symbol('delete');

/** Most rounds `updateJson` tries before giving up on a key that keeps changing. */
const UPDATE_ROUNDS = 64;

/**
 * Several writes committed together on conditions, with counters: the host's `transact`.
 * `commit()` writes everything when every expected key still holds what was read and returns
 * the scheduled jobs' ids, or returns `null` (nothing written) when one did not.
 */
export class Transaction {
  constructor() {
    this.expected = [];
    this.sets = [];
    this.deletes = [];
    this.adds = [];
    this.jobList = [];
  }

  /** Commits only if `key` holds exactly `value` (`undefined`: absent) at commit time. */
  expect(key, value) {
    this.expected.push([key, toOptionalBytes(value)]);
    return this;
  }

  /** Stores `value` (bytes or text) under `key`. */
  set(key, value) {
    this.sets.push([key, toBytes(value)]);
    return this;
  }

  /** Stores `value` as JSON under `key`. */
  setJson(key, value) {
    this.sets.push([key, jsonBytes('storage.encode', key, value)]);
    return this;
  }

  /** Removes `key` (after the sets). */
  delete(key) {
    this.deletes.push(key);
    return this;
  }

  /** Adds `amount` to the counter under `key` (read it with `storage.counter`). */
  add(key, amount) {
    if (amount !== 0 && amount !== 0n) this.adds.push([key, s64(amount, 'a counter amount')]);
    return this;
  }

  /** Schedules `payload` (bytes, text) for `atUnixMs` if the transaction commits. */
  job(atUnixMs, payload) {
    this.jobList.push([atUnixMs, payload]);
    return this;
  }

  /** Schedules `payload` as JSON for `atUnixMs` if the transaction commits. */
  jobJson(atUnixMs, payload) {
    return this.job(atUnixMs, jsonBytes('scheduler.encode', 'job', payload));
  }

  /** True when it would write, count or schedule nothing. */
  isEmpty() {
    return !this.sets.length && !this.deletes.length && !this.adds.length && !this.jobList.length;
  }

  /** Writes it all: the job ids; or `null`, nothing written, when an expected key differs. */
  commit() {
    const ids = call('storage.transact', 'storage', 'transact', {
      expect: this.expected,
      sets: this.sets,
      deletes: this.deletes,
      add: this.adds,
      jobs: jobs(this.jobList),
    });
    return ids === undefined || ids === null ? null : [...ids];
  }
}

/** Durable key-value storage scoped to (engine, tenant of the call); keys ordered byte-wise. */
export const storage = {
  KEEP,
  DELETE,
  Transaction,

  /** The bytes under `key`, or `undefined`. */
  get(key) {
    return call('storage.get', 'storage', 'get', key) ?? undefined;
  },

  /** The JSON value under `key`, or `undefined`. */
  getJson(key) {
    const bytes = storage.get(key);
    return bytes === undefined ? undefined : decodeJson(key, bytes);
  },

  /** The bytes under each of `keys` (at most 1000), in order, `undefined` where absent. */
  getMany(keys) {
    return [...call('storage.get-many', 'storage', 'getMany', keys)].map((value) => value ?? undefined);
  },

  /** Like `getMany`, each value decoded from JSON. */
  getManyJson(keys) {
    return storage.getMany(keys).map((bytes, index) => (bytes === undefined ? undefined : decodeJson(keys[index], bytes)));
  },

  /** True when `key` exists. */
  exists(key) {
    return storage.get(key) !== undefined;
  },

  /** Stores `value` (bytes or text) under `key`. */
  set(key, value) {
    call('storage.set', 'storage', 'set', key, toBytes(value));
  },

  /** Stores `value` as JSON under `key`. */
  putJson(key, value) {
    call('storage.set', 'storage', 'set', key, jsonBytes('storage.encode', key, value));
  },

  /** Removes `key`; true when it existed. */
  delete(key) {
    return call('storage.delete', 'storage', 'delete', key);
  },

  /** Removes every entry whose key starts with `prefix` (`""`: all); returns how many. */
  deletePrefix(prefix) {
    return count(call('storage.delete-prefix', 'storage', 'deletePrefix', prefix));
  },

  /**
   * Replaces the value under `key` only when it is `expected` (`undefined`: absent); `value`
   * `undefined` deletes it. True when it did (a synchronisation point: committed at once with
   * everything the call wrote before); false when the current value differs.
   */
  compareAndSwap(key, expected, value) {
    return call(
      'storage.compare-and-swap',
      'storage',
      'compareAndSwap',
      key,
      toOptionalBytes(expected),
      toOptionalBytes(value),
    );
  },

  /**
   * Writes `sets` (`[key, bytes or text]`), removes `deletes` and schedules `jobs`
   * (`[atUnixMs, payload]`) in the call's unit; returns the job ids in order.
   */
  writeBatch(sets = [], deletes = [], jobList = []) {
    const ids = call(
      'storage.write-batch',
      'storage',
      'writeBatch',
      sets.map(([key, value]) => [key, toBytes(value)]),
      deletes,
      jobs(jobList),
    );
    return [...ids];
  },

  /** A `[key, bytes]` entry of `value` as JSON, for `writeBatch`. */
  jsonEntry(key, value) {
    return [key, jsonBytes('storage.encode', key, value)];
  },

  /** Commits what this call wrote, published and scheduled so far, now (an empty transact). */
  commitNow() {
    new Transaction().commit();
  },

  /** The counter under `key` that `Transaction.add` keeps (absent: 0). */
  counter(key) {
    return storage.getJson(key) ?? 0;
  },

  /**
   * Read-modify-write of the JSON value under `key` that loses no concurrent update:
   * `change(current)` (`undefined` when absent) returns the value to store, `storage.KEEP` or
   * `storage.DELETE`; written with compare-and-swap, starting again when another call changed
   * the key in between. Returns what was decided in the round that won.
   */
  updateJson(key, change) {
    for (let round = 0; round < UPDATE_ROUNDS; round += 1) {
      const before = storage.get(key);
      const decision = change(before === undefined ? undefined : decodeJson(key, before));
      if (decision === KEEP) return decision;
      if (decision === DELETE) {
        if (before === undefined || storage.compareAndSwap(key, before, undefined)) return decision;
        continue;
      }
      if (storage.compareAndSwap(key, before, jsonBytes('storage.encode', key, decision))) return decision;
    }
    throw new HostError('storage.update', `${key} kept changing; gave up after ${UPDATE_ROUNDS} rounds`);
  },

  /** The host's scan limits: `{page, budget}` (read once per instance). */
  scanLimits() {
    limits ??= {
      page: positiveSetting('storage.scan-page', DEFAULT_SCAN_LIMITS.page),
      budget: positiveSetting('storage.scan-budget', DEFAULT_SCAN_LIMITS.budget),
    };
    return limits;
  },

  /** How many more entries this call may scan. */
  scanBudgetLeft() {
    return Math.max(0, storage.scanLimits().budget - scanned);
  },

  /**
   * Entries `[key, bytes]` under `prefix` in key order (descending when `reverse`), strictly
   * after (before, when `reverse`) `after`: at most `limit`, a page, and what this call's
   * budget has left; `exhausted` when the prefix has no more. Continue with `after` = the last
   * key. Throws `scan budget exhausted` when the budget has nothing left.
   */
  scan(prefix, { after = undefined, limit = DEFAULT_SCAN_LIMITS.page, reverse = false } = {}) {
    const { page, budget } = storage.scanLimits();
    const allowed = Math.min(limit, page, Math.max(0, budget - scanned));
    // With nothing left, the host answers its own error.
    const asked = u32(allowed === 0 ? limit : allowed, 'a scan limit');
    const entries = [...call('storage.scan', 'storage', 'scan', prefix, after ?? undefined, asked, reverse)].map(
      ([key, value]) => [key, value],
    );
    scanned += entries.length;
    return { entries, exhausted: entries.length < asked };
  },

  /** Like `scan`, each value decoded from JSON. */
  scanJson(prefix, options = {}) {
    const { entries, exhausted } = storage.scan(prefix, options);
    return { entries: entries.map(([key, bytes]) => [key, decodeJson(key, bytes)]), exhausted };
  },

  /** The entries of one `scan` (fewer than `limit` do not by themselves mean the end). */
  list(prefix, options = {}) {
    return storage.scan(prefix, options).entries;
  },

  /**
   * One page of the JSON values under `prefix` for a `CursorPage` whose positions are keys:
   * `{items: [[key, value]], meta}` (a short page with `has_more` when the scan was cut).
   */
  pageJson(prefix, page, { reverse = false } = {}) {
    const { entries, exhausted } = storage.scanJson(prefix, {
      after: page.after ?? undefined,
      limit: page.fetchLimit(),
      reverse,
    });
    const stoppedAfter = !exhausted && entries.length > 0 ? entries[entries.length - 1][0] : undefined;
    return page.finishFound(entries, ([key]) => key, stoppedAfter);
  },
};

/** Binary content (files), scoped like storage; written and read whole. */
export const blobs = {
  /**
   * Stores `content` under `key` and writes `sets` to storage, in the call's unit, unless the
   * engine's blobs of the tenant would then exceed `quotaBytes`: true when stored.
   */
  put(key, content, { quotaBytes = undefined, sets = [] } = {}) {
    return call(
      'blobs.put',
      'blobs',
      'put',
      key,
      toBytes(content),
      quotaBytes === undefined || quotaBytes === null ? undefined : u64(quotaBytes, 'a quota'),
      sets.map(([setKey, value]) => [setKey, toBytes(value)]),
    );
  },

  /** The blob under `key`, or `undefined`. */
  get(key) {
    return call('blobs.get', 'blobs', 'get', key) ?? undefined;
  },

  /** Removes the blobs `keys` and the storage entries `deletes`; how many blobs existed. */
  delete(keys, deletes = []) {
    return count(call('blobs.delete', 'blobs', 'delete', keys, deletes));
  },

  /** Removes every blob whose key starts with `prefix`; how many. */
  deletePrefix(prefix) {
    return count(call('blobs.delete-prefix', 'blobs', 'deletePrefix', prefix));
  },

  /** The bytes this engine's blobs take in the tenant. */
  usage() {
    return count(call('blobs.usage', 'blobs', 'usage'));
  },
};

/** The durable scheduler: a job is delivered to `runJob` at or after its time. */
export const scheduler = {
  /** Schedules `payload` (bytes or text) for `atUnixMs`; returns the job id. */
  schedule(atUnixMs, payload) {
    return call('scheduler.schedule', 'scheduler', 'schedule', u64(atUnixMs, 'a job time'), toBytes(payload));
  },

  /** Schedules `payload` as JSON (read it back with `job.json()`). */
  scheduleJson(atUnixMs, payload) {
    return scheduler.schedule(atUnixMs, jsonBytes('scheduler.encode', 'job', payload));
  },

  /** Cancels a job; true when it was still pending. */
  cancel(jobId) {
    return call('scheduler.cancel', 'scheduler', 'cancel', jobId);
  },
};

/** Publishing to the host's event bus, as the tenant of the current call. */
export const events = {
  /** Publishes an event of `eventType` whose payload is `payload` (an object) as JSON. */
  publish(eventType, payload) {
    const text = typeof payload === 'string' ? payload : utf8Decode(jsonBytes('events.encode', eventType, payload));
    call('events.publish', 'events', 'publish', eventType, text);
  },
};

function realtimeData(operation, data) {
  if (typeof data === 'string') return data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new HostError(operation, "a realtime event's data is a JSON object");
  }
  return utf8Decode(jsonBytes('realtime.encode', 'data', data));
}

/**
 * Realtime: events pushed to the clients subscribed to the engine's topics (CONTRACT §9). A
 * topic is named without the engine code (`conversation.c1`; clients subscribe to
 * `chat.conversation.c1`) and must match a pattern of the engine's `topics`. What a call
 * publishes is part of its unit of work: delivered if and only if the call commits, in order.
 * `data` is an object (as JSON, at most 64 KiB).
 */
export const realtime = {
  /** The most bytes of one event's `data` (as JSON text). */
  MAX_DATA_BYTES: 64 * 1024,

  /** Publishes an event of `eventType` with `data` to every subscriber of `topic`. */
  publish(topic, eventType, data) {
    const text = realtimeData('realtime.publish', data);
    call('realtime.publish', 'realtime', 'publish', topic, eventType, text);
  },

  /** As `publish`, to the subscribers of `topic` who are `userId` only (chat's `me`). */
  publishToUser(userId, topic, eventType, data) {
    const text = realtimeData('realtime.publish-to-user', data);
    call('realtime.publish-to-user', 'realtime', 'publishToUser', userId, topic, eventType, text);
  },

  /**
   * Ends `userId`'s subscriptions to `topic` when the call commits (each gets an `error` frame
   * with status 403); a later subscription asks `authorizeSubscription` again.
   */
  endSubscriptions(topic, userId) {
    call('realtime.end-subscriptions', 'realtime', 'endSubscriptions', topic, userId);
  },
};

/** The default timeout of an outbound request. */
export const DEFAULT_TIMEOUT_MS = 10000;

/** Outbound HTTP through the host's policy. */
export const outboundHttp = {
  /**
   * Sends `{method, url, headers?, body?, timeoutMs?}` (a `json` field is sent as the JSON
   * body); throws a `HostError` when no HTTP response was obtained. Any status is an answer:
   * `{status, headers, body, elapsedMs, ok, text(), json()}`.
   */
  fetch({ method = 'GET', url, headers = [], body = undefined, json = undefined, timeoutMs = DEFAULT_TIMEOUT_MS }) {
    const sentHeaders = headers.map(([name, value]) => [name, value]);
    let sentBody = toBytes(body);
    if (json !== undefined) {
      sentBody = jsonBytes('http.encode', url, json);
      if (!sentHeaders.some(([name]) => name.toLowerCase() === 'content-type')) {
        sentHeaders.push(['content-type', 'application/json']);
      }
    }
    const response = call('http.fetch', 'outboundHttp', 'fetch', {
      method: method.toUpperCase(),
      url,
      headers: sentHeaders,
      body: sentBody,
      timeoutMs: u32(timeoutMs, 'a timeout'),
    });
    const answer = {
      status: response.status,
      headers: response.headers.map(([name, value]) => [name, value]),
      body: response.body,
      elapsedMs: response.elapsedMs,
      ok: response.status >= 200 && response.status < 300,
      text: () => utf8Decode(answer.body),
      json: () => JSON.parse(utf8Decode(answer.body)),
    };
    return answer;
  },

  /** Checks, without sending anything, that `fetch` could reach `url`; throws why not. */
  checkTarget(url) {
    call('http.check-target', 'outboundHttp', 'checkTarget', url);
  },
};

/** Secrets at rest, bound to this engine and the tenant of the call. */
export const vault = {
  /** Encrypts `plaintext` (bytes or text). */
  seal(plaintext) {
    return call('vault.seal', 'vault', 'seal', toBytes(plaintext));
  },

  /** Decrypts what `seal` returned in this engine and tenant. */
  open(sealed) {
    return call('vault.open', 'vault', 'open', toBytes(sealed));
  },

  /** `open` as UTF-8 text. */
  openText(sealed) {
    return utf8Decode(vault.open(sealed));
  },
};

/** Operator settings: the engine's declared ones, and the host's (names with a dot). */
export const settings = {
  /** The setting `name`, or `undefined` when unset or not a setting. */
  get(name) {
    return backend().settings.get(name) ?? undefined;
  },

  /** The integer setting `name`, or `fallback` when unset or not an integer. */
  integer(name, fallback = undefined) {
    const value = settings.get(name);
    if (value === undefined || !/^[+-]?[0-9]+$/.test(value.trim())) return fallback;
    return Number(value.trim());
  },

  /** The boolean setting `name` (`true`/`false`), or `fallback`. */
  boolean(name, fallback = undefined) {
    const value = settings.get(name);
    if (value === 'true') return true;
    if (value === 'false') return false;
    return fallback;
  },
};

/** E-mail out through the operator's SMTP relay (for engines with the `send-mail` permission). */
export const mailTransport = {
  /** Hands `{sender, recipients, subject, text, messageId}` to the relay. */
  send({ sender, recipients, subject, text, messageId }) {
    call('mail-transport.send', 'mailTransport', 'send', { sender, recipients, subject, text, messageId });
  },
};

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'];

/** Logging into the host's tracing, tagged with the engine code and the correlation id. */
export const log = {
  /** Logs `message` at `level` (`trace`, `debug`, `info`, `warn`, `error`). */
  log(level, message) {
    if (!LEVELS.includes(level)) throw new TypeError(`unknown log level ${level}`);
    const text = String(message);
    if (current) current.log.log(level, text);
    else console.error(`[${level}] ${text}`);
  },
  trace: (message) => log.log('trace', message),
  debug: (message) => log.log('debug', message),
  info: (message) => log.log('info', message),
  warn: (message) => log.log('warn', message),
  error: (message) => log.log('error', message),
};
