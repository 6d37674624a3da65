//! Removing a user whose data exceeds the engine scan budget of one call (notes, drive, voip,
//! mail)
//! through the orchestrator, which calls each engine's `deprovision-user` once: the answer is
//! a success, the removal goes on in durable jobs until nothing of the user is left, other
//! users' data stays, and a user provisioned again while their removal is pending keeps what
//! they create (the pending removal stops).

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{
    Backend, TestApp, eventually, json_with_status, limit_engine_scans, spawn_app_with_engines,
};

const ORCHESTRATION: &str = "/core/api/internal/orchestration";
/// How long a removal may take to finish in its jobs.
const REMOVAL_SECONDS: u64 = 60;

// ---------------------------------------------------------------------------------------------
// The host, a tenant and its users
// ---------------------------------------------------------------------------------------------

/// A host with the notes, drive, voip and mail engines, no rate limits, and engine scans bounded to
/// `page` entries each and `budget` entries per engine call.
async fn removal_host(backend: Backend, page: u32, budget: u64) -> TestApp {
    spawn_app_with_engines(
        backend,
        &["notes", "drive", "voip", "mail"],
        move |config| {
            limit_engine_scans(config, page, budget);
        },
    )
    .await
}

/// A provisioned user and a token of theirs.
struct Member {
    id: String,
    token: String,
}

/// Provisions a tenant on every engine through the orchestrator; its id.
async fn provision_tenant(app: &TestApp) -> String {
    let tenant_id = uuid::Uuid::new_v4().to_string();
    let provisioned = json_with_status(
        app.post_signed(
            &format!("{ORCHESTRATION}/provision/tenant"),
            &json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" }),
        )
        .await,
        202,
    )
    .await;
    assert_eq!(provisioned["data"]["status"], "completed", "{provisioned}");
    tenant_id
}

/// Provisions `user_id` on every engine through the orchestrator.
async fn provision_user(app: &TestApp, tenant_id: &str, user_id: &str) {
    let provisioned = json_with_status(
        app.post_signed(
            &format!("{ORCHESTRATION}/provision/user"),
            &json!({
                "tenant_id": tenant_id, "tenant_short_id": "acme", "user_id": user_id,
                "email": format!("{user_id}@example.com"), "first_name": "Test",
                "last_name": "User", "type": "user",
            }),
        )
        .await,
        202,
    )
    .await;
    assert_eq!(provisioned["data"]["status"], "completed", "{provisioned}");
}

/// A new user of the tenant, provisioned on every engine, with an editor's token.
async fn member(app: &TestApp, tenant_id: &str) -> Member {
    let id = uuid::Uuid::new_v4().to_string();
    provision_user(app, tenant_id, &id).await;
    Member {
        token: app.token(tenant_id, &id, "editor").await,
        id,
    }
}

/// Removes a user from every engine through the orchestrator (one call per engine, as in
/// production) and asserts that every engine succeeded.
async fn deprovision_user(app: &TestApp, tenant_id: &str, user_id: &str) {
    let removed = json_with_status(
        app.post_signed(
            &format!("{ORCHESTRATION}/deprovision/user"),
            &json!({ "tenant_id": tenant_id, "user_id": user_id }),
        )
        .await,
        202,
    )
    .await;
    assert_eq!(
        removed["data"],
        json!({ "user_id": user_id, "status": "completed" }),
        "every engine accepts the removal"
    );
}

// ---------------------------------------------------------------------------------------------
// What the database holds
// ---------------------------------------------------------------------------------------------

/// How many storage entries `engine` keeps in the tenant whose key contains `fragment`.
async fn entries_containing(app: &TestApp, engine: &str, tenant_id: &str, fragment: &str) -> i64 {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM engine_kv
         WHERE engine_code = $1 AND tenant_id = $2 AND key LIKE '%' || $3 || '%'",
    )
    .bind(engine)
    .bind(tenant_id)
    .bind(fragment)
    .fetch_one(pool)
    .await
    .unwrap())
}

/// How many storage entries `engine` keeps in the tenant under `prefix`.
async fn entries_under(app: &TestApp, engine: &str, tenant_id: &str, prefix: &str) -> i64 {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM engine_kv
         WHERE engine_code = $1 AND tenant_id = $2 AND key LIKE $3 || '%'",
    )
    .bind(engine)
    .bind(tenant_id)
    .bind(prefix)
    .fetch_one(pool)
    .await
    .unwrap())
}

/// How many blobs `engine` keeps in the tenant.
async fn blobs(app: &TestApp, engine: &str, tenant_id: &str) -> i64 {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM engine_blobs WHERE engine_code = $1 AND tenant_id = $2",
    )
    .bind(engine)
    .bind(tenant_id)
    .fetch_one(pool)
    .await
    .unwrap())
}

/// How many jobs of `engine` in the tenant have `status` (`pending`, `running`, `failed`).
async fn jobs(app: &TestApp, engine: &str, tenant_id: &str, status: &str) -> i64 {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM engine_work
         WHERE engine_code = $1 AND tenant_id = $2 AND kind = 'job' AND status = $3",
    )
    .bind(engine)
    .bind(tenant_id)
    .bind(status)
    .fetch_one(pool)
    .await
    .unwrap())
}

/// Waits until `engine` keeps no storage entry of the tenant whose key names `user_id` (index
/// entries, shares, home folder, records, the pending removal's marker), and asserts that no
/// job of the engine failed on the way.
async fn wait_until_nothing_names(app: &TestApp, engine: &str, tenant_id: &str, user_id: &str) {
    eventually(
        REMOVAL_SECONDS,
        &format!("the {engine} engine to forget the user"),
        || async { (entries_containing(app, engine, tenant_id, user_id).await == 0).then_some(()) },
    )
    .await;
    assert_eq!(jobs(app, engine, tenant_id, "failed").await, 0);
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

async fn create_note(app: &TestApp, token: &str, title: &str) -> String {
    let created = json_with_status(
        app.post_as("/notes/api/v1/notes", token, &json!({ "title": title }))
            .await,
        201,
    )
    .await;
    created["data"]["id"].as_str().unwrap().to_owned()
}

async fn share_note(app: &TestApp, token: &str, note_id: &str, user_id: &str) {
    let response = app
        .client
        .put(app.url(&format!("/notes/api/v1/notes/{note_id}/shares/{user_id}")))
        .bearer_auth(token)
        .json(&json!({ "permission": "read" }))
        .send()
        .await
        .unwrap();
    json_with_status(response, 201).await;
}

/// `GET /notes/api/v1/notes/{id}` as `token`: its status and body.
async fn show_note(app: &TestApp, token: &str, note_id: &str) -> (u16, Value) {
    let response = app
        .get_as(&format!("/notes/api/v1/notes/{note_id}"), token)
        .await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Uploads `bytes` as `name` into `folder` (`home`, `root` or an id); the file's id.
async fn upload(app: &TestApp, token: &str, folder: &str, name: &str, bytes: Vec<u8>) -> String {
    let response = app
        .client
        .post(app.url(&format!("/drive/api/v1/folders/{folder}/files")))
        .bearer_auth(token)
        .query(&[("name", name)])
        .body(bytes)
        .send()
        .await
        .unwrap();
    json_with_status(response, 201).await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn download(app: &TestApp, token: &str, file_id: &str) -> Vec<u8> {
    let response = app
        .get_as(&format!("/drive/api/v1/files/{file_id}/content"), token)
        .await;
    assert_eq!(response.status().as_u16(), 200);
    response.bytes().await.unwrap().to_vec()
}

async fn used_bytes(app: &TestApp, token: &str) -> u64 {
    json_with_status(app.get_as("/drive/api/v1/usage", token).await, 200).await["data"]
        ["used_bytes"]
        .as_u64()
        .unwrap()
}

/// Starts a call from `caller` to `invited`, ringing for five minutes; the call's id.
async fn start_call(app: &TestApp, caller: &Member, invited: &Member) -> String {
    let body = json!({ "participant_ids": [invited.id], "ring_timeout_seconds": 300 });
    let created = json_with_status(
        app.post_as("/voip/api/v1/calls", &caller.token, &body)
            .await,
        201,
    )
    .await;
    created["data"]["id"].as_str().unwrap().to_owned()
}

async fn show_call(app: &TestApp, member: &Member, call_id: &str) -> Value {
    json_with_status(
        app.get_as(&format!("/voip/api/v1/calls/{call_id}"), &member.token)
            .await,
        200,
    )
    .await["data"]
        .clone()
}

/// The state (`joined`, `invited`, `left`) of `user_id` in a call.
fn state_of(call: &Value, user_id: &str) -> String {
    call["participants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|participant| participant["user_id"] == user_id)
        .expect("a participant")["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

database_test!(
    a_user_with_more_notes_than_the_scan_budget_is_removed_completely,
    |backend| async move {
        let app = removal_host(backend, 20, 60).await;
        let tenant_id = provision_tenant(&app).await;
        let leaving = member(&app, &tenant_id).await;
        let staying = member(&app, &tenant_id).await;

        // 150 notes, a third of them shared with the staying user: far more than one call may
        // scan (60 entries).
        let mut shared = Vec::new();
        for index in 0..150 {
            let note_id = create_note(&app, &leaving.token, &format!("Leaving {index}")).await;
            if index % 3 == 0 {
                share_note(&app, &leaving.token, &note_id, &staying.id).await;
                shared.push(note_id);
            }
        }
        // The staying user's own notes, one of them shared with the leaving user.
        let kept = create_note(&app, &staying.token, "Kept").await;
        let kept_shared = create_note(&app, &staying.token, "Kept and shared").await;
        share_note(&app, &staying.token, &kept_shared, &leaving.id).await;

        deprovision_user(&app, &tenant_id, &leaving.id).await;
        wait_until_nothing_names(&app, "notes", &tenant_id, &leaving.id).await;

        // Every note the leaving user owned is gone, also for whom it was shared with.
        assert_eq!(entries_under(&app, "notes", &tenant_id, "notes/").await, 2);
        for note_id in &shared {
            let (status, _) = show_note(&app, &staying.token, note_id).await;
            assert_eq!(status, 404, "a shared note of the removed user");
        }
        let listed = json_with_status(
            app.get_as("/notes/api/v1/notes?scope=shared", &staying.token)
                .await,
            200,
        )
        .await;
        assert_eq!(listed["data"], json!([]));
        assert_eq!(listed["meta"]["has_more"], false);
        // The staying user's notes stay, without the removed user's share.
        let (status, note) = show_note(&app, &staying.token, &kept).await;
        assert_eq!((status, &note["data"]["title"]), (200, &json!("Kept")));
        let (status, note) = show_note(&app, &staying.token, &kept_shared).await;
        assert_eq!(status, 200);
        assert_eq!(note["data"]["shares"], json!([]));
        assert_eq!(
            entries_under(
                &app,
                "notes",
                &tenant_id,
                &format!("by-user/{}/", staying.id)
            )
            .await,
            2
        );
        app.stop().await;
    }
);

database_test!(
    a_user_with_more_drive_files_than_the_scan_budget_is_removed_completely,
    |backend| async move {
        let app = removal_host(backend, 20, 60).await;
        let tenant_id = provision_tenant(&app).await;
        let leaving = member(&app, &tenant_id).await;
        let staying = member(&app, &tenant_id).await;

        // 120 files in the leaving user's home and 40 in a folder inside it.
        let nested = json_with_status(
            app.post_as(
                "/drive/api/v1/folders",
                &leaving.token,
                &json!({ "name": "nested", "parent_id": "home" }),
            )
            .await,
            201,
        )
        .await["data"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        for index in 0..120 {
            upload(
                &app,
                &leaving.token,
                "home",
                &format!("{index}.bin"),
                vec![1; 10],
            )
            .await;
        }
        for index in 0..40 {
            upload(
                &app,
                &leaving.token,
                &nested,
                &format!("{index}.bin"),
                vec![2; 10],
            )
            .await;
        }
        // What belongs to the tenant or to the staying user.
        let in_shared_drive = upload(&app, &leaving.token, "root", "kept.bin", vec![3; 7]).await;
        let staying_home = upload(&app, &staying.token, "home", "mine.bin", vec![4; 5]).await;
        assert_eq!(used_bytes(&app, &staying.token).await, 1600 + 12);

        deprovision_user(&app, &tenant_id, &leaving.id).await;
        wait_until_nothing_names(&app, "drive", &tenant_id, &leaving.id).await;

        // Every file of the home drive is gone with its bytes; the rest stays.
        assert_eq!(used_bytes(&app, &staying.token).await, 12);
        assert_eq!(blobs(&app, "drive", &tenant_id).await, 2);
        assert_eq!(entries_under(&app, "drive", &tenant_id, "files/").await, 2);
        assert_eq!(
            entries_under(&app, "drive", &tenant_id, "folders/").await,
            2
        );
        assert_eq!(
            download(&app, &staying.token, &in_shared_drive).await,
            vec![3; 7]
        );
        assert_eq!(
            download(&app, &staying.token, &staying_home).await,
            vec![4; 5]
        );
        app.stop().await;
    }
);

database_test!(
    a_user_with_more_calls_than_the_scan_budget_is_removed_completely,
    |backend| async move {
        let app = removal_host(backend, 20, 60).await;
        let tenant_id = provision_tenant(&app).await;
        let leaving = member(&app, &tenant_id).await;
        let staying = member(&app, &tenant_id).await;
        let other = member(&app, &tenant_id).await;

        // 130 calls of the leaving user with the staying user, and one without them.
        let mut calls = Vec::new();
        for index in 0..130 {
            calls.push(if index % 2 == 0 {
                start_call(&app, &leaving, &staying).await
            } else {
                start_call(&app, &staying, &leaving).await
            });
        }
        let untouched = start_call(&app, &staying, &other).await;

        deprovision_user(&app, &tenant_id, &leaving.id).await;
        wait_until_nothing_names(&app, "voip", &tenant_id, &leaving.id).await;

        // The removed user left the calls they had joined (those they started, still ringing,
        // are missed); the staying user keeps every call in their history.
        for call_id in [&calls[0], &calls[64], &calls[128]] {
            let call = show_call(&app, &staying, call_id).await;
            assert_eq!(state_of(&call, &leaving.id), "left", "{call}");
            assert_eq!(call["status"], "missed", "{call}");
        }
        let invited_only = show_call(&app, &staying, &calls[129]).await;
        assert_eq!(invited_only["status"], "ringing");
        assert_eq!(
            entries_under(
                &app,
                "voip",
                &tenant_id,
                &format!("by-user/{}/", staying.id)
            )
            .await,
            131
        );
        let call = show_call(&app, &staying, &untouched).await;
        assert_eq!(call["status"], "ringing");
        assert_eq!(state_of(&call, &staying.id), "joined");
        assert_eq!(state_of(&call, &other.id), "invited");
        app.stop().await;
    }
);

database_test!(
    a_user_provisioned_again_during_their_removal_keeps_what_they_create,
    |backend| async move {
        // Five entries per scan and ten per call: the removal of 200 notes takes many jobs.
        let app = removal_host(backend, 5, 10).await;
        let tenant_id = provision_tenant(&app).await;
        let returning = member(&app, &tenant_id).await;
        for index in 0..200 {
            create_note(&app, &returning.token, &format!("Old {index}")).await;
        }
        let index_prefix = format!("by-user/{}/", returning.id);

        deprovision_user(&app, &tenant_id, &returning.id).await;
        provision_user(&app, &tenant_id, &returning.id).await;
        let fresh = create_note(&app, &returning.token, "Fresh").await;

        // The pending removal stops: no job of it is left, and it does not come back.
        eventually(REMOVAL_SECONDS, "the pending removal to stop", || async {
            let running = jobs(&app, "notes", &tenant_id, "pending").await
                + jobs(&app, "notes", &tenant_id, "running").await;
            (running == 0).then_some(())
        })
        .await;
        assert_eq!(jobs(&app, "notes", &tenant_id, "failed").await, 0);
        let left = entries_under(&app, "notes", &tenant_id, &index_prefix).await;
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert_eq!(
            entries_under(&app, "notes", &tenant_id, &index_prefix).await,
            left
        );
        assert_eq!(
            entries_containing(
                &app,
                "notes",
                &tenant_id,
                &format!("removals/{}", returning.id)
            )
            .await,
            0
        );

        // What the user created after coming back is theirs, and so is what the removal had not
        // reached yet (it had removed some of the old notes, not all).
        let (status, note) = show_note(&app, &returning.token, &fresh).await;
        assert_eq!((status, &note["data"]["title"]), (200, &json!("Fresh")));
        assert!(
            (2..=200).contains(&left),
            "the removal stopped part-way: {left} of 201 notes left"
        );
        app.stop().await;
    }
);

database_test!(
    a_user_with_a_mailbox_larger_than_the_scan_budget_is_removed_completely,
    |backend| async move {
        let app = removal_host(backend, 20, 60).await;
        let tenant_id = provision_tenant(&app).await;
        let leaving = member(&app, &tenant_id).await;
        let staying = member(&app, &tenant_id).await;
        let send = |from: &Member, to: &Member, subject: String| {
            let (app, token) = (&app, from.token.clone());
            let body = json!({ "to": [format!("{}@example.com", to.id)], "subject": subject, "body": "b" });
            async move {
                json_with_status(
                    app.post_as("/mail/api/v1/messages", &token, &body).await,
                    201,
                )
                .await;
            }
        };
        // 80 received and 20 sent: 100 copies in the leaving user's mailbox.
        for index in 0..80 {
            send(&staying, &leaving, format!("to leaving {index}")).await;
        }
        for index in 0..20 {
            send(&leaving, &staying, format!("from leaving {index}")).await;
        }

        deprovision_user(&app, &tenant_id, &leaving.id).await;
        wait_until_nothing_names(&app, "mail", &tenant_id, &leaving.id).await;

        // The staying user's mailbox is whole, bodies included, and counted right.
        let folders = json_with_status(
            app.get_as("/mail/api/v1/folders", &staying.token).await,
            200,
        )
        .await;
        let counts: Vec<(u64, u64)> = folders["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|folder| {
                (
                    folder["total"].as_u64().unwrap(),
                    folder["unread"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(counts, [(20, 20), (80, 0), (0, 0), (0, 0)]);
        let inbox = json_with_status(
            app.get_as(
                "/mail/api/v1/folders/inbox/messages?limit=1",
                &staying.token,
            )
            .await,
            200,
        )
        .await;
        let copy_id = inbox["data"][0]["id"].as_str().unwrap().to_owned();
        let shown = json_with_status(
            app.get_as(&format!("/mail/api/v1/messages/{copy_id}"), &staying.token)
                .await,
            200,
        )
        .await;
        assert_eq!(shown["data"]["body"], "b");
        assert_eq!(
            entries_under(&app, "mail", &tenant_id, "messages/").await,
            100
        );
        app.stop().await;
    }
);
