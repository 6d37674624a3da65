"""The Python kit's wire rules against the host's: the vectors are those of `crates/wire`'s
own tests (`paging.rs`, `validation.rs`, `messages.rs`), so a Python engine's cursors, 422s and
messages are byte for byte a Rust engine's."""

import pytest

from tessera_engine import (
    MESSAGE_INVALID,
    CursorMeta,
    CursorPage,
    ValidationErrors,
    decode_cursor,
    encode_cursor,
    unknown_query_parameter,
)


def test_cursors_are_unpadded_urlsafe_base64_of_json():
    # JSON `"notes/a"` is 9 bytes: base64 would pad it with `=`.
    assert encode_cursor("notes/a") == "Im5vdGVzL2Ei"
    assert decode_cursor("Im5vdGVzL2Ei") == "notes/a"
    assert encode_cursor("k?>") == "Ims_PiI"
    assert decode_cursor("Ims_PiI") == "k?>"
    assert encode_cursor(7) == "Nw"
    assert decode_cursor("Nw", int) == 7
    # Non-ASCII keys are UTF-8 in the JSON, not \\u escapes (serde_json's encoding).
    assert decode_cursor(encode_cursor("notes/é")) == "notes/é"
    assert encode_cursor("é") == "IsOpIg"


@pytest.mark.parametrize(
    "cursor",
    [
        "not a cursor!",
        "Nw",  # valid base64 of something that is not a JSON string
        "Im5vdGVzL2Ei==",  # padded base64 is not the encoding
        "Im5vdGVzL2Ei+",
        "Im5vdGVzL2Ej",  # non-canonical trailing bits
        "I",
    ],
)
def test_bad_cursors_are_422s(cursor):
    with pytest.raises(ValidationErrors) as refused:
        CursorPage.new(cursor, None)
    assert refused.value == ValidationErrors.single("cursor", "invalid")


@pytest.mark.parametrize("limit", ["x", "-1", "1.5", "", " 5", "4294967296"])
def test_limits_that_are_no_unsigned_integer_are_422s(limit):
    with pytest.raises(ValidationErrors) as refused:
        CursorPage.from_query({"limit": limit})
    assert refused.value == ValidationErrors.single("limit", "integer")


def test_a_zero_limit_is_min_1():
    for refused_page in (lambda: CursorPage.new(None, 0), lambda: CursorPage.from_query({"limit": "0"})):
        with pytest.raises(ValidationErrors) as refused:
            refused_page()
        assert refused.value == ValidationErrors.single("limit", "min:1")


def test_limits_default_and_clamp():
    page = CursorPage.from_query({})
    assert (page.after, page.limit) == (None, 50)
    assert CursorPage.new(None, 500).limit == 100
    assert CursorPage.new(None, 500, 20, 30, int).limit == 30
    assert CursorPage.new(None, None, 20, 30, int).limit == 20
    assert CursorPage.new("", 3).after is None
    assert CursorPage.from_query({"limit": "+5"}).limit == 5  # as Rust's u32 parser
    page = CursorPage.from_query({"cursor": encode_cursor("kv/b"), "limit": "2"})
    assert (page.after, page.limit) == ("kv/b", 2)
    assert page.fetch_limit() == 3


def test_pages_walk_without_gaps():
    keys = ["kv/a", "kv/b", "kv/c", "kv/d", "kv/e"]
    seen, cursor = [], None
    while True:
        page = CursorPage.new(cursor, 2)
        rows = [key for key in keys if page.after is None or key > page.after][: page.fetch_limit()]
        rows, meta = page.finish(rows, lambda key: key)
        seen.extend(rows)
        cursor = meta.next_cursor
        if not meta.has_more:
            # The last page ends on the last key.
            assert cursor == encode_cursor("kv/e")
            break
    assert seen == keys


def test_an_empty_page_keeps_the_request_cursor():
    page = CursorPage.new(encode_cursor("kv/z"), 2)
    assert page.finish([], lambda key: key) == ([], CursorMeta(encode_cursor("kv/z"), False))
    assert CursorPage.new(None, 2).finish([], lambda key: key)[1] == CursorMeta(None, False)


def test_validation_errors_have_the_host_shape():
    errors = ValidationErrors()
    errors.check_length("", "title", 1, 200)
    errors.check_length("x" * 201, "body", 0, 200)
    errors.required("name", "   ")
    errors.add("title", "regex")
    assert errors.body() == {
        "message": MESSAGE_INVALID,
        "errors": {"body": ["max:200"], "name": ["required"], "title": ["min:1", "regex"]},
    }
    assert MESSAGE_INVALID == "The given data was invalid."
    # Lengths are characters, not bytes.
    assert ValidationErrors().check_length("é" * 200, "title", 1, 200)
    with pytest.raises(ValidationErrors):
        errors.raise_if_any()
    ValidationErrors().raise_if_any()


def test_unknown_parameters_are_named_in_backticks():
    assert unknown_query_parameter("colour") == "Unknown query parameter `colour`."
