"""The test kit: in-memory fakes of every host import with the host's semantics
(`wit/engine.wit`), as the Rust SDK's `testkit`, and a `TestHost` that drives an `Engine` as the
host does, so an author tests routes, events, jobs and provisioning with pytest and no host.

One call, one unit of work: a call's writes, events, realtime publications and jobs are
buffered over the committed state and committed only when it succeeds (`handle` with 2xx/3xx,
the other hooks without raising); `compare_and_swap` and `transact` are synchronisation points;
scans are bounded by a page and a per-call budget; blob quotas hold; mail and outbound HTTP are
not undone. `realtime_events` and `ended_subscriptions` read what reached the engine's topics;
`authorize_subscription` asks the engine as the host does when a client subscribes.

    host = TestHost(MyEngine())
    host.provision_tenant(TenantInfo("t1", "acme", "Acme"))
    answer = host.post_json(Context("t1", "u1"), "/api/v1/notes", {"title": "Hi"})
    assert answer.status == 201
"""

from __future__ import annotations

import copy
import enum
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from . import host
from .engine import Adapter, Engine
from .request import Request
from .types import (
    Context,
    Descriptor,
    Event,
    HostError,
    Job,
    Level,
    OutboundRequest,
    OutboundResponse,
    OutgoingMail,
    TenantInfo,
    Transaction,
    UserInfo,
)

_MAX_JOB_PAYLOAD_BYTES = 256 * 1024
_YEAR_10000_MS = 253_402_300_800_000
_SEALED = b"tessera-test-vault:"
_MAX_REALTIME_DATA_BYTES = 64 * 1024


@dataclass
class ScheduledJob:
    """A job the fake scheduler holds; `attempt` counts the runs so far."""

    id: str
    tenant_id: str
    at_unix_ms: int
    payload: bytes
    attempt: int = 0


@dataclass
class PublishedEvent:
    """An event a call published and committed."""

    tenant_id: str
    event_type: str
    payload: Any
    actor_id: Optional[str]


@dataclass
class RealtimeEvent:
    """A realtime event a call published (`publish`, `publish_to_user`) and committed: `topic`
    without the engine code; `user_id` set when only that user's subscriptions hear it."""

    tenant_id: str
    topic: str
    user_id: Optional[str]
    event_type: str
    data: Any


@dataclass
class EndedSubscription:
    """A committed `end_subscriptions`: `user_id`'s subscriptions to `topic` end."""

    tenant_id: str
    topic: str
    user_id: str


class Subscription(enum.Enum):
    """What the host makes of a client's subscription (`TestHost.authorize_subscription`)."""

    #: The engine answered `True`: subscribed.
    ALLOWED = "allowed"
    #: It answered anything else, or raised: an `error` frame with status 403.
    FORBIDDEN = "forbidden"
    #: None of the engine's topic patterns match: 404, without asking the engine.
    UNKNOWN_TOPIC = "unknown-topic"


def _valid_segment(segment: str) -> bool:
    return 1 <= len(segment) <= 64 and all(
        character.isascii() and (character.isalnum() or character in "_-") for character in segment
    )


def parse_topic_pattern(pattern: str) -> list[str]:
    """A topic pattern's segments; `HostError` when it is malformed (the host refuses to load
    an engine declaring one)."""
    segments = pattern.split(".")
    if len(pattern.encode("utf-8")) > 200 or not all(
        segment == "*" or _valid_segment(segment) for segment in segments
    ):
        raise HostError(f"the topic pattern {pattern!r} is malformed")
    return segments


def topic_matches(patterns: list[list[str]], topic: str) -> bool:
    """Whether `topic` (without the engine code) is one of `patterns` (parsed)."""
    segments = topic.split(".")
    if len(topic.encode("utf-8")) > 200 or not all(_valid_segment(segment) for segment in segments):
        return False
    return any(
        len(pattern) == len(segments)
        and all(expected in ("*", segment) for expected, segment in zip(pattern, segments))
        for pattern in patterns
    )


@dataclass
class _TenantState:
    entries: dict[str, bytes] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)

    def copy(self) -> "_TenantState":
        return _TenantState(dict(self.entries), dict(self.blobs))


@dataclass
class _Call:
    tenant_id: Optional[str]
    actor_id: Optional[str]
    view: _TenantState
    jobs: list[ScheduledJob] = field(default_factory=list)
    events: list[PublishedEvent] = field(default_factory=list)
    realtime: list[Any] = field(default_factory=list)
    scanned: int = 0


class FakeHost:
    """Everything the fakes hold; the backend `TestHost` installs (`host.install_backend`)."""

    def __init__(self) -> None:
        self.tenants: dict[str, _TenantState] = {}
        self.jobs: list[ScheduledJob] = []
        self.published: list[PublishedEvent] = []
        #: What committed calls sent to the engine's topics, in order: `RealtimeEvent` and
        #: `EndedSubscription`.
        self.realtime_sent: list[Any] = []
        #: The engine's topic patterns, parsed.
        self.topics: list[list[str]] = []
        self.setting_values: dict[str, str] = {}
        self.outbound_hosts: list[str] = []
        self.responses: list[tuple[str, str, Any]] = []
        self.requests: list[OutboundRequest] = []
        self.mail_allowed = False
        self.mails: list[OutgoingMail] = []
        self.logs: list[tuple[Level, str]] = []
        self.current: Optional[_Call] = None
        self.next_id = 0
        self.storage = _FakeStorage(self)
        self.blobs = _FakeBlobs(self)
        self.scheduler = _FakeScheduler(self)
        self.events = _FakeEvents(self)
        self.realtime = _FakeRealtime(self)
        self.outbound_http = _FakeOutboundHttp(self)
        self.vault = _FakeVault()
        self.settings = _FakeSettings(self)
        self.mail_transport = _FakeMail(self)
        self.log = _FakeLog(self)

    def host_setting(self, name: str) -> Optional[str]:
        defaults = {
            "webhook.retry-schedule-ms": "30000,120000,600000,1800000",
            "engine.max-body-bytes": "8388608",
            "storage.scan-page": "1000",
            "storage.scan-budget": "10000",
        }
        if name == "mail-transport.available":
            return "true" if self.mail_allowed else "false"
        return defaults.get(name)

    def limit(self, name: str) -> int:
        value = self.setting_values.get(name) or self.host_setting(name)
        try:
            return int(value) if value is not None else 2**64
        except ValueError:
            return 2**64

    def new_id(self) -> str:
        self.next_id += 1
        return f"00000000-0000-7000-8000-{self.next_id:012x}"

    def begin(self, tenant_id: Optional[str], actor_id: Optional[str]) -> None:
        view = self.tenants.get(tenant_id, _TenantState()).copy() if tenant_id else _TenantState()
        self.current = _Call(tenant_id, actor_id, view)

    def commit(self) -> None:
        call = self.current
        if call is None:
            return
        if call.tenant_id is not None:
            self.tenants[call.tenant_id] = call.view.copy()
        self.jobs.extend(call.jobs)
        self.published.extend(call.events)
        self.realtime_sent.extend(call.realtime)
        call.jobs, call.events, call.realtime = [], [], []

    def end(self, succeeded: bool) -> None:
        if succeeded:
            self.commit()
        self.current = None

    def call(self) -> _Call:
        if self.current is None:
            raise HostError(
                "a host import was used outside an engine call (drive the engine through TestHost)"
            )
        if self.current.tenant_id is None:
            raise HostError("storage is scoped to a tenant; this call has none")
        return self.current


def _check_jobs(jobs: list[tuple[int, bytes]]) -> None:
    for at_unix_ms, payload in jobs:
        if len(payload) > _MAX_JOB_PAYLOAD_BYTES:
            raise HostError(f"job payloads are at most {_MAX_JOB_PAYLOAD_BYTES} bytes")
        if at_unix_ms >= _YEAR_10000_MS or at_unix_ms < 0:
            raise HostError(f"{at_unix_ms} is not a time the scheduler accepts")


def _buffer_jobs(call: _Call, ids: list[str], jobs: list[tuple[int, bytes]]) -> None:
    for job_id, (at_unix_ms, payload) in zip(ids, jobs):
        call.jobs.append(ScheduledJob(job_id, call.tenant_id or "", at_unix_ms, bytes(payload)))


class _FakeStorage:
    def __init__(self, fake: FakeHost) -> None:
        self.fake = fake

    def get(self, key: str) -> Optional[bytes]:
        return self.fake.call().view.entries.get(key)

    def get_many(self, keys: list[str]) -> list[Optional[bytes]]:
        if len(keys) > 1000:
            raise HostError(f"get-many reads at most 1000 keys, not {len(keys)}")
        view = self.fake.call().view.entries
        return [view.get(key) for key in keys]

    def set(self, key: str, value: bytes) -> None:
        self.fake.call().view.entries[key] = bytes(value)

    def delete(self, key: str) -> bool:
        return self.fake.call().view.entries.pop(key, None) is not None

    def scan(self, prefix: str, after: Optional[str], limit: int, reverse: bool) -> list[tuple[str, bytes]]:
        page = self.fake.limit("storage.scan-page")
        budget = self.fake.limit("storage.scan-budget")
        call = self.fake.call()
        left = max(budget - call.scanned, 0)
        if left == 0:
            raise HostError(f"scan budget exhausted: this call scanned {budget} entries")
        take = min(limit, page, left)
        keys = sorted(
            (key for key in call.view.entries if key.startswith(prefix)),
            key=lambda key: key.encode("utf-8"),
            reverse=reverse,
        )
        if after is not None:
            bound = after.encode("utf-8")
            keys = [k for k in keys if (k.encode("utf-8") < bound if reverse else k.encode("utf-8") > bound)]
        chosen = [(key, call.view.entries[key]) for key in keys[:take]]
        call.scanned += len(chosen)
        return chosen

    def delete_prefix(self, prefix: str) -> int:
        entries = self.fake.call().view.entries
        doomed = [key for key in entries if key.startswith(prefix)]
        for key in doomed:
            del entries[key]
        return len(doomed)

    def compare_and_swap(self, key: str, expected: Optional[bytes], value: Optional[bytes]) -> bool:
        call = self.fake.call()
        if call.view.entries.get(key) != expected:
            return False
        if value is None:
            call.view.entries.pop(key, None)
        else:
            call.view.entries[key] = bytes(value)
        self.fake.commit()
        return True

    def write_batch(
        self, sets: list[tuple[str, bytes]], deletes: list[str], jobs: list[tuple[int, bytes]]
    ) -> list[str]:
        _check_jobs(jobs)
        call = self.fake.call()
        ids = [self.fake.new_id() for _ in jobs]
        for key, value in sets:
            call.view.entries[key] = bytes(value)
        for key in deletes:
            call.view.entries.pop(key, None)
        _buffer_jobs(call, ids, jobs)
        return ids

    def transact(self, transaction: Transaction) -> Optional[list[str]]:
        _check_jobs(transaction.jobs)
        call = self.fake.call()
        if any(call.view.entries.get(key) != expected for key, expected in transaction.expect):
            return None
        written = {key for key, _ in transaction.sets} | set(transaction.deletes)
        for key, _ in transaction.add:
            if key in written:
                raise HostError(f"{key} is both counted and set or deleted in one transaction")
        view = dict(call.view.entries)
        for key, value in transaction.sets:
            view[key] = bytes(value)
        for key in transaction.deletes:
            view.pop(key, None)
        for key, amount in transaction.add:
            raw = view.get(key)
            try:
                current = 0 if raw is None else int(raw.decode("utf-8").strip())
            except (UnicodeDecodeError, ValueError):
                raise HostError(f"{key} does not hold an integer") from None
            total = current + amount
            if not -(2**63) <= total < 2**63:
                raise HostError(f"adding {amount} to {key} ({current}) overflows")
            view[key] = str(total).encode("ascii")
        ids = [self.fake.new_id() for _ in transaction.jobs]
        call.view.entries = view
        _buffer_jobs(call, ids, transaction.jobs)
        self.fake.commit()
        return ids


class _FakeBlobs:
    def __init__(self, fake: FakeHost) -> None:
        self.fake = fake

    def put(self, key: str, content: bytes, quota_bytes: Optional[int], sets: list[tuple[str, bytes]]) -> bool:
        call = self.fake.call()
        replaced = len(call.view.blobs.get(key, b""))
        total = sum(len(blob) for blob in call.view.blobs.values()) - replaced + len(content)
        if quota_bytes is not None and total > quota_bytes:
            return False
        call.view.blobs[key] = bytes(content)
        for entry_key, value in sets:
            call.view.entries[entry_key] = bytes(value)
        return True

    def get(self, key: str) -> Optional[bytes]:
        return self.fake.call().view.blobs.get(key)

    def delete(self, keys: list[str], deletes: list[str]) -> int:
        call = self.fake.call()
        removed = sum(1 for key in keys if call.view.blobs.pop(key, None) is not None)
        for key in deletes:
            call.view.entries.pop(key, None)
        return removed

    def delete_prefix(self, prefix: str) -> int:
        blobs = self.fake.call().view.blobs
        doomed = [key for key in blobs if key.startswith(prefix)]
        for key in doomed:
            del blobs[key]
        return len(doomed)

    def usage(self) -> int:
        return sum(len(blob) for blob in self.fake.call().view.blobs.values())


class _FakeScheduler:
    def __init__(self, fake: FakeHost) -> None:
        self.fake = fake

    def schedule(self, at_unix_ms: int, payload: bytes) -> str:
        _check_jobs([(at_unix_ms, payload)])
        call = self.fake.call()
        job_id = self.fake.new_id()
        _buffer_jobs(call, [job_id], [(at_unix_ms, payload)])
        return job_id

    def cancel(self, job_id: str) -> bool:
        call = self.fake.call()
        buffered = len(call.jobs)
        call.jobs = [job for job in call.jobs if job.id != job_id]
        if len(call.jobs) < buffered:
            return True
        committed = len(self.fake.jobs)
        self.fake.jobs = [
            job for job in self.fake.jobs if not (job.id == job_id and job.tenant_id == call.tenant_id)
        ]
        return len(self.fake.jobs) < committed


class _FakeEvents:
    def __init__(self, fake: FakeHost) -> None:
        self.fake = fake

    def publish(self, event_type: str, payload: str) -> None:
        try:
            value = json.loads(payload)
        except ValueError as error:
            raise HostError(f"the payload is not JSON: {error}") from None
        if not isinstance(value, dict):
            raise HostError("the payload must be a JSON object")
        call = self.fake.call()
        call.events.append(PublishedEvent(call.tenant_id or "", event_type, value, call.actor_id))


def _event_type_error(event_type: str) -> Optional[str]:
    well_formed = (
        1 <= len(event_type) <= 100
        and event_type.isascii()
        and event_type[0].islower()
        and all(character.islower() or character.isdigit() or character in "._-" for character in event_type)
    )
    if well_formed:
        return None
    return (
        f"{event_type!r} is not an event type (1-100 lower-case letters, digits, '.', '_' or '-', "
        "starting with a letter)"
    )


class _FakeRealtime:
    """The host's checks: a topic the engine's patterns match, a bus-style event type, `data` a
    JSON object of at most 64 KiB, a user id of 1 to 200 bytes."""

    def __init__(self, fake: FakeHost) -> None:
        self.fake = fake

    def _check(self, topic: str, user_id: Optional[str]) -> _Call:
        if not topic_matches(self.fake.topics, topic):
            raise HostError(
                f"the topic {topic!r} matches none of the engine's topic patterns (describe-topics)"
            )
        if user_id is not None and not 1 <= len(user_id.encode("utf-8")) <= 200:
            raise HostError("a user id is 1 to 200 bytes")
        return self.fake.call()

    @staticmethod
    def _data(event_type: str, data: str) -> Any:
        problem = _event_type_error(event_type)
        if problem is not None:
            raise HostError(problem)
        size = len(data.encode("utf-8"))
        if size > _MAX_REALTIME_DATA_BYTES:
            raise HostError(
                f"a realtime event's data is at most {_MAX_REALTIME_DATA_BYTES} bytes ({size} given)"
            )
        try:
            value = json.loads(data)
        except ValueError as error:
            raise HostError(f"a realtime event's data is not JSON: {error}") from None
        if not isinstance(value, dict):
            raise HostError("a realtime event's data is a JSON object")
        return value

    def publish(self, topic: str, event_type: str, data: str) -> None:
        value = self._data(event_type, data)
        call = self._check(topic, None)
        call.realtime.append(RealtimeEvent(call.tenant_id or "", topic, None, event_type, value))

    def publish_to_user(self, user_id: str, topic: str, event_type: str, data: str) -> None:
        value = self._data(event_type, data)
        call = self._check(topic, user_id)
        call.realtime.append(RealtimeEvent(call.tenant_id or "", topic, user_id, event_type, value))

    def end_subscriptions(self, topic: str, user_id: str) -> None:
        call = self._check(topic, user_id)
        call.realtime.append(EndedSubscription(call.tenant_id or "", topic, user_id))


def _host_of(url: str) -> str:
    for scheme in ("https://", "http://"):
        if url.startswith(scheme):
            rest = url[len(scheme):]
            break
    else:
        raise HostError(f"{url} is not an http(s) URL")
    authority = rest
    for separator in "/?#":
        authority = authority.split(separator, 1)[0]
    name = authority.rsplit("@", 1)[-1].split(":", 1)[0]
    if not name:
        raise HostError(f"{url} names no host")
    return name


def _allowed(patterns: list[str], name: str) -> bool:
    lowered = name.lower()
    for pattern in patterns:
        if pattern == "*" or pattern.lower() == lowered:
            return True
        if pattern.startswith("*.") and lowered.endswith("." + pattern[2:].lower()):
            return True
    return False


class _FakeOutboundHttp:
    def __init__(self, fake: FakeHost) -> None:
        self.fake = fake

    def check_target(self, url: str) -> None:
        name = _host_of(url)
        if not _allowed(self.fake.outbound_hosts, name):
            raise HostError(f"{name} is not among the engine's outbound hosts {self.fake.outbound_hosts}")

    def fetch(self, request: OutboundRequest) -> OutboundResponse:
        self.check_target(request.url)
        self.fake.requests.append(copy.deepcopy(request))
        for method, url, result in self.fake.responses:
            if method.upper() == request.method.upper() and url == request.url:
                if isinstance(result, str):
                    raise HostError(result)
                return result
        raise HostError(f"no answer for {request.method} {request.url} (give one with TestHost.respond)")


class _FakeVault:
    def seal(self, plaintext: bytes) -> bytes:
        return _SEALED + bytes(byte ^ 0x5A for byte in plaintext)

    def open(self, sealed: bytes) -> bytes:
        if not sealed.startswith(_SEALED):
            raise HostError("the vault did not seal these bytes")
        return bytes(byte ^ 0x5A for byte in sealed[len(_SEALED):])


class _FakeSettings:
    def __init__(self, fake: FakeHost) -> None:
        self.fake = fake

    def get(self, name: str) -> Optional[str]:
        if name in self.fake.setting_values:
            return self.fake.setting_values[name]
        return self.fake.host_setting(name)


class _FakeMail:
    def __init__(self, fake: FakeHost) -> None:
        self.fake = fake

    def send(self, mail: OutgoingMail) -> None:
        if not self.fake.mail_allowed:
            raise HostError("mail transport unavailable: no relay (allow it with TestHost.allow_mail)")
        if not 1 <= len(mail.recipients) <= 100:
            raise HostError("a mail has 1 to 100 recipients")
        self.fake.mails.append(copy.deepcopy(mail))


class _FakeLog:
    def __init__(self, fake: FakeHost) -> None:
        self.fake = fake

    def log(self, level: Level, message: str) -> None:
        self.fake.logs.append((level, message))


@dataclass
class TestResponse:
    """What a route answered."""

    __test__ = False  # not a pytest class

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> Optional[str]:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None


class TestHost:
    """Drives an engine as the host does, over the fakes. Settings start at the engine's
    declared defaults; `set_setting` changes one as an operator would."""

    __test__ = False  # not a pytest class

    def __init__(self, engine: Engine) -> None:
        self.fake = FakeHost()
        host.install_backend(self.fake)
        self.adapter = Adapter(engine)
        # A malformed pattern raises `HostError`: the host would not load the engine.
        self.fake.topics = [parse_topic_pattern(pattern) for pattern in self.adapter.declared_topics]
        self.fake.outbound_hosts = list(self.adapter.descriptor.outbound_hosts)
        for setting in self.adapter.declared_settings:
            if setting.default_value is not None:
                self.fake.setting_values[setting.name] = setting.default_value

    # What the engine says about itself.

    def describe(self) -> Descriptor:
        return self.adapter.descriptor

    def api(self) -> dict[str, Any]:
        return json.loads(self.adapter.api_text)

    def topics(self) -> list[str]:
        """The engine's topic patterns (`describe-topics`)."""
        return list(self.adapter.declared_topics)

    # The operator's and the outside world's part.

    def set_setting(self, name: str, value: str) -> None:
        self.fake.setting_values[name] = value

    def allow_mail(self) -> None:
        self.fake.mail_allowed = True

    def respond(self, method: str, url: str, status: int, body: bytes = b"") -> None:
        """`fetch` of `method url` answers `status` with `body`."""
        self._canned(method, url, OutboundResponse(status, [], bytes(body), 1))

    def fail_outbound(self, method: str, url: str, reason: str) -> None:
        self._canned(method, url, reason)

    def _canned(self, method: str, url: str, result: Any) -> None:
        self.fake.responses = [
            canned for canned in self.fake.responses if not (canned[0].upper() == method.upper() and canned[1] == url)
        ]
        self.fake.responses.append((method, url, result))

    # Calls.

    def _call(self, tenant_id: Optional[str], actor_id: Optional[str], run: Callable[[], Any], succeeded: Callable[[Any], bool]) -> Any:
        host.install_backend(self.fake)
        self.fake.begin(tenant_id, actor_id)
        try:
            outcome = run()
        except BaseException:
            self.fake.end(False)
            raise
        self.fake.end(succeeded(outcome))
        return outcome

    def _lifecycle(self, tenant_id: str, run: Callable[[], Optional[str]]) -> None:
        reason = self._call(tenant_id, None, run, lambda failure: failure is None)
        if reason is not None:
            raise HostError(reason)

    def provision_tenant(self, tenant: TenantInfo) -> None:
        self._lifecycle(tenant.tenant_id, lambda: self.adapter.provision_tenant(tenant))

    def deprovision_tenant(self, tenant_id: str) -> None:
        self._lifecycle(tenant_id, lambda: self.adapter.deprovision_tenant(tenant_id))

    def provision_user(self, user: UserInfo) -> None:
        self._lifecycle(user.tenant_id, lambda: self.adapter.provision_user(user))

    def deprovision_user(self, tenant_id: str, user_id: str) -> None:
        self._lifecycle(tenant_id, lambda: self.adapter.deprovision_user(tenant_id, user_id))

    def request(
        self,
        ctx: Context,
        method: str,
        path_and_query: str,
        headers: Optional[list[tuple[str, str]]] = None,
        body: bytes = b"",
    ) -> TestResponse:
        """A request to `path_and_query` (`/api/v1/…?…`, without the `/<code>` prefix)."""
        path, _, query = path_and_query.partition("?")
        request = Request(method, path, query, list(headers or []), bytes(body))
        answer = self._call(
            ctx.tenant_id,
            ctx.user_id,
            lambda: self.adapter.handle(ctx, request),
            lambda response: 200 <= response.status < 400,
        )
        return TestResponse(answer.status, list(answer.headers), answer.body)

    def get(self, ctx: Context, path_and_query: str) -> TestResponse:
        return self.request(ctx, "GET", path_and_query)

    def delete(self, ctx: Context, path_and_query: str) -> TestResponse:
        return self.request(ctx, "DELETE", path_and_query)

    def _json(self, ctx: Context, method: str, path_and_query: str, value: Any) -> TestResponse:
        body = json.dumps(value).encode("utf-8")
        return self.request(ctx, method, path_and_query, [("content-type", "application/json")], body)

    def post_json(self, ctx: Context, path_and_query: str, value: Any) -> TestResponse:
        return self._json(ctx, "POST", path_and_query, value)

    def put_json(self, ctx: Context, path_and_query: str, value: Any) -> TestResponse:
        return self._json(ctx, "PUT", path_and_query, value)

    def patch_json(self, ctx: Context, path_and_query: str, value: Any) -> TestResponse:
        return self._json(ctx, "PATCH", path_and_query, value)

    def authorize_subscription(self, ctx: Context, topic: str) -> Subscription:
        """Asks as the host does when `ctx`'s client subscribes to the engine's `topic` (without
        the engine code): `UNKNOWN_TOPIC` when no pattern matches it, else the engine's
        `authorize_subscription` in a read-only call of its own (nothing it writes or publishes
        is kept; raising refuses)."""
        if not topic_matches(self.fake.topics, topic):
            return Subscription.UNKNOWN_TOPIC
        allowed = self._call(
            ctx.tenant_id,
            ctx.user_id,
            lambda: self.adapter.authorize_subscription(ctx, topic),
            lambda _: False,
        )
        return Subscription.ALLOWED if allowed is True else Subscription.FORBIDDEN

    def deliver(self, event: Event) -> None:
        """Delivers `event` to `on_event`, as the host delivers a subscribed event; raises
        `HostError` with the reason when the engine failed it."""
        self._lifecycle(event.tenant_id, lambda: self.adapter.on_event(event))

    def run_due_jobs(self, now_unix_ms: int) -> list[tuple[ScheduledJob, Optional[str]]]:
        """Runs the jobs due at `now_unix_ms`, each a call of its own: one that succeeds is
        gone, one that fails stays with its attempt counted. Returns each with its failure."""
        due = sorted(
            (job for job in self.fake.jobs if job.at_unix_ms <= now_unix_ms), key=lambda job: job.at_unix_ms
        )
        ran = []
        for job in due:
            attempt = job.attempt + 1
            wit_job = Job(job.id, job.tenant_id, job.payload, attempt)
            reason = self._call(job.tenant_id, None, lambda: self.adapter.run_job(wit_job), lambda failure: failure is None)
            if reason is None:
                self.fake.jobs = [held for held in self.fake.jobs if held.id != job.id]
            else:
                for held in self.fake.jobs:
                    if held.id == job.id:
                        held.attempt = attempt
            ran.append((job, reason))
        return ran

    # What happened.

    def jobs(self) -> list[ScheduledJob]:
        return list(self.fake.jobs)

    def published(self) -> list[PublishedEvent]:
        """The committed events, in order."""
        return list(self.fake.published)

    def realtime_events(self) -> list[RealtimeEvent]:
        """The committed realtime events (`publish`, `publish_to_user`), in order."""
        return [sent for sent in self.fake.realtime_sent if isinstance(sent, RealtimeEvent)]

    def ended_subscriptions(self) -> list[EndedSubscription]:
        """The committed `end_subscriptions`, in order."""
        return [sent for sent in self.fake.realtime_sent if isinstance(sent, EndedSubscription)]

    def clear_realtime(self) -> None:
        """Forgets the realtime events and ended subscriptions captured so far."""
        self.fake.realtime_sent = []

    def outbound_requests(self) -> list[OutboundRequest]:
        return list(self.fake.requests)

    def mails(self) -> list[OutgoingMail]:
        return list(self.fake.mails)

    def logs(self) -> list[tuple[Level, str]]:
        return list(self.fake.logs)

    def stored(self, tenant_id: str, key: str) -> Optional[bytes]:
        """The committed value under `key` in the tenant."""
        return self.fake.tenants.get(tenant_id, _TenantState()).entries.get(key)

    def stored_keys(self, tenant_id: str, prefix: str = "") -> list[str]:
        entries = self.fake.tenants.get(tenant_id, _TenantState()).entries
        return sorted((key for key in entries if key.startswith(prefix)), key=lambda key: key.encode("utf-8"))

    def blob(self, tenant_id: str, key: str) -> Optional[bytes]:
        return self.fake.tenants.get(tenant_id, _TenantState()).blobs.get(key)
