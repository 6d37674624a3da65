//! The Notes engine's routes, events and jobs driven through the SDK's test kit
//! (`tessera_sdk::testkit`): natively, against in-memory fakes of the host, no wasm build and
//! no database. The same behaviour through a real host is `tests/it/notes.rs`.

use tessera_sdk::serde_json::{Value, json};
use tessera_sdk::testkit::TestHost;
use tessera_sdk::{Context, TenantInfo, UserInfo};

use crate::Notes;

const TENANT: &str = "tenant-1";

fn user(user_id: &str) -> UserInfo {
    UserInfo {
        tenant_id: TENANT.into(),
        user_id: user_id.into(),
        email: format!("{user_id}@example.com"),
        first_name: "First".into(),
        last_name: "Last".into(),
        user_type: "user".into(),
    }
}

/// A provisioned tenant with the users `ada` and `bob`.
fn provisioned() -> TestHost<Notes> {
    let host = TestHost::<Notes>::new();
    host.provision_tenant(&TenantInfo {
        tenant_id: TENANT.into(),
        tenant_short_id: "acme".into(),
        name: "Acme".into(),
    })
    .unwrap();
    host.provision_user(&user("ada")).unwrap();
    host.provision_user(&user("bob")).unwrap();
    host
}

fn editor(user_id: &str) -> Context {
    Context::for_tests(TENANT, user_id, "editor")
}

fn event_types(host: &TestHost<Notes>) -> Vec<String> {
    host.published()
        .into_iter()
        .map(|event| event.event_type)
        .collect()
}

#[test]
fn a_note_is_created_listed_shown_and_deleted_with_its_events() {
    let host = provisioned();
    let ada = editor("ada");
    let created = host.post_json(
        &ada,
        "/api/v1/notes",
        &json!({ "title": "Groceries", "body": "eggs", "tags": ["home"] }),
    );
    assert_eq!(created.status, 201, "{:?}", created.json());
    let note = created.json()["data"].clone();
    let id = note["id"].as_str().unwrap().to_owned();
    assert_eq!(note["owner_id"], "ada");
    assert_eq!(note["permission"], "owner");

    let listed = host.get(&ada, "/api/v1/notes");
    assert_eq!(listed.status, 200);
    assert_eq!(listed.json()["data"][0]["id"], id.as_str());
    assert!(
        listed.json()["data"][0].get("body").is_none(),
        "lists leave out the body"
    );
    assert_eq!(
        host.get(&ada, &format!("/api/v1/notes/{id}")).json()["data"]["body"],
        "eggs"
    );

    let published = host.published();
    assert_eq!(published[0].event_type, "note.created");
    assert_eq!(
        published[0].payload,
        json!({ "note_id": id, "owner_id": "ada" })
    );
    assert_eq!(published[0].actor_id.as_deref(), Some("ada"));

    assert_eq!(
        host.delete(&ada, &format!("/api/v1/notes/{id}")).status,
        204
    );
    assert_eq!(host.get(&ada, &format!("/api/v1/notes/{id}")).status, 404);
    assert_eq!(event_types(&host), ["note.created", "note.deleted"]);
    assert!(host.stored_keys(TENANT, "notes/").is_empty());
    assert!(host.stored_keys(TENANT, "by-user/").is_empty());
}

#[test]
fn invalid_input_is_a_422_naming_each_field_and_keeps_nothing() {
    let host = provisioned();
    let refused = host.post_json(
        &editor("ada"),
        "/api/v1/notes",
        &json!({ "title": "  ", "tags": ["Work"], "pinned": "yes" }),
    );
    assert_eq!(refused.status, 422);
    let body = refused.json();
    assert_eq!(body["message"], "The given data was invalid.");
    let mut fields: Vec<&String> = body["errors"].as_object().unwrap().keys().collect();
    fields.sort();
    assert_eq!(fields, ["pinned", "tags.0", "title"], "{body}");
    assert!(host.stored_keys(TENANT, "notes/").is_empty());
    assert!(host.published().is_empty());
}

#[test]
fn viewers_write_nothing_and_other_users_notes_are_not_found() {
    let host = provisioned();
    let viewer = Context::for_tests(TENANT, "bob", "viewer");
    let refused = host.post_json(&viewer, "/api/v1/notes", &json!({ "title": "No" }));
    assert_eq!(refused.status, 403);
    let id = host
        .post_json(&editor("ada"), "/api/v1/notes", &json!({ "title": "Mine" }))
        .json()["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        host.get(&editor("bob"), &format!("/api/v1/notes/{id}"))
            .status,
        404
    );
    let elsewhere = Context::for_tests("tenant-2", "ada", "owner");
    assert_eq!(
        host.get(&elsewhere, &format!("/api/v1/notes/{id}")).status,
        404
    );
}

#[test]
fn a_shared_note_is_listed_for_its_reader_who_cannot_edit_it() {
    let host = provisioned();
    let (ada, bob) = (editor("ada"), editor("bob"));
    let id = host
        .post_json(&ada, "/api/v1/notes", &json!({ "title": "Plan" }))
        .json()["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shared = host.put_json(
        &ada,
        &format!("/api/v1/notes/{id}/shares/bob"),
        &json!({ "permission": "read" }),
    );
    assert_eq!(shared.status, 201, "{:?}", shared.json());
    let listed = host.get(&bob, "/api/v1/notes?scope=shared");
    assert_eq!(listed.json()["data"][0]["permission"], "read");
    let patched = host.patch_json(
        &bob,
        &format!("/api/v1/notes/{id}"),
        &json!({ "title": "X" }),
    );
    assert_eq!(patched.status, 403);
    let unknown = host.put_json(
        &ada,
        &format!("/api/v1/notes/{id}/shares/nobody"),
        &json!({ "permission": "read" }),
    );
    assert_eq!(unknown.status, 422);
    assert_eq!(event_types(&host), ["note.created", "note.shared"]);
}

#[test]
fn lists_are_cursor_paged_newest_first() {
    let host = provisioned();
    let ada = editor("ada");
    let ids: Vec<String> = (0..5)
        .map(|n| {
            host.post_json(
                &ada,
                "/api/v1/notes",
                &json!({ "title": format!("Note {n}") }),
            )
            .json()["data"]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut seen = Vec::new();
    let mut path = "/api/v1/notes?limit=2".to_owned();
    loop {
        let page = host.get(&ada, &path).json();
        seen.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|note| note["id"].as_str().unwrap().to_owned()),
        );
        if page["meta"]["has_more"] != Value::Bool(true) {
            break;
        }
        let cursor = page["meta"]["next_cursor"].as_str().unwrap();
        path = format!("/api/v1/notes?limit=2&cursor={cursor}");
        assert!(seen.len() <= 5, "paging does not end: {seen:?}");
    }
    let newest_first: Vec<String> = ids.into_iter().rev().collect();
    assert_eq!(seen, newest_first);
}

#[test]
fn deprovisioning_a_user_removes_their_notes_through_jobs() {
    let host = provisioned();
    let ada = editor("ada");
    for n in 0..3 {
        host.post_json(
            &ada,
            "/api/v1/notes",
            &json!({ "title": format!("Note {n}") }),
        );
    }
    let kept = host
        .post_json(
            &editor("bob"),
            "/api/v1/notes",
            &json!({ "title": "Bob's" }),
        )
        .json()["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    host.deprovision_user(TENANT, "ada").unwrap();
    for (_, outcome) in host.run_due_jobs(u64::MAX) {
        outcome.unwrap();
    }
    assert!(host.jobs().is_empty());
    assert_eq!(
        host.stored_keys(TENANT, "notes/"),
        [format!("notes/{kept}")]
    );
    assert!(host.stored_keys(TENANT, "by-user/ada/").is_empty());
}
