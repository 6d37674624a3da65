//! Chat's realtime topics driven through the SDK's test kit (`tessera_sdk::testkit`), natively
//! against fakes of the host: what each change publishes to `conversation.<id>` and `me`, that
//! a failed change publishes nothing, that a removed member's subscriptions end, every write of
//! a webhook's delivery on `webhook.<id>` in the shape the REST API lists it, and who may
//! subscribe to what. The bus events (and so the webhook deliveries made of them) keep carrying
//! identifiers only.

use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::testkit::{Subscription, TestHost};
use tessera_sdk::{Context, TenantInfo, UserInfo};

use crate::Chat;

const TENANT: &str = "tenant-1";

fn user(user_id: &str, user_type: &str) -> UserInfo {
    UserInfo {
        tenant_id: TENANT.into(),
        user_id: user_id.into(),
        email: format!("{user_id}@example.com"),
        first_name: "First".into(),
        last_name: "Last".into(),
        user_type: user_type.into(),
    }
}

/// A provisioned tenant with the users `ada`, `bob`, `cy`, `olga` and the guest `gus`.
fn provisioned() -> TestHost<Chat> {
    let host = TestHost::<Chat>::new();
    host.provision_tenant(&TenantInfo {
        tenant_id: TENANT.into(),
        tenant_short_id: "acme".into(),
        name: "Acme".into(),
    })
    .unwrap();
    for user_id in ["ada", "bob", "cy", "olga"] {
        host.provision_user(&user(user_id, "user")).unwrap();
    }
    host.provision_user(&user("gus", "guest")).unwrap();
    host
}

fn as_role(user_id: &str, role: &str) -> Context {
    Context::for_tests(TENANT, user_id, role)
}

fn editor(user_id: &str) -> Context {
    as_role(user_id, "editor")
}

fn guest(user_id: &str) -> Context {
    Context {
        token_type: "guest".into(),
        ..as_role(user_id, "viewer")
    }
}

/// `ada` creates a conversation with `bob`; its id.
fn conversation_of_ada_and_bob(host: &TestHost<Chat>) -> String {
    let created = host.post_json(
        &editor("ada"),
        "/api/v1/conversations",
        &json!({ "title": "Plans", "member_ids": ["bob"] }),
    );
    assert_eq!(created.status, 201, "{:?}", created.json());
    created.json()["data"]["id"].as_str().unwrap().to_owned()
}

/// The realtime events since the last look, as `(topic, user, type, data)`.
fn take_events(host: &TestHost<Chat>) -> Vec<(String, Option<String>, String, Value)> {
    let events = host
        .realtime_events()
        .into_iter()
        .map(|event| {
            assert_eq!(event.tenant_id, TENANT);
            (event.topic, event.user_id, event.event_type, event.data)
        })
        .collect();
    host.clear_realtime();
    events
}

#[test]
fn chat_owns_the_conversation_topics_and_each_users_own() {
    assert_eq!(
        TestHost::<Chat>::new().topics(),
        ["conversation.*", "me", "webhook.*"]
    );
}

#[test]
fn a_new_conversation_is_announced_to_each_member_on_their_own_topic() {
    let host = provisioned();
    assert!(
        host.realtime_events().is_empty(),
        "provisioning publishes nothing"
    );
    let created = host.post_json(
        &editor("ada"),
        "/api/v1/conversations",
        &json!({ "title": "Plans", "member_ids": ["bob", "cy"] }),
    );
    assert_eq!(created.status, 201);
    let conversation = created.json()["data"].clone();
    let mut announced = conversation.clone();
    announced.as_object_mut().unwrap().remove("member_ids");

    let events = take_events(&host);
    assert_eq!(events.len(), 3, "{events:?}");
    for ((topic, user_id, event_type, data), member) in events.iter().zip(["ada", "bob", "cy"]) {
        assert_eq!(topic, "me");
        assert_eq!(user_id.as_deref(), Some(member));
        assert_eq!(event_type, "conversation.created");
        assert_eq!(*data, announced);
    }

    // A refused creation publishes nothing.
    let refused = host.post_json(&editor("ada"), "/api/v1/conversations", &json!({}));
    assert_eq!(refused.status, 422);
    let viewer = host.post_json(
        &as_role("bob", "viewer"),
        "/api/v1/conversations",
        &json!({ "title": "Mine" }),
    );
    assert_eq!(viewer.status, 403);
    assert!(take_events(&host).is_empty());
}

#[test]
fn messages_reach_the_conversation_topic_with_their_text() {
    let host = provisioned();
    let id = conversation_of_ada_and_bob(&host);
    take_events(&host);
    let topic = format!("conversation.{id}");
    let (ada, bob) = (editor("ada"), editor("bob"));

    let posted = host.post_json(
        &ada,
        &format!("/api/v1/conversations/{id}/messages"),
        &json!({ "body": "  Lunch at noon?  " }),
    );
    assert_eq!(posted.status, 201);
    let message = posted.json()["data"].clone();
    let message_id = message["id"].as_str().unwrap().to_owned();
    assert_eq!(message["body"], "Lunch at noon?");
    assert_eq!(
        take_events(&host),
        [(
            topic.clone(),
            None,
            "message.created".into(),
            message.clone()
        )]
    );
    // The REST shape: the conversation, the message id, the author, the body, the times.
    let keys: Vec<&String> = message.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "author_id",
            "body",
            "conversation_id",
            "created_at",
            "id",
            "updated_at"
        ]
    );

    let edited = host.patch_json(
        &ada,
        &format!("/api/v1/conversations/{id}/messages/{message_id}"),
        &json!({ "body": "Lunch at one?" }),
    );
    assert_eq!(edited.status, 200);
    let edited = edited.json()["data"].clone();
    assert_eq!(
        take_events(&host),
        [(
            topic.clone(),
            None,
            "message.updated".into(),
            edited.clone()
        )]
    );

    // Refused changes publish nothing: an edit by someone else, an empty body.
    let path = format!("/api/v1/conversations/{id}/messages/{message_id}");
    assert_eq!(
        host.patch_json(&bob, &path, &json!({ "body": "No" }))
            .status,
        403
    );
    assert_eq!(
        host.patch_json(&ada, &path, &json!({ "body": " " })).status,
        422
    );
    assert_eq!(
        host.post_json(
            &as_role("cy", "editor"),
            &format!("/api/v1/conversations/{id}/messages"),
            &json!({ "body": "Let me in" }),
        )
        .status,
        403
    );
    assert!(take_events(&host).is_empty());

    assert_eq!(host.delete(&ada, &path).status, 204);
    assert_eq!(
        take_events(&host),
        [(topic, None, "message.deleted".into(), edited)]
    );
}

#[test]
fn the_bus_and_so_the_webhooks_keep_carrying_identifiers_only() {
    let host = provisioned();
    let id = conversation_of_ada_and_bob(&host);
    let posted = host.post_json(
        &editor("ada"),
        &format!("/api/v1/conversations/{id}/messages"),
        &json!({ "body": "secret plans" }),
    );
    assert_eq!(posted.status, 201);
    let message_id = posted.json()["data"]["id"].clone();
    let created = host
        .published()
        .into_iter()
        .find(|event| event.event_type == "message.created")
        .expect("message.created on the bus");
    assert_eq!(
        created.payload,
        json!({ "conversation_id": id, "message_id": message_id, "user_id": "ada" })
    );
    for event in host.published() {
        assert!(
            !event.payload.to_string().contains("secret plans"),
            "{event:?}"
        );
    }
}

#[test]
fn members_added_and_removed_are_published_and_a_removed_member_stops_listening() {
    let host = provisioned();
    let id = conversation_of_ada_and_bob(&host);
    take_events(&host);
    let topic = format!("conversation.{id}");
    let ada = editor("ada");

    let added = host.post_json(
        &ada,
        &format!("/api/v1/conversations/{id}/members"),
        &json!({ "user_id": "cy" }),
    );
    assert_eq!(added.status, 201);
    let events = take_events(&host);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        events[0],
        (
            topic.clone(),
            None,
            "member.added".into(),
            json!({ "conversation_id": id, "user_id": "cy" })
        )
    );
    assert_eq!(
        (
            events[1].0.as_str(),
            events[1].1.as_deref(),
            events[1].2.as_str()
        ),
        ("me", Some("cy"), "conversation.created")
    );
    assert_eq!(events[1].3["id"], id.as_str());
    assert_eq!(events[1].3["title"], "Plans");
    assert!(events[1].3.get("member_ids").is_none());

    // Adding a member twice is refused and publishes nothing.
    let again = host.post_json(
        &ada,
        &format!("/api/v1/conversations/{id}/members"),
        &json!({ "user_id": "cy" }),
    );
    assert_eq!(again.status, 409);
    assert!(take_events(&host).is_empty());

    assert_eq!(
        host.authorize_subscription(&editor("bob"), &topic),
        Subscription::Allowed
    );
    let removed = host.delete(&ada, &format!("/api/v1/conversations/{id}/members/bob"));
    assert_eq!(removed.status, 204);
    let ended = host.ended_subscriptions();
    assert_eq!(ended.len(), 1);
    assert_eq!(
        (
            ended[0].tenant_id.as_str(),
            ended[0].topic.as_str(),
            ended[0].user_id.as_str()
        ),
        (TENANT, topic.as_str(), "bob")
    );
    assert_eq!(
        take_events(&host),
        [(
            topic.clone(),
            None,
            "member.removed".into(),
            json!({ "conversation_id": id, "user_id": "bob" })
        )]
    );
    // Subscribing again is asked again, and refused.
    assert_eq!(
        host.authorize_subscription(&editor("bob"), &topic),
        Subscription::Forbidden
    );

    // Removing someone who is not a member is refused and ends nothing.
    let missing = host.delete(&ada, &format!("/api/v1/conversations/{id}/members/bob"));
    assert_eq!(missing.status, 404);
    assert!(host.ended_subscriptions().is_empty());
    assert!(take_events(&host).is_empty());
}

#[test]
fn a_conversation_topic_is_open_to_whoever_may_read_the_conversation() {
    let host = provisioned();
    let id = conversation_of_ada_and_bob(&host);
    let topic = format!("conversation.{id}");
    let decide = |ctx: &Context, topic: &str| host.authorize_subscription(ctx, topic);

    // Its members, whatever their role; an owner of the tenant, as for the REST reads.
    assert_eq!(decide(&editor("ada"), &topic), Subscription::Allowed);
    assert_eq!(
        decide(&as_role("bob", "viewer"), &topic),
        Subscription::Allowed
    );
    assert_eq!(
        decide(&as_role("olga", "owner"), &topic),
        Subscription::Allowed
    );
    // Not another user of the tenant, nor a guest who is not a member.
    assert_eq!(decide(&editor("cy"), &topic), Subscription::Forbidden);
    assert_eq!(decide(&guest("gus"), &topic), Subscription::Forbidden);
    // The REST reads agree.
    let path = format!("/api/v1/conversations/{id}/messages");
    assert_eq!(host.get(&editor("cy"), &path).status, 403);
    assert_eq!(host.get(&as_role("olga", "owner"), &path).status, 200);

    // A guest added as a member may.
    let added = host.post_json(
        &editor("ada"),
        &format!("/api/v1/conversations/{id}/members"),
        &json!({ "user_id": "gus" }),
    );
    assert_eq!(added.status, 201);
    assert_eq!(decide(&guest("gus"), &topic), Subscription::Allowed);

    // The default conversation is everyone's in the tenant.
    let listed = host.get(&editor("cy"), "/api/v1/conversations");
    let general = listed.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|conversation| conversation["is_default"] == true)
        .expect("the default conversation")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let general = format!("conversation.{general}");
    assert_eq!(
        decide(&as_role("cy", "viewer"), &general),
        Subscription::Allowed
    );

    // A conversation that does not exist: refused; a topic chat does not own: unknown.
    assert_eq!(
        decide(&as_role("olga", "owner"), "conversation.nope"),
        Subscription::Forbidden
    );
    for unknown in [
        "conversation",
        "conversation.a.b",
        "conversations.x",
        "me.too",
        "",
    ] {
        assert_eq!(
            decide(&editor("ada"), unknown),
            Subscription::UnknownTopic,
            "{unknown}"
        );
    }
}

#[test]
fn everyone_may_listen_on_their_own_topic_guests_included() {
    let host = provisioned();
    for ctx in [
        as_role("olga", "owner"),
        editor("ada"),
        as_role("bob", "viewer"),
        guest("gus"),
    ] {
        assert_eq!(
            host.authorize_subscription(&ctx, "me"),
            Subscription::Allowed,
            "{ctx:?}"
        );
    }
    // A guest hears of the conversations it joins, which it may read.
    let id = conversation_of_ada_and_bob(&host);
    take_events(&host);
    let added = host.post_json(
        &editor("ada"),
        &format!("/api/v1/conversations/{id}/members"),
        &json!({ "user_id": "gus" }),
    );
    assert_eq!(added.status, 201);
    let events = take_events(&host);
    assert_eq!(events[1].1.as_deref(), Some("gus"));
    assert_eq!(
        host.get(&guest("gus"), &format!("/api/v1/conversations/{id}"))
            .status,
        200
    );
}

// ---------------------------------------------------------------------------------------------
// webhook.<id>
// ---------------------------------------------------------------------------------------------

const RECEIVER: &str = "https://hooks.example.com/chat";

fn owner() -> Context {
    as_role("olga", "owner")
}

/// A webhook of `message.created` to [`RECEIVER`], created by the owner; its id.
fn webhook_of_messages(host: &TestHost<Chat>) -> String {
    let created = host.post_json(
        &owner(),
        "/api/v1/webhooks",
        &json!({
            "url": RECEIVER,
            "events": ["message.created"],
            "secret": "s".repeat(32),
        }),
    );
    assert_eq!(created.status, 201, "{:?}", created.json());
    created.json()["data"]["id"].as_str().unwrap().to_owned()
}

/// The id of the tenant's default conversation.
fn general(host: &TestHost<Chat>) -> String {
    host.get(&editor("ada"), "/api/v1/conversations").json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|conversation| conversation["is_default"] == true)
        .expect("the default conversation")["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `ada` says `body` in the default conversation.
fn say(host: &TestHost<Chat>, body: &str) {
    let path = format!("/api/v1/conversations/{}/messages", general(host));
    let posted = host.post_json(&editor("ada"), &path, &json!({ "body": body }));
    assert_eq!(posted.status, 201, "{:?}", posted.json());
}

/// The `delivery.updated` events on `webhook.<webhook_id>` since the last look (the other
/// topics' events are dropped); anything else published there fails the test.
fn delivery_events(host: &TestHost<Chat>, webhook_id: &str) -> Vec<Value> {
    let topic = format!("webhook.{webhook_id}");
    take_events(host)
        .into_iter()
        .filter(|(event_topic, ..)| event_topic.starts_with("webhook."))
        .map(|(event_topic, user_id, event_type, data)| {
            assert_eq!(event_topic, topic);
            assert_eq!(user_id, None, "every subscriber hears it");
            assert_eq!(event_type, "delivery.updated");
            data
        })
        .collect()
}

/// The delivery `id` as `GET /webhooks/{webhook_id}/deliveries` lists it now.
fn listed(host: &TestHost<Chat>, webhook_id: &str, id: &Value) -> Value {
    let page = host.get(
        &owner(),
        &format!("/api/v1/webhooks/{webhook_id}/deliveries"),
    );
    assert_eq!(page.status, 200);
    page.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|delivery| delivery["id"] == *id)
        .cloned()
        .unwrap_or_else(|| panic!("delivery {id} listed"))
}

/// Runs the jobs due `ahead_ms` from now.
fn run_jobs(host: &TestHost<Chat>, ahead_ms: u64) {
    for (job, outcome) in host.run_due_jobs(tessera_sdk::time::now_unix_ms() + ahead_ms) {
        assert!(outcome.is_ok(), "{job:?}: {outcome:?}");
    }
}

#[test]
fn every_write_of_a_delivery_is_announced_on_its_webhook_topic_as_the_api_lists_it() {
    let host = provisioned();
    let webhook = webhook_of_messages(&host);
    take_events(&host);
    host.respond("POST", RECEIVER, 500, "");

    // A message: its delivery is created, pending, in the same call.
    say(&host, "hello");
    let created = delivery_events(&host, &webhook);
    assert_eq!(created.len(), 1, "{created:?}");
    let id = created[0]["id"].clone();
    assert_eq!(created[0], listed(&host, &webhook, &id));
    assert_eq!(created[0]["status"], "pending");
    assert_eq!(created[0]["attempt"], 0);
    assert_eq!(created[0]["event"], "message.created");
    // The REST shape, and nothing more (no request body, no secret).
    let keys: Vec<&String> = created[0].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "attempt",
            "created_at",
            "event",
            "id",
            "next_retry_at",
            "response_code",
            "response_time_ms",
            "status"
        ]
    );

    // Its first attempt fails: the outcome, with the next retry.
    run_jobs(&host, 0);
    let failed = delivery_events(&host, &webhook);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0], listed(&host, &webhook, &id));
    assert_eq!(
        (
            &failed[0]["status"],
            &failed[0]["attempt"],
            &failed[0]["response_code"]
        ),
        (&json!("failed"), &json!(1), &json!(500))
    );
    assert!(failed[0]["next_retry_at"].is_string());

    // Disabled meanwhile, the retry parks the delivery (no retry due); re-enabled, it resumes.
    let path = format!("/api/v1/webhooks/{webhook}");
    assert_eq!(
        host.patch_json(&owner(), &path, &json!({ "is_active": false }))
            .status,
        200
    );
    run_jobs(&host, 60_000);
    let parked = delivery_events(&host, &webhook);
    assert_eq!(parked.len(), 1, "{parked:?}");
    assert_eq!(parked[0], listed(&host, &webhook, &id));
    assert_eq!(parked[0]["next_retry_at"], Value::Null);
    assert_eq!(parked[0]["attempt"], 1);
    assert_eq!(
        host.patch_json(&owner(), &path, &json!({ "is_active": true }))
            .status,
        200
    );
    assert!(
        delivery_events(&host, &webhook).is_empty(),
        "a PATCH writes no delivery"
    );
    run_jobs(&host, 0);
    let resumed = delivery_events(&host, &webhook);
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert_eq!(resumed[0], listed(&host, &webhook, &id));
    assert!(resumed[0]["next_retry_at"].is_string());
    assert_eq!(resumed[0]["attempt"], 1);

    // The receiver recovers: the resumed attempt delivers.
    host.respond("POST", RECEIVER, 204, "");
    run_jobs(&host, 0);
    let delivered = delivery_events(&host, &webhook);
    assert_eq!(delivered.len(), 1, "{delivered:?}");
    assert_eq!(delivered[0], listed(&host, &webhook, &id));
    assert_eq!(
        (&delivered[0]["status"], &delivered[0]["attempt"]),
        (&json!("delivered"), &json!(2))
    );
}

#[test]
fn test_pings_and_retries_are_announced_and_refused_calls_announce_nothing() {
    let host = provisioned();
    let webhook = webhook_of_messages(&host);
    take_events(&host);

    // A test ping is created with its one attempt's outcome: one event.
    host.respond("POST", RECEIVER, 503, "");
    let ping = host.post_json(
        &owner(),
        &format!("/api/v1/webhooks/{webhook}/test"),
        &json!({}),
    );
    assert_eq!(ping.status, 200);
    let pinged = delivery_events(&host, &webhook);
    assert_eq!(pinged.len(), 1, "{pinged:?}");
    let id = ping.json()["data"]["delivery_id"].clone();
    assert_eq!(pinged[0]["id"], id);
    assert_eq!(pinged[0], listed(&host, &webhook, &id));
    assert_eq!(
        (
            &pinged[0]["event"],
            &pinged[0]["status"],
            &pinged[0]["response_code"]
        ),
        (&json!("test.ping"), &json!("failed"), &json!(503))
    );

    // A manual retry: the new outcome.
    host.respond("POST", RECEIVER, 200, "");
    let retry = format!(
        "/api/v1/webhooks/{webhook}/deliveries/{}/retry",
        id.as_str().unwrap()
    );
    assert_eq!(host.post_json(&owner(), &retry, &json!({})).status, 200);
    let retried = delivery_events(&host, &webhook);
    assert_eq!(retried.len(), 1, "{retried:?}");
    assert_eq!(retried[0], listed(&host, &webhook, &id));
    assert_eq!(
        (&retried[0]["status"], &retried[0]["attempt"]),
        (&json!("delivered"), &json!(2))
    );

    // Refused: an editor's ping and retry, a ping of a webhook that does not exist.
    assert_eq!(
        host.post_json(
            &editor("ada"),
            &format!("/api/v1/webhooks/{webhook}/test"),
            &json!({})
        )
        .status,
        403
    );
    assert_eq!(
        host.post_json(&editor("ada"), &retry, &json!({})).status,
        403
    );
    assert_eq!(
        host.post_json(&owner(), "/api/v1/webhooks/nope/test", &json!({}))
            .status,
        404
    );
    // A message with the webhook disabled makes no delivery, so no event.
    assert_eq!(
        host.patch_json(
            &owner(),
            &format!("/api/v1/webhooks/{webhook}"),
            &json!({ "is_active": false })
        )
        .status,
        200
    );
    say(&host, "nobody listens");
    assert!(delivery_events(&host, &webhook).is_empty());
}

#[test]
fn a_webhook_topic_is_open_to_whoever_may_read_the_webhook() {
    let host = provisioned();
    let webhook = webhook_of_messages(&host);
    let topic = format!("webhook.{webhook}");
    let decide = |ctx: &Context, topic: &str| host.authorize_subscription(ctx, topic);

    // Owners, as for the REST reads.
    assert_eq!(decide(&owner(), &topic), Subscription::Allowed);
    assert_eq!(
        decide(&as_role("ada", "owner"), &topic),
        Subscription::Allowed
    );
    // Not an editor or a viewer (even the webhook's creator once demoted), nor a guest token.
    for ctx in [editor("ada"), as_role("olga", "viewer"), guest("gus")] {
        assert_eq!(decide(&ctx, &topic), Subscription::Forbidden, "{ctx:?}");
    }
    let owner_as_guest = Context {
        token_type: "guest".into(),
        ..owner()
    };
    assert_eq!(decide(&owner_as_guest, &topic), Subscription::Forbidden);
    // The REST reads agree.
    let path = format!("/api/v1/webhooks/{webhook}/deliveries");
    assert_eq!(host.get(&owner(), &path).status, 200);
    assert_eq!(host.get(&editor("ada"), &path).status, 403);
    assert_eq!(host.get(&owner_as_guest, &path).status, 403);

    // A webhook that does not exist, or no longer: refused.
    assert_eq!(decide(&owner(), "webhook.nope"), Subscription::Forbidden);
    assert_eq!(
        host.delete(&owner(), &format!("/api/v1/webhooks/{webhook}"))
            .status,
        204
    );
    assert_eq!(decide(&owner(), &topic), Subscription::Forbidden);
    // Names chat does not own.
    for unknown in ["webhook", "webhook.a.b", "webhooks.x"] {
        assert_eq!(
            decide(&owner(), unknown),
            Subscription::UnknownTopic,
            "{unknown}"
        );
    }
}
