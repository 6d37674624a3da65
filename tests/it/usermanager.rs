//! The usermanager engine (the real `usermanager.wasm` built by the harness) through the real
//! host: profiles created and refreshed by user provisioning, the directory (name order,
//! search, status filter, cursor paging), edits by the user or an owner with validation,
//! deactivation by owners, the events on the host's bus, tenant isolation, deprovisioning and
//! concurrent edits.

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, assert_engine_documented, eventually,
    json_with_status, observe_events, observed_events, spawn_app_with,
};

const USERS: &str = "/usermanager/api/v1/users";

/// A host with only the usermanager engine and no rate limits.
async fn usermanager_host(backend: Backend) -> TestApp {
    let database = TestDatabase::new(backend).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), &["usermanager"]);
    spawn_app_with(
        backend,
        AppOptions {
            database: Some(database),
            ..AppOptions::unlimited()
        },
    )
    .await
}

/// A user as provisioning gives it.
struct NewUser<'a> {
    first_name: &'a str,
    last_name: &'a str,
    email: &'a str,
}

impl<'a> NewUser<'a> {
    fn new(first_name: &'a str, last_name: &'a str, email: &'a str) -> Self {
        Self {
            first_name,
            last_name,
            email,
        }
    }
}

async fn provision_user_as(app: &TestApp, tenant_id: &str, user_id: &str, user: &NewUser<'_>) {
    let body = json!({
        "tenant_id": tenant_id, "tenant_short_id": "acme", "user_id": user_id,
        "email": user.email, "first_name": user.first_name, "last_name": user.last_name,
        "type": "user",
    });
    let response = app
        .post_signed(
            "/usermanager/api/internal/usermanager/provision/user",
            &body,
        )
        .await;
    assert_eq!(
        json_with_status(response, 200).await["data"],
        json!({ "status": "provisioned", "engine": "usermanager" })
    );
}

/// Provisions a new user; returns its id.
async fn new_user(app: &TestApp, tenant_id: &str, user: &NewUser<'_>) -> String {
    let user_id = uuid::Uuid::new_v4().to_string();
    provision_user_as(app, tenant_id, &user_id, user).await;
    user_id
}

async fn deprovision_user(app: &TestApp, tenant_id: &str, user_id: &str) {
    let response = app
        .post_signed(
            "/usermanager/api/internal/usermanager/deprovision/user",
            &json!({ "tenant_id": tenant_id, "user_id": user_id }),
        )
        .await;
    json_with_status(response, 200).await;
}

/// A provisioned tenant with an owner, an editor and a viewer.
struct Tenant {
    id: String,
    owner: String,
    owner_id: String,
    editor: String,
    editor_id: String,
    viewer: String,
    viewer_id: String,
}

async fn tenant(app: &TestApp) -> Tenant {
    let id = uuid::Uuid::new_v4().to_string();
    let response = app
        .post_signed(
            "/usermanager/api/internal/usermanager/provision/tenant",
            &json!({ "tenant_id": id, "tenant_short_id": "acme", "name": "Acme" }),
        )
        .await;
    json_with_status(response, 200).await;
    let owner_id = new_user(app, &id, &NewUser::new("Olga", "Owner", "olga@acme.test")).await;
    let editor_id = new_user(
        app,
        &id,
        &NewUser::new("Eddie", "Editor", "eddie@acme.test"),
    )
    .await;
    let viewer_id = new_user(app, &id, &NewUser::new("Vera", "Viewer", "vera@acme.test")).await;
    Tenant {
        owner: app.token(&id, &owner_id, "owner").await,
        editor: app.token(&id, &editor_id, "editor").await,
        viewer: app.token(&id, &viewer_id, "viewer").await,
        id,
        owner_id,
        editor_id,
        viewer_id,
    }
}

/// A token of a guest user (`typ` `guest`) with the viewer role.
async fn guest_token(app: &TestApp, tenant_id: &str, user_id: &str) -> String {
    app.token_of(tenant_id, user_id, "viewer", "guest").await
}

fn user_path(user_id: &str) -> String {
    format!("{USERS}/{user_id}")
}

async fn profile(app: &TestApp, token: &str, user_id: &str) -> Value {
    json_with_status(app.get_as(&user_path(user_id), token).await, 200).await["data"].clone()
}

async fn patch(app: &TestApp, token: &str, user_id: &str, body: Value, status: u16) -> Value {
    json_with_status(
        app.patch_as(&user_path(user_id), token, &body).await,
        status,
    )
    .await
}

async fn set_status(app: &TestApp, token: &str, user_id: &str, action: &str, status: u16) -> Value {
    let path = format!("{}/{action}", user_path(user_id));
    json_with_status(app.post_as(&path, token, &json!({})).await, status).await
}

/// One page of the directory: the display names and the meta.
async fn page(app: &TestApp, token: &str, query: &str) -> (Vec<String>, Value) {
    let body = json_with_status(app.get_as(&format!("{USERS}{query}"), token).await, 200).await;
    let names = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|profile| profile["display_name"].as_str().unwrap().to_owned())
        .collect();
    (names, body["meta"].clone())
}

/// The whole directory for `query` (which must end so that `&cursor=…` can follow), walking
/// pages; also returns how many pages it took.
async fn walk(app: &TestApp, token: &str, query: &str) -> (Vec<String>, usize) {
    let mut names = Vec::new();
    let mut pages = 0;
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(cursor) => format!("{query}&cursor={cursor}"),
            None => query.to_owned(),
        };
        let (page_names, meta) = page(app, token, &query).await;
        pages += 1;
        names.extend(page_names);
        if meta["has_more"] == false {
            return (names, pages);
        }
        cursor = Some(meta["next_cursor"].as_str().unwrap().to_owned());
    }
}

/// How many engine rows of the usermanager engine mention `needle` in their key.
async fn stored_keys_mentioning(app: &TestApp, needle: &str) -> Vec<String> {
    let database = &app.state().database;
    let pattern = format!("%{needle}%");
    tessera_host::on_pool!(database, pool => sqlx::query_scalar(
        "SELECT key FROM engine_kv WHERE engine_code = 'usermanager' AND key LIKE $1 ORDER BY key",
    )
    .bind(&pattern)
    .fetch_all(pool)
    .await
    .unwrap())
}

/// The engine code of a subscription the tests add to the host's bus to see the engine's
/// events: nothing by that code is loaded, so its deliveries stay in `engine_work`.
const PROBE: &str = "usermanager-probe";

fn subscribe_probe(app: &TestApp) {
    observe_events(app, PROBE, &["user.*"]);
}

/// The events the probe received, in publication order: `(event_type, payload)`.
async fn probed_events(app: &TestApp) -> Vec<(String, Value)> {
    observed_events(app, PROBE, None).await
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

database_test!(
    provisioning_creates_profiles_and_refreshes_them_keeping_edits,
    |backend| async move {
        let app = usermanager_host(backend).await;
        let tenant = tenant(&app).await;
        let ada_id = new_user(
            &app,
            &tenant.id,
            &NewUser::new("Ada", "Lovelace", "ada@acme.test"),
        )
        .await;
        let ada = app.token(&tenant.id, &ada_id, "editor").await;

        let me = json_with_status(app.get_as(&format!("{USERS}/me"), &ada).await, 200).await;
        let created_at = me["data"]["created_at"].clone();
        assert!(created_at.as_str().unwrap().ends_with('Z'));
        assert_eq!(
            me,
            json!({ "data": {
                "user_id": ada_id, "email": "ada@acme.test", "first_name": "Ada",
                "last_name": "Lovelace", "display_name": "Ada Lovelace", "title": null,
                "phone": null, "avatar_url": null, "user_type": "user", "status": "active",
                "created_at": created_at, "updated_at": created_at,
            }})
        );
        assert_eq!(profile(&app, &tenant.viewer, &ada_id).await, me["data"]);
        let status =
            json_with_status(app.get_as("/usermanager/api/v1/status", &ada).await, 200).await;
        assert_eq!(
            status["data"],
            json!({ "engine": "usermanager", "tenant_provisioned": true, "user_provisioned": true })
        );

        // Provisioning again is idempotent.
        provision_user_as(
            &app,
            &tenant.id,
            &ada_id,
            &NewUser::new("Ada", "Lovelace", "ada@acme.test"),
        )
        .await;
        assert_eq!(profile(&app, &ada, &ada_id).await, me["data"]);

        // New host data: names and e-mail refresh, the untouched display name follows.
        provision_user_as(
            &app,
            &tenant.id,
            &ada_id,
            &NewUser::new("Ada", "King", "ada.king@acme.test"),
        )
        .await;
        let refreshed = profile(&app, &ada, &ada_id).await;
        assert_eq!(refreshed["email"], "ada.king@acme.test");
        assert_eq!(refreshed["last_name"], "King");
        assert_eq!(refreshed["display_name"], "Ada King");
        assert_eq!(refreshed["created_at"], created_at);
        assert!(refreshed["updated_at"].as_str() > created_at.as_str());

        // Edited fields survive provisioning; the status too.
        patch(
            &app,
            &ada,
            &ada_id,
            json!({ "display_name": "Countess", "title": "Analyst" }),
            200,
        )
        .await;
        set_status(&app, &tenant.owner, &ada_id, "deactivate", 200).await;
        provision_user_as(
            &app,
            &tenant.id,
            &ada_id,
            &NewUser::new("Augusta", "King", "ada.king@acme.test"),
        )
        .await;
        let kept = profile(&app, &ada, &ada_id).await;
        assert_eq!(kept["first_name"], "Augusta");
        assert_eq!(kept["display_name"], "Countess");
        assert_eq!(kept["title"], "Analyst");
        assert_eq!(kept["status"], "deactivated");
        // And the directory lists the user once, under the edited name.
        let (names, _) = page(&app, &tenant.owner, "?q=king").await;
        assert_eq!(names, ["Countess"]);
        assert_eq!(
            stored_keys_mentioning(&app, &format!("directory/%{ada_id}"))
                .await
                .len(),
            1
        );
        app.stop().await;
    }
);

database_test!(
    the_directory_is_in_name_order_with_search_filters_and_full_pages,
    |backend| async move {
        let app = usermanager_host(backend).await;
        let tenant = tenant(&app).await;
        let people = [
            ("ann", "Lee", "ann.lee@acme.test"),
            ("Ann", "Ott", "ann@acme.test"),
            ("Zoe", "Quinn", "zq@acme.test"),
            ("Bob", "Annely", "bob@acme.test"),
            ("Carla", "Diaz", "carla@annex.test"),
            ("Dan", "Brown", "dan@acme.test"),
        ];
        let mut ids = Vec::new();
        for (first, last, email) in people {
            ids.push(new_user(&app, &tenant.id, &NewUser::new(first, last, email)).await);
        }
        // "Ann" sorts before "ann Lee" (a shorter name first, whatever the case).
        patch(
            &app,
            &tenant.owner,
            &ids[1],
            json!({ "display_name": "Ann" }),
            200,
        )
        .await;
        let everyone = [
            "Ann",
            "ann Lee",
            "Bob Annely",
            "Carla Diaz",
            "Dan Brown",
            "Eddie Editor",
            "Olga Owner",
            "Vera Viewer",
            "Zoe Quinn",
        ];
        let (names, meta) = page(&app, &tenant.viewer, "").await;
        assert_eq!(names, everyone);
        assert_eq!(meta["has_more"], false);

        // Two pages of 5 and 4, no overlap, the same order.
        let (first, meta) = page(&app, &tenant.viewer, "?limit=5").await;
        assert_eq!(first, everyone[..5]);
        assert_eq!(meta["has_more"], true);
        let cursor = meta["next_cursor"].as_str().unwrap();
        let (second, meta) = page(&app, &tenant.viewer, &format!("?limit=5&cursor={cursor}")).await;
        assert_eq!(second, everyone[5..]);
        assert_eq!(meta["has_more"], false);

        // `q`: case-insensitive, over display name, first and last name and e-mail.
        let (names, _) = page(&app, &tenant.viewer, "?q=ANN").await;
        assert_eq!(names, ["Ann", "ann Lee", "Bob Annely", "Carla Diaz"]);
        let (names, _) = page(&app, &tenant.viewer, "?q=acme.test&limit=100").await;
        assert_eq!(names.len(), 8);
        let (names, _) = page(&app, &tenant.viewer, "?q=nobody-at-all").await;
        assert!(names.is_empty());

        // Filters keep pages full: 4 matches in pages of 3 then 1.
        let (names, pages) = walk(&app, &tenant.viewer, "?q=ann&limit=3").await;
        assert_eq!(names, ["Ann", "ann Lee", "Bob Annely", "Carla Diaz"]);
        assert_eq!(pages, 2);
        let (first, meta) = page(&app, &tenant.viewer, "?q=ann&limit=3").await;
        assert_eq!((first.len(), meta["has_more"].clone()), (3, json!(true)));

        // `status`.
        set_status(&app, &tenant.owner, &ids[3], "deactivate", 200).await;
        set_status(&app, &tenant.owner, &ids[0], "deactivate", 200).await;
        let (names, _) = page(&app, &tenant.viewer, "?status=deactivated").await;
        assert_eq!(names, ["ann Lee", "Bob Annely"]);
        let (names, _) = page(&app, &tenant.viewer, "?status=active&q=ann").await;
        assert_eq!(names, ["Ann", "Carla Diaz"]);
        let (names, pages) = walk(&app, &tenant.viewer, "?status=active&limit=2").await;
        assert_eq!(names.len(), 7);
        assert_eq!(pages, 4);

        // A renamed user moves in the order.
        patch(
            &app,
            &tenant.owner,
            &ids[2],
            json!({ "display_name": "Aaron Zoe" }),
            200,
        )
        .await;
        let (names, _) = page(&app, &tenant.viewer, "?limit=2").await;
        assert_eq!(names, ["Aaron Zoe", "Ann"]);

        // Bad queries.
        let bad = [
            (format!("?q={}", "x".repeat(101)), "q", "max:100"),
            ("?status=gone".to_owned(), "status", "in"),
            ("?limit=0".to_owned(), "limit", "min:1"),
            ("?cursor=not-a-cursor".to_owned(), "cursor", "invalid"),
            // A well-formed cursor that is no position in the directory.
            ("?cursor=Im5vdGVzL2Ei".to_owned(), "cursor", "invalid"),
        ];
        for (query, field, rule) in bad {
            let body = json_with_status(
                app.get_as(&format!("{USERS}{query}"), &tenant.viewer).await,
                422,
            )
            .await;
            assert_eq!(body["errors"], json!({ field: [rule] }), "{query}");
        }
        let body = json_with_status(
            app.get_as(&format!("{USERS}?sort=name"), &tenant.viewer)
                .await,
            400,
        )
        .await;
        assert_eq!(body["message"], "Unknown query parameter `sort`.");
        app.stop().await;
    }
);

database_test!(
    profiles_are_edited_by_their_user_or_an_owner,
    |backend| async move {
        let app = usermanager_host(backend).await;
        let tenant = tenant(&app).await;

        // A viewer edits their own profile.
        let before = profile(&app, &tenant.viewer, &tenant.viewer_id).await;
        let edited = patch(
            &app,
            &tenant.viewer,
            &tenant.viewer_id,
            json!({
                "display_name": "  Vera V.  ", "title": "Auditor", "phone": "+1 (555) 010-9999",
                "avatar_url": "https://cdn.acme.test/vera.png",
            }),
            200,
        )
        .await["data"]
            .clone();
        assert!(edited["updated_at"].as_str() > before["updated_at"].as_str());
        assert_eq!(
            edited,
            json!({
                "user_id": tenant.viewer_id, "email": "vera@acme.test", "first_name": "Vera",
                "last_name": "Viewer", "display_name": "Vera V.", "title": "Auditor",
                "phone": "+1 (555) 010-9999", "avatar_url": "https://cdn.acme.test/vera.png",
                "user_type": "user", "status": "active", "created_at": before["created_at"],
                "updated_at": edited["updated_at"],
            })
        );
        assert_eq!(
            profile(&app, &tenant.editor, &tenant.viewer_id).await,
            edited
        );

        // Nobody else but an owner.
        let forbidden = patch(
            &app,
            &tenant.editor,
            &tenant.viewer_id,
            json!({ "title": "x" }),
            403,
        )
        .await;
        assert_eq!(
            forbidden,
            json!({ "message": "This action is unauthorized." })
        );
        patch(
            &app,
            &tenant.viewer,
            &tenant.editor_id,
            json!({ "title": "x" }),
            403,
        )
        .await;
        let by_owner = patch(
            &app,
            &tenant.owner,
            &tenant.viewer_id,
            json!({ "title": null, "phone": "" }),
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(
            (by_owner["title"].clone(), by_owner["phone"].clone()),
            (Value::Null, Value::Null)
        );
        assert_eq!(by_owner["avatar_url"], "https://cdn.acme.test/vera.png");

        // A PATCH that changes nothing writes nothing.
        let unchanged = patch(
            &app,
            &tenant.viewer,
            &tenant.viewer_id,
            json!({ "display_name": "Vera V." }),
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(unchanged, by_owner);
        assert_eq!(
            patch(&app, &tenant.viewer, &tenant.viewer_id, json!({}), 200).await["data"],
            by_owner
        );

        // A deactivated user no longer edits their own profile; an owner still does.
        set_status(&app, &tenant.owner, &tenant.editor_id, "deactivate", 200).await;
        patch(
            &app,
            &tenant.editor,
            &tenant.editor_id,
            json!({ "title": "Gone" }),
            403,
        )
        .await;
        patch(
            &app,
            &tenant.owner,
            &tenant.editor_id,
            json!({ "title": "Former editor" }),
            200,
        )
        .await;

        // Unknown users.
        patch(
            &app,
            &tenant.owner,
            &uuid::Uuid::new_v4().to_string(),
            json!({ "title": "x" }),
            404,
        )
        .await;
        json_with_status(app.get_as(&user_path("nobody"), &tenant.owner).await, 404).await;
        json_with_status(
            app.get_as(&user_path(&"x".repeat(2000)), &tenant.owner)
                .await,
            404,
        )
        .await;

        // Guest tokens see and edit only their own profile, and cannot list the directory.
        let guest_id = new_user(
            &app,
            &tenant.id,
            &NewUser::new("Gus", "Guest", "gus@partner.test"),
        )
        .await;
        let guest = guest_token(&app, &tenant.id, &guest_id).await;
        json_with_status(app.get_as(USERS, &guest).await, 403).await;
        json_with_status(app.get_as(&user_path(&tenant.owner_id), &guest).await, 404).await;
        patch(&app, &guest, &tenant.owner_id, json!({ "title": "x" }), 404).await;
        assert_eq!(
            profile(&app, &guest, &guest_id).await["display_name"],
            "Gus Guest"
        );
        patch(&app, &guest, &guest_id, json!({ "title": "Partner" }), 200).await;
        let me = json_with_status(app.get_as(&format!("{USERS}/me"), &guest).await, 200).await;
        assert_eq!(me["data"]["title"], "Partner");
        app.stop().await;
    }
);

database_test!(
    invalid_edits_are_422_and_change_nothing,
    |backend| async move {
        let app = usermanager_host(backend).await;
        let tenant = tenant(&app).await;
        let before = profile(&app, &tenant.editor, &tenant.editor_id).await;
        let invalid = [
            (json!({ "display_name": "" }), "display_name", "required"),
            (json!({ "display_name": "   " }), "display_name", "required"),
            (json!({ "display_name": null }), "display_name", "required"),
            (json!({ "display_name": 42 }), "display_name", "string"),
            (
                json!({ "display_name": "x".repeat(101) }),
                "display_name",
                "max:100",
            ),
            (json!({ "title": "t".repeat(101) }), "title", "max:100"),
            (json!({ "title": ["a"] }), "title", "string"),
            (json!({ "phone": "12" }), "phone", "min:3"),
            (json!({ "phone": "1".repeat(33) }), "phone", "max:32"),
            (json!({ "phone": "call me" }), "phone", "phone"),
            (json!({ "phone": "+()-12" }), "phone", "phone"),
            (
                json!({ "avatar_url": "http://cdn.acme.test/a.png" }),
                "avatar_url",
                "https",
            ),
            (
                json!({ "avatar_url": "ftp://cdn.acme.test/a.png" }),
                "avatar_url",
                "https",
            ),
            (
                json!({ "avatar_url": "https:///a.png" }),
                "avatar_url",
                "url",
            ),
            (
                json!({ "avatar_url": "https://cdn acme/a.png" }),
                "avatar_url",
                "url",
            ),
            (
                json!({ "avatar_url": format!("https://cdn.acme.test/{}", "a".repeat(2040)) }),
                "avatar_url",
                "max:2048",
            ),
            (json!({ "email": "new@acme.test" }), "email", "prohibited"),
            (json!({ "status": "deactivated" }), "status", "prohibited"),
            (json!({ "nickname": "Ed" }), "nickname", "prohibited"),
        ];
        for (body, field, rule) in invalid {
            let answer = patch(&app, &tenant.editor, &tenant.editor_id, body.clone(), 422).await;
            assert_eq!(answer["message"], "The given data was invalid.");
            assert_eq!(answer["errors"], json!({ field: [rule] }), "{body}");
        }
        // Every failing field at once, and the valid ones are not applied either.
        let answer = patch(
        &app,
        &tenant.editor,
        &tenant.editor_id,
        json!({ "display_name": "Fine", "title": "Fine", "phone": "x", "avatar_url": "http://a" }),
        422,
    )
    .await;
        assert_eq!(
            answer["errors"],
            json!({ "phone": ["min:3"], "avatar_url": ["https"] })
        );
        // Not a JSON object.
        for body in [json!([1, 2]), json!("text")] {
            patch(&app, &tenant.editor, &tenant.editor_id, body, 400).await;
        }
        let response = app
            .client
            .patch(app.url(&user_path(&tenant.editor_id)))
            .bearer_auth(&tenant.editor)
            .header("content-type", "application/json")
            .body("{\"title\": ")
            .send()
            .await
            .unwrap();
        json_with_status(response, 400).await;
        // Nothing changed.
        assert_eq!(
            profile(&app, &tenant.editor, &tenant.editor_id).await,
            before
        );
        app.stop().await;
    }
);

database_test!(
    owners_deactivate_and_reactivate_users,
    |backend| async move {
        let app = usermanager_host(backend).await;
        let tenant = tenant(&app).await;
        let before = profile(&app, &tenant.owner, &tenant.editor_id).await;

        // Only owners.
        for token in [&tenant.editor, &tenant.viewer] {
            for action in ["deactivate", "reactivate"] {
                let answer = set_status(&app, token, &tenant.editor_id, action, 403).await;
                assert_eq!(answer, json!({ "message": "This action is unauthorized." }));
            }
        }
        // Never themselves.
        let answer = set_status(&app, &tenant.owner, &tenant.owner_id, "deactivate", 409).await;
        assert_eq!(
            answer,
            json!({ "message": "You cannot change the status of your own account." })
        );
        assert_eq!(
            profile(&app, &tenant.owner, &tenant.owner_id).await["status"],
            "active"
        );

        let deactivated = set_status(&app, &tenant.owner, &tenant.editor_id, "deactivate", 200)
            .await["data"]
            .clone();
        assert_eq!(deactivated["status"], "deactivated");
        assert!(deactivated["updated_at"].as_str() > before["updated_at"].as_str());
        let mut expected = before.clone();
        expected["status"] = json!("deactivated");
        expected["updated_at"] = deactivated["updated_at"].clone();
        assert_eq!(deactivated, expected);
        assert_eq!(
            profile(&app, &tenant.viewer, &tenant.editor_id).await,
            deactivated
        );
        let answer = set_status(&app, &tenant.owner, &tenant.editor_id, "deactivate", 409).await;
        assert_eq!(
            answer,
            json!({ "message": "The user is already deactivated." })
        );

        let reactivated = set_status(&app, &tenant.owner, &tenant.editor_id, "reactivate", 200)
            .await["data"]
            .clone();
        assert_eq!(reactivated["status"], "active");
        assert!(reactivated["updated_at"].as_str() > deactivated["updated_at"].as_str());
        let answer = set_status(&app, &tenant.owner, &tenant.editor_id, "reactivate", 409).await;
        assert_eq!(answer, json!({ "message": "The user is already active." }));

        let unknown = uuid::Uuid::new_v4().to_string();
        let answer = set_status(&app, &tenant.owner, &unknown, "deactivate", 404).await;
        assert_eq!(answer, json!({ "message": "User not found." }));
        // Unknown query parameters are refused.
        let path = format!("{}/deactivate?force=1", user_path(&tenant.viewer_id));
        json_with_status(app.post_as(&path, &tenant.owner, &json!({})).await, 400).await;
        app.stop().await;
    }
);

database_test!(
    changes_publish_identifier_only_events,
    |backend| async move {
        let app = usermanager_host(backend).await;
        subscribe_probe(&app);
        let tenant = tenant(&app).await;
        let marker = format!("Secret Name {}", uuid::Uuid::new_v4());

        patch(
            &app,
            &tenant.viewer,
            &tenant.viewer_id,
            json!({ "display_name": marker, "phone": "555-0100", "title": null }),
            200,
        )
        .await;
        // Nothing changed, nothing refused publishes.
        patch(
            &app,
            &tenant.viewer,
            &tenant.viewer_id,
            json!({ "phone": "555-0100" }),
            200,
        )
        .await;
        patch(
            &app,
            &tenant.viewer,
            &tenant.viewer_id,
            json!({ "phone": "x" }),
            422,
        )
        .await;
        patch(
            &app,
            &tenant.editor,
            &tenant.viewer_id,
            json!({ "title": "x" }),
            403,
        )
        .await;
        set_status(&app, &tenant.owner, &tenant.owner_id, "deactivate", 409).await;
        set_status(&app, &tenant.owner, &tenant.editor_id, "deactivate", 200).await;
        set_status(&app, &tenant.owner, &tenant.editor_id, "deactivate", 409).await;
        set_status(&app, &tenant.owner, &tenant.editor_id, "reactivate", 200).await;
        // New host data changes a profile too.
        provision_user_as(
            &app,
            &tenant.id,
            &tenant.editor_id,
            &NewUser::new("Eddie", "Editor", "eddie@acme.example"),
        )
        .await;

        let expected = vec![
            (
                "user.profile_updated".to_owned(),
                json!({ "user_id": tenant.viewer_id, "actor_id": tenant.viewer_id, "fields": ["display_name", "phone"] }),
            ),
            (
                "user.deactivated".to_owned(),
                json!({ "user_id": tenant.editor_id, "actor_id": tenant.owner_id }),
            ),
            (
                "user.reactivated".to_owned(),
                json!({ "user_id": tenant.editor_id, "actor_id": tenant.owner_id }),
            ),
            (
                "user.profile_updated".to_owned(),
                json!({ "user_id": tenant.editor_id, "actor_id": null, "fields": ["email"] }),
            ),
        ];
        let events = eventually(10, "four events", || async {
            let events = probed_events(&app).await;
            (events.len() >= expected.len()).then_some(events)
        })
        .await;
        assert_eq!(events, expected);
        for (_, payload) in &events {
            assert!(!payload.to_string().contains("Secret Name"), "{payload}");
        }
        app.stop().await;
    }
);

database_test!(tenants_see_only_their_own_directory, |backend| async move {
    let app = usermanager_host(backend).await;
    let acme = tenant(&app).await;
    let other = tenant(&app).await;
    let acme_user = new_user(
        &app,
        &acme.id,
        &NewUser::new("Isolde", "Acme", "isolde@acme.test"),
    )
    .await;

    json_with_status(app.get_as(&user_path(&acme_user), &other.owner).await, 404).await;
    json_with_status(
        app.get_as(&user_path(&acme.editor_id), &other.viewer).await,
        404,
    )
    .await;
    patch(
        &app,
        &other.owner,
        &acme_user,
        json!({ "title": "Hijacked" }),
        404,
    )
    .await;
    set_status(&app, &other.owner, &acme_user, "deactivate", 404).await;
    let (names, _) = walk(&app, &other.owner, "?limit=100").await;
    assert_eq!(names, ["Eddie Editor", "Olga Owner", "Vera Viewer"]);
    let (names, _) = page(&app, &other.owner, "?q=isolde").await;
    assert!(names.is_empty());

    // Acme's user is untouched.
    let isolde = profile(&app, &acme.owner, &acme_user).await;
    assert_eq!(
        (isolde["title"].clone(), isolde["status"].clone()),
        (Value::Null, json!("active"))
    );
    let (names, _) = page(&app, &acme.viewer, "?q=isolde").await;
    assert_eq!(names, ["Isolde Acme"]);
    app.stop().await;
});

database_test!(deprovisioning_removes_profiles, |backend| async move {
    let app = usermanager_host(backend).await;
    let other = tenant(&app).await;
    let tenant = tenant(&app).await;
    let gone_id = new_user(
        &app,
        &tenant.id,
        &NewUser::new("Gone", "Soon", "gone@acme.test"),
    )
    .await;
    let gone = app.token(&tenant.id, &gone_id, "editor").await;
    patch(
        &app,
        &gone,
        &gone_id,
        json!({ "display_name": "Leaving", "phone": "555 1234" }),
        200,
    )
    .await;
    assert_eq!(stored_keys_mentioning(&app, &gone_id).await.len(), 3);

    deprovision_user(&app, &tenant.id, &gone_id).await;
    json_with_status(app.get_as(&user_path(&gone_id), &tenant.owner).await, 404).await;
    json_with_status(app.get_as(&format!("{USERS}/me"), &gone).await, 404).await;
    let (names, _) = page(&app, &tenant.owner, "").await;
    assert_eq!(names, ["Eddie Editor", "Olga Owner", "Vera Viewer"]);
    let status = json_with_status(app.get_as("/usermanager/api/v1/status", &gone).await, 200).await;
    assert_eq!(status["data"]["user_provisioned"], false);
    // Profile, directory entry, provisioning record and lease: nothing of the user is left.
    assert!(stored_keys_mentioning(&app, &gone_id).await.is_empty());
    assert!(stored_keys_mentioning(&app, "leaving").await.is_empty());
    // Idempotent; and an edit of the removed user is a 404.
    deprovision_user(&app, &tenant.id, &gone_id).await;
    patch(&app, &tenant.owner, &gone_id, json!({ "title": "x" }), 404).await;

    // Provisioning again starts a fresh profile.
    provision_user_as(
        &app,
        &tenant.id,
        &gone_id,
        &NewUser::new("Gone", "Soon", "gone@acme.test"),
    )
    .await;
    let fresh = profile(&app, &tenant.owner, &gone_id).await;
    assert_eq!(
        (fresh["display_name"].clone(), fresh["phone"].clone()),
        (json!("Gone Soon"), Value::Null)
    );

    // Deprovisioning the tenant removes its whole directory, and only its own.
    let response = app
        .post_signed(
            "/usermanager/api/internal/usermanager/deprovision/tenant",
            &json!({ "tenant_id": tenant.id }),
        )
        .await;
    assert_eq!(
        json_with_status(response, 200).await["data"],
        json!({ "status": "deprovisioned", "engine": "usermanager" })
    );
    let (names, meta) = page(&app, &tenant.owner, "").await;
    assert!(names.is_empty());
    assert_eq!(meta, json!({ "next_cursor": null, "has_more": false }));
    json_with_status(app.get_as(&format!("{USERS}/me"), &tenant.owner).await, 404).await;
    let remaining = {
        let database = &app.state().database;
        let count: i64 = tessera_host::on_pool!(database, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM engine_kv WHERE engine_code = 'usermanager' AND tenant_id = $1",
        )
        .bind(&tenant.id)
        .fetch_one(pool)
        .await
        .unwrap());
        count
    };
    assert_eq!(remaining, 0);
    let (names, _) = page(&app, &other.owner, "").await;
    assert_eq!(names.len(), 3);
    app.stop().await;
});

database_test!(
    concurrent_edits_of_one_user_lose_nothing,
    |backend| async move {
        let app = usermanager_host(backend).await;
        let tenant = tenant(&app).await;
        for round in 0..3 {
            let display_name = format!("Vera round {round}");
            let title = format!("Title {round}");
            let phone = format!("555-000{round}");
            let avatar_url = format!("https://cdn.acme.test/{round}.png");
            let path = user_path(&tenant.viewer_id);
            let edits = [
                (&tenant.viewer, json!({ "display_name": display_name })),
                (&tenant.owner, json!({ "title": title })),
                (&tenant.viewer, json!({ "phone": phone })),
                (&tenant.owner, json!({ "avatar_url": avatar_url })),
            ];
            let responses = futures_util::future::join_all(
                edits
                    .iter()
                    .map(|(token, body)| app.patch_as(&path, token, body)),
            )
            .await;
            for response in responses {
                json_with_status(response, 200).await;
            }
            let vera = profile(&app, &tenant.owner, &tenant.viewer_id).await;
            assert_eq!(
                [
                    &vera["display_name"],
                    &vera["title"],
                    &vera["phone"],
                    &vera["avatar_url"]
                ],
                [
                    &json!(display_name),
                    &json!(title),
                    &json!(phone),
                    &json!(avatar_url)
                ]
            );
            // One directory entry, under the latest name, and no lease left behind.
            let (names, _) = page(&app, &tenant.owner, "?q=vera").await;
            assert_eq!(names, [display_name.as_str()]);
            assert_eq!(
                stored_keys_mentioning(&app, &format!("directory/%{}", tenant.viewer_id))
                    .await
                    .len(),
                1
            );
            assert!(
                stored_keys_mentioning(&app, &format!("leases/{}", tenant.viewer_id))
                    .await
                    .is_empty()
            );
        }
        app.stop().await;
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_usermanager_route_is_documented() {
    let app =
        crate::helpers::spawn_app_with_engines(Backend::Sqlite, &["usermanager"], |_| {}).await;
    let document = app.openapi().await;
    assert_engine_documented(
        &document,
        "usermanager",
        &[
            ("get", "/usermanager/api/v1/status"),
            ("get", "/usermanager/api/v1/users"),
            ("get", "/usermanager/api/v1/users/me"),
            ("get", "/usermanager/api/v1/users/{user_id}"),
            ("patch", "/usermanager/api/v1/users/{user_id}"),
            ("post", "/usermanager/api/v1/users/{user_id}/deactivate"),
            ("post", "/usermanager/api/v1/users/{user_id}/reactivate"),
        ],
        &["usermanager.Profile", "usermanager.ProfileUpdate"],
    );
    // The list's `status` filter takes a status or nothing (`?status=` lists everyone), as the
    // route answers.
    let parameters = document["paths"]["/usermanager/api/v1/users"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let status = parameters
        .iter()
        .find(|parameter| parameter["name"] == "status")
        .unwrap();
    assert_eq!(
        status["schema"]["enum"],
        serde_json::json!(["", "active", "deactivated"])
    );
    let token = app
        .token(
            &uuid::Uuid::new_v4().to_string(),
            &uuid::Uuid::new_v4().to_string(),
            "viewer",
        )
        .await;
    json_with_status(
        app.get_as("/usermanager/api/v1/users?status=", &token)
            .await,
        200,
    )
    .await;
    app.stop().await;
}
