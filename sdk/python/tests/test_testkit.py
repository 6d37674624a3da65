"""The test kit keeps the host's semantics (`wit/engine.wit`): one call, one unit of work;
synchronisation points; bounded scans; jobs, events, blobs, vault, mail and outbound HTTP."""

import json

import pytest

from tessera_engine import (
    Context,
    Descriptor,
    Engine,
    HostError,
    Job,
    Level,
    OutboundRequest,
    OutgoingMail,
    Operation,
    Response,
    Router,
    Setting,
    TenantInfo,
    Transaction,
    UserInfo,
    ValidationErrors,
    host,
)
from tessera_engine.testkit import TestHost

CTX = Context("t1", "u1")


def write_then(status):
    def handler(ctx, request, params):
        host.storage.set("written", b"1")
        host.events.publish("probe.written", {"n": 1})
        host.scheduler.schedule(1, b"job")
        return Response.json(status, {"data": None})

    return handler


def synchronised_then_failed(ctx, request, params):
    host.storage.set("before", b"1")
    assert host.storage.compare_and_swap("claim", None, b"mine")
    host.storage.set("after", b"1")
    raise ValidationErrors.single("x", "required")


def count(ctx, request, params):
    ids = host.storage.transact(Transaction(add=[("count", 2)], jobs=[(5, b"p")]))
    assert ids is not None and len(ids) == 1
    refused = host.storage.transact(Transaction(expect=[("count", b"0")], sets=[("never", b"1")]))
    assert refused is None
    return Response.ok(int(host.storage.get("count")))


def scan_everything(ctx, request, params):
    return Response.ok([key for key, _ in host.storage.scan_all("k/", page=3)])


def crash(ctx, request, params):
    host.storage.set("crashed", b"1")
    raise RuntimeError("boom")


def use_the_rest(ctx, request, params):
    sealed = host.vault.seal(b"secret")
    assert sealed != b"secret" and host.vault.open(sealed) == b"secret"
    assert host.blobs.put("b", b"12345", 8, [("meta", b"m")])
    assert not host.blobs.put("c", b"6789", 8)
    assert host.blobs.usage() == 5
    answer = host.outbound_http.fetch(OutboundRequest("GET", "https://api.example.com/x"))
    host.mail_transport.send(OutgoingMail("a@example.com", ["b@example.com"], "Hi", "Text", "<1@example.com>"))
    host.log(Level.INFO, "done")
    with pytest.raises(HostError):
        host.outbound_http.check_target("https://elsewhere.org/")
    return Response.ok({"status": answer.status, "limit": host.settings.get("limit"), "page": host.settings.get("storage.scan-page")})


class Probe(Engine):
    def describe(self):
        return Descriptor("probe", "Probe", "0.1.0", outbound_hosts=["*.example.com"])

    def settings(self):
        return [Setting.integer("limit", 7, "A limit.")]

    def router(self):
        return (
            Router()
            .post("/ok", write_then(201))
            .post("/refused", write_then(409))
            .post("/sync", synchronised_then_failed)
            .post("/count", count)
            .get("/scan", scan_everything)
            .get("/crash", crash, Operation("Crash"))
            .get("/rest", use_the_rest)
        )

    def run_job(self, job: Job):
        if job.payload == b"fail":
            raise HostError("not now")
        host.storage.set(f"ran/{job.id}", str(job.attempt).encode())

    def provision_user(self, user: UserInfo):
        if user.user_id == "refused":
            raise ValueError("no such user here")
        super().provision_user(user)


@pytest.fixture
def probe():
    test_host = TestHost(Probe())
    test_host.provision_tenant(TenantInfo("t1", "one", "One"))
    return test_host


def test_a_successful_call_commits_its_writes_events_and_jobs(probe):
    assert probe.request(CTX, "POST", "/ok").status == 201
    assert probe.stored("t1", "written") == b"1"
    assert [(event.event_type, event.payload, event.actor_id) for event in probe.published()] == [
        ("probe.written", {"n": 1}, "u1")
    ]
    assert [job.payload for job in probe.jobs()] == [b"job"]


def test_a_refused_call_commits_nothing(probe):
    assert probe.request(CTX, "POST", "/refused").status == 409
    assert probe.stored("t1", "written") is None
    assert probe.published() == [] and probe.jobs() == []


def test_a_synchronisation_point_keeps_what_came_before_it(probe):
    assert probe.request(CTX, "POST", "/sync").status == 422
    assert probe.stored("t1", "before") == b"1"
    assert probe.stored("t1", "claim") == b"mine"
    assert probe.stored("t1", "after") is None


def test_transactions_count_and_check_expectations(probe):
    assert probe.request(CTX, "POST", "/count").json() == {"data": 2}
    assert probe.request(CTX, "POST", "/count").json() == {"data": 4}
    assert len(probe.jobs()) == 2 and probe.stored("t1", "never") is None


def test_scans_are_bounded_by_the_page_and_the_budget(probe):
    def seed(ctx, request, params):
        for index in range(10):
            host.storage.set(f"k/{index:02d}", b"v")
        return Response.no_content()

    probe.adapter.routes.post("/seed", seed)
    probe.request(CTX, "POST", "/seed")
    probe.set_setting("storage.scan-page", "4")
    assert len(probe.get(CTX, "/scan").json()["data"]) == 10
    probe.set_setting("storage.scan-budget", "5")
    answer = probe.get(CTX, "/scan")
    assert answer.status == 500
    assert any("scan budget exhausted" in message for _, message in probe.logs())


def test_an_exception_is_a_logged_500_and_commits_nothing(probe):
    answer = probe.get(CTX, "/crash")
    assert answer.status == 500 and answer.json() == {"message": "Server Error."}
    assert probe.stored("t1", "crashed") is None
    level, message = probe.logs()[-1]
    assert level == Level.ERROR and "RuntimeError: boom" in message


def test_vault_blobs_outbound_mail_and_settings(probe):
    probe.respond("GET", "https://api.example.com/x", 204)
    probe.allow_mail()
    answer = probe.get(CTX, "/rest")
    assert answer.json() == {"data": {"status": 204, "limit": "7", "page": "1000"}}
    assert probe.blob("t1", "b") == b"12345" and probe.stored("t1", "meta") == b"m"
    assert [request.url for request in probe.outbound_requests()] == ["https://api.example.com/x"]
    assert [mail.subject for mail in probe.mails()] == ["Hi"]


def test_failed_jobs_stay_with_their_attempt_and_others_run_once(probe):
    def schedule(ctx, request, params):
        host.scheduler.schedule(10, b"fail")
        host.scheduler.schedule(20, b"fine")
        return Response.no_content()

    probe.adapter.routes.post("/schedule", schedule)
    probe.request(CTX, "POST", "/schedule")
    outcomes = [(job.payload, reason) for job, reason in probe.run_due_jobs(100)]
    assert outcomes == [(b"fail", "not now"), (b"fine", None)]
    [left] = probe.jobs()
    assert left.payload == b"fail" and left.attempt == 1
    assert len(probe.stored_keys("t1", "ran/")) == 1


def test_a_failing_hook_is_the_calls_err_and_keeps_nothing(probe):
    with pytest.raises(HostError, match="no such user here"):
        probe.provision_user(UserInfo("t1", "refused", "r@example.com"))
    assert probe.stored("t1", "users/refused") is None
    probe.provision_user(UserInfo("t1", "u1", "u@example.com"))
    assert json.loads(probe.stored("t1", "users/u1"))["email"] == "u@example.com"
    probe.deprovision_user("t1", "u1")
    assert probe.stored("t1", "users/u1") is None


def test_imports_outside_a_call_say_how_to_drive_the_engine(probe):
    with pytest.raises(HostError, match="outside an engine call"):
        host.storage.get("x")
