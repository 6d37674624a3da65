// jsconformance: the `conformance` test engine (`tests/components/conformance`) in JavaScript,
// as `tests/polyglot/pyconformance` is in Python. It runs a script of host-import operations in
// one call, so one scenario runs through the real host and through the JavaScript kit's test
// kit (`run_fake.js`), and the transcripts can be compared.
//
// `POST /api/v1/script` `{"ops": [...], "status": 200}` runs each op in order and answers
// `status` with `{"data": [result, …]}`: an answer of 4xx or 5xx discards the unit, as on the
// host. Results hold no ids or times (job ids are kept under `id/…` keys, masked in dumps); a
// refused import is `{"error": true}`. `publish` sends `ping.conformance {n}`.

import {
  HostError,
  Response,
  Router,
  Transaction,
  blobs,
  bytesEqual,
  events,
  scheduler,
  settings,
  storage,
  utf8Decode,
  utf8Encode,
  vault,
} from './kit.js';

/** 2100-01-01, the time of a job whose op names none. */
const DEFAULT_AT = 4_102_444_800_000;

/** `value[name]` of a JSON object, else `undefined` (as serde_json's `value["name"]`: null). */
function field(value, name) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  return Object.prototype.hasOwnProperty.call(value, name) ? value[name] : undefined;
}

/** `value[index]` of a JSON array, else `undefined`. */
function item(value, index) {
  return Array.isArray(value) ? value[index] : undefined;
}

/** A JSON text, else `fallback` (`as_str().unwrap_or(fallback)`). */
function str(value, fallback = '') {
  return typeof value === 'string' ? value : fallback;
}

/** A JSON unsigned integer (`as_u64()`), else `undefined`. */
function u64(value) {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value < 2 ** 64 ? value : undefined;
}

/** A JSON signed integer (`as_i64()`), else `undefined`. */
function i64(value) {
  return typeof value === 'number' && Number.isInteger(value) && value >= -(2 ** 63) && value < 2 ** 63
    ? value
    : undefined;
}

function text(value) {
  return utf8Encode(str(value));
}

function optionalText(value) {
  return typeof value === 'string' ? utf8Encode(value) : undefined;
}

/** Bytes shown as UTF-8 text (invalid bytes replaced), `null` when absent. */
function shown(bytes) {
  return bytes === undefined || bytes === null ? null : utf8Decode(bytes);
}

function strings(value) {
  return Array.isArray(value) ? value.map((entry) => str(entry)) : [];
}

function pairs(value) {
  return Array.isArray(value) ? value.map((pair) => [str(item(pair, 0)), text(item(pair, 1))]) : [];
}

/** The op's `at` (Unix milliseconds), else 2100-01-01. */
function at(op) {
  return u64(field(op, 'at')) ?? DEFAULT_AT;
}

/** A 64-bit integer the host gave (a `bigint` inside the component) as a JSON number. */
function number(value) {
  return typeof value === 'bigint' ? Number(value) : value;
}

/** Every entry of the tenant (values of `id/…` keys masked) and the blobs' usage. */
function dump() {
  // No prototype: a key such as `__proto__` is an entry like any other.
  const entries = Object.create(null);
  let after;
  for (;;) {
    const scanned = storage.scan('', { after, limit: 100 });
    for (const [key, value] of scanned.entries) {
      entries[key] = key.startsWith('id/') ? '<id>' : shown(value);
    }
    if (scanned.entries.length > 0) after = scanned.entries[scanned.entries.length - 1][0];
    if (scanned.exhausted) break;
  }
  return { entries, blob_usage: number(blobs.usage()) };
}

/** Runs one op (its result as JSON); throws the `HostError` of a refused import. */
function run(op) {
  const name = str(field(op, 'op'));
  const key = () => str(field(op, 'key'));
  switch (name) {
    case 'get':
      return shown(storage.get(key()));
    case 'get_many':
      return storage.getMany(strings(field(op, 'keys'))).map(shown);
    case 'set':
      storage.set(key(), text(field(op, 'value')));
      return null;
    case 'delete':
      return storage.delete(key());
    case 'scan': {
      const limit = u64(field(op, 'limit')) ?? 100;
      const scanned = storage.scan(str(field(op, 'prefix')), {
        after: typeof field(op, 'after') === 'string' ? field(op, 'after') : undefined,
        // `as u32`, as the Rust engine.
        limit: Number(BigInt(limit) % 2n ** 32n),
        reverse: field(op, 'reverse') === true,
      });
      return { keys: scanned.entries.map(([entry]) => entry), exhausted: scanned.exhausted };
    }
    case 'delete_prefix':
      return number(storage.deletePrefix(str(field(op, 'prefix'))));
    case 'cas':
      return storage.compareAndSwap(key(), optionalText(field(op, 'expected')), optionalText(field(op, 'value')));
    case 'batch': {
      const count = u64(field(op, 'jobs')) ?? 0;
      const jobs = [];
      for (let n = 0; n < count; n += 1) jobs.push([at(op), utf8Encode(String(n))]);
      return storage.writeBatch(pairs(field(op, 'sets')), strings(field(op, 'deletes')), jobs).length;
    }
    case 'transact': {
      const transaction = new Transaction();
      for (const pair of Array.isArray(field(op, 'expect')) ? field(op, 'expect') : []) {
        transaction.expect(str(item(pair, 0)), optionalText(item(pair, 1)));
      }
      for (const [setKey, value] of pairs(field(op, 'sets'))) transaction.set(setKey, value);
      for (const deleted of strings(field(op, 'deletes'))) transaction.delete(deleted);
      for (const pair of Array.isArray(field(op, 'add')) ? field(op, 'add') : []) {
        transaction.add(str(item(pair, 0)), i64(item(pair, 1)) ?? 0);
      }
      return transaction.commit() !== null;
    }
    case 'publish':
      events.publish('ping.conformance', { n: field(op, 'n') ?? null });
      return null;
    case 'schedule': {
      const id = scheduler.schedule(at(op), utf8Encode('later'));
      storage.set(str(field(op, 'store_as'), 'id/job'), utf8Encode(id));
      return null;
    }
    case 'cancel': {
      const stored = storage.get(str(field(op, 'stored'), 'id/job')) ?? new Uint8Array();
      return scheduler.cancel(utf8Decode(stored));
    }
    case 'blob_put':
      return blobs.put(key(), text(field(op, 'content')), {
        quotaBytes: u64(field(op, 'quota')),
        sets: pairs(field(op, 'sets')),
      });
    case 'blob_get':
      return shown(blobs.get(key()));
    case 'blob_delete':
      return number(blobs.delete(strings(field(op, 'keys')), strings(field(op, 'deletes'))));
    case 'blob_usage':
      return number(blobs.usage());
    case 'setting':
      return settings.get(str(field(op, 'name'))) ?? null;
    case 'vault': {
      const plaintext = text(field(op, 'text'));
      const sealed = vault.seal(plaintext);
      return !bytesEqual(sealed, plaintext) && bytesEqual(vault.open(sealed), plaintext);
    }
    case 'dump':
      return dump();
    default:
      return { unknown_op: name };
  }
}

/** Runs one op; `{"error": true}` when the host refused it. */
function runOrRefused(op) {
  try {
    return run(op);
  } catch (error) {
    if (error instanceof HostError) return { error: true };
    throw error;
  }
}

function script(ctx, request) {
  // Any JSON body, as the Rust engine's `request.json()`: what is not an object runs no ops.
  const body = request.json();
  const ops = field(body, 'ops');
  const results = Array.isArray(ops) ? ops.map(runOrRefused) : [];
  const status = u64(field(body, 'status'));
  return Response.json(status === undefined ? 200 : status % 65536, { data: results });
}

const router = new Router().post('/api/v1/script', script);

export default {
  descriptor: {
    code: 'jsconformance',
    name: 'JavaScript conformance',
    version: '0.1.0',
    requiresTenantProvision: false,
  },
  router,
};
