// Percent-decoding as the Rust SDK does it (`engines/sdk/src/request.rs`), for path parameters
// and query values.

import { utf8Decode, utf8Encode } from './bytes.js';

function isHex(byte) {
  return (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66);
}

/**
 * `%XX` decoded (a `%` not followed by two hex digits stays), invalid UTF-8 replaced, as the
 * Rust SDK decodes path parameters (and, with `plusIsSpace`, query values).
 */
export function percentDecode(text, plusIsSpace = false) {
  const data = utf8Encode(text);
  const out = new Uint8Array(data.length);
  let length = 0;
  let index = 0;
  while (index < data.length) {
    const byte = data[index];
    if (byte === 0x25 && index + 2 < data.length && isHex(data[index + 1]) && isHex(data[index + 2])) {
      out[length++] = Number.parseInt(String.fromCharCode(data[index + 1], data[index + 2]), 16);
      index += 3;
      continue;
    }
    out[length++] = plusIsSpace && byte === 0x2b ? 0x20 : byte;
    index += 1;
  }
  return utf8Decode(out.subarray(0, length));
}
