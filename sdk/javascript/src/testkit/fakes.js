// In-memory fakes of every host import, in componentize-js's shapes (`Uint8Array`, `bigint`,
// `undefined` for `none`, `err` thrown with the reason in `.payload`), that the kit's wrappers
// call instead of the component's imports in tests. They keep the host's semantics
// (`wit/engine.wit`), as the Rust SDK's `engines/sdk/src/testkit/fakes.rs`: one call, one unit
// of work buffered over the committed state and committed only when the call succeeds;
// `compare-and-swap` and `transact` as synchronisation points; scans bounded by a page and a
// per-call budget; blob quotas; jobs, events and realtime publications in the unit; mail and
// outbound HTTP not undone.

import { bytesEqual, compareCodePoints, utf8Decode } from '../bytes.js';

/** An `err` of an import, as componentize-js throws it. */
export class ImportError extends Error {
  constructor(reason) {
    super(reason);
    this.name = 'ImportError';
    Object.defineProperty(this, 'payload', { value: reason, enumerable: true });
  }
}

function fail(reason) {
  throw new ImportError(reason);
}

function copy(bytes) {
  return bytes === undefined ? undefined : Uint8Array.from(bytes);
}

/** The host's limits of a job: a payload of at most 256 KiB, due before the year 10000. */
function checkJobs(jobs) {
  const MAX_PAYLOAD_BYTES = 256 * 1024;
  const YEAR_10000_MS = 253402300800000n;
  for (const [atUnixMs, payload] of jobs) {
    if (payload.length > MAX_PAYLOAD_BYTES) fail(`job payloads are at most ${MAX_PAYLOAD_BYTES} bytes`);
    if (BigInt(atUnixMs) >= YEAR_10000_MS) fail(`${atUnixMs} is not a time the scheduler accepts`);
  }
}

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

/** The committed state of one tenant, or the working copy of a call. */
class TenantState {
  constructor(entries = new Map(), blobs = new Map()) {
    this.entries = entries;
    this.blobs = blobs;
  }

  clone() {
    return new TenantState(new Map(this.entries), new Map(this.blobs));
  }
}

/** The host part of an `http(s)://` URL, or why it has none. */
function hostOf(url) {
  let rest;
  if (url.startsWith('https://')) rest = url.slice(8);
  else if (url.startsWith('http://')) rest = url.slice(7);
  else fail(`${url} is not an http(s) URL`);
  const authority = rest.split(/[/?#]/)[0];
  const host = authority.split('@').pop().split(':')[0];
  if (!host) fail(`${url} names no host`);
  return host;
}

/** True when `host` matches one of the engine's `outbound-hosts` patterns. */
function allowed(patterns, host) {
  const lower = host.toLowerCase();
  return patterns.some((pattern) => {
    // A pattern may carry a scheme and a port (`https://api.example.com:8443`): its host part.
    const bare = pattern.replace(/^[a-z]+:\/\//i, '').replace(/:(\d+|\*)$/, '');
    if (bare === '*' || bare.toLowerCase() === lower) return true;
    if (bare.startsWith('*.')) {
      const domain = bare.slice(2).toLowerCase();
      return lower.length > domain.length + 1 && lower.endsWith(`.${domain}`);
    }
    return false;
  });
}

const SEALED = new TextEncoder().encode('tessera-test-vault:');

/** The most bytes of a realtime event's `data`. */
const MAX_REALTIME_DATA_BYTES = 64 * 1024;

/** A segment of a topic: 1 to 64 ASCII letters, digits, `_` or `-`. */
function validSegment(segment) {
  return /^[A-Za-z0-9_-]{1,64}$/.test(segment);
}

function utf8Length(text) {
  return new TextEncoder().encode(text).length;
}

/**
 * A topic pattern's segments; throws when it is malformed (the host refuses to load an engine
 * declaring one).
 */
export function parseTopicPattern(pattern) {
  const segments = String(pattern).split('.');
  const valid = utf8Length(String(pattern)) <= 200 && segments.every((segment) => segment === '*' || validSegment(segment));
  if (!valid) throw new Error(`the topic pattern ${JSON.stringify(pattern)} is malformed`);
  return segments;
}

/** Whether `topic` (without the engine code) is one the parsed `patterns` match. */
export function topicMatches(patterns, topic) {
  const segments = String(topic).split('.');
  if (utf8Length(String(topic)) > 200 || !segments.every(validSegment)) return false;
  return patterns.some(
    (pattern) =>
      pattern.length === segments.length && pattern.every((expected, index) => expected === '*' || expected === segments[index]),
  );
}

/** An event type as the bus's: 1 to 100 lower-case letters, digits, `.`, `_`, `-`, a letter first. */
function checkEventType(eventType) {
  if (!/^[a-z][a-z0-9._-]{0,99}$/.test(eventType)) {
    fail(
      `${JSON.stringify(eventType)} is not an event type (1-100 lower-case letters, digits, '.', '_' or '-', starting with a letter)`,
    );
  }
}

function realtimeData(data) {
  const size = utf8Length(data);
  if (size > MAX_REALTIME_DATA_BYTES) {
    fail(`a realtime event's data is at most ${MAX_REALTIME_DATA_BYTES} bytes (${size} given)`);
  }
  let parsed;
  try {
    parsed = JSON.parse(data);
  } catch (error) {
    fail(`a realtime event's data is not JSON: ${error.message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    fail("a realtime event's data is a JSON object");
  }
  return parsed;
}

/** Everything the fakes hold: the committed state of every tenant and what the engine did. */
export class FakeHost {
  constructor() {
    /** @type {Map<string, TenantState>} */
    this.tenants = new Map();
    this.jobs = [];
    this.published = [];
    /**
     * What committed calls sent to the engine's realtime topics, in order: `{kind: 'event',
     * tenantId, topic, userId, eventType, data}` and `{kind: 'end', tenantId, topic, userId}`.
     */
    this.realtimeSent = [];
    /** The engine's topic patterns, parsed (`parseTopicPattern`). */
    this.topics = [];
    this.settings = new Map();
    this.outboundHosts = [];
    this.responses = [];
    this.requests = [];
    this.mailAllowed = false;
    this.mails = [];
    this.logs = [];
    this.call = undefined;
    this.nextId = 0;
    this.backend = this.makeBackend();
  }

  /** The host's own settings (`settings.get` names with a dot) and their defaults. */
  hostSetting(name) {
    switch (name) {
      case 'webhook.retry-schedule-ms':
        return '30000,120000,600000,1800000';
      case 'engine.max-body-bytes':
        return '8388608';
      case 'storage.scan-page':
        return '1000';
      case 'storage.scan-budget':
        return '10000';
      case 'mail-transport.available':
        return String(this.mailAllowed);
      default:
        return undefined;
    }
  }

  setting(name) {
    return this.settings.get(name) ?? this.hostSetting(name);
  }

  limit(name) {
    const value = Number(this.setting(name));
    return Number.isInteger(value) && value >= 0 ? value : Number.MAX_SAFE_INTEGER;
  }

  /** A fresh id (UUID-shaped, increasing). */
  newId() {
    this.nextId += 1;
    return `00000000-0000-7000-8000-${this.nextId.toString(16).padStart(12, '0')}`;
  }

  /** Starts serving a call in `tenantId` (`undefined`: outside a tenant). */
  begin(tenantId, actorId) {
    const committed = tenantId === undefined ? undefined : this.tenants.get(tenantId);
    this.call = {
      tenantId,
      actorId,
      view: committed ? committed.clone() : new TenantState(),
      jobs: [],
      events: [],
      realtime: [],
      scanned: 0,
    };
  }

  /** Commits what the current call buffered since its last synchronisation point. */
  commit() {
    const call = this.call;
    if (!call) return;
    if (call.tenantId !== undefined) this.tenants.set(call.tenantId, call.view.clone());
    this.jobs.push(...call.jobs.splice(0));
    this.published.push(...call.events.splice(0));
    this.realtimeSent.push(...call.realtime.splice(0));
  }

  /** Ends the current call: its unit commits when it `succeeded`, else nothing it buffered. */
  end(succeeded) {
    if (succeeded) this.commit();
    this.call = undefined;
  }

  current() {
    if (!this.call) fail('a host import was used outside an engine call (drive the engine through TestHost)');
    if (this.call.tenantId === undefined) fail('storage is scoped to a tenant; this call has none');
    return this.call;
  }

  bufferJobs(call, ids, jobs) {
    ids.forEach((id, index) => {
      const [atUnixMs, payload] = jobs[index];
      call.jobs.push({ id, tenantId: call.tenantId, atUnixMs: Number(atUnixMs), payload: copy(payload), attempt: 0 });
    });
  }

  makeBackend() {
    const host = this;
    const storage = {
      get(key) {
        return copy(host.current().view.entries.get(key));
      },
      getMany(keys) {
        if (keys.length > 1000) fail(`get-many reads at most 1000 keys, not ${keys.length}`);
        const { entries } = host.current().view;
        return keys.map((key) => copy(entries.get(key)));
      },
      set(key, value) {
        host.current().view.entries.set(key, copy(value));
      },
      delete(key) {
        return host.current().view.entries.delete(key);
      },
      scan(prefix, after, limit, reverse) {
        const page = host.limit('storage.scan-page');
        const budget = host.limit('storage.scan-budget');
        const call = host.current();
        const left = Math.max(0, budget - call.scanned);
        if (left === 0) fail(`scan budget exhausted: this call scanned ${budget} entries`);
        const take = Math.min(limit, page, left);
        let keys = [...call.view.entries.keys()].filter((key) => key.startsWith(prefix)).sort(compareCodePoints);
        if (reverse) {
          keys = keys.filter((key) => after === undefined || compareCodePoints(key, after) < 0).reverse();
        } else {
          keys = keys.filter((key) => after === undefined || compareCodePoints(key, after) > 0);
        }
        const entries = keys.slice(0, take).map((key) => [key, copy(call.view.entries.get(key))]);
        call.scanned += entries.length;
        return entries;
      },
      deletePrefix(prefix) {
        const { entries } = host.current().view;
        let removed = 0;
        for (const key of [...entries.keys()]) {
          if (key.startsWith(prefix)) {
            entries.delete(key);
            removed += 1;
          }
        }
        return BigInt(removed);
      },
      compareAndSwap(key, expected, value) {
        const call = host.current();
        if (!bytesEqual(call.view.entries.get(key), expected)) return false;
        if (value === undefined) call.view.entries.delete(key);
        else call.view.entries.set(key, copy(value));
        host.commit();
        return true;
      },
      writeBatch(sets, deletes, jobs) {
        checkJobs(jobs);
        const ids = jobs.map(() => host.newId());
        const call = host.current();
        for (const [key, value] of sets) call.view.entries.set(key, copy(value));
        for (const key of deletes) call.view.entries.delete(key);
        host.bufferJobs(call, ids, jobs);
        return ids;
      },
      transact(transaction) {
        checkJobs(transaction.jobs);
        const ids = transaction.jobs.map(() => host.newId());
        const call = host.current();
        const holds = transaction.expect.every(([key, expected]) => bytesEqual(call.view.entries.get(key), expected));
        if (!holds) return undefined;
        for (const [key] of transaction.add) {
          const written = transaction.sets.some(([set]) => set === key) || transaction.deletes.includes(key);
          if (written) fail(`${key} is both counted and set or deleted in one transaction`);
        }
        const view = new Map(call.view.entries);
        for (const [key, value] of transaction.sets) view.set(key, copy(value));
        for (const key of transaction.deletes) view.delete(key);
        for (const [key, amount] of transaction.add) {
          let current = 0n;
          const stored = view.get(key);
          if (stored !== undefined) {
            const text = utf8Decode(stored).trim();
            if (!/^[+-]?[0-9]+$/.test(text)) fail(`${key} does not hold an integer`);
            current = BigInt(text);
            if (current < I64_MIN || current > I64_MAX) fail(`${key} does not hold an integer`);
          }
          const sum = current + BigInt(amount);
          if (sum < I64_MIN || sum > I64_MAX) fail(`adding ${amount} to ${key} (${current}) overflows`);
          view.set(key, new TextEncoder().encode(sum.toString()));
        }
        call.view.entries = view;
        host.bufferJobs(call, ids, transaction.jobs);
        host.commit();
        return ids;
      },
    };

    const usageOf = (call) => {
      let total = 0;
      for (const blob of call.view.blobs.values()) total += blob.length;
      return total;
    };
    const blobs = {
      put(key, content, quotaBytes, sets) {
        const call = host.current();
        const replaced = call.view.blobs.get(key)?.length ?? 0;
        const total = usageOf(call) - replaced + content.length;
        if (quotaBytes !== undefined && BigInt(total) > BigInt(quotaBytes)) return false;
        call.view.blobs.set(key, copy(content));
        for (const [setKey, value] of sets) call.view.entries.set(setKey, copy(value));
        return true;
      },
      get(key) {
        return copy(host.current().view.blobs.get(key));
      },
      delete(keys, deletes) {
        const call = host.current();
        let removed = 0;
        for (const key of keys) if (call.view.blobs.delete(key)) removed += 1;
        for (const key of deletes) call.view.entries.delete(key);
        return BigInt(removed);
      },
      deletePrefix(prefix) {
        const call = host.current();
        let removed = 0;
        for (const key of [...call.view.blobs.keys()]) {
          if (key.startsWith(prefix)) {
            call.view.blobs.delete(key);
            removed += 1;
          }
        }
        return BigInt(removed);
      },
      usage() {
        return BigInt(usageOf(host.current()));
      },
    };

    const scheduler = {
      schedule(atUnixMs, payload) {
        checkJobs([[atUnixMs, payload]]);
        const id = host.newId();
        host.bufferJobs(host.current(), [id], [[atUnixMs, payload]]);
        return id;
      },
      cancel(jobId) {
        const call = host.current();
        const buffered = call.jobs.length;
        call.jobs = call.jobs.filter((job) => job.id !== jobId);
        if (call.jobs.length < buffered) return true;
        const committed = host.jobs.length;
        host.jobs = host.jobs.filter((job) => !(job.id === jobId && job.tenantId === call.tenantId));
        return host.jobs.length < committed;
      },
    };

    const events = {
      publish(eventType, payload) {
        let parsed;
        try {
          parsed = JSON.parse(payload);
        } catch (error) {
          fail(`the payload is not JSON: ${error.message}`);
        }
        if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
          fail('the payload must be a JSON object');
        }
        const call = host.current();
        call.events.push({ tenantId: call.tenantId, eventType, payload: parsed, actorId: call.actorId });
      },
    };

    /** Buffers `sent` in the call's unit after the checks every realtime import makes. */
    function bufferRealtime(topic, userId, sent) {
      if (!topicMatches(host.topics, topic)) {
        fail(`the topic ${JSON.stringify(topic)} matches none of the engine's topic patterns (describe-topics)`);
      }
      if (userId !== undefined && (utf8Length(userId) === 0 || utf8Length(userId) > 200)) {
        fail('a user id is 1 to 200 bytes');
      }
      const call = host.current();
      call.realtime.push({ tenantId: call.tenantId, topic, userId, ...sent });
    }

    const realtime = {
      publish(topic, eventType, data) {
        checkEventType(eventType);
        const parsed = realtimeData(data);
        bufferRealtime(topic, undefined, { kind: 'event', eventType, data: parsed });
      },
      publishToUser(userId, topic, eventType, data) {
        checkEventType(eventType);
        const parsed = realtimeData(data);
        bufferRealtime(topic, userId, { kind: 'event', eventType, data: parsed });
      },
      endSubscriptions(topic, userId) {
        bufferRealtime(topic, userId, { kind: 'end' });
      },
    };

    const outboundHttp = {
      checkTarget(url) {
        const target = hostOf(url);
        if (!allowed(host.outboundHosts, target)) {
          fail(`${target} is not among the engine's outbound hosts ${JSON.stringify(host.outboundHosts)}`);
        }
      },
      fetch(request) {
        outboundHttp.checkTarget(request.url);
        host.requests.push({ ...request, headers: request.headers.map((pair) => [...pair]), body: copy(request.body) });
        const canned = host.responses.find(
          (answer) => answer.method.toUpperCase() === request.method.toUpperCase() && answer.url === request.url,
        );
        if (!canned) fail(`no answer for ${request.method} ${request.url} (give one with TestHost.respond)`);
        if (canned.error !== undefined) fail(canned.error);
        return { ...canned.response, headers: canned.response.headers.map((pair) => [...pair]), body: copy(canned.response.body) };
      },
    };

    const vault = {
      seal(plaintext) {
        const sealed = new Uint8Array(SEALED.length + plaintext.length);
        sealed.set(SEALED);
        plaintext.forEach((byte, index) => {
          sealed[SEALED.length + index] = byte ^ 0x5a;
        });
        return sealed;
      },
      open(sealed) {
        const marked = sealed.length >= SEALED.length && SEALED.every((byte, index) => sealed[index] === byte);
        if (!marked) fail('the vault did not seal these bytes');
        return sealed.slice(SEALED.length).map((byte) => byte ^ 0x5a);
      },
    };

    const settings = {
      get(name) {
        return host.setting(name);
      },
    };

    const mailTransport = {
      send(mail) {
        if (!host.mailAllowed) fail('mail transport unavailable: no relay (allow it with TestHost.allowMail)');
        if (mail.recipients.length === 0 || mail.recipients.length > 100) fail('a mail has 1 to 100 recipients');
        host.mails.push({ ...mail, recipients: [...mail.recipients] });
      },
    };

    const log = {
      log(level, message) {
        host.logs.push({ level, message });
      },
    };

    return { storage, blobs, scheduler, events, realtime, outboundHttp, vault, settings, mailTransport, log };
  }
}
