//! The test kit's realtime: what an engine publishes is captured per call and kept only when
//! the call commits, the fakes check it as the host does, and `authorize_subscription` asks the
//! engine as the host would (unknown topics refused without asking, read-only, a trap denies).

use serde_json::json;

use super::{Subscription, TestHost};
use crate::{
    ApiError, Context, Descriptor, Engine, Response, Router, TenantInfo, realtime, storage,
};

const TENANT: &str = "tenant-1";

/// Publishes to `room.<id>` (`?fail` answers 422 after publishing), to `lobby` for one user,
/// and ends a user's subscriptions; lets members of `rooms/<id>` subscribe to their room.
struct Rooms;

impl Engine for Rooms {
    fn describe() -> Descriptor {
        Descriptor::new("rooms", "Rooms", "0.1.0")
    }

    fn topics() -> Vec<String> {
        vec!["room.*".into(), "lobby".into()]
    }

    fn authorize_subscription(caller: &Context, topic: &str) -> bool {
        // Writes here are not kept: the call is read-only.
        storage::set("asked", caller.user_id.as_bytes()).unwrap();
        if caller.user_id == "trapper" {
            panic!("no answer");
        }
        match topic.strip_prefix("room.") {
            Some(room) => storage::get(&format!("rooms/{room}/{}", caller.user_id))
                .unwrap()
                .is_some(),
            None => topic == "lobby" && !caller.is_guest(),
        }
    }

    fn router() -> Router {
        Router::new()
            .post("/api/v1/rooms/{id}/join", |ctx, req| {
                storage::set(&format!("rooms/{}/{}", req.param("id"), ctx.user_id), b"1")?;
                Ok(Response::no_content())
            })
            .post("/api/v1/rooms/{id}/say", |ctx, req| {
                let data = json!({ "room_id": req.param("id"), "by": ctx.user_id });
                realtime::publish(&format!("room.{}", req.param("id")), "said", &data)?;
                realtime::publish_to_user("bob", "lobby", "nudged", &json!({ "by": ctx.user_id }))?;
                if req.query_unchecked().get("fail").is_some() {
                    return Err(ApiError::invalid("body", "required"));
                }
                Ok(Response::no_content())
            })
            .post("/api/v1/rooms/{id}/kick/{user}", |_, req| {
                realtime::end_subscriptions(
                    &format!("room.{}", req.param("id")),
                    req.param("user"),
                )?;
                Ok(Response::no_content())
            })
            .post("/api/v1/wrong", |_, req| {
                let outcome = match req.query_unchecked().get("case").unwrap_or_default() {
                    "topic" => realtime::publish("elsewhere", "said", &json!({})),
                    "type" => realtime::publish("lobby", "Said!", &json!({})),
                    "data" => realtime::publish("lobby", "said", &json!([1, 2])),
                    "large" => {
                        realtime::publish("lobby", "said", &json!({ "x": "y".repeat(70_000) }))
                    }
                    _ => realtime::publish_to_user("", "lobby", "said", &json!({})),
                };
                Ok(Response::ok(
                    &json!({ "error": outcome.err().map(|e| e.to_string()) }),
                ))
            })
    }

    fn provision_tenant(_tenant: &TenantInfo) -> Result<(), String> {
        realtime::publish("lobby", "opened", &json!({}))?;
        Ok(())
    }
}

fn editor(user_id: &str) -> Context {
    Context::for_tests(TENANT, user_id, "editor")
}

#[test]
fn what_a_call_publishes_is_kept_when_it_commits_in_order() {
    let host = TestHost::<Rooms>::new();
    let ada = editor("ada");
    assert_eq!(host.topics(), ["room.*", "lobby"]);
    assert_eq!(
        host.post_json(&ada, "/api/v1/rooms/r1/say", &json!({}))
            .status,
        204
    );
    let events = host.realtime_events();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].tenant_id, TENANT);
    assert_eq!(events[0].topic, "room.r1");
    assert_eq!(events[0].user_id, None);
    assert_eq!(events[0].event_type, "said");
    assert_eq!(events[0].data, json!({ "room_id": "r1", "by": "ada" }));
    assert_eq!(events[1].topic, "lobby");
    assert_eq!(events[1].user_id.as_deref(), Some("bob"));

    // A failed answer discards what the call published.
    assert_eq!(
        host.post_json(&ada, "/api/v1/rooms/r1/say?fail", &json!({}))
            .status,
        422
    );
    assert_eq!(host.realtime_events().len(), 2);

    host.clear_realtime();
    assert!(host.realtime_events().is_empty());
    assert_eq!(
        host.post_json(&ada, "/api/v1/rooms/r1/kick/bob", &json!({}))
            .status,
        204
    );
    let ended = host.ended_subscriptions();
    assert_eq!(ended.len(), 1);
    assert_eq!(
        (ended[0].topic.as_str(), ended[0].user_id.as_str()),
        ("room.r1", "bob")
    );
    assert!(host.realtime_events().is_empty());

    // Lifecycle calls publish in the tenant they serve.
    host.provision_tenant(&TenantInfo {
        tenant_id: "tenant-2".into(),
        tenant_short_id: "two".into(),
        name: "Two".into(),
    })
    .unwrap();
    assert_eq!(host.realtime_events()[0].tenant_id, "tenant-2");
}

#[test]
fn publications_are_checked_as_the_host_checks_them() {
    let host = TestHost::<Rooms>::new();
    let ada = editor("ada");
    for (case, expected) in [
        ("topic", "matches none of the engine's topic patterns"),
        ("type", "is not an event type"),
        ("data", "a JSON object"),
        ("large", "at most 65536 bytes"),
        ("user", "a user id is 1 to 200 bytes"),
    ] {
        let answer = host.post_json(&ada, &format!("/api/v1/wrong?case={case}"), &json!({}));
        let error = answer.json()["data"]["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(error.contains(expected), "{case}: {error}");
    }
    assert!(host.realtime_events().is_empty());
}

#[test]
fn a_subscription_asks_the_engine_read_only() {
    let host = TestHost::<Rooms>::new();
    let (ada, bob) = (editor("ada"), editor("bob"));
    assert_eq!(
        host.post_json(&ada, "/api/v1/rooms/r1/join", &json!({}))
            .status,
        204
    );
    assert_eq!(
        host.authorize_subscription(&ada, "room.r1"),
        Subscription::Allowed
    );
    assert_eq!(
        host.authorize_subscription(&bob, "room.r1"),
        Subscription::Forbidden
    );
    assert_eq!(
        host.authorize_subscription(&bob, "lobby"),
        Subscription::Allowed
    );
    let guest = Context {
        token_type: "guest".into(),
        ..bob.clone()
    };
    assert_eq!(
        host.authorize_subscription(&guest, "lobby"),
        Subscription::Forbidden
    );
    // No pattern matches: refused without asking the engine.
    for topic in ["room", "room.r1.x", "hall", "room.r 1", ""] {
        assert_eq!(
            host.authorize_subscription(&ada, topic),
            Subscription::UnknownTopic,
            "{topic}"
        );
    }
    // A trap refuses; what the engine wrote while deciding is not kept.
    assert_eq!(
        host.authorize_subscription(&editor("trapper"), "lobby"),
        Subscription::Forbidden
    );
    assert_eq!(host.stored(TENANT, "asked"), None);
}

struct Silent;

impl Engine for Silent {
    fn describe() -> Descriptor {
        Descriptor::new("silent", "Silent", "0.1.0")
    }
}

#[test]
fn by_default_an_engine_has_no_topics_and_denies() {
    let host = TestHost::<Silent>::new();
    assert!(host.topics().is_empty());
    assert_eq!(
        host.authorize_subscription(&editor("ada"), "anything"),
        Subscription::UnknownTopic
    );
    assert!(!<Silent as Engine>::authorize_subscription(
        &editor("ada"),
        "anything"
    ));
}

struct Malformed;

impl Engine for Malformed {
    fn describe() -> Descriptor {
        Descriptor::new("malformed", "Malformed", "0.1.0")
    }

    fn topics() -> Vec<String> {
        vec!["room.**".into()]
    }
}

#[test]
#[should_panic(expected = "the topic pattern \"room.**\" is malformed")]
fn a_malformed_topic_pattern_is_refused_as_the_host_refuses_it() {
    TestHost::<Malformed>::new();
}
