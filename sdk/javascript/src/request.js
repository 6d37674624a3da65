// Requests and refusals of a JavaScript engine, as the Rust SDK has them
// (`engines/sdk/src/request.rs`, `error.rs`): the query (form-decoded, the last value of a name
// wins, unknown names refused with 400), the JSON body (a non-JSON content type or malformed JSON
// 400, a document that is not an object 422 `body: object`), and `ApiError`s that the router
// answers in the host's shape.

import { toBytes, utf8Decode } from './bytes.js';
import { percentDecode } from './decoding.js';
import {
  MESSAGE_EXPECTED_JSON,
  MESSAGE_FORBIDDEN,
  MESSAGE_PAYLOAD_TOO_LARGE,
  MESSAGE_SERVER_ERROR,
  MESSAGE_UNAUTHENTICATED,
  ValidationErrors,
  unknownQueryParameter,
} from './wire.js';

const U32_MAX = 2 ** 32 - 1;
const U64_MAX = 2n ** 64n - 1n;
const DIGITS = /^[0-9]+$/;

/** A refusal: its status and the message of its `{"message": …}` body. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }

  static badRequest(message) {
    return new ApiError(400, message);
  }

  static unauthenticated() {
    return new ApiError(401, MESSAGE_UNAUTHENTICATED);
  }

  static forbidden() {
    return new ApiError(403, MESSAGE_FORBIDDEN);
  }

  /** 404 `{what} not found.` */
  static notFound(what) {
    return new ApiError(404, `${what} not found.`);
  }

  static conflict(message) {
    return new ApiError(409, message);
  }

  static payloadTooLarge(message = MESSAGE_PAYLOAD_TOO_LARGE) {
    return new ApiError(413, message);
  }

  /** 500 with the opaque message (log the detail with the `log` import). */
  static internal() {
    return new ApiError(500, MESSAGE_SERVER_ERROR);
  }
}

function decode(text) {
  return percentDecode(text, true);
}

/** `application/json` or `application/<anything>+json`, parameters ignored. */
export function isJsonContentType(contentType) {
  const essence = contentType.split(';', 1)[0].trim().toLowerCase();
  return essence === 'application/json' || (essence.startsWith('application/') && essence.endsWith('+json'));
}

function digitsOf(name, value) {
  const text = value.startsWith('+') ? value.slice(1) : value;
  if (!DIGITS.test(text)) throw ValidationErrors.single(name, 'integer');
  return text;
}

/** The query's `[name, value]` pairs, form-decoded, in order. */
export class Query {
  constructor(pairs = []) {
    this.pairs = pairs;
  }

  static parse(raw) {
    const pairs = [];
    for (const piece of (raw ?? '').split('&')) {
      if (!piece) continue;
      const at = piece.indexOf('=');
      const name = at < 0 ? piece : piece.slice(0, at);
      const value = at < 0 ? '' : piece.slice(at + 1);
      pairs.push([decode(name), decode(value)]);
    }
    return new Query(pairs);
  }

  /** `ApiError` 400 naming the first parameter not in `allowed`. */
  allow(allowed) {
    for (const [name] of this.pairs) {
      if (!allowed.includes(name)) throw ApiError.badRequest(unknownQueryParameter(name));
    }
    return this;
  }

  /** The last value of `name`, or `undefined`. */
  get(name) {
    for (let index = this.pairs.length - 1; index >= 0; index -= 1) {
      if (this.pairs[index][0] === name) return this.pairs[index][1];
    }
    return undefined;
  }

  /** An unsigned 32-bit integer (a number), `undefined` when absent; 422 `integer` otherwise. */
  getU32(name) {
    const value = this.get(name);
    if (value === undefined) return undefined;
    const number = Number(digitsOf(name, value));
    if (number > U32_MAX) throw ValidationErrors.single(name, 'integer');
    return number;
  }

  /** An unsigned 64-bit integer (a `bigint`), `undefined` when absent; 422 `integer` otherwise. */
  getU64(name) {
    const value = this.get(name);
    if (value === undefined) return undefined;
    const number = BigInt(digitsOf(name, value));
    if (number > U64_MAX) throw ValidationErrors.single(name, 'integer');
    return number;
  }

  /** `true`/`1` or `false`/`0`, `undefined` when absent; 422 `boolean` otherwise. */
  getBool(name) {
    const value = this.get(name);
    if (value === undefined) return undefined;
    if (value === 'true' || value === '1') return true;
    if (value === 'false' || value === '0') return false;
    throw ValidationErrors.single(name, 'boolean');
  }

  /** The pairs as an object, the last value of a name winning. */
  toObject() {
    return Object.fromEntries(this.pairs);
  }
}

/** A request routed to the engine (its path without the `/<code>` prefix). */
export class Request {
  constructor(method, path, rawQuery = '', headers = [], body = new Uint8Array()) {
    this.method = String(method).toUpperCase();
    this.path = path;
    this.rawQuery = rawQuery ?? '';
    this.headers = headers;
    this.body = toBytes(body);
    /** The route's percent-decoded path parameters (set by the router). */
    this.params = {};
    this._query = Query.parse(this.rawQuery);
  }

  /** The value of header `name` (case-insensitive), or `undefined`. */
  header(name) {
    const wanted = name.toLowerCase();
    for (const [key, value] of this.headers) if (key.toLowerCase() === wanted) return value;
    return undefined;
  }

  /** The path parameter `name` (percent-decoded), `""` when the route has none of that name. */
  param(name) {
    return this.params[name] ?? '';
  }

  /** The query, refused with 400 when it names a parameter not in `allowed`. */
  query(allowed) {
    return this._query.allow(allowed);
  }

  queryUnchecked() {
    return this._query;
  }

  /** The body as UTF-8 text (invalid bytes replaced). */
  text() {
    return utf8Decode(this.body);
  }

  /** The JSON body: 400 for another content type or malformed JSON. */
  json() {
    const contentType = this.header('content-type');
    if (contentType !== undefined && !isJsonContentType(contentType)) {
      throw ApiError.badRequest(MESSAGE_EXPECTED_JSON);
    }
    try {
      return JSON.parse(utf8Decode(this.body, true));
    } catch (error) {
      const reason = String(error?.message ?? error).replace(/\.$/, '');
      throw ApiError.badRequest(`Invalid JSON body: ${reason}.`);
    }
  }

  /** The JSON body, which must be an object: 422 `body: object` otherwise. */
  jsonObject() {
    const document = this.json();
    if (document === null || typeof document !== 'object' || Array.isArray(document)) {
      throw ValidationErrors.single('body', 'object');
    }
    return document;
  }
}
