"""pynotes: the example engine of the Python kit, a small notes engine. Notes in storage, a
cursor-paged list, an event it publishes (`pynotes.note.created`) and one it consumes
(`entity.created`, counted once per event), a job (each new note's word count) and an operator
setting (`max-title-length`). Its JavaScript twin, `engines/jsnotes`, behaves the same."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Optional

from tessera_engine import (
    PAGE_QUERY,
    ApiError,
    Context,
    CursorPage,
    Descriptor,
    Engine,
    Event,
    Job,
    Operation,
    Request,
    Response,
    Router,
    Setting,
    Transaction,
    ValidationErrors,
    host,
    now_rfc3339,
    now_unix_ms,
)

CODE = "pynotes"
NOTE_PREFIX = "note:"
NOTES_CREATED = "stats:notes_created"
ENTITIES_SEEN = "stats:entities_seen"
MAX_BODY_CHARACTERS = 10_000
DEFAULT_MAX_TITLE_LENGTH = 200


def _note_key(note_id: str) -> str:
    return NOTE_PREFIX + note_id


def _new_note_id() -> str:
    """Sorts by creation time: 19 digits of Unix nanoseconds, then 8 random hex digits."""
    return f"{time.time_ns():019d}-{os.urandom(4).hex()}"


def _load_note(note_id: str) -> dict[str, Any]:
    note = host.storage.get_json(_note_key(note_id))
    if note is None:
        raise ApiError.not_found("Note")
    return note


def _counter(key: str) -> int:
    raw = host.storage.get(key)
    return 0 if raw is None else int(raw.decode("ascii"))


def create_note(ctx: Context, request: Request, params: dict[str, str]) -> Response:
    body = request.json_object()
    errors = ValidationErrors()
    title = body.get("title")
    text = body.get("body", "")
    max_title = host.settings.get_int("max-title-length", DEFAULT_MAX_TITLE_LENGTH)
    if title is not None and not isinstance(title, str):
        errors.add("title", "string")
    elif errors.check(isinstance(title, str) and bool(title.strip()), "title", "required"):
        errors.check(len(title) <= max_title, "title", f"max:{max_title}")
    if not isinstance(text, str):
        errors.add("body", "string")
    else:
        errors.check(len(text) <= MAX_BODY_CHARACTERS, "body", f"max:{MAX_BODY_CHARACTERS}")
    errors.raise_if_any()
    note = {
        "id": _new_note_id(),
        "title": title,
        "body": text,
        "created_by": ctx.user_id,
        "created_at": now_rfc3339(),
        "word_count": None,
    }
    host.storage.put_json(_note_key(note["id"]), note)
    host.events.publish(f"{CODE}.note.created", {"note_id": note["id"], "title": title})
    # The note, its count and its word-count job commit together with the event, or not at all.
    host.storage.transact(
        Transaction(add=[(NOTES_CREATED, 1)], jobs=[(now_unix_ms(), json.dumps({"note_id": note["id"]}).encode())])
    )
    return Response.created(note)


def list_notes(ctx: Context, request: Request, params: dict[str, str]) -> Response:
    page = CursorPage.from_query(request.query(["limit", "cursor"]).to_dict())
    after = None if page.after is None else _note_key(page.after)
    # Scans again when the operator's scan page is smaller than the page asked for.
    entries = host.storage.scan_up_to(NOTE_PREFIX, after, page.fetch_limit()).entries
    notes = [json.loads(value) for _, value in entries]
    shown, meta = page.finish(notes, lambda note: note["id"])
    return Response.ok(shown, meta)


def get_note(ctx: Context, request: Request, params: dict[str, str]) -> Response:
    request.query([])
    return Response.ok(_load_note(params["note_id"]))


def delete_note(ctx: Context, request: Request, params: dict[str, str]) -> Response:
    request.query([])
    if not host.storage.delete(_note_key(params["note_id"])):
        raise ApiError.not_found("Note")
    return Response.no_content()


def stats(ctx: Context, request: Request, params: dict[str, str]) -> Response:
    request.query([])
    return Response.ok({"notes_created": _counter(NOTES_CREATED), "entities_seen": _counter(ENTITIES_SEEN)})


NOTE_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "body": {"type": "string"},
        "created_by": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
        "word_count": {"type": ["integer", "null"], "minimum": 0},
    },
    "required": ["id", "title", "body", "created_by", "created_at", "word_count"],
}
NEW_NOTE_SCHEMA = {
    "type": "object",
    "properties": {
        "title": {
            "type": "string",
            "minLength": 1,
            "maxLength": DEFAULT_MAX_TITLE_LENGTH,
            "pattern": "\\S",
            "description": "Not blank; at most `max-title-length` characters (the operator's setting, 200 by default).",
        },
        "body": {"type": "string", "maxLength": MAX_BODY_CHARACTERS},
    },
    "required": ["title"],
}
STATS_SCHEMA = {
    "type": "object",
    "properties": {
        "notes_created": {"type": "integer", "minimum": 0},
        "entities_seen": {"type": "integer", "minimum": 0},
    },
    "required": ["notes_created", "entities_seen"],
}


class NotesEngine(Engine):
    def describe(self) -> Descriptor:
        return Descriptor(
            code=CODE,
            name="Python notes",
            version="0.1.0",
            requires_tenant_provision=True,
            requires_user_provision=False,
            subscriptions=["entity.created"],
        )

    def settings(self) -> list[Setting]:
        return [
            Setting.integer(
                "max-title-length", DEFAULT_MAX_TITLE_LENGTH, "Longest note title accepted, in characters."
            )
        ]

    def router(self) -> Router:
        note_id = "The note's id"
        return (
            Router()
            .schema("Note", NOTE_SCHEMA)
            .schema("NewNote", NEW_NOTE_SCHEMA)
            .schema("Stats", STATS_SCHEMA)
            .get("/api/v1/notes", list_notes, Operation("List notes, oldest first").query(PAGE_QUERY).page("Note"))
            .post(
                "/api/v1/notes",
                create_note,
                Operation("Create a note")
                .description("Publishes `pynotes.note.created` and schedules the note's word count.")
                .body("NewNote")
                .created("Note"),
            )
            .get(
                "/api/v1/notes/{note_id}",
                get_note,
                Operation("Show a note").path_parameter("note_id", note_id).ok("Note"),
            )
            .delete(
                "/api/v1/notes/{note_id}",
                delete_note,
                Operation("Delete a note").path_parameter("note_id", note_id).no_content().audited("note.deleted"),
            )
            .get("/api/v1/stats", stats, Operation("Counts of notes created and entities seen").ok("Stats"))
        )

    def on_event(self, event: Event) -> None:
        if event.event_type != "entity.created":
            return
        # Counted once per event: a redelivered event finds its marker and changes nothing.
        host.storage.transact(
            Transaction(expect=[(f"seen:{event.id}", None)], sets=[(f"seen:{event.id}", b"1")], add=[(ENTITIES_SEEN, 1)])
        )

    def run_job(self, job: Job) -> None:
        payload: Optional[dict[str, Any]] = json.loads(job.payload)
        key = _note_key(payload["note_id"])
        note = host.storage.get_json(key)
        if note is None:
            return  # deleted before its word count: nothing to do
        note["word_count"] = len(note["body"].split())
        host.storage.put_json(key, note)
