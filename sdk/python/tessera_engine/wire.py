"""The wire rules Tessera's host and its Rust SDK share (`crates/wire`), for Python engines:
the spec's messages, validation errors in the host's 422 shape, and cursor paging with the
host's cursors byte for byte. Pure Python, imported at the top of an engine (componentize-py
pre-initialises the module: nothing may be imported later, during a request)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar

MESSAGE_UNAUTHENTICATED = "Unauthenticated."
MESSAGE_FORBIDDEN = "This action is unauthorized."
MESSAGE_METHOD_NOT_ALLOWED = "Method not allowed."
MESSAGE_PAYLOAD_TOO_LARGE = "The request body is too large."
MESSAGE_INVALID = "The given data was invalid."
MESSAGE_TOO_MANY_ATTEMPTS = "Too Many Attempts."
MESSAGE_SERVER_ERROR = "Server Error."
MESSAGE_EXPECTED_JSON = "Expected a JSON body with Content-Type: application/json."

#: The page size when a request names none, and the largest one granted.
DEFAULT_LIMIT = 50
MAX_LIMIT = 100

_U32_MAX = 2**32 - 1
_UNSIGNED = re.compile(r"\+?[0-9]+")
_URL_SAFE = re.compile(r"[A-Za-z0-9_-]*")

T = TypeVar("T")


def unknown_query_parameter(name: str) -> str:
    """The message of a 400 for a query parameter a route does not take."""
    return f"Unknown query parameter `{name}`."


class ValidationErrors(Exception):
    """Field → rules that failed (`required`, `max:200`, …), answered as a 422 with
    `{"message": MESSAGE_INVALID, "errors": {field: [rule, …]}}`, fields in order."""

    def __init__(self) -> None:
        super().__init__(MESSAGE_INVALID)
        self.fields: dict[str, list[str]] = {}

    @classmethod
    def single(cls, field: str, rule: str) -> "ValidationErrors":
        errors = cls()
        errors.add(field, rule)
        return errors

    def add(self, field: str, rule: str) -> None:
        self.fields.setdefault(field, []).append(rule)

    def check(self, passed: bool, field: str, rule: str) -> bool:
        """Records `rule` for `field` unless `passed`; returns `passed`."""
        if not passed:
            self.add(field, rule)
        return passed

    def check_length(self, value: str, field: str, minimum: int, maximum: int) -> bool:
        """`min:N` / `max:N` in characters (code points, as the host counts)."""
        length = len(value)
        return self.check(length >= minimum, field, f"min:{minimum}") and self.check(
            length <= maximum, field, f"max:{maximum}"
        )

    def required(self, field: str, value: Optional[str]) -> str:
        """`value` unless it is absent or blank (then `required`, and "")."""
        if value is None or not value.strip():
            self.add(field, "required")
            return ""
        return value

    def is_empty(self) -> bool:
        return not self.fields

    def raise_if_any(self) -> None:
        """Raises itself when a rule failed."""
        if self.fields:
            raise self

    def body(self) -> dict[str, Any]:
        """The 422 body, fields sorted as the host sorts them."""
        return {
            "message": MESSAGE_INVALID,
            "errors": {field: list(self.fields[field]) for field in sorted(self.fields)},
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ValidationErrors) and self.fields == other.fields

    def __repr__(self) -> str:
        return f"ValidationErrors({self.fields!r})"


def encode_cursor(position: Any) -> str:
    """The cursor of `position` (a key, a number…): the URL-safe, unpadded base64 of its JSON,
    as the host and the Rust SDK encode it."""
    text = json.dumps(position, ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode("utf-8")).rstrip(b"=").decode("ascii")


def decode_cursor(cursor: str, kind: type = str) -> Any:
    """The position a cursor encodes, of type `kind`; `ValidationErrors` `cursor: invalid`
    for anything the host would refuse (padding, other alphabets, non-canonical bits, JSON of
    another type)."""
    invalid = ValidationErrors.single("cursor", "invalid")
    if not _URL_SAFE.fullmatch(cursor) or len(cursor) % 4 == 1:
        raise invalid
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise invalid from None
    # The host's decoder refuses set trailing bits: only the canonical encoding is a cursor.
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != cursor:
        raise invalid
    try:
        position = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise invalid from None
    matches = isinstance(position, kind) and not (kind is int and isinstance(position, bool))
    if not matches:
        raise invalid
    return position


@dataclass(frozen=True)
class CursorMeta:
    """`meta` of a cursor-paged list."""

    next_cursor: Optional[str]
    has_more: bool

    def to_json(self) -> dict[str, Any]:
        return {"next_cursor": self.next_cursor, "has_more": self.has_more}


@dataclass(frozen=True)
class CursorPage:
    """A request's page: the position after which it starts (`None`: the first page) and how
    many items it holds."""

    after: Any
    limit: int

    @classmethod
    def new(
        cls,
        cursor: Optional[str],
        limit: Optional[int],
        default: int = DEFAULT_LIMIT,
        maximum: int = MAX_LIMIT,
        kind: type = str,
    ) -> "CursorPage":
        """`limit` defaults to `default` and is cut to `maximum`; below 1 it is `limit:
        min:1`; an empty cursor is the first page."""
        limit = default if limit is None else limit
        if limit < 1:
            raise ValidationErrors.single("limit", "min:1")
        after = None if cursor in (None, "") else decode_cursor(cursor, kind)
        return cls(after=after, limit=min(limit, maximum))

    @classmethod
    def from_query(
        cls,
        query: Mapping[str, str],
        default: int = DEFAULT_LIMIT,
        maximum: int = MAX_LIMIT,
        kind: type = str,
    ) -> "CursorPage":
        """From a request's `cursor` and `limit` (`limit: integer` unless an unsigned 32-bit
        decimal)."""
        limit_text = query.get("limit")
        limit: Optional[int] = None
        if limit_text is not None:
            if not _UNSIGNED.fullmatch(limit_text) or int(limit_text) > _U32_MAX:
                raise ValidationErrors.single("limit", "integer")
            limit = int(limit_text)
        return cls.new(query.get("cursor"), limit, default, maximum, kind)

    def fetch_limit(self) -> int:
        """How many rows to read: one more than the page, to know whether more follow."""
        return self.limit + 1

    def finish(
        self, rows: Sequence[T], position: Callable[[T], Any]
    ) -> tuple[list[T], CursorMeta]:
        """The page of `rows` (read with `fetch_limit`) and its `meta`: the cursor of its last
        row, or of the request's when it is empty."""
        has_more = len(rows) > self.limit
        page = list(rows[: self.limit])
        if page:
            next_cursor: Optional[str] = encode_cursor(position(page[-1]))
        elif self.after is not None:
            next_cursor = encode_cursor(self.after)
        else:
            next_cursor = None
        return page, CursorMeta(next_cursor=next_cursor, has_more=has_more)
