"""The pynotes engine's routes, event, job and setting on the kit's test kit (no host)."""

import json

import pytest

from notes_engine import NotesEngine
from tessera_engine import Context, Event, HostError, TenantInfo
from tessera_engine.testkit import TestHost

TENANT = "tenant-1"
OWNER = Context(TENANT, "user-1")
NOW_AND_LATER = 2**42  # the year 2109: every job is due


@pytest.fixture
def engine() -> TestHost:
    host = TestHost(NotesEngine())
    host.provision_tenant(TenantInfo(TENANT, "acme", "Acme"))
    return host


def test_a_created_note_is_shown_published_counted_and_word_counted_by_its_job(engine):
    created = engine.post_json(OWNER, "/api/v1/notes", {"title": "Plan", "body": "one two  three"})
    assert created.status == 201, created.body
    note = created.json()["data"]
    assert note["title"] == "Plan" and note["created_by"] == "user-1" and note["word_count"] is None
    assert created.header("content-type") == "application/json"

    published = engine.published()
    assert [(event.event_type, event.payload, event.actor_id) for event in published] == [
        ("pynotes.note.created", {"note_id": note["id"], "title": "Plan"}, "user-1")
    ]
    assert [json.loads(job.payload) for job in engine.jobs()] == [{"note_id": note["id"]}]

    ran = engine.run_due_jobs(NOW_AND_LATER)
    assert [reason for _, reason in ran] == [None]
    assert engine.jobs() == []
    shown = engine.get(OWNER, f"/api/v1/notes/{note['id']}")
    assert shown.status == 200
    assert shown.json()["data"]["word_count"] == 3
    assert engine.get(OWNER, "/api/v1/stats").json()["data"] == {"notes_created": 1, "entities_seen": 0}


def test_invalid_notes_are_refused_with_field_errors_and_commit_nothing(engine):
    answer = engine.post_json(OWNER, "/api/v1/notes", {"title": " ", "body": 5})
    assert answer.status == 422
    assert answer.json() == {
        "message": "The given data was invalid.",
        "errors": {"body": ["string"], "title": ["required"]},
    }
    assert engine.post_json(OWNER, "/api/v1/notes", {"title": "x" * 201}).json()["errors"] == {"title": ["max:200"]}
    assert engine.post_json(OWNER, "/api/v1/notes", {"title": 7}).json()["errors"] == {"title": ["string"]}
    assert engine.post_json(OWNER, "/api/v1/notes", {"title": None}).json()["errors"] == {"title": ["required"]}
    assert engine.post_json(OWNER, "/api/v1/notes", {"title": "ok", "body": None}).json()["errors"] == {"body": ["string"]}
    assert engine.post_json(OWNER, "/api/v1/notes", ["not", "an", "object"]).status == 422
    bad_json = engine.request(OWNER, "POST", "/api/v1/notes", [("content-type", "application/json")], b"{")
    assert bad_json.status == 400
    assert engine.stored_keys(TENANT, "note:") == []
    assert engine.published() == [] and engine.jobs() == []


def test_the_operator_setting_changes_the_longest_title(engine):
    engine.set_setting("max-title-length", "5")
    assert engine.post_json(OWNER, "/api/v1/notes", {"title": "sixsix"}).json()["errors"] == {"title": ["max:5"]}
    assert engine.post_json(OWNER, "/api/v1/notes", {"title": "five5"}).status == 201


def test_the_list_pages_with_cursors_oldest_first(engine):
    ids = [engine.post_json(OWNER, "/api/v1/notes", {"title": f"n{i}"}).json()["data"]["id"] for i in range(5)]
    first = engine.get(OWNER, "/api/v1/notes?limit=2").json()
    assert [note["id"] for note in first["data"]] == ids[:2]
    assert first["meta"]["has_more"] is True
    second = engine.get(OWNER, f"/api/v1/notes?limit=2&cursor={first['meta']['next_cursor']}").json()
    assert [note["id"] for note in second["data"]] == ids[2:4]
    last = engine.get(OWNER, f"/api/v1/notes?limit=2&cursor={second['meta']['next_cursor']}").json()
    assert [note["id"] for note in last["data"]] == ids[4:]
    assert last["meta"]["has_more"] is False
    assert engine.get(OWNER, "/api/v1/notes?cursor=%%%").status == 422
    assert engine.get(OWNER, "/api/v1/notes?colour=red").status == 400


def test_deleting_a_note_and_unknown_notes(engine):
    note_id = engine.post_json(OWNER, "/api/v1/notes", {"title": "gone"}).json()["data"]["id"]
    assert engine.delete(OWNER, f"/api/v1/notes/{note_id}").status == 204
    assert engine.get(OWNER, f"/api/v1/notes/{note_id}").status == 404
    assert engine.delete(OWNER, f"/api/v1/notes/{note_id}").json() == {"message": "Note not found."}
    # Its word-count job finds nothing and succeeds.
    assert [reason for _, reason in engine.run_due_jobs(NOW_AND_LATER)] == [None]
    answer = engine.request(OWNER, "PUT", "/api/v1/notes")
    assert answer.status == 405 and answer.header("allow") == "GET, POST"


def test_entity_created_events_are_counted_once_each(engine):
    event = Event("event-1", "entity.created", TENANT, "2026-11-26T12:00:00Z", '{"entity_id": "e1"}')
    engine.deliver(event)
    engine.deliver(event)
    engine.deliver(Event("event-2", "entity.created", TENANT, "2026-11-26T12:00:01Z", "{}"))
    engine.deliver(Event("event-3", "entity.deleted", TENANT, "2026-11-26T12:00:02Z", "{}"))
    assert engine.get(OWNER, "/api/v1/stats").json()["data"]["entities_seen"] == 2


def test_tenants_are_apart_and_deprovisioning_removes_everything(engine):
    other = Context("tenant-2", "user-9")
    engine.provision_tenant(TenantInfo("tenant-2", "other", "Other"))
    engine.post_json(OWNER, "/api/v1/notes", {"title": "mine"})
    assert engine.get(other, "/api/v1/notes").json()["data"] == []
    engine.deprovision_tenant(TENANT)
    assert engine.stored_keys(TENANT) == []
    assert json.loads(engine.stored("tenant-2", "tenant"))["tenant_short_id"] == "other"


def test_the_api_description_documents_every_route(engine):
    api = engine.api()
    assert set(api["paths"]) == {"/api/v1/notes", "/api/v1/notes/{note_id}", "/api/v1/stats"}
    create = api["paths"]["/api/v1/notes"]["post"]
    assert create["operationId"] == "post_api_v1_notes"
    assert create["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/NewNote"}
    assert create["responses"]["201"]["content"]["application/json"]["schema"]["properties"]["data"] == {
        "$ref": "#/components/schemas/Note"
    }
    assert create["responses"]["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ValidationErrorBody"
    }
    listed = api["paths"]["/api/v1/notes"]["get"]
    assert [parameter["name"] for parameter in listed["parameters"]] == ["limit", "cursor"]
    assert {"Note", "NewNote", "Stats", "ErrorBody", "CursorMeta"} <= set(api["components"]["schemas"])
    settings = engine.adapter.declared_settings
    assert [(setting.name, setting.kind.value, setting.default_value) for setting in settings] == [
        ("max-title-length", "integer", "200")
    ]


def test_a_failing_job_is_retried_with_its_attempt_counted(engine):
    engine.post_json(OWNER, "/api/v1/notes", {"title": "x"})
    job = engine.jobs()[0]
    engine.fake.jobs[0].payload = b"not json"
    ran = engine.run_due_jobs(NOW_AND_LATER)
    assert ran[0][1] is not None
    assert engine.jobs()[0].id == job.id and engine.jobs()[0].attempt == 1


def test_a_scan_page_smaller_than_the_list_page_still_fills_the_page(engine):
    ids = [engine.post_json(OWNER, "/api/v1/notes", {"title": f"n{i}"}).json()["data"]["id"] for i in range(4)]
    engine.set_setting("storage.scan-page", "2")
    first = engine.get(OWNER, "/api/v1/notes?limit=3").json()
    assert [note["id"] for note in first["data"]] == ids[:3] and first["meta"]["has_more"] is True
    rest = engine.get(OWNER, f"/api/v1/notes?limit=3&cursor={first['meta']['next_cursor']}").json()
    assert [note["id"] for note in rest["data"]] == ids[3:] and rest["meta"]["has_more"] is False
