// Time and identifiers: RFC 3339 UTC timestamps with fixed microseconds (the host's format,
// e.g. `2026-11-21T17:19:00.000000Z`), Unix milliseconds for the scheduler, UUID v4 ids, and
// ids that sort by creation time. Call these during a call, never at module load: the module
// top level runs at build time in the component (`Date.now()` there is frozen, `Math.random()`
// fails the build).

/** Milliseconds since the Unix epoch, from the wall clock. */
export function nowUnixMs() {
  return Date.now();
}

function pad(number, width) {
  return String(number).padStart(width, '0');
}

/** Formats milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC). */
export function formatRfc3339(unixMs) {
  const date = new Date(unixMs);
  const year = date.getUTCFullYear();
  return (
    `${pad(year, 4)}-${pad(date.getUTCMonth() + 1, 2)}-${pad(date.getUTCDate(), 2)}` +
    `T${pad(date.getUTCHours(), 2)}:${pad(date.getUTCMinutes(), 2)}:${pad(date.getUTCSeconds(), 2)}` +
    `.${pad(date.getUTCMilliseconds() * 1000, 6)}Z`
  );
}

/** Now, as `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
export function nowRfc3339() {
  return formatRfc3339(nowUnixMs());
}

function randomBytes(length) {
  const bytes = new Uint8Array(length);
  crypto.getRandomValues(bytes);
  return bytes;
}

function hex(bytes) {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** A new random identifier: a lowercase hyphenated UUID v4. */
export function newId() {
  const bytes = randomBytes(16);
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const text = hex(bytes);
  return `${text.slice(0, 8)}-${text.slice(8, 12)}-${text.slice(12, 16)}-${text.slice(16, 20)}-${text.slice(20)}`;
}

let lastMs = -1;
let sequence = 0;

/**
 * A new identifier that sorts (as text, and so as a storage key) by creation time: the
 * zero-padded Unix milliseconds, a sequence number within this instance's millisecond, and a
 * random suffix (`01795281540000-0000-9f3c1a2b7d4e`).
 */
export function sortableId(unixMs = nowUnixMs()) {
  if (unixMs <= lastMs) {
    sequence += 1;
    unixMs = lastMs;
  } else {
    lastMs = unixMs;
    sequence = 0;
  }
  return `${pad(unixMs, 14)}-${pad(sequence, 4)}-${hex(randomBytes(6))}`;
}
