"""Responses in the host's shapes and the router of a Python engine, as the Rust SDK's
(`engines/sdk/src/response.rs`, `router.rs`): `{"data": …}` envelopes, `{"message": …}` errors,
routes matched by path first (the most specific pattern: literals beat captures, from the left),
then by method, with a 405 listing the path's methods in `Allow`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .decoding import percent_decode
from .openapi import Operation, document
from .request import ApiError
from .wire import MESSAGE_METHOD_NOT_ALLOWED, MESSAGE_SERVER_ERROR, CursorMeta, ValidationErrors


@dataclass
class Response:
    """What a route answers: a status, headers and a body."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    @classmethod
    def json(cls, status: int, value: Any) -> "Response":
        """`status` with `value` as the JSON body (compact, UTF-8, as serde_json writes it)."""
        try:
            body = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError):
            return cls.error(500, MESSAGE_SERVER_ERROR)
        return cls(status, [("content-type", "application/json")], body)

    @classmethod
    def ok(cls, data: Any, meta: Optional[CursorMeta] = None) -> "Response":
        """200 `{"data": data}`, with `meta` when given (a cursor-paged list)."""
        if meta is None:
            return cls.json(200, {"data": data})
        return cls.json(200, {"data": data, "meta": meta.to_json()})

    @classmethod
    def created(cls, data: Any) -> "Response":
        """201 `{"data": data}`."""
        return cls.json(201, {"data": data})

    @classmethod
    def accepted(cls, data: Any) -> "Response":
        """202 `{"data": data}`."""
        return cls.json(202, {"data": data})

    @classmethod
    def no_content(cls) -> "Response":
        """204, no body."""
        return cls(204)

    @classmethod
    def error(cls, status: int, message: str) -> "Response":
        """`status` with `{"message": message}`."""
        return cls.json(status, {"message": message})

    @classmethod
    def invalid(cls, errors: ValidationErrors) -> "Response":
        """422 with the field errors."""
        return cls.json(422, errors.body())

    def with_header(self, name: str, value: str) -> "Response":
        self.headers.append((name, value))
        return self


Handler = Callable[[Any, Any, dict[str, str]], Response]


def _split(path: str) -> list[str]:
    return (path[1:] if path.startswith("/") else path).split("/")


@dataclass
class _Route:
    method: str
    segments: list[tuple[bool, str]]  # (is_capture, literal or name)
    handler: Handler
    pattern: str = ""
    operation: Optional[Operation] = None

    def specificity(self, path: list[str]) -> Optional[list[bool]]:
        """Per segment, True for a literal that matched, False for a capture; None: no match."""
        if len(self.segments) != len(path):
            return None
        ranks = []
        for (capture, text), value in zip(self.segments, path):
            if capture:
                if not value:
                    return None
                ranks.append(False)
            elif text == value:
                ranks.append(True)
            else:
                return None
        return ranks


class Router:
    """Routes `(method, pattern)` to handlers `handler(ctx, request, params) -> Response`;
    a `ValidationErrors` a handler raises answers 422, an `ApiError` its status and message.
    Each route may carry its documentation (`doc=Operation(…)`), from which `openapi()` makes
    the engine's API description; `schema(name, …)` registers the schemas operations name."""

    def __init__(self) -> None:
        self._routes: list[_Route] = []
        self._schemas: dict[str, dict[str, Any]] = {}

    def route(
        self, method: str, pattern: str, handler: Handler, doc: Optional[Operation] = None
    ) -> "Router":
        segments = []
        for segment in _split(pattern):
            if segment.startswith("{") and segment.endswith("}"):
                segments.append((True, segment[1:-1]))
            else:
                segments.append((False, segment))
        self._routes.append(_Route(method.upper(), segments, handler, pattern, doc))
        return self

    def get(self, pattern: str, handler: Handler, doc: Optional[Operation] = None) -> "Router":
        return self.route("GET", pattern, handler, doc)

    def post(self, pattern: str, handler: Handler, doc: Optional[Operation] = None) -> "Router":
        return self.route("POST", pattern, handler, doc)

    def put(self, pattern: str, handler: Handler, doc: Optional[Operation] = None) -> "Router":
        return self.route("PUT", pattern, handler, doc)

    def patch(self, pattern: str, handler: Handler, doc: Optional[Operation] = None) -> "Router":
        return self.route("PATCH", pattern, handler, doc)

    def delete(self, pattern: str, handler: Handler, doc: Optional[Operation] = None) -> "Router":
        return self.route("DELETE", pattern, handler, doc)

    def schema(self, name: str, schema: dict[str, Any]) -> "Router":
        """Registers the JSON Schema `name` (`components.schemas`), for operations to name."""
        self._schemas[name] = schema
        return self

    def openapi(self) -> dict[str, Any]:
        """The engine's API description: an OpenAPI 3.1 fragment of every route."""
        routes = [
            (
                route.method,
                route.pattern,
                [name for capture, name in route.segments if capture],
                route.operation,
            )
            for route in self._routes
        ]
        return document(routes, self._schemas)

    def handle(self, ctx: Any, method: str, path: str, request: Any = None) -> Response:
        """The answer to `method path`: 404 when no pattern matches the path, 405 with `Allow`
        when one does but not for this method, else the handler's."""
        path_segments = _split(path)
        best: Optional[list[bool]] = None
        candidates: list[_Route] = []
        for route in self._routes:
            rank = route.specificity(path_segments)
            if rank is None:
                continue
            if best is None or rank > best:
                best, candidates = rank, [route]
            elif rank == best:
                candidates.append(route)
        if not candidates:
            return Response.error(404, "Not found.")
        chosen = next((route for route in candidates if route.method == method), None)
        if chosen is None:
            allowed: list[str] = []
            for route in candidates:
                if route.method not in allowed:
                    allowed.append(route.method)
            return Response.error(405, MESSAGE_METHOD_NOT_ALLOWED).with_header(
                "allow", ", ".join(allowed)
            )
        params = {
            name: percent_decode(value)
            for (capture, name), value in zip(chosen.segments, path_segments)
            if capture
        }
        try:
            return chosen.handler(ctx, request, params)
        except ValidationErrors as errors:
            return Response.invalid(errors)
        except ApiError as refused:
            return Response.error(refused.status, refused.message)
