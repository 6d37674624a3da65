"""Percent-decoding as the Rust SDK does it (`engines/sdk/src/request.rs`)."""

from __future__ import annotations


def percent_decode(text: str, plus_is_space: bool = False) -> str:
    """`%XX` decoded (a `%` not followed by two hex digits stays), invalid UTF-8 replaced, as
    the Rust SDK decodes path parameters (and, with `plus_is_space`, query values)."""
    data = text.encode("utf-8")
    out = bytearray()
    index = 0
    hexdigits = b"0123456789abcdefABCDEF"
    while index < len(data):
        byte = data[index]
        if (
            byte == ord("%")
            and index + 2 < len(data)
            and data[index + 1] in hexdigits
            and data[index + 2] in hexdigits
        ):
            out.append(int(data[index + 1 : index + 3], 16))
            index += 3
            continue
        out.append(ord(" ") if plus_is_space and byte == ord("+") else byte)
        index += 1
    return out.decode("utf-8", errors="replace")
