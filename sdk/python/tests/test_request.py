"""The Python kit's requests and refusals against the Rust SDK's (`engines/sdk/src/request.rs`
and `error.rs` tests, `crates/wire/src/json.rs`): query decoding and refusals, the JSON body's
400s and 422s, and `ApiError`s answered in the host's shape through the router."""

import json

import pytest

from tessera_engine import ApiError, Request, Router, ValidationErrors, is_json_content_type
from tessera_engine.http import Response


def test_the_query_is_form_decoded_and_the_last_value_wins():
    request = Request("get", "/api/v1/notes", "tag=a%20b&tag=c+d&pinned=true&empty")
    assert request.method == "GET"
    query = request.query(["tag", "pinned", "empty"])
    assert query.get("tag") == "c d"
    assert query.get_bool("pinned") is True
    assert query.get("empty") == ""
    assert query.get("missing") is None


def test_an_unknown_parameter_is_a_400_naming_it():
    with pytest.raises(ApiError) as refused:
        Request("GET", "/api/v1/notes", "limit=2&colour=red").query(["limit"])
    assert (refused.value.status, refused.value.message) == (
        400,
        "Unknown query parameter `colour`.",
    )


def test_typed_parameters_fail_as_422s():
    query = Request("GET", "/", "n=12&bad=1.5&yes=1&no=0&maybe=yes&big=4294967296").query_unchecked()
    assert query.get_u32("n") == 12
    assert query.get_u64("big") == 4294967296
    for name, getter, rule in [
        ("bad", query.get_u32, "integer"),
        ("big", query.get_u32, "integer"),
        ("maybe", query.get_bool, "boolean"),
    ]:
        with pytest.raises(ValidationErrors) as refused:
            getter(name)
        assert refused.value == ValidationErrors.single(name, rule)
    assert (query.get_bool("yes"), query.get_bool("no")) == (True, False)


@pytest.mark.parametrize(
    ("content_type", "accepted"),
    [
        ("application/json", True),
        ("Application/JSON; charset=utf-8", True),
        ("application/merge-patch+json", True),
        ("text/plain", False),
        ("application/jsonx", False),
    ],
)
def test_json_content_types(content_type, accepted):
    assert is_json_content_type(content_type) is accepted


def test_bodies_another_type_or_malformed_are_400s_and_a_non_object_a_422():
    plain = Request("POST", "/", headers=[("content-type", "text/plain")], body=b"{}")
    with pytest.raises(ApiError) as refused:
        plain.json()
    assert refused.value.status == 400
    assert refused.value.message == "Expected a JSON body with Content-Type: application/json."
    with pytest.raises(ApiError) as refused:
        Request("POST", "/", body=b'{"title": ').json()
    assert refused.value.status == 400
    assert refused.value.message.startswith("Invalid JSON body: ")
    with pytest.raises(ValidationErrors) as refused:
        Request("POST", "/", body=b"[1, 2]").json_object()
    assert refused.value == ValidationErrors.single("body", "object")
    assert Request("POST", "/", body=b' {"a": 1}').json_object() == {"a": 1}


def test_refusals_raised_by_handlers_answer_in_the_host_shape():
    def show(ctx, request, params):
        if params["id"] == "secret":
            raise ApiError.forbidden()
        raise ApiError.not_found("Note")

    routes = Router().get("/api/v1/notes/{id}", show)
    forbidden = routes.handle(None, "GET", "/api/v1/notes/secret")
    assert forbidden.status == 403
    assert json.loads(forbidden.body) == {"message": "This action is unauthorized."}
    missing = routes.handle(None, "GET", "/api/v1/notes/n1")
    assert (missing.status, json.loads(missing.body)) == (404, {"message": "Note not found."})
    assert isinstance(missing, Response)
