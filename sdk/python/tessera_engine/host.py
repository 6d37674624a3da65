"""Typed wrappers of the host's imports (`storage`, `blobs`, `scheduler`, `events`, `realtime`,
`outbound_http`, `vault`, `settings`, `mail_transport`, `log`), as the Rust SDK's. They call a
backend: the component's imports (`component.py`, over componentize-py's bindings) in a built
engine, the in-memory fakes (`testkit.py`) in tests. An import's `err` raises `HostError`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from .types import (
    HostError,
    Level,
    OutboundRequest,
    OutboundResponse,
    OutgoingMail,
    Transaction,
)

_backend: Any = None
#: Entries the scans of the current call returned so far (`begin_call` starts a call).
_scanned = 0

#: The host's scan limits when it does not say (`storage.scan-page`, `storage.scan-budget`).
DEFAULT_SCAN_PAGE = 1000
DEFAULT_SCAN_BUDGET = 10_000


def install_backend(backend: Any) -> None:
    """Routes the wrappers to `backend` (the component's imports, or the test kit's fakes)."""
    global _backend
    _backend = backend


def begin_call() -> None:
    """Starts a call's count of scanned entries (an instance may serve several calls in a row:
    the events of a batch of deliveries). The kit's adapter calls it."""
    global _scanned
    _scanned = 0


@dataclass
class Scan:
    """One scan's entries, and whether the prefix has no more past them."""

    entries: list[tuple[str, bytes]]
    exhausted: bool


def _host() -> Any:
    if _backend is None:
        raise HostError(
            "no host: the engine runs outside a component and outside the test kit "
            "(drive it with tessera_engine.testkit.TestHost)"
        )
    return _backend


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class storage:
    """Durable key-value storage, scoped by the host to the engine and the call's tenant; the
    call's writes commit together when it succeeds (`wit/engine.wit`, interface `storage`)."""

    @staticmethod
    def get(key: str) -> Optional[bytes]:
        return _host().storage.get(key)

    @staticmethod
    def get_many(keys: list[str]) -> list[Optional[bytes]]:
        return _host().storage.get_many(list(keys))

    @staticmethod
    def set(key: str, value: bytes) -> None:
        _host().storage.set(key, bytes(value))

    @staticmethod
    def delete(key: str) -> bool:
        return _host().storage.delete(key)

    @staticmethod
    def scan(
        prefix: str, after: Optional[str] = None, limit: int = 1000, reverse: bool = False
    ) -> Scan:
        """Entries whose key starts with `prefix`, in key order (descending when `reverse`),
        strictly after (before) `after`: at most `limit`, at most the host's page and at most
        what the call's scan budget has left; `exhausted` when the prefix has no more.
        Continue with `after` = the last key. `HostError` `scan budget exhausted` when the
        budget has nothing left."""
        global _scanned
        page = settings.get_int("storage.scan-page", DEFAULT_SCAN_PAGE)
        budget = settings.get_int("storage.scan-budget", DEFAULT_SCAN_BUDGET)
        allowed = max(0, min(limit, page, budget - _scanned))
        # With nothing left, the host answers its own error.
        asked = limit if allowed == 0 else allowed
        entries = _host().storage.scan(prefix, after, asked, reverse)
        _scanned += len(entries)
        return Scan(entries, len(entries) < asked)

    @staticmethod
    def delete_prefix(prefix: str) -> int:
        return _host().storage.delete_prefix(prefix)

    @staticmethod
    def compare_and_swap(key: str, expected: Optional[bytes], value: Optional[bytes]) -> bool:
        return _host().storage.compare_and_swap(key, expected, value)

    @staticmethod
    def write_batch(
        sets: list[tuple[str, bytes]],
        deletes: list[str] = (),  # type: ignore[assignment]
        jobs: list[tuple[int, bytes]] = (),  # type: ignore[assignment]
    ) -> list[str]:
        return _host().storage.write_batch(list(sets), list(deletes), list(jobs))

    @staticmethod
    def transact(transaction: Transaction) -> Optional[list[str]]:
        return _host().storage.transact(transaction)

    # JSON over the bytes, as the Rust SDK's `get_json` / `put_json`.

    @staticmethod
    def get_json(key: str) -> Any:
        """The JSON value under `key`, or None when absent."""
        raw = storage.get(key)
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except ValueError as error:
            raise HostError(f"the value under {key} is not JSON: {error}") from error

    @staticmethod
    def put_json(key: str, value: Any) -> None:
        storage.set(key, _json_bytes(value))

    @staticmethod
    def json_entry(key: str, value: Any) -> tuple[str, bytes]:
        """`(key, JSON bytes)` for `write_batch` and `Transaction.sets`."""
        return (key, _json_bytes(value))

    @staticmethod
    def scan_up_to(
        prefix: str, after: Optional[str], count: int, reverse: bool = False
    ) -> Scan:
        """Like `scan`, scanning again until `count` entries or the end of the prefix (a list
        page when the host's scan page is smaller than the page asked for)."""
        entries: list[tuple[str, bytes]] = []
        while True:
            scan = storage.scan(prefix, after, count - len(entries), reverse)
            entries.extend(scan.entries)
            if scan.exhausted or len(entries) >= count:
                return Scan(entries, scan.exhausted)
            after = entries[-1][0]

    @staticmethod
    def scan_all(prefix: str, page: int = 1000) -> Iterator[tuple[str, bytes]]:
        """Every entry under `prefix`, in key order, scan after scan: `HostError` when the
        call's budget runs out first."""
        after: Optional[str] = None
        while True:
            scan = storage.scan(prefix, after, page, False)
            yield from scan.entries
            if scan.exhausted:
                return
            after = scan.entries[-1][0]


class blobs:
    """Binary content too large for storage values, scoped like storage."""

    @staticmethod
    def put(
        key: str,
        content: bytes,
        quota_bytes: Optional[int] = None,
        sets: list[tuple[str, bytes]] = (),  # type: ignore[assignment]
    ) -> bool:
        return _host().blobs.put(key, bytes(content), quota_bytes, list(sets))

    @staticmethod
    def get(key: str) -> Optional[bytes]:
        return _host().blobs.get(key)

    @staticmethod
    def delete(keys: list[str], deletes: list[str] = ()) -> int:  # type: ignore[assignment]
        return _host().blobs.delete(list(keys), list(deletes))

    @staticmethod
    def delete_prefix(prefix: str) -> int:
        return _host().blobs.delete_prefix(prefix)

    @staticmethod
    def usage() -> int:
        return _host().blobs.usage()


class scheduler:
    """Durable jobs, delivered to `run_job` at or after their time."""

    @staticmethod
    def schedule(at_unix_ms: int, payload: bytes) -> str:
        return _host().scheduler.schedule(at_unix_ms, bytes(payload))

    @staticmethod
    def schedule_json(at_unix_ms: int, payload: Any) -> str:
        return scheduler.schedule(at_unix_ms, _json_bytes(payload))

    @staticmethod
    def cancel(job_id: str) -> bool:
        return _host().scheduler.cancel(job_id)


class events:
    """Publishing to the host's bus, in the call's unit of work."""

    @staticmethod
    def publish(event_type: str, payload: dict[str, Any]) -> None:
        if not isinstance(payload, dict):
            raise HostError("an event's payload is a JSON object")
        _host().events.publish(event_type, json.dumps(payload, ensure_ascii=False, separators=(",", ":")))


def _json_object(value: Any, what: str) -> str:
    if not isinstance(value, dict):
        raise HostError(f"{what} is a JSON object")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class realtime:
    """Events pushed to the clients subscribed to the engine's topics (CONTRACT §9). A topic is
    named without the engine code (`conversation.c1`; clients subscribe to
    `chat.conversation.c1`) and must match a pattern of `Engine.topics`. What a call publishes
    is part of its unit of work: delivered if and only if the call commits, in order. `data`
    is a JSON object of at most 64 KiB."""

    #: The most bytes of one event's `data` (as JSON text).
    MAX_DATA_BYTES = 64 * 1024

    @staticmethod
    def publish(topic: str, event_type: str, data: dict[str, Any]) -> None:
        """To every subscriber of `topic` in the call's tenant."""
        _host().realtime.publish(topic, event_type, _json_object(data, "a realtime event's data"))

    @staticmethod
    def publish_to_user(user_id: str, topic: str, event_type: str, data: dict[str, Any]) -> None:
        """To the subscribers of `topic` who are `user_id` only (a topic every user has one
        of, such as chat's `me`)."""
        _host().realtime.publish_to_user(
            user_id, topic, event_type, _json_object(data, "a realtime event's data")
        )

    @staticmethod
    def end_subscriptions(topic: str, user_id: str) -> None:
        """Ends `user_id`'s subscriptions to `topic` when the call commits (each gets an
        `error` frame with status 403); a later subscription asks `authorize_subscription`
        again."""
        _host().realtime.end_subscriptions(topic, user_id)


class outbound_http:
    """Outbound HTTP through the host's policy."""

    @staticmethod
    def fetch(request: OutboundRequest) -> OutboundResponse:
        return _host().outbound_http.fetch(request)

    @staticmethod
    def check_target(url: str) -> None:
        _host().outbound_http.check_target(url)


class vault:
    """Secrets sealed for this engine and the call's tenant."""

    @staticmethod
    def seal(plaintext: bytes) -> bytes:
        return _host().vault.seal(bytes(plaintext))

    @staticmethod
    def open(sealed: bytes) -> bytes:
        return _host().vault.open(bytes(sealed))


class settings:
    """The engine's declared settings and the host's own (`storage.scan-page`, …)."""

    @staticmethod
    def get(name: str) -> Optional[str]:
        return _host().settings.get(name)

    @staticmethod
    def get_int(name: str, default: int) -> int:
        """The setting as an integer; `default` when unset (the host checked declared ones)."""
        value = settings.get(name)
        if value is None:
            return default
        try:
            return int(value.strip())
        except ValueError:
            return default


class mail_transport:
    """Mail out through the operator's relay (permission `send-mail`)."""

    @staticmethod
    def send(mail: OutgoingMail) -> None:
        _host().mail_transport.send(mail)


def log(level: Level, message: str) -> None:
    """Into the host's tracing, tagged with the engine and the correlation id."""
    _host().log.log(level, message)
