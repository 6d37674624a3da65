"""pyconformance: the `conformance` test engine (`tests/components/conformance`) in Python. It
runs a script of host-import operations in one call, so one scenario runs through the real
host and through the Python kit's test kit (`run_fake.py`), and `tests/it/polyglot.rs`
requires equal transcripts (and equal to the Rust engine's on the host).

`POST /api/v1/script` `{"ops": [...], "status": 200}` runs each op in order and answers
`status` with `{"data": [result, …]}`. Results hold no ids or times; a refused import is
`{"error": true}`. `publish` sends `ping.conformance {n}`."""

from __future__ import annotations

from typing import Any, Optional

from tessera_engine import (
    Context,
    Descriptor,
    Engine,
    HostError,
    Request,
    Response,
    Router,
    Transaction,
    host,
)


def _text(value: Any) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else b""


def _optional_text(value: Any) -> Optional[bytes]:
    return value.encode("utf-8") if isinstance(value, str) else None


def _shown(value: Optional[bytes]) -> Any:
    return None if value is None else value.decode("utf-8", "replace")


def _strings(value: Any) -> list[str]:
    return [item if isinstance(item, str) else "" for item in value] if isinstance(value, list) else []


def _pairs(value: Any) -> list[tuple[str, bytes]]:
    return [(pair[0], _text(pair[1])) for pair in value] if isinstance(value, list) else []


def _at(op: dict[str, Any]) -> int:
    """The op's `at` (Unix milliseconds), else 2100-01-01."""
    return op.get("at", 4_102_444_800_000)


def _dump() -> dict[str, Any]:
    entries: dict[str, Any] = {}
    for key, value in host.storage.scan_all("", page=100):
        entries[key] = "<id>" if key.startswith("id/") else _shown(value)
    return {"entries": entries, "blob_usage": host.blobs.usage()}


def _run(op: dict[str, Any]) -> Any:
    name = op.get("op", "")
    storage = host.storage
    if name == "get":
        return _shown(storage.get(op.get("key", "")))
    if name == "get_many":
        return [_shown(value) for value in storage.get_many(_strings(op.get("keys")))]
    if name == "set":
        storage.set(op.get("key", ""), _text(op.get("value")))
        return None
    if name == "delete":
        return storage.delete(op.get("key", ""))
    if name == "scan":
        scan = storage.scan(op.get("prefix", ""), op.get("after"), op.get("limit", 100), op.get("reverse", False))
        return {"keys": [key for key, _ in scan.entries], "exhausted": scan.exhausted}
    if name == "delete_prefix":
        return storage.delete_prefix(op.get("prefix", ""))
    if name == "cas":
        return storage.compare_and_swap(
            op.get("key", ""), _optional_text(op.get("expected")), _optional_text(op.get("value"))
        )
    if name == "batch":
        jobs = [(_at(op), str(n).encode()) for n in range(op.get("jobs", 0))]
        return len(storage.write_batch(_pairs(op.get("sets")), _strings(op.get("deletes")), jobs))
    if name == "transact":
        transaction = Transaction(
            expect=[(pair[0], _optional_text(pair[1])) for pair in op.get("expect", [])],
            sets=_pairs(op.get("sets")),
            deletes=_strings(op.get("deletes")),
            add=[(pair[0], pair[1]) for pair in op.get("add", [])],
        )
        return storage.transact(transaction) is not None
    if name == "publish":
        host.events.publish("ping.conformance", {"n": op.get("n")})
        return None
    if name == "schedule":
        job_id = host.scheduler.schedule(_at(op), b"later")
        storage.set(op.get("store_as", "id/job"), job_id.encode())
        return None
    if name == "cancel":
        stored = storage.get(op.get("stored", "id/job")) or b""
        return host.scheduler.cancel(stored.decode("utf-8", "replace"))
    if name == "blob_put":
        return host.blobs.put(op.get("key", ""), _text(op.get("content")), op.get("quota"), _pairs(op.get("sets")))
    if name == "blob_get":
        return _shown(host.blobs.get(op.get("key", "")))
    if name == "blob_delete":
        return host.blobs.delete(_strings(op.get("keys")), _strings(op.get("deletes")))
    if name == "blob_usage":
        return host.blobs.usage()
    if name == "setting":
        return host.settings.get(op.get("name", ""))
    if name == "vault":
        plaintext = _text(op.get("text"))
        sealed = host.vault.seal(plaintext)
        return sealed != plaintext and host.vault.open(sealed) == plaintext
    if name == "dump":
        return _dump()
    return {"unknown_op": name}


def _run_or_refused(op: dict[str, Any]) -> Any:
    try:
        return _run(op)
    except HostError:
        return {"error": True}


def script(ctx: Context, request: Request, params: dict[str, str]) -> Response:
    body = request.json_object()
    results = [_run_or_refused(op) for op in body.get("ops", [])]
    return Response.json(body.get("status", 200), {"data": results})


class ConformanceEngine(Engine):
    def describe(self) -> Descriptor:
        return Descriptor("pyconformance", "Python conformance", "0.1.0", requires_tenant_provision=False)

    def router(self) -> Router:
        return Router().post("/api/v1/script", script)
