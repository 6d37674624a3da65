//! The Activity engine's event handling and routes through the SDK's test kit
//! (`tessera_sdk::testkit`): events delivered as the host's bus delivers them, the feed read
//! over its routes, natively, without a host or a wasm build. Through a real host:
//! `tests/it/activity.rs`.

use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::testkit::TestHost;
use tessera_sdk::{Context, Event, TenantInfo, UserInfo};

use crate::Activity;

const TENANT: &str = "tenant-1";

fn provisioned() -> TestHost<Activity> {
    let host = TestHost::<Activity>::new();
    host.provision_tenant(&TenantInfo {
        tenant_id: TENANT.into(),
        tenant_short_id: "acme".into(),
        name: "Acme".into(),
    })
    .unwrap();
    host.provision_user(&UserInfo {
        tenant_id: TENANT.into(),
        user_id: "ada".into(),
        email: "ada@example.com".into(),
        first_name: "Ada".into(),
        last_name: "Lovelace".into(),
        user_type: "user".into(),
    })
    .unwrap();
    host
}

fn event(id: &str, event_type: &str, actor: &str, payload: Value) -> Event {
    Event {
        id: id.into(),
        event_type: event_type.into(),
        tenant_id: TENANT.into(),
        occurred_at: "2026-11-26T10:00:00Z".into(),
        actor_id: Some(actor.into()),
        correlation_id: format!("correlation-{id}"),
        payload,
    }
}

#[test]
fn each_event_becomes_one_item_however_often_it_is_delivered() {
    let host = provisioned();
    let created = event(
        "event-1",
        "entity.created",
        "bob",
        json!({ "entity_id": "contact-1", "family": "contact", "name": "Ada" }),
    );
    host.deliver(&created).unwrap();
    host.deliver(&created).unwrap();
    let ada = Context::for_tests(TENANT, "ada", "viewer");
    let feed = host.get(&ada, "/api/v1/feed").json();
    let items = feed["data"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{feed}");
    assert_eq!(items[0]["type"], "entity.created");
    assert_eq!(items[0]["actor_id"], "bob");
    assert_eq!(items[0]["entity_id"], "contact-1");
    assert_eq!(
        items[0]["data"],
        json!({ "entity_id": "contact-1", "family": "contact" }),
        "identifiers only, never field values"
    );
}

#[test]
fn filters_and_the_unseen_count_follow_the_items() {
    let host = provisioned();
    host.deliver(&event(
        "e1",
        "note.created",
        "bob",
        json!({ "note_id": "n1" }),
    ))
    .unwrap();
    host.deliver(&event(
        "e2",
        "message.created",
        "bob",
        json!({ "message_id": "m1" }),
    ))
    .unwrap();
    host.deliver(&event(
        "e3",
        "note.deleted",
        "ada",
        json!({ "note_id": "n1" }),
    ))
    .unwrap();
    let ada = Context::for_tests(TENANT, "ada", "viewer");
    let notes = host.get(&ada, "/api/v1/feed?type=note.*").json();
    let types: Vec<&str> = notes["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["note.deleted", "note.created"], "newest first");
    assert_eq!(host.get(&ada, "/api/v1/feed?colour=red").status, 400);

    // Ada's own item does not count as unseen for her.
    assert_eq!(
        host.get(&ada, "/api/v1/feed/unseen").json()["data"]["count"],
        2
    );
    let seen = host.post_json(&ada, "/api/v1/feed/seen", &json!({}));
    assert_eq!(seen.status, 200, "{:?}", seen.json());
    assert_eq!(
        host.get(&ada, "/api/v1/feed/unseen").json()["data"]["count"],
        0
    );
}

#[test]
fn events_of_a_tenant_never_provisioned_are_ignored() {
    let host = TestHost::<Activity>::new();
    host.deliver(&event(
        "e1",
        "note.created",
        "bob",
        json!({ "note_id": "n1" }),
    ))
    .unwrap();
    assert!(host.stored_keys(TENANT, "items/").is_empty());
}

#[test]
fn a_creation_and_its_field_events_are_one_item() {
    let host = provisioned();
    let ids: Vec<String> = (0..6).map(|_| uuid::Uuid::now_v7().to_string()).collect();
    let at = |id: &str, event_type: &str, occurred_at: &str, payload: Value| Event {
        occurred_at: occurred_at.into(),
        ..event(id, event_type, "bob", payload)
    };
    let created = |id: &str, entity_id: &str| {
        at(
            id,
            "entity.created",
            "2026-11-26T10:00:00.000001Z",
            json!({ "entity_id": entity_id, "family": "contact" }),
        )
    };
    let field_set = |id: &str, entity_id: &str, occurred_at: &str, field: &str| {
        at(
            id,
            "entity.field_set",
            occurred_at,
            json!({ "entity_id": entity_id, "field": field, "value": "secret" }),
        )
    };
    let creation_time = "2026-11-26T10:00:00.000001Z";
    host.deliver(&created(&ids[0], "contact-1")).unwrap();
    host.deliver(&field_set(&ids[1], "contact-1", creation_time, "name"))
        .unwrap();
    // Another creation in between: contact-1's next field is found through its index.
    host.deliver(&created(&ids[2], "contact-2")).unwrap();
    host.deliver(&field_set(&ids[3], "contact-1", creation_time, "email"))
        .unwrap();
    // A redelivered field event changes nothing.
    host.deliver(&field_set(&ids[1], "contact-1", creation_time, "name"))
        .unwrap();
    // A later update's field event is an item of its own.
    host.deliver(&field_set(
        &ids[4],
        "contact-1",
        "2026-11-26T10:05:00.000001Z",
        "phone",
    ))
    .unwrap();

    let ada = Context::for_tests(TENANT, "ada", "viewer");
    let feed = host.get(&ada, "/api/v1/feed?entity_id=contact-1").json();
    let items = feed["data"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{feed}");
    assert_eq!(items[0]["type"], "entity.field_set");
    assert_eq!(
        items[0]["data"],
        json!({ "entity_id": "contact-1", "field": "phone" })
    );
    assert_eq!(items[1]["id"], ids[0].as_str());
    assert_eq!(items[1]["type"], "entity.created");
    assert_eq!(
        items[1]["data"],
        json!({ "entity_id": "contact-1", "family": "contact", "fields": ["name", "email"] }),
        "the fields set at creation, names only"
    );
    // Three items in all, each stored once with its index entries (no marker rows).
    assert_eq!(host.stored_keys(TENANT, "items/").len(), 3);
    assert!(host.stored_keys(TENANT, "seen-events/").is_empty());
}

#[test]
fn a_type_pattern_pages_the_items_of_every_type_under_it_newest_first_each_once() {
    let host = provisioned();
    // Items of four types, two under `note.`, interleaved in time (their ids are UUID v7s
    // taken in this order).
    let delivered = [
        ("note.created", "n1"),
        ("message.created", "m1"),
        ("note.updated", "n1"),
        ("note.created", "n2"),
        ("note.shared", "n2"),
        ("message.created", "m2"),
        ("note.updated", "n2"),
    ];
    for (index, (event_type, note_id)) in delivered.iter().enumerate() {
        host.deliver(&event(
            &format!("e{index}"),
            event_type,
            "bob",
            json!({ "note_id": note_id }),
        ))
        .unwrap();
    }
    // An item recorded before 2026-11-27 is also under its type's prefix pattern: the merge
    // reads it from both indexes and answers it once.
    let stored = host.stored_keys(TENANT, "by-type/note.shared/");
    assert_eq!(stored.len(), 1, "{stored:?}");
    let shared_id = stored[0]["by-type/note.shared/".len()..].to_owned();
    host.in_call(TENANT, || {
        tessera_sdk::storage::set(&format!("by-type/note.*/{shared_id}"), b"")
            .map_err(|error| error.to_string())
    })
    .unwrap();
    assert!(
        host.stored_keys(TENANT, "by-type/note.*/").len() == 1,
        "only the older item has a prefix entry"
    );

    let ada = Context::for_tests(TENANT, "ada", "viewer");
    let mut seen = Vec::new();
    let mut path = "/api/v1/feed?type=note.*&limit=2".to_owned();
    for _ in 0..delivered.len() {
        let page = host.get(&ada, &path).json();
        for item in page["data"].as_array().unwrap() {
            seen.push(item["type"].as_str().unwrap().to_owned());
        }
        if page["meta"]["has_more"] != true {
            break;
        }
        let cursor = page["meta"]["next_cursor"].as_str().unwrap();
        path = format!("/api/v1/feed?type=note.*&limit=2&cursor={cursor}");
    }
    assert_eq!(
        seen,
        [
            "note.updated",
            "note.shared",
            "note.created",
            "note.updated",
            "note.created"
        ],
        "every note item once, newest first, across pages"
    );
    // An exact type reads its own index.
    let shared = host.get(&ada, "/api/v1/feed?type=note.shared").json();
    assert_eq!(shared["data"].as_array().unwrap().len(), 1, "{shared}");
}
