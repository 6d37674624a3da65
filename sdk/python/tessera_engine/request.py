"""Requests and refusals of a Python engine, as the Rust SDK has them
(`engines/sdk/src/request.rs`, `error.rs`): the query (form-decoded, the last value of a name
wins, unknown names refused with 400), the JSON body (a non-JSON content type or malformed JSON
400, a document that is not an object 422 `body: object`), and `ApiError`s that the router
answers in the host's shape."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from .decoding import percent_decode
from .wire import (
    MESSAGE_EXPECTED_JSON,
    MESSAGE_FORBIDDEN,
    MESSAGE_SERVER_ERROR,
    MESSAGE_UNAUTHENTICATED,
    ValidationErrors,
    unknown_query_parameter,
)

_U32_MAX = 2**32 - 1
_U64_MAX = 2**64 - 1


class ApiError(Exception):
    """A refusal: its status and the message of its `{"message": …}` body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message

    @classmethod
    def bad_request(cls, message: str) -> "ApiError":
        return cls(400, message)

    @classmethod
    def unauthenticated(cls) -> "ApiError":
        return cls(401, MESSAGE_UNAUTHENTICATED)

    @classmethod
    def forbidden(cls) -> "ApiError":
        return cls(403, MESSAGE_FORBIDDEN)

    @classmethod
    def not_found(cls, what: str) -> "ApiError":
        """404 `{what} not found.`"""
        return cls(404, f"{what} not found.")

    @classmethod
    def conflict(cls, message: str) -> "ApiError":
        return cls(409, message)

    @classmethod
    def internal(cls) -> "ApiError":
        """500 with the opaque message (log the detail with the `log` import)."""
        return cls(500, MESSAGE_SERVER_ERROR)


def _decode(text: str) -> str:
    return percent_decode(text, plus_is_space=True)


def is_json_content_type(content_type: str) -> bool:
    """`application/json` or `application/<anything>+json`, parameters ignored."""
    essence = content_type.split(";", 1)[0].strip().lower()
    return essence == "application/json" or (
        essence.startswith("application/") and essence.endswith("+json")
    )


def _unsigned(name: str, value: str, maximum: int) -> int:
    text = value[1:] if value.startswith("+") else value
    if not text.isascii() or not text.isdigit() or int(text) > maximum:
        raise ValidationErrors.single(name, "integer")
    return int(text)


@dataclass
class Query:
    """The query's `(name, value)` pairs, form-decoded, in order."""

    pairs: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def parse(cls, raw: str) -> "Query":
        pairs = []
        for piece in raw.split("&"):
            if not piece:
                continue
            name, _, value = piece.partition("=")
            pairs.append((_decode(name), _decode(value)))
        return cls(pairs)

    def allow(self, allowed: Sequence[str]) -> None:
        """`ApiError` 400 naming the first parameter not in `allowed`."""
        for name, _ in self.pairs:
            if name not in allowed:
                raise ApiError.bad_request(unknown_query_parameter(name))

    def get(self, name: str) -> Optional[str]:
        """The last value of `name`."""
        for key, value in reversed(self.pairs):
            if key == name:
                return value
        return None

    def get_u32(self, name: str) -> Optional[int]:
        value = self.get(name)
        return None if value is None else _unsigned(name, value, _U32_MAX)

    def get_u64(self, name: str) -> Optional[int]:
        value = self.get(name)
        return None if value is None else _unsigned(name, value, _U64_MAX)

    def get_bool(self, name: str) -> Optional[bool]:
        value = self.get(name)
        if value is None:
            return None
        if value in ("true", "1"):
            return True
        if value in ("false", "0"):
            return False
        raise ValidationErrors.single(name, "boolean")

    def to_dict(self) -> dict[str, str]:
        return dict(self.pairs)


@dataclass
class Request:
    """A request routed to the engine (its path without the `/<code>` prefix)."""

    method: str
    path: str
    raw_query: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    def __post_init__(self) -> None:
        self.method = self.method.upper()
        self._query = Query.parse(self.raw_query)

    def header(self, name: str) -> Optional[str]:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def query(self, allowed: Sequence[str]) -> Query:
        """The query, refused with 400 when it names a parameter not in `allowed`."""
        self._query.allow(allowed)
        return self._query

    def query_unchecked(self) -> Query:
        return self._query

    def json(self) -> Any:
        """The JSON body: 400 for another content type or malformed JSON."""
        content_type = self.header("content-type")
        if content_type is not None and not is_json_content_type(content_type):
            raise ApiError.bad_request(MESSAGE_EXPECTED_JSON)
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            raise ApiError.bad_request(f"Invalid JSON body: {error}.") from None

    def json_object(self) -> dict[str, Any]:
        """The JSON body, which must be an object: 422 `body: object` otherwise."""
        document = self.json()
        if not isinstance(document, dict):
            raise ValidationErrors.single("body", "object")
        return document
