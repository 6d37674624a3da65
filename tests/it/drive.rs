//! The drive engine (`engines/drive`) through the real host: uploads as raw bodies and
//! byte-exact downloads, folders (nesting, paged listings, rename, move, recursive delete),
//! the upload limit (413) and the tenant quota (422) with nothing stored, private home folders,
//! roles, tenant isolation, the events published (observed through a bus subscription the test
//! registers), provisioning and deprovisioning, and the OpenAPI entries.

use serde_json::{Value, json};
use tessera_host::config::{Config, Secret};

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, assert_engine_documented, json_with_status,
    observe_events, observed_events, spawn_app_with, without_rate_limits,
};

const API: &str = "/drive/api/v1";
const INTERNAL: &str = "/drive/api/internal/drive";
/// The engine code the test subscribes to `file.*` and `folder.*` on the bus: no such engine
/// is loaded, so each published drive event stays in `engine_work` for the test to read.
const OBSERVER: &str = "drive-observer";

/// The upload limit of most tests' hosts.
const MAX_UPLOAD: u64 = 64 * 1024;
/// The tenant quota of most tests' hosts.
const QUOTA: u64 = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// The host and a tenant
// ---------------------------------------------------------------------------------------------

/// A host with the drive engine, no rate limits, the given upload limit and quota, and an
/// observer of drive events.
async fn drive_host(backend: Backend, max_upload_bytes: u64, tenant_quota_bytes: u64) -> TestApp {
    drive_host_with(backend, move |config| {
        // The drive's declared settings, as `TESSERA_ENGINES__DRIVE__…` set them.
        let drive = config
            .engine_settings
            .entry("drive".to_owned())
            .or_default();
        drive.insert(
            "max-upload-bytes".to_owned(),
            Secret::new(max_upload_bytes.to_string()),
        );
        drive.insert(
            "tenant-quota-bytes".to_owned(),
            Secret::new(tenant_quota_bytes.to_string()),
        );
    })
    .await
}

/// A host with the drive engine, no rate limits, `configure` applied, and an observer of drive
/// events.
async fn drive_host_with(
    backend: Backend,
    configure: impl FnOnce(&mut Config) + Send + 'static,
) -> TestApp {
    let database = TestDatabase::new(backend).await;
    crate::components::install_engines(&database.data_dir.join("plugins"), &["drive"]);
    let configure = move |config: &mut Config| {
        without_rate_limits(config);
        configure(config);
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
    observe_events(&app, OBSERVER, &["file.*", "folder.*"]);
    app
}

/// The drive events published in `tenant_id`, oldest first: `(type, payload)`.
async fn drive_events(app: &TestApp, tenant_id: &str) -> Vec<(String, Value)> {
    observed_events(app, OBSERVER, Some(tenant_id)).await
}

fn event(event_type: &str, payload: Value) -> (String, Value) {
    (event_type.to_owned(), payload)
}

/// What of a tenant the drive engine keeps in the database.
#[derive(Clone, Copy)]
enum Kept {
    /// Storage entries (`engine_kv`).
    Entries,
    /// Blobs (`engine_blobs`).
    Blobs,
}

/// How many rows of `kept` the drive engine has for a tenant.
async fn stored_rows(app: &TestApp, kept: Kept, tenant_id: &str) -> i64 {
    let sql = match kept {
        Kept::Entries => {
            "SELECT COUNT(*) FROM engine_kv WHERE engine_code = 'drive' AND tenant_id = $1"
        }
        Kept::Blobs => {
            "SELECT COUNT(*) FROM engine_blobs WHERE engine_code = 'drive' AND tenant_id = $1"
        }
    };
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query_scalar::<_, i64>(sql)
        .bind(tenant_id)
        .fetch_one(pool)
        .await
        .unwrap())
}

/// A user of a tenant and their token.
struct User {
    id: String,
    token: String,
}

/// A tenant provisioned on the drive engine with an owner, two editors and a viewer.
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

async fn deprovision_user(app: &TestApp, tenant_id: &str, user_id: &str) {
    let body = json!({ "tenant_id": tenant_id, "user_id": user_id });
    json_with_status(
        app.post_signed(&format!("{INTERNAL}/deprovision/user"), &body)
            .await,
        200,
    )
    .await;
}

async fn provision_tenant(app: &TestApp, tenant_id: &str) {
    json_with_status(
        app.post_signed(
            &format!("{INTERNAL}/provision/tenant"),
            &json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" }),
        )
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
    provision_tenant(app, &id).await;
    Tenant {
        owner: user(app, &id, "owner").await,
        editor: user(app, &id, "editor").await,
        other_editor: user(app, &id, "editor").await,
        viewer: user(app, &id, "viewer").await,
        id,
    }
}

/// A token of a guest (token type `guest`) of a tenant, from a real session.
async fn guest_token(app: &TestApp, tenant_id: &str, user_id: &str) -> String {
    app.token_of(tenant_id, user_id, "editor", "guest").await
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

fn folder_path(id: &str) -> String {
    format!("{API}/folders/{id}")
}

fn children_path(id: &str, query: &str) -> String {
    format!("{API}/folders/{id}/children{query}")
}

fn file_path(id: &str) -> String {
    format!("{API}/files/{id}")
}

fn content_path(id: &str) -> String {
    format!("{API}/files/{id}/content")
}

/// `POST …/folders/{folder}/files?name=…` with `bytes` as the body and, when given, a
/// `Content-Type`.
async fn upload(
    app: &TestApp,
    token: &str,
    folder: &str,
    name: &str,
    content_type: Option<&str>,
    bytes: Vec<u8>,
) -> reqwest::Response {
    let mut request = app
        .client
        .post(app.url(&format!("{API}/folders/{folder}/files")))
        .bearer_auth(token)
        .query(&[("name", name)])
        .body(bytes);
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    request.send().await.unwrap()
}

/// Uploads a file that is accepted; its `data`.
async fn uploaded(app: &TestApp, token: &str, folder: &str, name: &str, bytes: Vec<u8>) -> Value {
    json_with_status(upload(app, token, folder, name, None, bytes).await, 201).await["data"].clone()
}

async fn create_folder(app: &TestApp, token: &str, body: Value) -> Value {
    json_with_status(
        app.post_as(&format!("{API}/folders"), token, &body).await,
        201,
    )
    .await["data"]
        .clone()
}

fn id_of(item: &Value) -> String {
    item["id"].as_str().unwrap().to_owned()
}

async fn show(app: &TestApp, token: &str, path: &str) -> Value {
    json_with_status(app.get_as(path, token).await, 200).await["data"].clone()
}

async fn children(app: &TestApp, token: &str, folder: &str, query: &str) -> Value {
    json_with_status(app.get_as(&children_path(folder, query), token).await, 200).await
}

/// The names of a listing's items, in order.
async fn names(app: &TestApp, token: &str, folder: &str) -> Vec<String> {
    children(app, token, folder, "").await["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn used_bytes(app: &TestApp, token: &str) -> u64 {
    show(app, token, &format!("{API}/usage")).await["used_bytes"]
        .as_u64()
        .unwrap()
}

/// Downloads a file: its bytes and its `Content-Type`.
async fn download(app: &TestApp, token: &str, id: &str) -> (Vec<u8>, String) {
    let response = app.get_as(&content_path(id), token).await;
    assert_eq!(response.status().as_u16(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    (response.bytes().await.unwrap().to_vec(), content_type)
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

/// Asserts a 422 whose `errors` are exactly `errors`.
async fn invalid(response: reqwest::Response, errors: Value) {
    let body = json_with_status(response, 422).await;
    assert_eq!(
        body,
        json!({ "message": "The given data was invalid.", "errors": errors })
    );
}

const FORBIDDEN: &str = "This action is unauthorized.";
const FOLDER_NOT_FOUND: &str = "Folder not found.";
const FILE_NOT_FOUND: &str = "File not found.";
const NAME_TAKEN: &str = "A folder or file with this name already exists in the folder.";

/// Bytes that are not UTF-8: every byte value, several times, then an invalid sequence.
fn binary_bytes(length: usize) -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..=255u8).cycle().take(length - 3).collect();
    bytes.extend([0xff, 0xfe, 0x00]);
    bytes
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

database_test!(
    uploads_come_back_byte_exact_with_their_content_type,
    |backend| async move {
        let app = drive_host(backend, MAX_UPLOAD, QUOTA).await;
        let tenant = tenant(&app).await;
        let editor = &tenant.editor;

        let bytes = binary_bytes(3000);
        assert!(String::from_utf8(bytes.clone()).is_err());
        let created = json_with_status(
            upload(
                &app,
                &editor.token,
                "root",
                "Zürich \"plan\".png",
                Some("image/png"),
                bytes.clone(),
            )
            .await,
            201,
        )
        .await["data"]
            .clone();
        let id = id_of(&created);
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 7);
        let created_at = created["created_at"].as_str().unwrap().to_owned();
        assert!(
            chrono::DateTime::parse_from_rfc3339(&created_at).is_ok() && created_at.ends_with('Z')
        );
        assert_eq!(
            created,
            json!({
                "kind": "file",
                "id": id,
                "name": "Zürich \"plan\".png",
                "folder_id": "root",
                "owner_id": null,
                "content_type": "image/png",
                "size_bytes": 3000,
                "created_by": editor.id,
                "created_at": created_at,
                "updated_at": created_at,
            })
        );
        assert_eq!(show(&app, &editor.token, &file_path(&id)).await, created);

        let response = app.get_as(&content_path(&id), &editor.token).await;
        assert_eq!(response.status().as_u16(), 200);
        let headers = response.headers().clone();
        assert_eq!(headers["content-type"], "image/png");
        assert_eq!(
            headers["content-disposition"],
            "attachment; filename=\"Z_rich _plan_.png\"; filename*=UTF-8''Z%C3%BCrich%20%22plan%22.png"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(response.bytes().await.unwrap().to_vec(), bytes);

        // No Content-Type: application/octet-stream; an empty file is a file.
        let empty = uploaded(&app, &editor.token, "root", "empty.bin", Vec::new()).await;
        assert_eq!(
            (&empty["content_type"], &empty["size_bytes"]),
            (&json!("application/octet-stream"), &json!(0))
        );
        assert_eq!(
            download(&app, &editor.token, &id_of(&empty)).await,
            (Vec::new(), "application/octet-stream".to_owned())
        );
        // Parameters of the content type are kept.
        let text = json_with_status(
            upload(
                &app,
                &tenant.owner.token,
                "root",
                "notes.txt",
                Some("text/plain; charset=utf-8"),
                "héllo".as_bytes().to_vec(),
            )
            .await,
            201,
        )
        .await["data"]
            .clone();
        assert_eq!(
            download(&app, &tenant.viewer.token, &id_of(&text)).await,
            (
                "héllo".as_bytes().to_vec(),
                "text/plain; charset=utf-8".to_owned()
            )
        );

        // Listed by name without regard to case; usage counts every byte.
        assert_eq!(
            names(&app, &tenant.viewer.token, "root").await,
            ["empty.bin", "notes.txt", "Zürich \"plan\".png"]
        );
        assert_eq!(
            show(&app, &tenant.viewer.token, &format!("{API}/usage")).await,
            json!({ "used_bytes": 3006, "quota_bytes": QUOTA, "max_upload_bytes": MAX_UPLOAD })
        );

        // Identifiers only.
        assert_eq!(
            drive_events(&app, &tenant.id).await,
            vec![
                event(
                    "file.uploaded",
                    json!({ "file_id": id, "folder_id": "root", "size_bytes": 3000, "actor_id": editor.id })
                ),
                event(
                    "file.uploaded",
                    json!({ "file_id": id_of(&empty), "folder_id": "root", "size_bytes": 0, "actor_id": editor.id })
                ),
                event(
                    "file.uploaded",
                    json!({ "file_id": id_of(&text), "folder_id": "root", "size_bytes": 6, "actor_id": tenant.owner.id })
                ),
            ]
        );
        app.stop().await;
    }
);

database_test!(
    folders_nest_list_in_pages_move_and_delete_with_their_files,
    |backend| async move {
        let app = drive_host(backend, MAX_UPLOAD, QUOTA).await;
        let tenant = tenant(&app).await;
        let owner = &tenant.owner;

        let root = show(&app, &owner.token, &folder_path("root")).await;
        assert_eq!(
            root,
            json!({
                "kind": "folder", "id": "root", "name": "Shared", "parent_id": null,
                "owner_id": null, "created_by": null,
                "created_at": root["created_at"], "updated_at": root["created_at"],
            })
        );
        let projects = create_folder(&app, &owner.token, json!({ "name": "Projects" })).await;
        let projects_id = id_of(&projects);
        assert_eq!(
            uuid::Uuid::parse_str(&projects_id)
                .unwrap()
                .get_version_num(),
            7
        );
        assert_eq!(
            projects,
            json!({
                "kind": "folder", "id": projects_id, "name": "Projects", "parent_id": "root",
                "owner_id": null, "created_by": owner.id,
                "created_at": projects["created_at"], "updated_at": projects["created_at"],
            })
        );
        assert_eq!(
            show(&app, &owner.token, &folder_path(&projects_id)).await,
            projects
        );

        // Folders first, then files, each by name without regard to case.
        let inside = json!({ "parent_id": projects_id });
        let mut created = Vec::new();
        for name in ["gamma", "Alpha", "beta"] {
            let mut body = inside.clone();
            body["name"] = json!(name);
            created.push(create_folder(&app, &owner.token, body).await);
        }
        let zeta = uploaded(&app, &owner.token, &projects_id, "Zeta.txt", vec![1; 10]).await;
        let notes = uploaded(&app, &owner.token, &projects_id, "a-notes.txt", vec![2; 20]).await;
        assert_eq!(
            names(&app, &owner.token, &projects_id).await,
            ["Alpha", "beta", "gamma", "a-notes.txt", "Zeta.txt"]
        );

        // Two items a page, no overlap, nothing left out.
        let mut seen = Vec::new();
        let mut query = "?limit=2".to_owned();
        let mut pages = 0;
        loop {
            let page = children(&app, &owner.token, &projects_id, &query).await;
            pages += 1;
            let items = page["data"].as_array().unwrap();
            assert!(items.len() <= 2);
            seen.extend(items.iter().map(id_of));
            if page["meta"]["has_more"] == json!(false) {
                break;
            }
            query = format!(
                "?limit=2&cursor={}",
                page["meta"]["next_cursor"].as_str().unwrap()
            );
        }
        assert_eq!(pages, 3);
        let alpha_id = id_of(&created[1]);
        let beta_id = id_of(&created[2]);
        assert_eq!(
            seen,
            [
                alpha_id.clone(),
                beta_id.clone(),
                id_of(&created[0]),
                id_of(&notes),
                id_of(&zeta)
            ]
        );

        // Names are unique in a folder among folders and files, whatever the case.
        let taken = app
            .post_as(
                &format!("{API}/folders"),
                &owner.token,
                &json!({ "name": "ALPHA", "parent_id": projects_id }),
            )
            .await;
        refused(taken, 409, NAME_TAKEN).await;
        let taken = app
            .post_as(
                &format!("{API}/folders"),
                &owner.token,
                &json!({ "name": "zeta.TXT", "parent_id": projects_id }),
            )
            .await;
        refused(taken, 409, NAME_TAKEN).await;
        refused(
            upload(&app, &owner.token, &projects_id, "alpha", None, vec![3]).await,
            409,
            NAME_TAKEN,
        )
        .await;
        // The same name elsewhere is fine.
        create_folder(&app, &owner.token, json!({ "name": "alpha" })).await;

        // Rename (also only the case), move, refuse cycles and other drives.
        let renamed = json_with_status(
            app.patch_as(
                &folder_path(&alpha_id),
                &owner.token,
                &json!({ "name": "Alpha 2" }),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(renamed["name"], "Alpha 2");
        assert_eq!(renamed["parent_id"], json!(projects_id));
        assert!(
            renamed["updated_at"].as_str().unwrap() > created[1]["updated_at"].as_str().unwrap()
        );
        let moved = json_with_status(
            app.patch_as(
                &folder_path(&beta_id),
                &owner.token,
                &json!({ "name": "Beta", "parent_id": alpha_id }),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(
            (&moved["name"], &moved["parent_id"]),
            (&json!("Beta"), &json!(alpha_id))
        );
        assert_eq!(
            names(&app, &owner.token, &projects_id).await,
            ["Alpha 2", "gamma", "a-notes.txt", "Zeta.txt"]
        );
        assert_eq!(names(&app, &owner.token, &alpha_id).await, ["Beta"]);
        let unchanged = json_with_status(
            app.patch_as(&folder_path(&beta_id), &owner.token, &json!({}))
                .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(unchanged, moved);
        for (target, rule) in [
            (beta_id.as_str(), "not_descendant"),
            (projects_id.as_str(), "not_descendant"),
            ("home", "same_drive"),
            ("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "exists"),
        ] {
            invalid(
                app.patch_as(
                    &folder_path(&projects_id),
                    &owner.token,
                    &json!({ "parent_id": target }),
                )
                .await,
                json!({ "parent_id": [rule] }),
            )
            .await;
        }
        // The root and home folders stay where and what they are.
        for id in ["root", "home"] {
            refused(
                app.patch_as(&folder_path(id), &owner.token, &json!({ "name": "Mine" }))
                    .await,
                403,
                FORBIDDEN,
            )
            .await;
            refused(
                app.delete_as(&folder_path(id), &owner.token).await,
                403,
                FORBIDDEN,
            )
            .await;
        }

        // Deleting a folder deletes everything in it, bytes included.
        let deep = uploaded(&app, &owner.token, &beta_id, "deep.bin", vec![4; 100]).await;
        assert_eq!(used_bytes(&app, &owner.token).await, 130);
        no_content(
            app.delete_as(&folder_path(&projects_id), &owner.token)
                .await,
        )
        .await;
        for id in [&projects_id, &alpha_id, &beta_id] {
            refused(
                app.get_as(&folder_path(id), &owner.token).await,
                404,
                FOLDER_NOT_FOUND,
            )
            .await;
        }
        for file in [&deep, &zeta, &notes] {
            refused(
                app.get_as(&content_path(&id_of(file)), &owner.token).await,
                404,
                FILE_NOT_FOUND,
            )
            .await;
        }
        assert_eq!(used_bytes(&app, &owner.token).await, 0);
        assert_eq!(names(&app, &owner.token, "root").await, ["alpha"]);
        assert_eq!(stored_rows(&app, Kept::Blobs, &tenant.id).await, 0);

        let events = drive_events(&app, &tenant.id).await;
        assert_eq!(
            events
                .iter()
                .filter(|(kind, _)| kind == "folder.created")
                .count(),
            5
        );
        assert_eq!(
            events[0],
            event(
                "folder.created",
                json!({ "folder_id": projects_id, "parent_id": "root", "actor_id": owner.id })
            )
        );
        assert!(events.contains(&event(
            "folder.updated",
            json!({ "folder_id": beta_id, "parent_id": alpha_id, "actor_id": owner.id })
        )));
        assert_eq!(
            events.last(),
            Some(&event(
                "folder.deleted",
                json!({ "folder_id": projects_id, "parent_id": "root", "size_bytes": 130, "actor_id": owner.id })
            ))
        );
        app.stop().await;
    }
);

database_test!(
    files_are_renamed_moved_and_deleted_freeing_their_bytes,
    |backend| async move {
        let app = drive_host(backend, MAX_UPLOAD, QUOTA).await;
        let tenant = tenant(&app).await;
        let editor = &tenant.editor;

        let file = uploaded(&app, &editor.token, "root", "draft.txt", vec![7; 50]).await;
        let id = id_of(&file);
        let renamed = json_with_status(
            app.patch_as(
                &file_path(&id),
                &editor.token,
                &json!({ "name": "final.txt" }),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(renamed["name"], "final.txt");
        assert_eq!(
            (&renamed["created_at"], &renamed["size_bytes"]),
            (&file["created_at"], &json!(50))
        );
        assert!(renamed["updated_at"].as_str().unwrap() > file["updated_at"].as_str().unwrap());
        assert_eq!(show(&app, &editor.token, &file_path(&id)).await, renamed);
        assert_eq!(names(&app, &editor.token, "root").await, ["final.txt"]);

        let docs = id_of(&create_folder(&app, &editor.token, json!({ "name": "Docs" })).await);
        let moved = json_with_status(
            app.patch_as(
                &file_path(&id),
                &editor.token,
                &json!({ "folder_id": docs }),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(moved["folder_id"], json!(docs));
        assert_eq!(names(&app, &editor.token, "root").await, ["Docs"]);
        assert_eq!(names(&app, &editor.token, &docs).await, ["final.txt"]);
        assert_eq!(
            download(&app, &editor.token, &id).await.0,
            vec![7; 50],
            "moving keeps the bytes"
        );

        // A name the destination holds, a bad name, a folder that does not exist.
        let other = uploaded(&app, &editor.token, "root", "FINAL.txt", vec![8; 5]).await;
        refused(
            app.patch_as(
                &file_path(&id_of(&other)),
                &editor.token,
                &json!({ "folder_id": docs }),
            )
            .await,
            409,
            NAME_TAKEN,
        )
        .await;
        invalid(
            app.patch_as(
                &file_path(&id),
                &editor.token,
                &json!({ "name": "a/b", "folder_id": "nope" }),
            )
            .await,
            json!({ "name": ["filename"], "folder_id": ["exists"] }),
        )
        .await;
        assert_eq!(
            names(&app, &editor.token, "root").await,
            ["Docs", "FINAL.txt"]
        );
        assert_eq!(names(&app, &editor.token, &docs).await, ["final.txt"]);

        // Into the editor's home: private from then on.
        let private = json_with_status(
            app.patch_as(
                &file_path(&id),
                &editor.token,
                &json!({ "folder_id": "home" }),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        let home = format!("home-{}", editor.id);
        assert_eq!(
            (&private["folder_id"], &private["owner_id"]),
            (&json!(home), &json!(editor.id))
        );
        refused(
            app.get_as(&file_path(&id), &tenant.other_editor.token)
                .await,
            404,
            FILE_NOT_FOUND,
        )
        .await;

        assert_eq!(used_bytes(&app, &editor.token).await, 55);
        no_content(app.delete_as(&file_path(&id), &editor.token).await).await;
        assert_eq!(used_bytes(&app, &editor.token).await, 5);
        for path in [file_path(&id), content_path(&id)] {
            refused(app.get_as(&path, &editor.token).await, 404, FILE_NOT_FOUND).await;
        }
        refused(
            app.delete_as(&file_path(&id), &editor.token).await,
            404,
            FILE_NOT_FOUND,
        )
        .await;
        assert_eq!(
            names(&app, &editor.token, "home").await,
            Vec::<String>::new()
        );

        let actor = &editor.id;
        assert_eq!(
            drive_events(&app, &tenant.id).await,
            vec![
                event(
                    "file.uploaded",
                    json!({ "file_id": id, "folder_id": "root", "size_bytes": 50, "actor_id": actor })
                ),
                event(
                    "file.updated",
                    json!({ "file_id": id, "folder_id": "root", "actor_id": actor })
                ),
                event(
                    "folder.created",
                    json!({ "folder_id": docs, "parent_id": "root", "actor_id": actor })
                ),
                event(
                    "file.updated",
                    json!({ "file_id": id, "folder_id": docs, "actor_id": actor })
                ),
                event(
                    "file.uploaded",
                    json!({ "file_id": id_of(&other), "folder_id": "root", "size_bytes": 5, "actor_id": actor })
                ),
                // Leaving the shared drive is published; what happens in a home is not.
                event(
                    "file.updated",
                    json!({ "file_id": id, "folder_id": home, "actor_id": actor })
                ),
            ]
        );
        app.stop().await;
    }
);

database_test!(
    oversized_uploads_and_uploads_over_the_quota_store_nothing,
    |backend| async move {
        let app = drive_host(backend, 1000, 2500).await;
        let tenant = tenant(&app).await;
        let token = &tenant.editor.token;

        refused(
            upload(&app, token, "root", "big.bin", None, vec![1; 1001]).await,
            413,
            "The file is too large: uploads are at most 1000 bytes.",
        )
        .await;
        assert_eq!(names(&app, token, "root").await, Vec::<String>::new());
        assert_eq!(used_bytes(&app, token).await, 0);

        let one = uploaded(&app, token, "root", "one.bin", vec![1; 1000]).await;
        uploaded(&app, token, "root", "two.bin", vec![2; 1000]).await;
        invalid(
            upload(&app, token, "root", "three.bin", None, vec![3; 600]).await,
            json!({ "content": ["quota"] }),
        )
        .await;
        assert_eq!(names(&app, token, "root").await, ["one.bin", "two.bin"]);
        assert_eq!(used_bytes(&app, token).await, 2000);
        // Exactly the quota is allowed, and the refused name was not kept.
        uploaded(&app, token, "root", "three.bin", vec![3; 500]).await;
        assert_eq!(used_bytes(&app, token).await, 2500);
        // Home drives count too: the quota is the tenant's.
        invalid(
            upload(&app, token, "home", "four.bin", None, vec![4; 1]).await,
            json!({ "content": ["quota"] }),
        )
        .await;
        assert_eq!(names(&app, token, "home").await, Vec::<String>::new());

        // Deleting a file frees its bytes at once.
        no_content(app.delete_as(&file_path(&id_of(&one)), token).await).await;
        assert_eq!(used_bytes(&app, token).await, 1500);
        uploaded(&app, token, "home", "four.bin", vec![4; 1000]).await;
        assert_eq!(used_bytes(&app, token).await, 2500);
        assert_eq!(stored_rows(&app, Kept::Blobs, &tenant.id).await, 3);

        let kinds: Vec<String> = drive_events(&app, &tenant.id)
            .await
            .into_iter()
            .map(|(kind, _)| kind)
            .collect();
        assert_eq!(
            kinds,
            [
                "file.uploaded",
                "file.uploaded",
                "file.uploaded",
                "file.deleted"
            ]
        );
        app.stop().await;
    }
);

database_test!(
    a_file_as_large_as_the_default_upload_limit_goes_through,
    |backend| async move {
        // The host's defaults: 8 MiB a file, 1 GiB a tenant.
        let app = drive_host_with(backend, |_| {}).await;
        let tenant = tenant(&app).await;
        let token = &tenant.editor.token;
        let limit = 8 * 1024 * 1024;
        assert_eq!(
            show(&app, token, &format!("{API}/usage")).await,
            json!({ "used_bytes": 0, "quota_bytes": 1024 * 1024 * 1024, "max_upload_bytes": limit })
        );

        let bytes = binary_bytes(limit);
        let file = uploaded(&app, token, "root", "large.bin", bytes.clone()).await;
        assert_eq!(file["size_bytes"], json!(limit));
        assert_eq!(
            download(&app, token, &id_of(&file)).await,
            (bytes, "application/octet-stream".to_owned())
        );
        assert_eq!(names(&app, token, "root").await, ["large.bin"]);
        assert_eq!(used_bytes(&app, token).await, limit as u64);
        app.stop().await;
    }
);

database_test!(
    concurrent_uploads_never_share_a_name_nor_overrun_the_quota,
    |backend| async move {
        let app = drive_host(backend, 1000, 2500).await;
        let tenant = tenant(&app).await;
        let token = &tenant.editor.token;

        // Eight uploads of one name at once: one wins, the others find the name taken.
        let racing = (0..8u8).map(|n| upload(&app, token, "root", "race.txt", None, vec![n; 10]));
        let mut statuses: Vec<u16> = futures_util::future::join_all(racing)
            .await
            .iter()
            .map(|response| response.status().as_u16())
            .collect();
        statuses.sort_unstable();
        assert_eq!(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
        assert_eq!(names(&app, token, "root").await, ["race.txt"]);
        assert_eq!(used_bytes(&app, token).await, 10);

        // Five uploads of 1000 bytes at once with 2490 bytes left: two fit.
        let file_names: Vec<String> = (0..5).map(|n| format!("big-{n}.bin")).collect();
        let racing = file_names
            .iter()
            .map(|name| upload(&app, token, "root", name, None, vec![1; 1000]));
        let mut statuses: Vec<u16> = futures_util::future::join_all(racing)
            .await
            .iter()
            .map(|response| response.status().as_u16())
            .collect();
        statuses.sort_unstable();
        assert_eq!(statuses, [201, 201, 422, 422, 422]);
        assert_eq!(used_bytes(&app, token).await, 2010);
        assert_eq!(names(&app, token, "root").await.len(), 3);
        assert_eq!(stored_rows(&app, Kept::Blobs, &tenant.id).await, 3);
        app.stop().await;
    }
);

database_test!(
    bad_input_is_refused_naming_the_field_and_stores_nothing,
    |backend| async move {
        let app = drive_host(backend, MAX_UPLOAD, QUOTA).await;
        let tenant = tenant(&app).await;
        let token = &tenant.editor.token;
        let folders = format!("{API}/folders");

        for (body, errors) in [
            (json!({}), json!({ "name": ["required"] })),
            (json!({ "name": "  " }), json!({ "name": ["required"] })),
            (json!({ "name": "a/b" }), json!({ "name": ["filename"] })),
            (json!({ "name": ".." }), json!({ "name": ["filename"] })),
            (
                json!({ "name": "x".repeat(256) }),
                json!({ "name": ["max:255"] }),
            ),
            (json!({ "name": 5 }), json!({ "name": ["string"] })),
            (
                json!({ "name": "ok", "parent_id": "nope" }),
                json!({ "parent_id": ["exists"] }),
            ),
        ] {
            invalid(app.post_as(&folders, token, &body).await, errors).await;
        }
        let not_json = app
            .client
            .post(app.url(&folders))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body("{")
            .send()
            .await
            .unwrap();
        assert_eq!(not_json.status().as_u16(), 400);

        // Uploads: the name, the content type, unknown parameters, unknown folders.
        for (name, content_type, errors) in [
            ("", None, json!({ "name": ["required"] })),
            ("a/b.txt", None, json!({ "name": ["filename"] })),
            (
                &*"y".repeat(256),
                Some("nonsense"),
                json!({ "name": ["max:255"], "content_type": ["mime_type"] }),
            ),
        ] {
            invalid(
                upload(&app, token, "root", name, content_type, vec![1; 10]).await,
                errors,
            )
            .await;
        }
        let without_name = app
            .client
            .post(app.url(&format!("{API}/folders/root/files")))
            .bearer_auth(token)
            .body(vec![1; 10])
            .send()
            .await
            .unwrap();
        invalid(without_name, json!({ "name": ["required"] })).await;
        let unknown_parameter = app
            .client
            .post(app.url(&format!("{API}/folders/root/files?name=a&colour=red")))
            .bearer_auth(token)
            .body(vec![1; 10])
            .send()
            .await
            .unwrap();
        refused(unknown_parameter, 400, "Unknown query parameter `colour`.").await;
        for folder in ["0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "not%20an%20id"] {
            refused(
                upload(&app, token, folder, "a.txt", None, vec![1]).await,
                404,
                FOLDER_NOT_FOUND,
            )
            .await;
        }

        // Listings: paging parameters.
        invalid(
            app.get_as(&children_path("root", "?limit=0"), token).await,
            json!({ "limit": ["min:1"] }),
        )
        .await;
        invalid(
            app.get_as(&children_path("root", "?cursor=not-a-cursor!"), token)
                .await,
            json!({ "cursor": ["invalid"] }),
        )
        .await;
        refused(
            app.get_as(&children_path("root", "?sort=name"), token)
                .await,
            400,
            "Unknown query parameter `sort`.",
        )
        .await;

        assert_eq!(names(&app, token, "root").await, Vec::<String>::new());
        assert_eq!(used_bytes(&app, token).await, 0);
        assert_eq!(drive_events(&app, &tenant.id).await, Vec::new());
        app.stop().await;
    }
);

database_test!(
    home_folders_are_private_to_their_user,
    |backend| async move {
        let app = drive_host(backend, MAX_UPLOAD, QUOTA).await;
        let tenant = tenant(&app).await;
        let (alice, bob) = (&tenant.editor, &tenant.other_editor);
        let home = format!("home-{}", alice.id);

        let folder = show(&app, &alice.token, &folder_path("home")).await;
        assert_eq!(
            folder,
            json!({
                "kind": "folder", "id": home, "name": "Home", "parent_id": null,
                "owner_id": alice.id, "created_by": null,
                "created_at": folder["created_at"], "updated_at": folder["created_at"],
            })
        );
        assert_eq!(show(&app, &alice.token, &folder_path(&home)).await, folder);
        let private = create_folder(
            &app,
            &alice.token,
            json!({ "name": "Private", "parent_id": "home" }),
        )
        .await;
        assert_eq!(
            (&private["parent_id"], &private["owner_id"]),
            (&json!(home), &json!(alice.id))
        );
        let private_id = id_of(&private);
        let diary = uploaded(&app, &alice.token, &private_id, "diary.txt", vec![9; 9]).await;
        let diary_id = id_of(&diary);
        assert_eq!(diary["owner_id"], json!(alice.id));
        assert_eq!(names(&app, &alice.token, "home").await, ["Private"]);

        // Nobody else sees any of it, owners included.
        for token in [&bob.token, &tenant.owner.token] {
            for folder in [&home, &private_id] {
                refused(
                    app.get_as(&folder_path(folder), token).await,
                    404,
                    FOLDER_NOT_FOUND,
                )
                .await;
                refused(
                    app.get_as(&children_path(folder, ""), token).await,
                    404,
                    FOLDER_NOT_FOUND,
                )
                .await;
                refused(
                    upload(&app, token, folder, "x.txt", None, vec![1]).await,
                    404,
                    FOLDER_NOT_FOUND,
                )
                .await;
                refused(
                    app.delete_as(&folder_path(folder), token).await,
                    404,
                    FOLDER_NOT_FOUND,
                )
                .await;
            }
            for path in [file_path(&diary_id), content_path(&diary_id)] {
                refused(app.get_as(&path, token).await, 404, FILE_NOT_FOUND).await;
            }
            refused(
                app.patch_as(
                    &file_path(&diary_id),
                    token,
                    &json!({ "folder_id": "root" }),
                )
                .await,
                404,
                FILE_NOT_FOUND,
            )
            .await;
            refused(
                app.delete_as(&file_path(&diary_id), token).await,
                404,
                FILE_NOT_FOUND,
            )
            .await;
            invalid(
                app.post_as(
                    &format!("{API}/folders"),
                    token,
                    &json!({ "name": "in", "parent_id": home }),
                )
                .await,
                json!({ "parent_id": ["exists"] }),
            )
            .await;
            assert_eq!(names(&app, token, "root").await, Vec::<String>::new());
        }
        // `home` is each caller's own.
        assert_eq!(
            show(&app, &bob.token, &folder_path("home")).await["id"],
            json!(format!("home-{}", bob.id))
        );
        assert_eq!(names(&app, &bob.token, "home").await, Vec::<String>::new());

        // A guest sees their own home only, and writes nothing.
        let guest_id = uuid::Uuid::new_v4().to_string();
        provision_user(&app, &tenant.id, &guest_id).await;
        let guest = guest_token(&app, &tenant.id, &guest_id).await;
        refused(
            app.get_as(&folder_path("root"), &guest).await,
            404,
            FOLDER_NOT_FOUND,
        )
        .await;
        assert_eq!(
            show(&app, &guest, &folder_path("home")).await["owner_id"],
            json!(guest_id)
        );
        refused(
            upload(&app, &guest, "home", "g.txt", None, vec![1]).await,
            403,
            FORBIDDEN,
        )
        .await;

        // Nothing of a home is published; moving a file out of it shares it.
        assert_eq!(drive_events(&app, &tenant.id).await, Vec::new());
        let shared = json_with_status(
            app.patch_as(
                &file_path(&diary_id),
                &alice.token,
                &json!({ "folder_id": "root" }),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(shared["owner_id"], json!(null));
        assert_eq!(download(&app, &bob.token, &diary_id).await.0, vec![9; 9]);
        assert_eq!(
            drive_events(&app, &tenant.id).await,
            vec![event(
                "file.updated",
                json!({ "file_id": diary_id, "folder_id": "root", "actor_id": alice.id })
            )]
        );
        app.stop().await;
    }
);

database_test!(
    viewers_only_read_and_editors_change_only_what_they_made,
    |backend| async move {
        let app = drive_host(backend, MAX_UPLOAD, QUOTA).await;
        let tenant = tenant(&app).await;
        let (owner, editor, viewer) = (&tenant.owner, &tenant.editor, &tenant.viewer);

        let owners_folder =
            id_of(&create_folder(&app, &owner.token, json!({ "name": "Owner" })).await);
        let owners_file =
            id_of(&uploaded(&app, &owner.token, "root", "owner.txt", vec![1; 3]).await);
        let empty = id_of(&create_folder(&app, &editor.token, json!({ "name": "Empty" })).await);
        let full = id_of(&create_folder(&app, &editor.token, json!({ "name": "Full" })).await);
        let editors_file =
            id_of(&uploaded(&app, &editor.token, &full, "mine.txt", vec![2; 4]).await);

        // Viewers read and download.
        assert_eq!(
            names(&app, &viewer.token, "root").await,
            ["Empty", "Full", "Owner", "owner.txt"]
        );
        assert_eq!(
            show(&app, &viewer.token, &file_path(&owners_file)).await["size_bytes"],
            3
        );
        assert_eq!(
            download(&app, &viewer.token, &editors_file).await.0,
            vec![2; 4]
        );
        assert_eq!(used_bytes(&app, &viewer.token).await, 7);
        // And never write, not even in their home.
        let viewer_writes = [
            app.post_as(
                &format!("{API}/folders"),
                &viewer.token,
                &json!({ "name": "v" }),
            )
            .await,
            upload(&app, &viewer.token, "root", "v.txt", None, vec![1]).await,
            upload(&app, &viewer.token, "home", "v.txt", None, vec![1]).await,
            app.patch_as(
                &file_path(&owners_file),
                &viewer.token,
                &json!({ "name": "v" }),
            )
            .await,
            app.delete_as(&file_path(&owners_file), &viewer.token).await,
            app.patch_as(
                &folder_path(&owners_folder),
                &viewer.token,
                &json!({ "name": "v" }),
            )
            .await,
            app.delete_as(&folder_path(&empty), &viewer.token).await,
        ];
        for response in viewer_writes {
            refused(response, 403, FORBIDDEN).await;
        }

        // Editors write, but change only what they made; a folder with something in it
        // needs an owner to delete it.
        let editor_changes = [
            app.patch_as(
                &file_path(&owners_file),
                &editor.token,
                &json!({ "name": "e" }),
            )
            .await,
            app.delete_as(&file_path(&owners_file), &editor.token).await,
            app.patch_as(
                &folder_path(&owners_folder),
                &editor.token,
                &json!({ "name": "e" }),
            )
            .await,
            app.delete_as(&folder_path(&owners_folder), &editor.token)
                .await,
            app.delete_as(&folder_path(&full), &editor.token).await,
        ];
        for response in editor_changes {
            refused(response, 403, FORBIDDEN).await;
        }
        assert_eq!(
            names(&app, &viewer.token, "root").await,
            ["Empty", "Full", "Owner", "owner.txt"]
        );
        uploaded(
            &app,
            &editor.token,
            &owners_folder,
            "contribution.txt",
            vec![3],
        )
        .await;
        no_content(app.delete_as(&folder_path(&empty), &editor.token).await).await;

        // Owners change anything.
        let renamed = json_with_status(
            app.patch_as(
                &file_path(&editors_file),
                &owner.token,
                &json!({ "name": "reviewed.txt" }),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(renamed["created_by"], json!(editor.id));
        no_content(app.delete_as(&folder_path(&full), &owner.token).await).await;
        assert_eq!(
            names(&app, &viewer.token, "root").await,
            ["Owner", "owner.txt"]
        );
        assert_eq!(used_bytes(&app, &viewer.token).await, 4);
        app.stop().await;
    }
);

database_test!(tenants_never_see_each_others_drives, |backend| async move {
    let app = drive_host(backend, MAX_UPLOAD, QUOTA).await;
    let acme = tenant(&app).await;
    let globex = tenant(&app).await;
    let folder = id_of(&create_folder(&app, &acme.owner.token, json!({ "name": "Acme" })).await);
    let file = id_of(&uploaded(&app, &acme.owner.token, &folder, "plan.bin", vec![5; 50]).await);

    let same_user_elsewhere = app.token(&globex.id, &acme.owner.id, "owner").await;
    for intruder in [&globex.owner.token, &same_user_elsewhere] {
        for path in [folder_path(&folder), children_path(&folder, "")] {
            refused(app.get_as(&path, intruder).await, 404, FOLDER_NOT_FOUND).await;
        }
        refused(
            app.patch_as(&folder_path(&folder), intruder, &json!({ "name": "mine" }))
                .await,
            404,
            FOLDER_NOT_FOUND,
        )
        .await;
        refused(
            app.delete_as(&folder_path(&folder), intruder).await,
            404,
            FOLDER_NOT_FOUND,
        )
        .await;
        refused(
            upload(&app, intruder, &folder, "x.bin", None, vec![1]).await,
            404,
            FOLDER_NOT_FOUND,
        )
        .await;
        for path in [file_path(&file), content_path(&file)] {
            refused(app.get_as(&path, intruder).await, 404, FILE_NOT_FOUND).await;
        }
        refused(
            app.patch_as(&file_path(&file), intruder, &json!({ "name": "mine" }))
                .await,
            404,
            FILE_NOT_FOUND,
        )
        .await;
        refused(
            app.delete_as(&file_path(&file), intruder).await,
            404,
            FILE_NOT_FOUND,
        )
        .await;
        assert_eq!(names(&app, intruder, "root").await, Vec::<String>::new());
        assert_eq!(used_bytes(&app, intruder).await, 0);
    }
    assert_eq!(
        download(&app, &acme.viewer.token, &file).await.0,
        vec![5; 50]
    );
    assert_eq!(used_bytes(&app, &acme.viewer.token).await, 50);
    assert_eq!(drive_events(&app, &globex.id).await, Vec::new());
    app.stop().await;
});

database_test!(
    deprovisioning_removes_a_users_home_and_a_tenants_everything,
    |backend| async move {
        let app = drive_host(backend, MAX_UPLOAD, QUOTA).await;
        let tenant = tenant(&app).await;
        let leaving = &tenant.editor;
        let status_path = format!("{API}/status");
        assert_eq!(
            show(&app, &leaving.token, &status_path).await,
            json!({ "engine": "drive", "tenant_provisioned": true, "user_provisioned": true })
        );

        let nested = id_of(
            &create_folder(
                &app,
                &leaving.token,
                json!({ "name": "a", "parent_id": "home" }),
            )
            .await,
        );
        let home_files = [
            id_of(&uploaded(&app, &leaving.token, "home", "one.bin", vec![1; 100]).await),
            id_of(&uploaded(&app, &leaving.token, &nested, "two.bin", vec![2; 200]).await),
        ];
        let shared = id_of(&uploaded(&app, &leaving.token, "root", "kept.bin", vec![3; 30]).await);
        assert_eq!(used_bytes(&app, &tenant.owner.token).await, 330);

        // Idempotent: the second run finds nothing left to remove.
        for _ in 0..2 {
            deprovision_user(&app, &tenant.id, &leaving.id).await;
        }
        assert_eq!(
            show(&app, &leaving.token, &status_path).await["user_provisioned"],
            false
        );
        for folder in ["home", &nested] {
            refused(
                app.get_as(&folder_path(folder), &leaving.token).await,
                404,
                FOLDER_NOT_FOUND,
            )
            .await;
        }
        for file in &home_files {
            refused(
                app.get_as(&content_path(file), &leaving.token).await,
                404,
                FILE_NOT_FOUND,
            )
            .await;
        }
        // What they put in the shared drive belongs to the tenant.
        assert_eq!(
            download(&app, &tenant.owner.token, &shared).await.0,
            vec![3; 30]
        );
        assert_eq!(used_bytes(&app, &tenant.owner.token).await, 30);
        assert_eq!(stored_rows(&app, Kept::Blobs, &tenant.id).await, 1);
        // Provisioned again, they start with an empty home.
        provision_user(&app, &tenant.id, &leaving.id).await;
        assert_eq!(
            names(&app, &leaving.token, "home").await,
            Vec::<String>::new()
        );

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
        refused(
            app.get_as(&folder_path("root"), &tenant.owner.token).await,
            404,
            FOLDER_NOT_FOUND,
        )
        .await;
        refused(
            app.get_as(&file_path(&shared), &tenant.owner.token).await,
            404,
            FILE_NOT_FOUND,
        )
        .await;
        assert_eq!(
            show(&app, &tenant.owner.token, &status_path).await,
            json!({ "engine": "drive", "tenant_provisioned": false, "user_provisioned": false })
        );
        assert_eq!(stored_rows(&app, Kept::Entries, &tenant.id).await, 0);
        assert_eq!(stored_rows(&app, Kept::Blobs, &tenant.id).await, 0);

        // Provisioned again: an empty drive with nothing used.
        provision_tenant(&app, &tenant.id).await;
        assert_eq!(used_bytes(&app, &tenant.owner.token).await, 0);
        assert_eq!(
            names(&app, &tenant.owner.token, "root").await,
            Vec::<String>::new()
        );
        app.stop().await;
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_drive_route_is_documented_with_bearer_security() {
    let app = crate::helpers::spawn_app_with_engines(Backend::Sqlite, &["drive"], |_| {}).await;
    let document = app.openapi().await;
    assert_engine_documented(
        &document,
        "drive",
        &[
            ("get", "/drive/api/v1/usage"),
            ("post", "/drive/api/v1/folders"),
            ("get", "/drive/api/v1/folders/{id}"),
            ("patch", "/drive/api/v1/folders/{id}"),
            ("delete", "/drive/api/v1/folders/{id}"),
            ("get", "/drive/api/v1/folders/{id}/children"),
            ("post", "/drive/api/v1/folders/{id}/files"),
            ("get", "/drive/api/v1/files/{id}"),
            ("patch", "/drive/api/v1/files/{id}"),
            ("delete", "/drive/api/v1/files/{id}"),
            ("get", "/drive/api/v1/files/{id}/content"),
        ],
        &[
            "drive.Folder",
            "drive.File",
            "drive.Item",
            "drive.Usage",
            "drive.FolderCreate",
            "drive.FolderUpdate",
            "drive.FileUpdate",
        ],
    );
    let paths = &document["paths"];
    let upload = &paths["/drive/api/v1/folders/{id}/files"]["post"];
    assert!(upload["requestBody"]["content"]["application/octet-stream"].is_object());
    assert!(upload["responses"]["413"].is_object());
    let download = &paths["/drive/api/v1/files/{id}/content"]["get"];
    assert!(download["responses"]["200"]["content"]["application/octet-stream"].is_object());
    app.stop().await;
}
