// The wire rules Tessera's host and its Rust SDK share (`crates/wire`), for JavaScript engines:
// the spec's messages, validation errors in the host's 422 shape, and cursor paging with the
// host's cursors byte for byte (the same vectors as the Python kit's `wire.py`). Pure
// JavaScript: nothing here runs at module load but constant definitions (componentize-js
// snapshots the module top level at build time).

import { compareCodePoints, utf8Decode, utf8Encode } from './bytes.js';

export const MESSAGE_UNAUTHENTICATED = 'Unauthenticated.';
export const MESSAGE_FORBIDDEN = 'This action is unauthorized.';
export const MESSAGE_METHOD_NOT_ALLOWED = 'Method not allowed.';
export const MESSAGE_PAYLOAD_TOO_LARGE = 'The request body is too large.';
export const MESSAGE_INVALID = 'The given data was invalid.';
export const MESSAGE_TOO_MANY_ATTEMPTS = 'Too Many Attempts.';
export const MESSAGE_SERVER_ERROR = 'Server Error.';
export const MESSAGE_EXPECTED_JSON = 'Expected a JSON body with Content-Type: application/json.';

/** The page size when a request names none, and the largest one granted. */
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 100;

const U32_MAX = 2 ** 32 - 1;
const UNSIGNED = /^\+?[0-9]+$/;
const URL_SAFE = /^[A-Za-z0-9_-]*$/;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** The message of a 400 for a query parameter a route does not take. */
export function unknownQueryParameter(name) {
  return `Unknown query parameter \`${name}\`.`;
}

/**
 * Field → rules that failed (`required`, `max:200`, …), answered as a 422 with
 * `{"message": MESSAGE_INVALID, "errors": {field: [rule, …]}}`, fields sorted as the host sorts
 * them. Throw it from a route (the router answers 422), or collect rules and `throwIfAny()`.
 */
export class ValidationErrors extends Error {
  constructor() {
    super(MESSAGE_INVALID);
    this.name = 'ValidationErrors';
    /** @type {Map<string, string[]>} */
    this.fields = new Map();
  }

  static single(field, rule) {
    const errors = new ValidationErrors();
    errors.add(field, rule);
    return errors;
  }

  add(field, rule) {
    const rules = this.fields.get(field);
    if (rules) rules.push(rule);
    else this.fields.set(field, [rule]);
    return this;
  }

  /** Records `rule` for `field` unless `passed`; returns `passed`. */
  check(passed, field, rule) {
    if (!passed) this.add(field, rule);
    return passed;
  }

  /** `min:N` / `max:N` in characters (code points, as the host counts). */
  checkLength(value, field, minimum, maximum) {
    const length = codePointLength(value);
    return (
      this.check(length >= minimum, field, `min:${minimum}`) &&
      this.check(length <= maximum, field, `max:${maximum}`)
    );
  }

  /** `value` unless it is absent or blank (then `required`, and ""). */
  required(field, value) {
    if (value === undefined || value === null || String(value).trim() === '') {
      this.add(field, 'required');
      return '';
    }
    return value;
  }

  /**
   * The text field `field` of the JSON object `document`, checked: `required` when it must be
   * there (absent, `null` or blank), `string` when it is another type (`null` too, for an
   * optional field that is not `nullable`, as its schema says), `min:N` / `max:N` in
   * characters. Returns the text (`""` when absent or refused, `null` for a `nullable` null).
   */
  stringField(document, field, { required = false, nullable = false, min = undefined, max = undefined } = {}) {
    const value = document?.[field];
    if (value === undefined || (value === null && required)) {
      if (required) this.add(field, 'required');
      return '';
    }
    if (value === null && nullable) return null;
    if (typeof value !== 'string') {
      this.add(field, 'string');
      return '';
    }
    if (required && value.trim() === '') {
      this.add(field, 'required');
      return '';
    }
    const length = codePointLength(value);
    if (min !== undefined && !this.check(length >= min, field, `min:${min}`)) return '';
    if (max !== undefined && !this.check(length <= max, field, `max:${max}`)) return '';
    return value;
  }

  isEmpty() {
    return this.fields.size === 0;
  }

  /** Throws itself when a rule failed. */
  throwIfAny() {
    if (this.fields.size > 0) throw this;
  }

  /** The fields and their rules, fields sorted as the host sorts them. */
  errors() {
    const names = [...this.fields.keys()].sort(compareCodePoints);
    const out = {};
    for (const name of names) out[name] = [...this.fields.get(name)];
    return out;
  }

  /** The 422 body. */
  body() {
    return { message: MESSAGE_INVALID, errors: this.errors() };
  }

  equals(other) {
    return (
      other instanceof ValidationErrors &&
      JSON.stringify(this.errors()) === JSON.stringify(other.errors())
    );
  }
}

/** The length of `text` in code points (what the host calls characters). */
export function codePointLength(text) {
  let length = 0;
  for (const _ of String(text)) length += 1;
  return length;
}

function base64UrlEncode(bytes) {
  let out = '';
  let index = 0;
  for (; index + 2 < bytes.length; index += 3) {
    const n = (bytes[index] << 16) | (bytes[index + 1] << 8) | bytes[index + 2];
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63] + ALPHABET[n & 63];
  }
  const rest = bytes.length - index;
  if (rest === 1) {
    const n = bytes[index] << 16;
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63];
  } else if (rest === 2) {
    const n = (bytes[index] << 16) | (bytes[index + 1] << 8);
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63];
  }
  return out;
}

/** The bytes of unpadded URL-safe base64, or `undefined` when it is not that (canonically). */
function base64UrlDecode(text) {
  if (!URL_SAFE.test(text) || text.length % 4 === 1) return undefined;
  const out = [];
  let buffer = 0;
  let bits = 0;
  for (const char of text) {
    buffer = (buffer << 6) | ALPHABET.indexOf(char);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push((buffer >> bits) & 0xff);
    }
  }
  // The host's decoder refuses set trailing bits: only the canonical encoding is a cursor.
  if ((buffer & ((1 << bits) - 1)) !== 0) return undefined;
  return Uint8Array.from(out);
}

/**
 * The cursor of `position` (a key, a number…): the URL-safe, unpadded base64 of its JSON, as
 * the host and the Rust SDK encode it.
 */
export function encodeCursor(position) {
  return base64UrlEncode(utf8Encode(JSON.stringify(position)));
}

const KINDS = {
  string: (value) => typeof value === 'string',
  integer: (value) => Number.isInteger(value),
  number: (value) => typeof value === 'number',
  boolean: (value) => typeof value === 'boolean',
  array: (value) => Array.isArray(value),
  object: (value) => value !== null && typeof value === 'object' && !Array.isArray(value),
};

/**
 * The position a cursor encodes, of `kind` (`'string'`, `'integer'`, `'number'`, `'boolean'`,
 * `'array'`, `'object'`, or a predicate); `ValidationErrors` `cursor: invalid` for anything the
 * host would refuse (padding, other alphabets, non-canonical bits, JSON of another type).
 */
export function decodeCursor(cursor, kind = 'string') {
  const invalid = ValidationErrors.single('cursor', 'invalid');
  const matches = typeof kind === 'function' ? kind : KINDS[kind];
  if (!matches) throw new TypeError(`unknown cursor kind ${kind}`);
  const raw = typeof cursor === 'string' ? base64UrlDecode(cursor) : undefined;
  if (raw === undefined) throw invalid;
  let position;
  try {
    position = JSON.parse(utf8Decode(raw, true));
  } catch {
    throw invalid;
  }
  if (!matches(position)) throw invalid;
  return position;
}

/** `meta` of a cursor-paged list; serialises as `{"next_cursor", "has_more"}`. */
export class CursorMeta {
  constructor(nextCursor, hasMore) {
    this.nextCursor = nextCursor ?? null;
    this.hasMore = Boolean(hasMore);
  }

  toJSON() {
    return { next_cursor: this.nextCursor, has_more: this.hasMore };
  }
}

/**
 * A request's page: the position after which it starts (`null`: the first page) and how many
 * items it holds.
 */
export class CursorPage {
  constructor(after, limit) {
    this.after = after;
    this.limit = limit;
  }

  /**
   * `limit` (`undefined`/`null`: `defaultLimit`) is cut to `maximum`; below 1 it is `limit:
   * min:1`; an empty or absent cursor is the first page.
   */
  static create(cursor, limit, { defaultLimit = DEFAULT_LIMIT, maximum = MAX_LIMIT, kind = 'string' } = {}) {
    const wanted = limit === undefined || limit === null ? defaultLimit : limit;
    if (wanted < 1) throw ValidationErrors.single('limit', 'min:1');
    const after = cursor === undefined || cursor === null || cursor === '' ? null : decodeCursor(cursor, kind);
    return new CursorPage(after, Math.min(wanted, maximum));
  }

  /**
   * From a request's `cursor` and `limit` (`limit: integer` unless an unsigned 32-bit
   * decimal); `query` is a `Query`, a `Map` or a plain object.
   */
  static fromQuery(query, options = {}) {
    const get =
      typeof query?.get === 'function' ? (name) => query.get(name) ?? undefined : (name) => query?.[name];
    const text = get('limit');
    let limit;
    if (text !== undefined) {
      if (!UNSIGNED.test(text) || Number(text) > U32_MAX) {
        throw ValidationErrors.single('limit', 'integer');
      }
      limit = Number(text);
    }
    return CursorPage.create(get('cursor'), limit, options);
  }

  /** How many rows to read: one more than the page, to know whether more follow. */
  fetchLimit() {
    return this.limit + 1;
  }

  /**
   * The page of `rows` (read with `fetchLimit()`) and its `meta`: the cursor of its last row,
   * or of the request's when it is empty.
   */
  finish(rows, position) {
    const hasMore = rows.length > this.limit;
    const items = rows.slice(0, this.limit);
    let nextCursor = null;
    if (items.length > 0) nextCursor = encodeCursor(position(items[items.length - 1]));
    else if (this.after !== null && this.after !== undefined) nextCursor = encodeCursor(this.after);
    return { items, meta: new CursorMeta(nextCursor, hasMore) };
  }

  /**
   * Like `finish`, for a page read by a bounded scan: when reading stopped after `stoppedAfter`
   * before the page was full, the page holds what was found (perhaps nothing), `hasMore` is true
   * and the cursor continues after `stoppedAfter`.
   */
  finishFound(rows, position, stoppedAfter) {
    if (stoppedAfter !== undefined && stoppedAfter !== null && rows.length <= this.limit) {
      return { items: rows.slice(), meta: new CursorMeta(encodeCursor(stoppedAfter), true) };
    }
    return this.finish(rows, position);
  }
}
