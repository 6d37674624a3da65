//! The notes engine (`engines/notes`) through the real host: notes CRUD, sharing for read or
//! edit, lists with tag / pinned / scope filters and cursor paging, roles, tenant isolation,
//! validation, the events published (observed through a bus subscription the test registers),
//! provisioning and deprovisioning, and the OpenAPI entries.

use serde_json::{Value, json};
use tessera_host::config::Config;

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, assert_engine_documented, json_with_status,
    observe_events, observed_events, spawn_app_with, without_rate_limits,
};

const NOTES: &str = "/notes/api/v1/notes";
const INTERNAL: &str = "/notes/api/internal/notes";
/// The engine code the test subscribes to `note.*` on the bus: no such engine is loaded, so
/// each published note event stays in `engine_work` for the test to read.
const OBSERVER: &str = "note-observer";

// ---------------------------------------------------------------------------------------------
// The host and a tenant
// ---------------------------------------------------------------------------------------------

/// A host with the notes engine, no rate limits, a 1 MiB body limit (a note body may have
/// 100,000 characters) and an observer of note events.
async fn notes_host(backend: Backend) -> TestApp {
    let database = TestDatabase::new(backend).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), &["notes"]);
    let configure = |config: &mut Config| {
        without_rate_limits(config);
        config.http.max_body_bytes = 1024 * 1024;
    };
    let app = spawn_app_with(
        backend,
        AppOptions {
            database: Some(database),
            configure: Some(Box::new(configure)),
            ..AppOptions::default()
        },
    )
    .await;
    observe_events(&app, OBSERVER, &["note.*"]);
    app
}

/// The note events published in `tenant_id`, oldest first: `(type, payload)`.
async fn note_events(app: &TestApp, tenant_id: &str) -> Vec<(String, Value)> {
    observed_events(app, OBSERVER, Some(tenant_id)).await
}

/// A user of a tenant and their token.
struct User {
    id: String,
    token: String,
}

/// A tenant provisioned on the notes engine with an owner, two editors and a viewer.
struct Tenant {
    id: String,
    owner: User,
    editor: User,
    other_editor: User,
    viewer: User,
}

async fn provision_user(app: &TestApp, tenant_id: &str, user_id: &str) {
    let body = json!({
        "tenant_id": tenant_id, "user_id": user_id, "email": format!("{user_id}@example.com"),
        "first_name": "Test", "last_name": "User", "type": "user",
    });
    json_with_status(
        app.post_signed(&format!("{INTERNAL}/provision/user"), &body)
            .await,
        200,
    )
    .await;
}

async fn user(app: &TestApp, tenant_id: &str, role: &str) -> User {
    let id = uuid::Uuid::new_v4().to_string();
    provision_user(app, tenant_id, &id).await;
    User {
        token: app.token(tenant_id, &id, role).await,
        id,
    }
}

async fn tenant(app: &TestApp) -> Tenant {
    let id = uuid::Uuid::new_v4().to_string();
    json_with_status(
        app.post_signed(
            &format!("{INTERNAL}/provision/tenant"),
            &json!({ "tenant_id": id, "tenant_short_id": "acme", "name": "Acme" }),
        )
        .await,
        200,
    )
    .await;
    Tenant {
        owner: user(app, &id, "owner").await,
        editor: user(app, &id, "editor").await,
        other_editor: user(app, &id, "editor").await,
        viewer: user(app, &id, "viewer").await,
        id,
    }
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

fn note_path(id: &str) -> String {
    format!("{NOTES}/{id}")
}

fn share_path(note_id: &str, user_id: &str) -> String {
    format!("{NOTES}/{note_id}/shares/{user_id}")
}

async fn create_note(app: &TestApp, token: &str, body: Value) -> Value {
    json_with_status(app.post_as(NOTES, token, &body).await, 201).await["data"].clone()
}

async fn note_id(app: &TestApp, token: &str, body: Value) -> String {
    create_note(app, token, body).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn show(app: &TestApp, token: &str, id: &str) -> Value {
    json_with_status(app.get_as(&note_path(id), token).await, 200).await["data"].clone()
}

async fn list(app: &TestApp, token: &str, query: &str) -> Value {
    json_with_status(app.get_as(&format!("{NOTES}{query}"), token).await, 200).await
}

/// The ids of a list answer's items, in order.
fn ids(listed: &Value) -> Vec<String> {
    listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|note| note["id"].as_str().unwrap().to_owned())
        .collect()
}

/// `PUT` of a share with a JSON body.
async fn put_share(app: &TestApp, token: &str, path: &str, body: &Value) -> reqwest::Response {
    app.client
        .put(app.url(path))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Shares a note that was not shared with the user yet (201).
async fn share(app: &TestApp, token: &str, note_id: &str, user_id: &str, permission: &str) {
    let body = json!({ "permission": permission });
    json_with_status(
        put_share(app, token, &share_path(note_id, user_id), &body).await,
        201,
    )
    .await;
}

/// Asserts a 204 with an empty body.
async fn no_content(response: reqwest::Response) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    assert_eq!((status, text.as_str()), (204, ""));
}

/// Asserts `status` with the error `message`.
async fn refused(response: reqwest::Response, status: u16, message: &str) {
    let body = json_with_status(response, status).await;
    assert_eq!(body, json!({ "message": message }));
}

const FORBIDDEN: &str = "This action is unauthorized.";
const NOT_FOUND: &str = "Note not found.";

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

database_test!(
    an_owner_creates_reads_updates_and_deletes_a_note,
    |backend| async move {
        let app = notes_host(backend).await;
        let tenant = tenant(&app).await;
        let owner = &tenant.owner;

        let created = create_note(
            &app,
            &owner.token,
            json!({
                "title": "  Groceries  ",
                "body": "# List\n\n- milk\n- eggs",
                "tags": ["home", "errands_2"],
                "pinned": true,
            }),
        )
        .await;
        let id = created["id"].as_str().unwrap().to_owned();
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 7);
        let created_at = created["created_at"].as_str().unwrap().to_owned();
        assert!(
            chrono::DateTime::parse_from_rfc3339(&created_at).is_ok() && created_at.ends_with('Z')
        );
        assert_eq!(
            created,
            json!({
                "id": id,
                "title": "Groceries",
                "body": "# List\n\n- milk\n- eggs",
                "tags": ["home", "errands_2"],
                "pinned": true,
                "owner_id": owner.id,
                "created_at": created_at,
                "updated_at": created_at,
                "shares": [],
                "permission": "owner",
            })
        );
        assert_eq!(show(&app, &owner.token, &id).await, created);

        // Defaults: an empty body, no tags, not pinned.
        let plain = create_note(&app, &tenant.editor.token, json!({ "title": "Plain" })).await;
        assert_eq!(
            (&plain["body"], &plain["tags"], &plain["pinned"]),
            (&json!(""), &json!([]), &json!(false))
        );

        // Lists show the caller's notes, without body or shares.
        let listed = list(&app, &owner.token, "").await;
        assert_eq!(
            listed,
            json!({
                "data": [{
                    "id": id,
                    "title": "Groceries",
                    "tags": ["home", "errands_2"],
                    "pinned": true,
                    "owner_id": owner.id,
                    "permission": "owner",
                    "created_at": created_at,
                    "updated_at": created_at,
                }],
                "meta": { "next_cursor": listed["meta"]["next_cursor"], "has_more": false },
            })
        );
        assert!(listed["meta"]["next_cursor"].is_string());

        // A patch changes only what it sends and moves updated_at.
        let patched = json_with_status(
            app.patch_as(
                &note_path(&id),
                &owner.token,
                &json!({ "title": "Groceries (Sat)", "pinned": false }),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(patched["title"], "Groceries (Sat)");
        assert_eq!(patched["pinned"], false);
        assert_eq!(patched["body"], created["body"]);
        assert_eq!(patched["tags"], created["tags"]);
        assert_eq!(patched["created_at"], created_at);
        assert!(patched["updated_at"].as_str().unwrap() > created_at.as_str());
        let retagged = json_with_status(
            app.patch_as(
                &note_path(&id),
                &owner.token,
                &json!({ "tags": [], "body": "" }),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(
            (&retagged["tags"], &retagged["body"]),
            (&json!([]), &json!(""))
        );
        assert_eq!(retagged["title"], "Groceries (Sat)");
        // An empty patch changes nothing.
        let unchanged = json_with_status(
            app.patch_as(&note_path(&id), &owner.token, &json!({}))
                .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(unchanged, retagged);
        assert_eq!(show(&app, &owner.token, &id).await, retagged);

        no_content(app.delete_as(&note_path(&id), &owner.token).await).await;
        refused(
            app.get_as(&note_path(&id), &owner.token).await,
            404,
            NOT_FOUND,
        )
        .await;
        refused(
            app.delete_as(&note_path(&id), &owner.token).await,
            404,
            NOT_FOUND,
        )
        .await;
        refused(
            app.patch_as(&note_path(&id), &owner.token, &json!({ "title": "x" }))
                .await,
            404,
            NOT_FOUND,
        )
        .await;
        assert_eq!(list(&app, &owner.token, "").await["data"], json!([]));
        for path in [
            note_path("not-a-uuid"),
            note_path(&uuid::Uuid::now_v7().to_string()),
        ] {
            refused(app.get_as(&path, &owner.token).await, 404, NOT_FOUND).await;
        }

        // Identifiers only: no title or body in any event.
        let plain_id = plain["id"].as_str().unwrap();
        assert_eq!(
            note_events(&app, &tenant.id).await,
            vec![
                (
                    "note.created".to_owned(),
                    json!({ "note_id": id, "owner_id": owner.id })
                ),
                (
                    "note.created".to_owned(),
                    json!({ "note_id": plain_id, "owner_id": tenant.editor.id })
                ),
                (
                    "note.updated".to_owned(),
                    json!({ "note_id": id, "owner_id": owner.id, "user_id": owner.id })
                ),
                (
                    "note.updated".to_owned(),
                    json!({ "note_id": id, "owner_id": owner.id, "user_id": owner.id })
                ),
                (
                    "note.deleted".to_owned(),
                    json!({ "note_id": id, "owner_id": owner.id })
                ),
            ]
        );
        app.stop().await;
    }
);

database_test!(
    shares_grant_read_or_edit_and_only_the_owner_manages_them,
    |backend| async move {
        let app = notes_host(backend).await;
        let tenant = tenant(&app).await;
        let (owner, editor, stranger) = (&tenant.owner, &tenant.editor, &tenant.other_editor);
        let id = note_id(
            &app,
            &owner.token,
            json!({ "title": "Plan", "body": "v1", "tags": ["q3"] }),
        )
        .await;

        // Before sharing, another user sees nothing.
        refused(
            app.get_as(&note_path(&id), &editor.token).await,
            404,
            NOT_FOUND,
        )
        .await;
        assert_eq!(list(&app, &editor.token, "").await["data"], json!([]));

        let shared = json_with_status(
            put_share(
                &app,
                &owner.token,
                &share_path(&id, &editor.id),
                &json!({ "permission": "read" }),
            )
            .await,
            201,
        )
        .await;
        assert_eq!(
            shared,
            json!({ "data": { "note_id": id, "user_id": editor.id, "permission": "read" } })
        );
        // The same share again changes nothing (200, no event).
        let again = json_with_status(
            put_share(
                &app,
                &owner.token,
                &share_path(&id, &editor.id),
                &json!({ "permission": "read" }),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(again, shared);

        let seen = show(&app, &editor.token, &id).await;
        assert_eq!(seen["permission"], "read");
        assert_eq!(
            seen["shares"],
            json!([{ "user_id": editor.id, "permission": "read" }])
        );
        assert_eq!(seen["owner_id"], owner.id);
        assert_eq!(
            show(&app, &owner.token, &id).await["shares"],
            seen["shares"]
        );
        let listed = list(&app, &editor.token, "").await;
        assert_eq!(ids(&listed), vec![id.clone()]);
        assert_eq!(listed["data"][0]["permission"], "read");

        // A read share writes nothing.
        refused(
            app.patch_as(&note_path(&id), &editor.token, &json!({ "body": "v2" }))
                .await,
            403,
            FORBIDDEN,
        )
        .await;
        refused(
            app.delete_as(&note_path(&id), &editor.token).await,
            403,
            FORBIDDEN,
        )
        .await;
        refused(
            put_share(
                &app,
                &editor.token,
                &share_path(&id, &stranger.id),
                &json!({ "permission": "read" }),
            )
            .await,
            403,
            FORBIDDEN,
        )
        .await;

        // An edit share changes the note, but neither deletes nor shares it.
        json_with_status(
            put_share(
                &app,
                &owner.token,
                &share_path(&id, &editor.id),
                &json!({ "permission": "edit" }),
            )
            .await,
            200,
        )
        .await;
        let edited = json_with_status(
            app.patch_as(&note_path(&id), &editor.token, &json!({ "body": "v2" }))
                .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(edited["body"], "v2");
        assert_eq!(edited["permission"], "edit");
        assert_eq!(show(&app, &owner.token, &id).await["body"], "v2");
        refused(
            app.delete_as(&note_path(&id), &editor.token).await,
            403,
            FORBIDDEN,
        )
        .await;
        refused(
            put_share(
                &app,
                &editor.token,
                &share_path(&id, &stranger.id),
                &json!({ "permission": "read" }),
            )
            .await,
            403,
            FORBIDDEN,
        )
        .await;
        refused(
            app.delete_as(&share_path(&id, &owner.id), &editor.token)
                .await,
            403,
            FORBIDDEN,
        )
        .await;

        // A viewer reads what is shared with them, and writes nothing even with `edit`.
        share(&app, &owner.token, &id, &tenant.viewer.id, "edit").await;
        assert_eq!(show(&app, &tenant.viewer.token, &id).await["body"], "v2");
        refused(
            app.patch_as(
                &note_path(&id),
                &tenant.viewer.token,
                &json!({ "body": "v3" }),
            )
            .await,
            403,
            FORBIDDEN,
        )
        .await;
        refused(
            app.post_as(NOTES, &tenant.viewer.token, &json!({ "title": "Mine" }))
                .await,
            403,
            FORBIDDEN,
        )
        .await;
        assert_eq!(
            show(&app, &owner.token, &id).await["shares"]
                .as_array()
                .unwrap()
                .len(),
            2
        );

        // Someone it is not shared with gets 404 for everything.
        refused(
            app.get_as(&note_path(&id), &stranger.token).await,
            404,
            NOT_FOUND,
        )
        .await;
        refused(
            app.patch_as(&note_path(&id), &stranger.token, &json!({ "body": "x" }))
                .await,
            404,
            NOT_FOUND,
        )
        .await;
        refused(
            app.delete_as(&note_path(&id), &stranger.token).await,
            404,
            NOT_FOUND,
        )
        .await;
        refused(
            put_share(
                &app,
                &stranger.token,
                &share_path(&id, &stranger.id),
                &json!({ "permission": "edit" }),
            )
            .await,
            404,
            NOT_FOUND,
        )
        .await;

        // Who may be shared with, and how.
        let unknown = uuid::Uuid::new_v4().to_string();
        for (user_id, body, field, rule) in [
            (
                &owner.id,
                json!({ "permission": "read" }),
                "user_id",
                "not_owner",
            ),
            (
                &unknown,
                json!({ "permission": "read" }),
                "user_id",
                "exists",
            ),
            (
                &stranger.id,
                json!({ "permission": "owner" }),
                "permission",
                "in",
            ),
            (&stranger.id, json!({}), "permission", "required"),
            (
                &stranger.id,
                json!({ "permission": 1 }),
                "permission",
                "string",
            ),
        ] {
            let answer = json_with_status(
                put_share(&app, &owner.token, &share_path(&id, user_id), &body).await,
                422,
            )
            .await;
            assert_eq!(answer["message"], "The given data was invalid.");
            assert_eq!(answer["errors"][field], json!([rule]), "{body}: {answer}");
        }
        refused(
            app.delete_as(&share_path(&id, &stranger.id), &owner.token)
                .await,
            404,
            "Share not found.",
        )
        .await;
        refused(
            app.get_as(&note_path(&id), &stranger.token).await,
            404,
            NOT_FOUND,
        )
        .await;

        // Scopes: the owner's own notes, the notes shared with the caller.
        let own = note_id(&app, &editor.token, json!({ "title": "Editor's" })).await;
        assert_eq!(
            ids(&list(&app, &editor.token, "").await),
            vec![own.clone(), id.clone()]
        );
        assert_eq!(
            ids(&list(&app, &editor.token, "?scope=mine").await),
            vec![own.clone()]
        );
        assert_eq!(
            ids(&list(&app, &editor.token, "?scope=shared").await),
            vec![id.clone()]
        );
        assert_eq!(
            ids(&list(&app, &owner.token, "?scope=shared").await),
            Vec::<String>::new()
        );
        assert_eq!(
            ids(&list(&app, &owner.token, "?scope=all").await),
            vec![id.clone()]
        );

        // The owner removes a share; a user leaves a note shared with them.
        no_content(
            app.delete_as(&share_path(&id, &editor.id), &owner.token)
                .await,
        )
        .await;
        refused(
            app.get_as(&note_path(&id), &editor.token).await,
            404,
            NOT_FOUND,
        )
        .await;
        assert_eq!(ids(&list(&app, &editor.token, "").await), vec![own.clone()]);
        share(&app, &owner.token, &id, &editor.id, "read").await;
        no_content(
            app.delete_as(&share_path(&id, &editor.id), &editor.token)
                .await,
        )
        .await;
        refused(
            app.get_as(&note_path(&id), &editor.token).await,
            404,
            NOT_FOUND,
        )
        .await;
        // A viewer may not leave (a write); the owner removes the share.
        let viewers_share = share_path(&id, &tenant.viewer.id);
        refused(
            app.delete_as(&viewers_share, &tenant.viewer.token).await,
            403,
            FORBIDDEN,
        )
        .await;
        no_content(app.delete_as(&viewers_share, &owner.token).await).await;
        assert_eq!(show(&app, &owner.token, &id).await["shares"], json!([]));

        // Deleting a note takes its shares with it.
        share(&app, &owner.token, &id, &editor.id, "read").await;
        assert_eq!(
            ids(&list(&app, &editor.token, "?scope=shared").await),
            vec![id.clone()]
        );
        no_content(app.delete_as(&note_path(&id), &owner.token).await).await;
        assert_eq!(ids(&list(&app, &editor.token, "").await), vec![own.clone()]);
        refused(
            app.get_as(&note_path(&id), &editor.token).await,
            404,
            NOT_FOUND,
        )
        .await;

        let shared_events: Vec<(String, Value)> = note_events(&app, &tenant.id)
            .await
            .into_iter()
            .filter(|(event_type, _)| {
                matches!(event_type.as_str(), "note.shared" | "note.unshared")
            })
            .collect();
        let event = |event_type: &str, user_id: &str, permission: Option<&str>| {
            let mut payload = json!({ "note_id": id, "owner_id": owner.id, "user_id": user_id });
            if let Some(permission) = permission {
                payload["permission"] = json!(permission);
            }
            (event_type.to_owned(), payload)
        };
        assert_eq!(
            shared_events,
            vec![
                event("note.shared", &editor.id, Some("read")),
                event("note.shared", &editor.id, Some("edit")),
                event("note.shared", &tenant.viewer.id, Some("edit")),
                event("note.unshared", &editor.id, None),
                event("note.shared", &editor.id, Some("read")),
                event("note.unshared", &editor.id, None),
                event("note.unshared", &tenant.viewer.id, None),
                event("note.shared", &editor.id, Some("read")),
            ]
        );
        let updated: Vec<Value> = note_events(&app, &tenant.id)
            .await
            .into_iter()
            .filter(|(event_type, _)| event_type == "note.updated")
            .map(|(_, payload)| payload)
            .collect();
        assert_eq!(
            updated,
            vec![json!({ "note_id": id, "owner_id": owner.id, "user_id": editor.id })]
        );
        app.stop().await;
    }
);

database_test!(
    bad_input_is_refused_with_its_field_and_stores_nothing,
    |backend| async move {
        let app = notes_host(backend).await;
        let tenant = tenant(&app).await;
        let token = &tenant.owner.token;
        let long_tag = "t".repeat(51);
        let many_tags: Vec<String> = (0..21).map(|index| format!("tag-{index}")).collect();
        let cases = [
            (json!({}), "title", "required"),
            (json!({ "title": null }), "title", "required"),
            (json!({ "title": "   " }), "title", "required"),
            (json!({ "title": "t".repeat(201) }), "title", "max:200"),
            (json!({ "title": 5 }), "title", "string"),
            (json!({ "title": "T", "body": 5 }), "body", "string"),
            (json!({ "title": "T", "body": null }), "body", "string"),
            (
                json!({ "title": "T", "body": "b".repeat(100_001) }),
                "body",
                "max:100000",
            ),
            (json!({ "title": "T", "tags": "home" }), "tags", "array"),
            (json!({ "title": "T", "tags": many_tags }), "tags", "max:20"),
            (json!({ "title": "T", "tags": ["Work"] }), "tags.0", "regex"),
            (
                json!({ "title": "T", "tags": ["ok", "with space"] }),
                "tags.1",
                "regex",
            ),
            (
                json!({ "title": "T", "tags": ["ok", "ok"] }),
                "tags.1",
                "distinct",
            ),
            (json!({ "title": "T", "tags": [""] }), "tags.0", "min:1"),
            (
                json!({ "title": "T", "tags": [long_tag] }),
                "tags.0",
                "max:50",
            ),
            (json!({ "title": "T", "tags": [7] }), "tags.0", "string"),
            (
                json!({ "title": "T", "pinned": "yes" }),
                "pinned",
                "boolean",
            ),
        ];
        for (body, field, rule) in &cases {
            let answer = json_with_status(app.post_as(NOTES, token, body).await, 422).await;
            assert_eq!(answer["message"], "The given data was invalid.");
            assert_eq!(answer["errors"][field], json!([rule]), "{field}: {answer}");
        }
        // Several failures are reported together.
        let answer = json_with_status(
            app.post_as(
                NOTES,
                token,
                &json!({ "title": "", "pinned": 1, "tags": ["A"] }),
            )
            .await,
            422,
        )
        .await;
        assert_eq!(
            answer["errors"],
            json!({ "title": ["required"], "pinned": ["boolean"], "tags.0": ["regex"] })
        );
        for (content_type, body) in [
            ("application/json", "[1, 2]"),
            ("application/json", "{\"title\": "),
            ("text/plain", "{\"title\": \"T\"}"),
        ] {
            let response = app
                .client
                .post(app.url(NOTES))
                .bearer_auth(token)
                .header("content-type", content_type)
                .body(body)
                .send()
                .await
                .unwrap();
            json_with_status(response, 400).await;
        }
        json_with_status(
            app.post_as(&format!("{NOTES}?draft=1"), token, &json!({ "title": "T" }))
                .await,
            400,
        )
        .await;
        assert_eq!(
            list(&app, token, "").await["data"],
            json!([]),
            "nothing was stored"
        );

        // The longest body (the tenant's max_note_length) and the longest title are accepted.
        let longest = create_note(
            &app,
            token,
            json!({ "title": "t".repeat(200), "body": "é".repeat(100_000), "tags": &many_tags[..20] }),
        )
        .await;
        let id = longest["id"].as_str().unwrap().to_owned();
        assert_eq!(longest["body"].as_str().unwrap().chars().count(), 100_000);

        // A refused patch changes nothing.
        let before = show(&app, token, &id).await;
        for (body, field, rule) in [
            (json!({ "title": "" }), "title", "required"),
            (json!({ "title": null }), "title", "required"),
            (
                json!({ "body": "b".repeat(100_001), "title": "fine" }),
                "body",
                "max:100000",
            ),
            (
                json!({ "tags": ["ok", "NOPE"], "pinned": true }),
                "tags.1",
                "regex",
            ),
            (json!({ "pinned": null }), "pinned", "boolean"),
        ] {
            let answer =
                json_with_status(app.patch_as(&note_path(&id), token, &body).await, 422).await;
            assert_eq!(answer["errors"][field], json!([rule]), "{field}: {answer}");
        }
        assert_eq!(show(&app, token, &id).await, before);

        // List parameters.
        for (query, field, rule) in [
            ("?scope=everything", "scope", "in"),
            ("?pinned=maybe", "pinned", "boolean"),
            ("?tag=Work", "tag", "regex"),
            ("?tag=", "tag", "min:1"),
            ("?limit=0", "limit", "min:1"),
            ("?limit=many", "limit", "integer"),
            ("?cursor=not-a-cursor!", "cursor", "invalid"),
        ] {
            let answer =
                json_with_status(app.get_as(&format!("{NOTES}{query}"), token).await, 422).await;
            assert_eq!(answer["errors"][field], json!([rule]), "{query}: {answer}");
        }
        json_with_status(app.get_as(&format!("{NOTES}?sort=title"), token).await, 400).await;
        json_with_status(
            app.get_as(&format!("{}?x=1", note_path(&id)), token).await,
            400,
        )
        .await;
        app.stop().await;
    }
);

database_test!(
    lists_filter_by_tag_pinned_and_scope_and_page_without_overlap,
    |backend| async move {
        let app = notes_host(backend).await;
        let tenant = tenant(&app).await;
        let token = &tenant.owner.token;

        // 210 untagged notes, then tagged ones among others: a tag filter reads on past a
        // whole storage scan (200 entries) of non-matching notes to fill its page.
        let rare = note_id(&app, token, json!({ "title": "rare", "tags": ["rare"] })).await;
        for index in 0..210 {
            note_id(&app, token, json!({ "title": format!("filler {index}") })).await;
        }
        let mut work = Vec::new();
        let mut pinned = Vec::new();
        for index in 0..7 {
            let tags = if index % 2 == 0 {
                json!(["work", "q3"])
            } else {
                json!(["home"])
            };
            let id = note_id(
                &app,
                token,
                json!({ "title": format!("note {index}"), "tags": tags, "pinned": index % 3 == 0 }),
            )
            .await;
            if index % 2 == 0 {
                work.push(id.clone());
            }
            if index % 3 == 0 {
                pinned.push(id);
            }
        }
        // Newest first is descending id order.
        work.sort_unstable_by(|a, b| b.cmp(a));
        pinned.sort_unstable_by(|a, b| b.cmp(a));

        let found = list(&app, token, "?tag=rare&limit=1").await;
        assert_eq!(ids(&found), vec![rare.clone()]);
        assert_eq!(found["meta"]["has_more"], false);

        // Pages of two, full although non-matching notes sit between matches.
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let query = match &cursor {
                Some(cursor) => format!("?tag=work&limit=2&cursor={cursor}"),
                None => "?tag=work&limit=2".to_owned(),
            };
            let page = list(&app, token, &query).await;
            let page_ids = ids(&page);
            pages += 1;
            assert!(
                page_ids.iter().all(|id| !seen.contains(id)),
                "pages do not overlap"
            );
            seen.extend(page_ids.clone());
            cursor = page["meta"]["next_cursor"].as_str().map(str::to_owned);
            if page["meta"]["has_more"] == false {
                break;
            }
            assert_eq!(page_ids.len(), 2, "a page with more to come is full");
        }
        assert_eq!(seen, work);
        assert_eq!(pages, 2);
        // Past the end: an empty page that keeps the cursor.
        let past = list(
            &app,
            token,
            &format!("?tag=work&cursor={}", cursor.clone().unwrap()),
        )
        .await;
        assert_eq!(past["data"], json!([]));
        assert_eq!(
            past["meta"],
            json!({ "next_cursor": cursor, "has_more": false })
        );

        assert_eq!(ids(&list(&app, token, "?pinned=true").await), pinned);
        let work_pinned: Vec<String> = work
            .iter()
            .filter(|id| pinned.contains(id))
            .cloned()
            .collect();
        assert_eq!(
            ids(&list(&app, token, "?pinned=true&tag=work").await),
            work_pinned
        );
        let unpinned = list(&app, token, "?pinned=false&limit=100").await;
        assert_eq!(unpinned["data"].as_array().unwrap().len(), 100);
        assert_eq!(unpinned["meta"]["has_more"], true);
        assert!(
            unpinned["data"]
                .as_array()
                .unwrap()
                .iter()
                .all(|note| note["pinned"] == false)
        );

        // The whole list walks in pages of 100 (the maximum: a larger limit is clamped).
        let mut everything = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let query = match &cursor {
                Some(cursor) => format!("?limit=500&cursor={cursor}"),
                None => "?limit=500".to_owned(),
            };
            let page = list(&app, token, &query).await;
            assert!(ids(&page).len() <= 100);
            everything.extend(ids(&page));
            cursor = page["meta"]["next_cursor"].as_str().map(str::to_owned);
            if page["meta"]["has_more"] == false {
                break;
            }
        }
        assert_eq!(everything.len(), 218);
        let mut sorted = everything.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        sorted.dedup();
        assert_eq!(everything, sorted, "newest first, each once");
        assert!(everything.contains(&rare));

        // Shared notes are listed beside the caller's own, filtered the same way.
        share(&app, token, &work[0], &tenant.editor.id, "read").await;
        share(&app, token, &rare, &tenant.editor.id, "edit").await;
        let editors_own = note_id(
            &app,
            &tenant.editor.token,
            json!({ "title": "mine", "tags": ["work"] }),
        )
        .await;
        assert_eq!(
            ids(&list(&app, &tenant.editor.token, "?tag=work").await),
            vec![editors_own.clone(), work[0].clone()]
        );
        assert_eq!(
            ids(&list(&app, &tenant.editor.token, "?scope=shared").await),
            vec![work[0].clone(), rare.clone()]
        );
        let shared_rare = list(&app, &tenant.editor.token, "?scope=shared&tag=rare").await;
        assert_eq!(ids(&shared_rare), vec![rare.clone()]);
        assert_eq!(shared_rare["data"][0]["permission"], "edit");
        app.stop().await;
    }
);

database_test!(tenants_never_see_each_others_notes, |backend| async move {
    let app = notes_host(backend).await;
    let acme = tenant(&app).await;
    let globex = tenant(&app).await;
    let id = note_id(&app, &acme.owner.token, json!({ "title": "Acme only" })).await;
    let intruder = &globex.owner.token;

    refused(app.get_as(&note_path(&id), intruder).await, 404, NOT_FOUND).await;
    refused(
        app.patch_as(&note_path(&id), intruder, &json!({ "title": "mine" }))
            .await,
        404,
        NOT_FOUND,
    )
    .await;
    refused(
        app.delete_as(&note_path(&id), intruder).await,
        404,
        NOT_FOUND,
    )
    .await;
    refused(
        put_share(
            &app,
            intruder,
            &share_path(&id, &globex.editor.id),
            &json!({ "permission": "edit" }),
        )
        .await,
        404,
        NOT_FOUND,
    )
    .await;
    assert_eq!(list(&app, intruder, "").await["data"], json!([]));
    // A user of another tenant is not a user to share with.
    let answer = json_with_status(
        put_share(
            &app,
            &acme.owner.token,
            &share_path(&id, &globex.editor.id),
            &json!({ "permission": "read" }),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(answer["errors"]["user_id"], json!(["exists"]));
    // The same user id in the other tenant's token sees nothing either.
    let same_user_elsewhere = app.token(&globex.id, &acme.owner.id, "owner").await;
    assert_eq!(
        list(&app, &same_user_elsewhere, "").await["data"],
        json!([])
    );
    refused(
        app.get_as(&note_path(&id), &same_user_elsewhere).await,
        404,
        NOT_FOUND,
    )
    .await;
    assert_eq!(
        show(&app, &acme.owner.token, &id).await["title"],
        "Acme only"
    );
    assert_eq!(note_events(&app, &globex.id).await, Vec::new());
    app.stop().await;
});

database_test!(
    deprovisioning_removes_a_users_notes_and_shares_and_a_tenants_everything,
    |backend| async move {
        let app = notes_host(backend).await;
        let tenant = tenant(&app).await;
        let (leaving, staying) = (&tenant.editor, &tenant.other_editor);
        let status = json_with_status(
            app.get_as("/notes/api/v1/status", &leaving.token).await,
            200,
        )
        .await;
        assert_eq!(
            status["data"],
            json!({ "engine": "notes", "tenant_provisioned": true, "user_provisioned": true })
        );

        // The leaving user owns two notes (one shared with the staying user) and has a share
        // of the staying user's note.
        let theirs = note_id(&app, &leaving.token, json!({ "title": "Leaving's" })).await;
        let theirs_private = note_id(&app, &leaving.token, json!({ "title": "Private" })).await;
        share(&app, &leaving.token, &theirs, &staying.id, "edit").await;
        let kept = note_id(&app, &staying.token, json!({ "title": "Staying's" })).await;
        share(&app, &staying.token, &kept, &leaving.id, "read").await;
        share(&app, &staying.token, &kept, &tenant.owner.id, "read").await;

        let deprovision = json!({ "tenant_id": tenant.id, "user_id": leaving.id });
        for _ in 0..2 {
            // Idempotent: the second run finds nothing left to remove.
            json_with_status(
                app.post_signed(&format!("{INTERNAL}/deprovision/user"), &deprovision)
                    .await,
                200,
            )
            .await;
        }
        let status = json_with_status(
            app.get_as("/notes/api/v1/status", &leaving.token).await,
            200,
        )
        .await;
        assert_eq!(status["data"]["user_provisioned"], false);
        assert_eq!(list(&app, &leaving.token, "").await["data"], json!([]));
        for id in [&theirs, &theirs_private, &kept] {
            refused(
                app.get_as(&note_path(id), &leaving.token).await,
                404,
                NOT_FOUND,
            )
            .await;
        }
        // Their notes are gone for the users they were shared with too; the staying user's
        // note stays, without the leaving user's share.
        refused(
            app.get_as(&note_path(&theirs), &staying.token).await,
            404,
            NOT_FOUND,
        )
        .await;
        assert_eq!(
            ids(&list(&app, &staying.token, "").await),
            vec![kept.clone()]
        );
        assert_eq!(
            show(&app, &staying.token, &kept).await["shares"],
            json!([{ "user_id": tenant.owner.id, "permission": "read" }])
        );
        // And they can no longer be shared with.
        let answer = json_with_status(
            put_share(
                &app,
                &staying.token,
                &share_path(&kept, &leaving.id),
                &json!({ "permission": "read" }),
            )
            .await,
            422,
        )
        .await;
        assert_eq!(answer["errors"]["user_id"], json!(["exists"]));

        for _ in 0..2 {
            json_with_status(
                app.post_signed(
                    &format!("{INTERNAL}/deprovision/tenant"),
                    &json!({ "tenant_id": tenant.id }),
                )
                .await,
                200,
            )
            .await;
        }
        for user in [staying, &tenant.owner] {
            assert_eq!(list(&app, &user.token, "").await["data"], json!([]));
            refused(
                app.get_as(&note_path(&kept), &user.token).await,
                404,
                NOT_FOUND,
            )
            .await;
        }
        let status = json_with_status(
            app.get_as("/notes/api/v1/status", &staying.token).await,
            200,
        )
        .await;
        assert_eq!(
            status["data"],
            json!({ "engine": "notes", "tenant_provisioned": false, "user_provisioned": false })
        );
        let rows = {
            let database = &app.state().database;
            tessera_host::on_pool!(database, pool => sqlx::query_scalar::<_, i64>(
                "SELECT COUNT(*) FROM engine_kv WHERE engine_code = 'notes' AND tenant_id = $1",
            )
            .bind(&tenant.id)
            .fetch_one(pool)
            .await
            .unwrap())
        };
        assert_eq!(rows, 0, "nothing of the tenant is left");
        app.stop().await;
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_notes_route_is_documented_with_bearer_security() {
    let app = crate::helpers::spawn_app_with_engines(Backend::Sqlite, &["notes"], |_| {}).await;
    let document = app.openapi().await;
    assert_engine_documented(
        &document,
        "notes",
        &[
            ("get", "/notes/api/v1/notes"),
            ("post", "/notes/api/v1/notes"),
            ("get", "/notes/api/v1/notes/{id}"),
            ("patch", "/notes/api/v1/notes/{id}"),
            ("delete", "/notes/api/v1/notes/{id}"),
            ("put", "/notes/api/v1/notes/{id}/shares/{user_id}"),
            ("delete", "/notes/api/v1/notes/{id}/shares/{user_id}"),
        ],
        &[
            "notes.Note",
            "notes.NoteSummary",
            "notes.NoteCreate",
            "notes.NoteUpdate",
            "notes.ShareWrite",
        ],
    );
    app.stop().await;
}

/// A host like [`notes_host`] whose engine calls may scan at most `budget` entries each
/// (`TESSERA_ENGINE_SCAN_BUDGET`).
async fn notes_host_with_scan_budget(backend: Backend, budget: u64) -> TestApp {
    let database = TestDatabase::new(backend).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), &["notes"]);
    let configure = move |config: &mut Config| {
        without_rate_limits(config);
        config.engine_scans.budget = budget;
    };
    spawn_app_with(
        backend,
        AppOptions {
            database: Some(database),
            configure: Some(Box::new(configure)),
            ..AppOptions::default()
        },
    )
    .await
}

/// Walks a filtered list through its cursors: the ids found, and how many pages it took.
async fn walk(app: &TestApp, token: &str, filter: &str) -> (Vec<String>, usize) {
    let mut found = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let query = match &cursor {
            Some(cursor) => format!("?{filter}&cursor={cursor}"),
            None => format!("?{filter}"),
        };
        let page = list(app, token, &query).await;
        pages += 1;
        assert!(pages < 1000, "the walk ends");
        found.extend(ids(&page));
        if page["meta"]["has_more"] == false {
            return (found, pages);
        }
        let next = page["meta"]["next_cursor"].as_str().map(str::to_owned);
        assert!(
            next.is_some() && next != cursor,
            "a page with more moves on"
        );
        cursor = next;
    }
}

database_test!(
    a_filtered_list_reads_a_bounded_number_of_notes_per_request,
    |backend| async move {
        // Each engine call may scan 40 entries; the owner has 1 + 120 notes.
        let app = notes_host_with_scan_budget(backend, 40).await;
        let tenant = tenant(&app).await;
        let token = &tenant.owner.token;
        // The only match is the oldest note: the last a newest-first list reaches.
        let needle = note_id(
            &app,
            token,
            json!({ "title": "needle", "tags": ["needle"] }),
        )
        .await;
        for index in 0..120 {
            note_id(
                &app,
                token,
                json!({ "title": format!("hay {index}"), "tags": ["hay"] }),
            )
            .await;
        }

        // A request reads at most the bound: 200, an empty page, and a cursor to go on.
        let first = list(&app, token, "?tag=nomatch").await;
        assert_eq!(first["data"], json!([]));
        assert_eq!(first["meta"]["has_more"], true);
        assert!(first["meta"]["next_cursor"].is_string());

        // Following the cursors reaches the end and finds every match, on the last page.
        let (found, pages) = walk(&app, token, "tag=needle&limit=5").await;
        assert_eq!(found, vec![needle.clone()]);
        assert!(pages >= 121 / 40, "{pages} pages");
        let (found, _) = walk(&app, token, "tag=nomatch").await;
        assert!(found.is_empty());

        // Unfiltered pages are full, and the whole list is walked once each.
        let (everything, _) = walk(&app, token, "limit=30").await;
        assert_eq!(everything.len(), 121);
        assert_eq!(everything.last(), Some(&needle));
        app.stop().await;
    }
);
