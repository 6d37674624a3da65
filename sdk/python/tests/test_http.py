"""The Python kit's router and responses against the Rust SDK's behaviour
(`engines/sdk/src/router.rs` and `response.rs` tests): the same envelopes, the most specific
route, 404s and 405s with `Allow`, percent-decoded parameters, 422s from raised errors."""

import json

from tessera_engine import CursorMeta, ValidationErrors
from tessera_engine import percent_decode
from tessera_engine.http import Response, Router


def body(response: Response):
    return json.loads(response.body)


def answer(ctx, request, params):
    return Response.ok({"route": request, "params": params})


def router() -> Router:
    return (
        Router()
        .get("/api/v1/notes", lambda ctx, request, params: answer(ctx, "list", params))
        .post("/api/v1/notes", lambda ctx, request, params: answer(ctx, "create", params))
        .get("/api/v1/notes/{id}", lambda ctx, request, params: answer(ctx, "show", params))
        .get("/api/v1/notes/pinned", lambda ctx, request, params: answer(ctx, "pinned", params))
        .delete("/api/v1/notes/{id}", lambda ctx, request, params: answer(ctx, "delete", params))
        .get(
            "/api/v1/{kind}/special",
            lambda ctx, request, params: answer(ctx, "special", params),
        )
    )


def test_envelopes_are_the_hosts():
    assert body(Response.ok([1])) == {"data": [1]}
    assert body(Response.ok([], CursorMeta(None, False))) == {
        "data": [],
        "meta": {"next_cursor": None, "has_more": False},
    }
    assert Response.created({"id": "x"}).status == 201
    assert Response.no_content().body == b""
    assert body(Response.error(404, "Not found.")) == {"message": "Not found."}
    assert ("content-type", "application/json") in Response.ok(1).headers
    # serde_json's compact UTF-8.
    assert Response.ok({"title": "é"}).body == '{"data":{"title":"é"}}'.encode()
    # A value JSON cannot hold is a 500, not a crash.
    assert Response.ok({"x": object()}).status == 500


def test_the_most_specific_route_wins_and_parameters_are_decoded():
    routes = router()
    assert body(routes.handle(None, "GET", "/api/v1/notes/pinned"))["data"]["route"] == "pinned"
    shown = body(routes.handle(None, "GET", "/api/v1/notes/a%2Fb%20c"))["data"]
    assert shown == {"route": "show", "params": {"id": "a/b c"}}
    # Literals beat captures from the left.
    assert body(routes.handle(None, "GET", "/api/v1/notes/special"))["data"]["route"] == "show"


def test_unknown_paths_are_404_and_other_methods_405_with_allow():
    routes = router()
    assert routes.handle(None, "GET", "/api/v1/nothing").status == 404
    assert routes.handle(None, "GET", "/api/v1/notes/").status == 404, "an empty capture"
    refused = routes.handle(None, "PUT", "/api/v1/notes/n1")
    assert refused.status == 405
    assert ("allow", "GET, DELETE") in refused.headers
    assert body(refused) == {"message": "Method not allowed."}


def test_a_raised_validation_error_is_a_422():
    def create(ctx, request, params):
        errors = ValidationErrors()
        errors.required("title", "")
        errors.raise_if_any()
        return Response.created({})

    answered = Router().post("/api/v1/notes", create).handle(None, "POST", "/api/v1/notes")
    assert answered.status == 422
    assert body(answered) == {
        "message": "The given data was invalid.",
        "errors": {"title": ["required"]},
    }


def test_percent_decoding_keeps_what_is_not_an_escape():
    assert percent_decode("100%") == "100%"
    assert percent_decode("%zz%41") == "%zzA"
    assert percent_decode("a+b") == "a+b"
    assert percent_decode("a+b", plus_is_space=True) == "a b"
    assert percent_decode("%C3%A9") == "é"
    assert percent_decode("%FF") == "\ufffd"
