"""Realtime on the test kit: what an engine publishes is captured per call and kept only when
the call commits, the fakes check it as the host does, and `authorize_subscription` asks the
engine as the host would (unknown topics refused without asking, read-only, raising denies)."""

import pytest

from tessera_engine import (
    ApiError,
    Context,
    Descriptor,
    Engine,
    HostError,
    Response,
    Router,
    TenantInfo,
    host,
)
from tessera_engine.testkit import EndedSubscription, RealtimeEvent, Subscription, TestHost

TENANT = "t1"


def say(ctx, request, params):
    room = params["id"]
    host.realtime.publish(f"room.{room}", "said", {"room_id": room, "by": ctx.user_id})
    host.realtime.publish_to_user("bob", "lobby", "nudged", {"by": ctx.user_id})
    if request.query_unchecked().get("fail") is not None:
        raise ApiError(422, "The given data was invalid.")
    return Response.no_content()


def join(ctx, request, params):
    host.storage.set(f"rooms/{params['id']}/{ctx.user_id}", b"1")
    return Response.no_content()


def kick(ctx, request, params):
    host.realtime.end_subscriptions(f"room.{params['id']}", params["user"])
    return Response.no_content()


def wrong(ctx, request, params):
    case = request.query_unchecked().get("case")
    try:
        if case == "topic":
            host.realtime.publish("elsewhere", "said", {})
        elif case == "type":
            host.realtime.publish("lobby", "Said!", {})
        elif case == "large":
            host.realtime.publish("lobby", "said", {"x": "y" * 70_000})
        elif case == "user":
            host.realtime.publish_to_user("", "lobby", "said", {})
        else:
            host.realtime.publish("lobby", "said", [1, 2])  # type: ignore[arg-type]
    except HostError as error:
        return Response.ok({"error": error.reason})
    return Response.ok({"error": None})


class Rooms(Engine):
    def describe(self):
        return Descriptor("rooms", "Rooms", "0.1.0", requires_tenant_provision=False)

    def topics(self):
        return ["room.*", "lobby"]

    def authorize_subscription(self, ctx, topic):
        host.storage.set("asked", ctx.user_id.encode())  # not kept: the call is read-only
        if ctx.user_id == "raiser":
            raise RuntimeError("no answer")
        if ctx.user_id == "vague":
            return "yes"  # anything but True refuses
        if topic.startswith("room."):
            return host.storage.get(f"rooms/{topic[5:]}/{ctx.user_id}") is not None
        return topic == "lobby" and not ctx.is_guest()

    def router(self):
        return (
            Router()
            .post("/api/v1/rooms/{id}/join", join)
            .post("/api/v1/rooms/{id}/say", say)
            .post("/api/v1/rooms/{id}/kick/{user}", kick)
            .post("/api/v1/wrong", wrong)
        )

    def provision_tenant(self, tenant):
        host.realtime.publish("lobby", "opened", {})


def editor(user_id):
    return Context(TENANT, user_id, "editor")


def test_what_a_call_publishes_is_kept_when_it_commits_in_order():
    test_host = TestHost(Rooms())
    ada = editor("ada")
    assert test_host.topics() == ["room.*", "lobby"]
    assert test_host.post_json(ada, "/api/v1/rooms/r1/say", {}).status == 204
    assert test_host.realtime_events() == [
        RealtimeEvent(TENANT, "room.r1", None, "said", {"room_id": "r1", "by": "ada"}),
        RealtimeEvent(TENANT, "lobby", "bob", "nudged", {"by": "ada"}),
    ]
    # A failed answer discards what the call published.
    assert test_host.post_json(ada, "/api/v1/rooms/r1/say?fail=1", {}).status == 422
    assert len(test_host.realtime_events()) == 2

    test_host.clear_realtime()
    assert test_host.realtime_events() == []
    assert test_host.post_json(ada, "/api/v1/rooms/r1/kick/bob", {}).status == 204
    assert test_host.ended_subscriptions() == [EndedSubscription(TENANT, "room.r1", "bob")]
    assert test_host.realtime_events() == []

    # Lifecycle calls publish in the tenant they serve.
    test_host.provision_tenant(TenantInfo("t2", "two", "Two"))
    assert test_host.realtime_events()[0].tenant_id == "t2"


@pytest.mark.parametrize(
    "case, expected",
    [
        ("topic", "matches none of the engine's topic patterns"),
        ("type", "is not an event type"),
        ("data", "a JSON object"),
        ("large", "at most 65536 bytes"),
        ("user", "a user id is 1 to 200 bytes"),
    ],
)
def test_publications_are_checked_as_the_host_checks_them(case, expected):
    test_host = TestHost(Rooms())
    answer = test_host.post_json(editor("ada"), f"/api/v1/wrong?case={case}", {})
    assert expected in answer.json()["data"]["error"]
    assert test_host.realtime_events() == []


def test_a_subscription_asks_the_engine_read_only():
    test_host = TestHost(Rooms())
    ada, bob = editor("ada"), editor("bob")
    assert test_host.post_json(ada, "/api/v1/rooms/r1/join", {}).status == 204
    assert test_host.authorize_subscription(ada, "room.r1") is Subscription.ALLOWED
    assert test_host.authorize_subscription(bob, "room.r1") is Subscription.FORBIDDEN
    assert test_host.authorize_subscription(bob, "lobby") is Subscription.ALLOWED
    guest = Context(TENANT, "gus", "viewer", token_type="guest")
    assert test_host.authorize_subscription(guest, "lobby") is Subscription.FORBIDDEN
    for topic in ["room", "room.r1.x", "hall", "room.r 1", ""]:
        assert test_host.authorize_subscription(ada, topic) is Subscription.UNKNOWN_TOPIC, topic
    # Raising or answering anything but True refuses; what the engine wrote is not kept.
    assert test_host.authorize_subscription(editor("raiser"), "lobby") is Subscription.FORBIDDEN
    assert test_host.authorize_subscription(editor("vague"), "lobby") is Subscription.FORBIDDEN
    assert test_host.stored(TENANT, "asked") is None


class Silent(Engine):
    def describe(self):
        return Descriptor("silent", "Silent", "0.1.0")


def test_by_default_an_engine_has_no_topics_and_denies():
    test_host = TestHost(Silent())
    assert test_host.topics() == []
    assert test_host.authorize_subscription(editor("ada"), "anything") is Subscription.UNKNOWN_TOPIC
    assert Silent().authorize_subscription(editor("ada"), "anything") is False


class Malformed(Silent):
    def topics(self):
        return ["room.**"]


def test_a_malformed_topic_pattern_is_refused_as_the_host_refuses_it():
    with pytest.raises(HostError, match="is malformed"):
        TestHost(Malformed())
