// Bytes and text: UTF-8 both ways (TextEncoder/TextDecoder, which StarlingMonkey provides), the
// byte-wise order of keys the host sorts by, and the coercions the host imports need.

const encoder = new TextEncoder();

/** The UTF-8 bytes of `text`. */
export function utf8Encode(text) {
  return encoder.encode(text);
}

/** `bytes` as UTF-8 text; with `fatal`, a `TypeError` for invalid UTF-8, else U+FFFD for it. */
export function utf8Decode(bytes, fatal = false) {
  return new TextDecoder('utf-8', { fatal }).decode(bytes);
}

/**
 * `value` as bytes: a `Uint8Array` as it is, text as UTF-8, an `ArrayBuffer`, a typed array or
 * an array of byte values copied.
 */
export function toBytes(value) {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string') return utf8Encode(value);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (Array.isArray(value)) return Uint8Array.from(value);
  if (value === undefined || value === null) return new Uint8Array();
  throw new TypeError(`expected bytes or text, not ${typeof value}`);
}

/** `value` as bytes, `undefined` staying `undefined` (a WIT `option<list<u8>>`). */
export function toOptionalBytes(value) {
  return value === undefined || value === null ? undefined : toBytes(value);
}

/** True when `a` and `b` hold the same bytes (both `undefined` counts as equal). */
export function bytesEqual(a, b) {
  if (a === undefined || a === null || b === undefined || b === null) {
    return (a ?? undefined) === (b ?? undefined);
  }
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index += 1) if (a[index] !== b[index]) return false;
  return true;
}

/** UTF-16 code unit → a rank that orders as code points (and so as UTF-8 bytes) do. */
function rank(unit) {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}

/**
 * Compares two strings by code point, which is the byte-wise order of their UTF-8: the order
 * of storage keys (JavaScript's `<` compares UTF-16 code units, which differs above U+FFFF).
 */
export function compareCodePoints(a, b) {
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; index += 1) {
    const x = a.charCodeAt(index);
    const y = b.charCodeAt(index);
    if (x !== y) return rank(x) - rank(y);
  }
  return a.length - b.length;
}
