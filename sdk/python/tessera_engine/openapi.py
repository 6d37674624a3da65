"""The engine's API description (`describe-api`), as the Rust SDK's `openapi.rs` makes it: an
OpenAPI 3.1 fragment from the router's routes, each documented once with an `Operation`.
Schemas are JSON Schema dicts, or the name of one the engine registers with
`Router.schema(name, schema)` (a `$ref` to `#/components/schemas/<name>`). Paths stay relative
to the engine's prefix; the host prefixes them and merges the fragment into `/api/openapi.json`.
Every operation gets the standard error answers (400, 401, 403, 404, 413, 422, 429, 502, 503,
504), so an operation lists what it answers on success and what else it wants to describe."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

#: A schema: a JSON Schema dict, or the name of a registered one.
Schema = Union[str, dict[str, Any]]

_DATA, _PAGE, _BARE = "data", "page", "bare"

STANDARD_ERRORS: list[tuple[int, str]] = [
    (400, "Malformed request: an unknown query parameter, or a body that is not JSON"),
    (401, "Missing, invalid or expired bearer token"),
    (403, "The caller may not do this"),
    (404, "No such resource"),
    (413, "The body is larger than the limit"),
    (422, "The given data was invalid"),
    (429, "Rate limit exceeded; `Retry-After` says when to retry"),
    (502, "The engine failed"),
    (503, "No engine capacity now; retry later"),
    (504, "The engine did not answer in time"),
]

#: The kit's own schemas, as the Rust SDK's (`ErrorBody`, `ValidationErrorBody`, `CursorMeta`).
KIT_SCHEMAS: dict[str, dict[str, Any]] = {
    "ErrorBody": {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
    "ValidationErrorBody": {
        "type": "object",
        "properties": {
            "message": {"type": "string"},
            "errors": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
            },
        },
        "required": ["message", "errors"],
    },
    "CursorMeta": {
        "type": "object",
        "properties": {
            "next_cursor": {"type": ["string", "null"]},
            "has_more": {"type": "boolean"},
        },
        "required": ["next_cursor", "has_more"],
    },
}

#: The query of a cursor-paged list (`limit`, `cursor`), for `Operation.query`.
PAGE_QUERY: dict[str, dict[str, Any]] = {
    "limit": {
        "type": "integer",
        "minimum": 1,
        "description": "Items per page (default 50, at most 100).",
    },
    "cursor": {
        "type": "string",
        "description": "`meta.next_cursor` of the previous page.",
    },
}


def reference(schema: Schema) -> dict[str, Any]:
    """A name as a `$ref` to the engine's components; a dict as itself."""
    if isinstance(schema, str):
        return {"$ref": f"#/components/schemas/{schema}"}
    return schema


@dataclass
class _Answer:
    status: int
    description: str
    schema: Optional[Schema] = None
    envelope: str = _DATA
    binary: Optional[str] = None


@dataclass
class Operation:
    """The documentation of one route: what it does, reads (query, body) and answers."""

    summary: str
    _description: Optional[str] = None
    _query: dict[str, dict[str, Any]] = field(default_factory=dict)
    _query_required: list[str] = field(default_factory=list)
    _body: Optional[tuple[Optional[Schema], Optional[str], bool]] = None
    _answers: list[_Answer] = field(default_factory=list)
    _path_descriptions: dict[str, str] = field(default_factory=dict)
    _audit: Optional[str] = None

    def audited(self, name: str) -> "Operation":
        """An audited operation: answered with a success, the host records `<code>.<name>` in the
        tenant's audit trail (written as `x-tessera-audit`; `name` is lower-case letters, digits
        and `_` in dot-separated words, e.g. `note.deleted`)."""
        self._audit = name
        return self

    def description(self, text: str) -> "Operation":
        """A longer description (Markdown)."""
        self._description = text
        return self

    def path_parameter(self, name: str, description: str) -> "Operation":
        """Describes `{name}` (documented as a required string anyway)."""
        self._path_descriptions[name] = description
        return self

    def query(self, parameters: dict[str, dict[str, Any]], required: tuple[str, ...] = ()) -> "Operation":
        """Query parameters: name → JSON Schema (a `description` in it becomes the parameter's)."""
        self._query.update(parameters)
        self._query_required.extend(required)
        return self

    def body(self, schema: Schema, required: bool = True) -> "Operation":
        """A JSON request body."""
        self._body = (schema, None, required)
        return self

    def binary_body(self, media_type: str, required: bool = True) -> "Operation":
        """Raw bytes of `media_type` as the body."""
        self._body = (None, media_type, required)
        return self

    def _answer(self, answer: _Answer) -> "Operation":
        self._answers.append(answer)
        return self

    def ok(self, schema: Schema) -> "Operation":
        """200 `{"data": schema}`."""
        return self._answer(_Answer(200, "OK", schema, _DATA))

    def page(self, schema: Schema) -> "Operation":
        """200 `{"data": [schema], "meta": CursorMeta}`."""
        return self._answer(_Answer(200, "One page of the list", schema, _PAGE))

    def created(self, schema: Schema) -> "Operation":
        """201 `{"data": schema}`."""
        return self._answer(_Answer(201, "Created", schema, _DATA))

    def accepted(self, schema: Schema) -> "Operation":
        """202 `{"data": schema}`."""
        return self._answer(_Answer(202, "Accepted", schema, _DATA))

    def no_content(self) -> "Operation":
        """204, no body."""
        return self._answer(_Answer(204, "Done; no body"))

    def answers(self, status: int, description: str, schema: Schema) -> "Operation":
        """`status` with `{"data": schema}`."""
        return self._answer(_Answer(status, description, schema, _DATA))

    def answers_bare(self, status: int, description: str, schema: Schema) -> "Operation":
        """`status` with `schema` as the whole body."""
        return self._answer(_Answer(status, description, schema, _BARE))

    def answers_binary(self, status: int, description: str, media_type: str) -> "Operation":
        return self._answer(_Answer(status, description, binary=media_type))

    def error(self, status: int, description: str) -> "Operation":
        """`status` with `{"message": …}`, described in the operation's words."""
        return self._answer(_Answer(status, description, "ErrorBody", _BARE))

    def invalid(self, description: str) -> "Operation":
        """422 with field errors, described in the operation's words."""
        return self._answer(_Answer(422, description, "ValidationErrorBody", _BARE))


def operation_id(method: str, pattern: str) -> str:
    """`get_api_v1_notes_note_id` for `GET /api/v1/notes/{note_id}`, as the Rust SDK names it."""
    parts = [method.lower()]
    for segment in pattern.split("/"):
        if segment:
            parts.append(
                "".join(
                    c if (c.isascii() and c.isalnum()) else "_" for c in segment if c not in "{}"
                )
            )
    return "_".join(parts)


def _binary(media_type: str) -> dict[str, Any]:
    return {media_type: {"schema": {"type": "string", "format": "binary"}}}


def describe(method: str, pattern: str, captures: list[str], operation: Optional[Operation]) -> dict[str, Any]:
    """One operation object."""
    operation = operation or Operation(f"{method} {pattern}")
    described: dict[str, Any] = {
        "operationId": operation_id(method, pattern),
        "summary": operation.summary,
    }
    if operation._description is not None:
        described["description"] = operation._description
    if operation._audit is not None:
        described["x-tessera-audit"] = operation._audit
    parameters: list[dict[str, Any]] = []
    for name in captures:
        parameter: dict[str, Any] = {
            "name": name,
            "in": "path",
            "required": True,
            "schema": {"type": "string", "minLength": 1},
        }
        if name in operation._path_descriptions:
            parameter["description"] = operation._path_descriptions[name]
        parameters.append(parameter)
    for name, schema in operation._query.items():
        schema = dict(schema)
        description = schema.pop("description", None)
        parameter = {
            "name": name,
            "in": "query",
            "required": name in operation._query_required,
            "schema": schema,
        }
        if description is not None:
            parameter["description"] = description
        parameters.append(parameter)
    if parameters:
        described["parameters"] = parameters
    if operation._body is not None:
        schema, media_type, required = operation._body
        content = (
            _binary(media_type)
            if media_type is not None
            else {"application/json": {"schema": reference(schema)}}  # type: ignore[arg-type]
        )
        described["requestBody"] = {"required": required, "content": content}
    responses: dict[str, Any] = {}
    if not operation._answers:
        responses["default"] = {"description": "The engine's answer"}
    for answer in operation._answers:
        response: dict[str, Any] = {"description": answer.description}
        if answer.binary is not None:
            response["content"] = _binary(answer.binary)
        if answer.schema is not None:
            schema = reference(answer.schema)
            if answer.envelope == _DATA:
                body = {"type": "object", "required": ["data"], "properties": {"data": schema}}
            elif answer.envelope == _PAGE:
                body = {
                    "type": "object",
                    "required": ["data", "meta"],
                    "properties": {
                        "data": {"type": "array", "items": schema},
                        "meta": reference("CursorMeta"),
                    },
                }
            else:
                body = schema
            response["content"] = {"application/json": {"schema": body}}
        responses[str(answer.status)] = response
    for status, description in STANDARD_ERRORS:
        name = "ValidationErrorBody" if status == 422 else "ErrorBody"
        responses.setdefault(
            str(status),
            {"description": description, "content": {"application/json": {"schema": reference(name)}}},
        )
    described["responses"] = responses
    return described


def document(
    routes: list[tuple[str, str, list[str], Optional[Operation]]], schemas: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The fragment: `paths` from `(method, pattern, captures, operation)` routes, the engine's
    `schemas` and the kit's own under `components.schemas`."""
    paths: dict[str, dict[str, Any]] = {}
    for method, pattern, captures, operation in routes:
        paths.setdefault(pattern, {})[method.lower()] = describe(method, pattern, captures, operation)
    components = dict(KIT_SCHEMAS)
    components.update(schemas)
    return {"openapi": "3.1.0", "paths": paths, "components": {"schemas": components}}
