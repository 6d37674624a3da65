"""The Python guest kit of Tessera engines: the wire rules of the Rust SDK (`wire`), responses
in the host's shapes and the router (`http`)."""

from .decoding import percent_decode
from .http import Response, Router
from .request import ApiError, Query, Request, is_json_content_type
from .wire import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    MESSAGE_EXPECTED_JSON,
    MESSAGE_FORBIDDEN,
    MESSAGE_INVALID,
    MESSAGE_METHOD_NOT_ALLOWED,
    MESSAGE_PAYLOAD_TOO_LARGE,
    MESSAGE_SERVER_ERROR,
    MESSAGE_TOO_MANY_ATTEMPTS,
    MESSAGE_UNAUTHENTICATED,
    CursorMeta,
    CursorPage,
    ValidationErrors,
    decode_cursor,
    encode_cursor,
    unknown_query_parameter,
)

__all__ = [
    "ApiError",
    "Query",
    "Request",
    "is_json_content_type",
    "Response",
    "Router",
    "percent_decode",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MESSAGE_EXPECTED_JSON",
    "MESSAGE_FORBIDDEN",
    "MESSAGE_INVALID",
    "MESSAGE_METHOD_NOT_ALLOWED",
    "MESSAGE_PAYLOAD_TOO_LARGE",
    "MESSAGE_SERVER_ERROR",
    "MESSAGE_TOO_MANY_ATTEMPTS",
    "MESSAGE_UNAUTHENTICATED",
    "CursorMeta",
    "CursorPage",
    "ValidationErrors",
    "decode_cursor",
    "encode_cursor",
    "unknown_query_parameter",
]
