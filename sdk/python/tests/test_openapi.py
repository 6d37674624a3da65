"""The API description: what the Rust SDK's `openapi.rs` makes, from the Python router."""

from tessera_engine import PAGE_QUERY, Operation, Response, Router
from tessera_engine.openapi import STANDARD_ERRORS, operation_id


def nothing(ctx, request, params):
    return Response.no_content()


def test_operations_are_named_and_documented_as_the_rust_sdk_does():
    router = (
        Router()
        .schema("Note", {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]})
        .get("/api/v1/notes", nothing, Operation("List notes").query(PAGE_QUERY).page("Note"))
        .get(
            "/api/v1/notes/{note_id}",
            nothing,
            Operation("Show a note").description("*One* note.").path_parameter("note_id", "The note").ok("Note"),
        )
        .put("/api/v1/files/{file_id}/content", nothing, Operation("Upload").binary_body("application/octet-stream").no_content())
        .delete("/api/v1/notes/{note_id}", nothing)
    )
    document = router.openapi()
    assert document["openapi"] == "3.1.0"
    listed = document["paths"]["/api/v1/notes"]["get"]
    assert listed["operationId"] == "get_api_v1_notes"
    assert listed["parameters"] == [
        {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1},
         "description": "Items per page (default 50, at most 100)."},
        {"name": "cursor", "in": "query", "required": False, "schema": {"type": "string"},
         "description": "`meta.next_cursor` of the previous page."},
    ]
    page = listed["responses"]["200"]["content"]["application/json"]["schema"]
    assert page == {
        "type": "object",
        "required": ["data", "meta"],
        "properties": {
            "data": {"type": "array", "items": {"$ref": "#/components/schemas/Note"}},
            "meta": {"$ref": "#/components/schemas/CursorMeta"},
        },
    }
    shown = document["paths"]["/api/v1/notes/{note_id}"]["get"]
    assert shown["operationId"] == "get_api_v1_notes_note_id"
    assert shown["description"] == "*One* note."
    assert shown["parameters"] == [
        {"name": "note_id", "in": "path", "required": True, "schema": {"type": "string", "minLength": 1},
         "description": "The note"}
    ]
    upload = document["paths"]["/api/v1/files/{file_id}/content"]["put"]
    assert upload["requestBody"] == {
        "required": True,
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
    assert upload["responses"]["204"] == {"description": "Done; no body"}
    undocumented = document["paths"]["/api/v1/notes/{note_id}"]["delete"]
    assert undocumented["summary"] == "DELETE /api/v1/notes/{note_id}"
    assert undocumented["responses"]["default"] == {"description": "The engine's answer"}
    assert {"Note", "ErrorBody", "ValidationErrorBody", "CursorMeta"} <= set(document["components"]["schemas"])


def test_every_operation_gets_the_standard_errors_unless_it_describes_its_own():
    router = Router().post("/api/v1/x", nothing, Operation("Make").body({"type": "object"}).invalid("Bad x").created({"type": "object"}))
    responses = router.openapi()["paths"]["/api/v1/x"]["post"]["responses"]
    assert sorted(responses) == sorted(["201"] + [str(status) for status, _ in STANDARD_ERRORS])
    assert responses["422"]["description"] == "Bad x"
    assert responses["404"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
    assert responses["401"]["description"] == "Missing, invalid or expired bearer token"


def test_operation_ids_keep_letters_and_digits_only():
    assert operation_id("PATCH", "/api/v1/user-settings/{key}") == "patch_api_v1_user_settings_key"


def test_audited_operations_carry_their_event_name():
    router = Router().delete(
        "/api/v1/notes/{note_id}", nothing, Operation("Delete a note").no_content().audited("note.deleted")
    ).get("/api/v1/notes", nothing, Operation("List notes"))
    document = router.openapi()
    assert document["paths"]["/api/v1/notes/{note_id}"]["delete"]["x-tessera-audit"] == "note.deleted"
    assert "x-tessera-audit" not in document["paths"]["/api/v1/notes"]["get"]
