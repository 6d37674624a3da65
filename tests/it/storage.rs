//! Storage: SQLite settings, migrations, and several processes sharing one SQLite data dir.

use std::process::Command;

use serde_json::Value;

use crate::database_test;
use crate::helpers::{Backend, ServeProcess, TestDatabase, run_admin, spawn_app, tessera_binary};
use tessera_host::on_pool;
use tessera_host::storage::Database;

database_test!(
    migrations_are_idempotent_across_restarts,
    |backend| async move {
        let database = TestDatabase::new(backend).await;
        let config = database.database_config();
        for _ in 0..2 {
            let handle = Database::connect_and_migrate(&config)
                .await
                .expect("migrating");
            handle.ping().await.unwrap();
            handle.close().await;
        }
        let handle = database.connect().await;
        let applied: i64 = on_pool!(handle, pool => sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations").fetch_one(pool).await).unwrap();
        assert!(applied >= 1);
        handle.close().await;
    }
);

#[tokio::test]
async fn sqlite_runs_in_wal_mode_with_foreign_keys_on() {
    let database = TestDatabase::new(Backend::Sqlite).await;
    let handle = Database::connect_and_migrate(&database.database_config())
        .await
        .unwrap();
    let tessera_host::storage::Pool::Sqlite(pool) = handle.pool() else {
        unreachable!()
    };
    let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(journal, "wal");
    let foreign_keys: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(foreign_keys, 1);
    let orphan = sqlx::query("INSERT INTO workspaces (id, tenant_id, name, is_default, created_at) VALUES ('w', 'no-such-tenant', 'x', 0, 'now')")
        .execute(pool)
        .await;
    assert!(orphan.is_err(), "foreign keys are enforced");
    assert!(
        database.data_dir.join("tessera.db").exists(),
        "the file lives in the data dir"
    );
    handle.close().await;
}

/// `tessera serve` on the test's data dir and database.
fn serve_on(database: &TestDatabase) -> ServeProcess {
    ServeProcess::start(|command| {
        command
            .arg("--data-dir")
            .arg(&database.data_dir)
            .arg("--database-url")
            .arg(&database.url)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_and_the_cli_share_one_sqlite_data_dir() {
    let database = TestDatabase::new(Backend::Sqlite).await;
    let first = serve_on(&database);
    let second = serve_on(&database);
    let client = reqwest::Client::new();

    // Several admin commands at once while both servers run and read the database.
    let writers: Vec<_> = (0..6)
        .map(|index| {
            let slug = format!("tenant-{index}");
            let data_dir = database.data_dir.clone();
            let url = database.url.clone();
            std::thread::spawn(move || {
                let output = Command::new(tessera_binary())
                    .args([
                        "admin",
                        "create-tenant",
                        "--slug",
                        &slug,
                        "--name",
                        "Shared",
                    ])
                    .arg("--data-dir")
                    .arg(&data_dir)
                    .arg("--database-url")
                    .arg(&url)
                    .output()
                    .unwrap();
                (
                    output.status.success(),
                    String::from_utf8_lossy(&output.stderr).into_owned(),
                )
            })
        })
        .collect();
    for _ in 0..10 {
        for server in [&first, &second] {
            let body: Value = client
                .get(server.url("/core/api/health/extended"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(body["checks"]["database"], "ok");
        }
    }
    for writer in writers {
        let (success, stderr) = writer.join().unwrap();
        assert!(
            success,
            "an admin command failed beside two servers: {stderr}"
        );
    }
    run_admin(
        &database,
        &[
            "create-user",
            "--tenant",
            "tenant-0",
            "--email",
            "ada@example.com",
            "--password",
            "Correct1horse",
        ],
    )
    .json();

    let handle = database.connect().await;
    let tessera_host::storage::Pool::Sqlite(pool) = handle.pool() else {
        unreachable!()
    };
    let tenants: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tenants")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(tenants, 6);
    let integrity: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(integrity, "ok");
    handle.close().await;

    // Both servers are still healthy and stop gracefully on SIGTERM.
    for server in [first, second] {
        let response = client
            .get(server.url("/core/api/health"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert!(server.terminate().success(), "a clean exit on SIGTERM");
    }
}

database_test!(the_cli_writes_while_the_server_runs, |backend| async move {
    let app = spawn_app(backend).await;
    let tenant = app
        .admin(&["create-tenant", "--slug", "live", "--name", "Live"])
        .json();
    assert_eq!(tenant["slug"], "live");
    let body = app.extended_health_report().await;
    assert_eq!(body["checks"]["database"], "ok");
    let found = tessera_host::tenancy::TenancyService::new(
        app.state().database.clone(),
        Default::default(),
        app.state().auth.password_hasher.clone(),
        app.state().orchestrator.clone(),
    )
    .tenant_by_slug("live")
    .await
    .expect("the server sees what the CLI wrote");
    assert_eq!(found.id, tenant["tenant_id"].as_str().unwrap());
    app.stop().await;
});

database_test!(
    blob_quotas_hold_under_concurrent_puts_and_deletes_free_them,
    |backend| async move {
        use tessera_host::runtime::batch_writer::{BatchWriter, BlobWrites, StorageBatch};
        use tessera_host::runtime::work::WorkQueue;
        use tessera_host::storage::engine_blobs;
        use tessera_host::storage::engine_kv::{self, KvScope};

        let database = TestDatabase::new(backend).await;
        let handle = Database::connect_and_migrate(&database.database_config())
            .await
            .expect("migrating");
        let writer = BatchWriter::start(handle.clone(), WorkQueue::new(handle.clone()));
        let scope = KvScope {
            engine_code: "drive",
            tenant_id: "tenant-a",
        };
        let other = KvScope {
            engine_code: "drive",
            tenant_id: "tenant-b",
        };
        let unit = |tenant_id: &str,
                    blobs: BlobWrites,
                    sets: Vec<(String, Vec<u8>)>,
                    deletes: Vec<String>| {
            StorageBatch {
                engine_code: "drive".to_owned(),
                tenant_id: tenant_id.to_owned(),
                sets,
                deletes,
                blobs,
                ..StorageBatch::default()
            }
        };
        let put = |key: &str, content: Vec<u8>, quota: u64| BlobWrites {
            puts: vec![(key.to_owned(), content)],
            quota: Some(quota),
            ..BlobWrites::default()
        };

        // Ten units each uploading 100 bytes race for a 450-byte quota: exactly four commit,
        // and only those wrote their metadata. A transaction holding the scope's usage row
        // (SQLite: the writer) keeps the writer waiting while they queue, so they commit as one
        // group, each in a savepoint: those over the quota roll back alone.
        let mut blocker = handle.begin().await.unwrap();
        engine_blobs::usage_in(&mut blocker, &scope).await.unwrap();
        let puts = (0..10).map(|n| {
            let writer = writer.clone();
            let batch = unit(
                "tenant-a",
                put(&format!("files/{n}"), vec![n as u8; 100], 450),
                vec![(format!("meta/{n}"), b"{}".to_vec())],
                Vec::new(),
            );
            async move { writer.commit_unit(batch).await.unwrap() }
        });
        let racing = tokio::spawn(futures_util::future::join_all(puts));
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        blocker.rollback().await.unwrap();
        let outcomes = racing.await.unwrap();
        let stored = outcomes.iter().filter(|committed| **committed).count();
        assert_eq!(stored, 4, "{outcomes:?}");
        assert_eq!(engine_blobs::usage(&handle, &scope).await.unwrap(), 400);
        let metadata = engine_kv::list(&handle, &scope, "meta/", None, 100, false)
            .await
            .unwrap();
        assert_eq!(metadata.len(), 4);
        for (n, committed) in outcomes.iter().enumerate() {
            let content = engine_blobs::get(&handle, &scope, &format!("files/{n}"))
                .await
                .unwrap();
            if *committed {
                assert_eq!(content, Some(vec![n as u8; 100]));
            } else {
                assert_eq!(content, None);
            }
        }

        // Another tenant's quota and blobs are its own.
        assert!(
            writer
                .commit_unit(unit(
                    "tenant-b",
                    put("files/0", b"x".to_vec(), 1),
                    Vec::new(),
                    Vec::new()
                ))
                .await
                .unwrap()
        );
        assert_eq!(
            engine_blobs::get(&handle, &other, "files/1").await.unwrap(),
            None
        );

        // Replacing a blob counts the difference; deleting frees its bytes.
        let first = outcomes.iter().position(|committed| *committed).unwrap();
        let key = format!("files/{first}");
        assert!(
            writer
                .commit_unit(unit(
                    "tenant-a",
                    put(&key, vec![7; 150], 450),
                    Vec::new(),
                    Vec::new()
                ))
                .await
                .unwrap()
        );
        assert_eq!(engine_blobs::usage(&handle, &scope).await.unwrap(), 450);
        let deletion = BlobWrites {
            deletes: vec![key.clone(), "files/absent".to_owned()],
            ..BlobWrites::default()
        };
        assert!(
            writer
                .commit_unit(unit(
                    "tenant-a",
                    deletion,
                    Vec::new(),
                    vec![format!("meta/{first}")]
                ))
                .await
                .unwrap()
        );
        assert_eq!(engine_blobs::usage(&handle, &scope).await.unwrap(), 300);
        assert_eq!(
            engine_kv::get(&handle, &scope, &format!("meta/{first}"))
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            engine_blobs::count_prefix(&handle, &scope, "files/")
                .await
                .unwrap(),
            (3, 300)
        );
        let prefix_deletion = BlobWrites {
            prefix_deletes: vec!["files/".to_owned()],
            ..BlobWrites::default()
        };
        assert!(
            writer
                .commit_unit(unit("tenant-a", prefix_deletion, Vec::new(), Vec::new()))
                .await
                .unwrap()
        );
        assert_eq!(engine_blobs::usage(&handle, &scope).await.unwrap(), 0);
        assert_eq!(engine_blobs::usage(&handle, &other).await.unwrap(), 1);
        handle.close().await;
    }
);

database_test!(
    reads_of_many_keys_across_scopes_answer_in_order_and_in_chunks,
    |backend| async move {
        use tessera_host::storage::engine_kv::{self, KvKey, KvScope};

        let database = TestDatabase::new(backend).await;
        let handle = Database::connect_and_migrate(&database.database_config())
            .await
            .expect("migrating");
        let scopes = [
            KvScope {
                engine_code: "chat",
                tenant_id: "tenant-a",
            },
            KvScope {
                engine_code: "chat",
                tenant_id: "tenant-b",
            },
            KvScope {
                engine_code: "notes",
                tenant_id: "tenant-a",
            },
        ];
        // Every scope holds keys 0, 2, 4, … < 600 with values naming the scope and the key.
        for (index, scope) in scopes.iter().enumerate() {
            for key in (0..600).step_by(2) {
                engine_kv::set(
                    &handle,
                    scope,
                    &format!("k/{key:03}"),
                    format!("{index}:{key}").as_bytes(),
                )
                .await
                .unwrap();
            }
        }

        // 700 keys (three statements of at most 256, the last padded), interleaving the
        // scopes, present and absent keys, and a key asked twice.
        let keys: Vec<(usize, String)> = (0..700)
            .map(|position| (position % 3, format!("k/{:03}", (position * 7) % 650)))
            .chain([(0, "k/000".to_owned())])
            .collect();
        let wanted: Vec<KvKey<'_>> = keys
            .iter()
            .map(|(scope, key)| KvKey {
                engine_code: scopes[*scope].engine_code,
                tenant_id: scopes[*scope].tenant_id,
                key,
            })
            .collect();
        let values = engine_kv::get_across(&handle, &wanted).await.unwrap();
        assert_eq!(values.len(), keys.len());
        for ((scope, key), value) in keys.iter().zip(&values) {
            let number: usize = key[2..].parse().unwrap();
            let stored = number.is_multiple_of(2) && number < 600;
            let expected = stored.then(|| format!("{scope}:{number}").into_bytes());
            assert_eq!(value, &expected, "{scope} {key}");
        }

        // One scope's read names only that scope's keys; more than the limit is refused.
        let scoped = engine_kv::get_many(
            &handle,
            &scopes[1],
            &["k/004".to_owned(), "k/005".to_owned(), "k/004".to_owned()],
        )
        .await
        .unwrap();
        assert_eq!(
            scoped,
            vec![Some(b"1:4".to_vec()), None, Some(b"1:4".to_vec())]
        );
        assert!(
            engine_kv::get_many(&handle, &scopes[0], &[])
                .await
                .unwrap()
                .is_empty()
        );
        let too_many: Vec<String> = (0..=engine_kv::MAX_GET_MANY)
            .map(|n| format!("k/{n}"))
            .collect();
        assert!(
            engine_kv::get_many(&handle, &scopes[0], &too_many)
                .await
                .is_err()
        );
        handle.close().await;
    }
);

/// A fresh test database with this binary's migrations applied up to `version` only (the
/// schema an older release left), and a connection to it.
async fn migrated_to(backend: Backend, version: i64) -> (TestDatabase, Database) {
    let database = TestDatabase::new(backend).await;
    let old = database.connect().await;
    migrate_to(&old, backend, version).await;
    (database, old)
}

/// Applies this binary's migrations to `handle` up to `version` only.
async fn migrate_to(handle: &Database, backend: Backend, version: i64) {
    let folder = match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    let migrations = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../migrations")
        .join(folder);
    let migrator = sqlx::migrate::Migrator::new(migrations).await.unwrap();
    on_pool!(handle, pool => migrator.run_to(version, pool).await).unwrap();
}

database_test!(
    an_upgrade_keeps_engine_storage_and_the_log_and_rebuilds_the_search_index,
    |backend| async move {
        use tessera_host::storage::engine_kv::{self, KvScope};

        // A database at the schema of migration 20261125000013 (before the compact engine storage
        // and the search terms), with data in it.
        let (database, old) = migrated_to(backend, 20261125000013).await;
        on_pool!(old, pool => sqlx::query(
            "INSERT INTO engine_kv (engine_code, tenant_id, key, value, updated_at) VALUES
             ('notes', 't1', 'notes/1', $1, 'then'), ('notes', 't1', 'notes/2', $2, 'then'),
             ('chat', 't1', 'notes/1', $3, 'then'), ('notes', 't2', 'notes/1', $4, 'then')",
        )
        .bind(b"first".as_slice())
        .bind(b"second".as_slice())
        .bind(b"".as_slice())
        .bind(vec![0_u8, 255, 7])
        .execute(pool)
        .await
        .map(drop))
        .unwrap();
        on_pool!(old, pool => sqlx::query(
            "INSERT INTO timeline_items (id, tenant_id, entity_id, item_type, actor_id, data,
             occurred_at, projected_at)
             VALUES ('e1', 't1', 'x', 'entity.created', NULL, '{}', 'then', 'then')",
        )
        .execute(pool)
        .await
        .map(drop))
        .unwrap();
        for statement in [
            "INSERT INTO tenants (id, slug, name, created_at) VALUES ('t1', 't1', 'T', 'then')",
            "INSERT INTO entities (id, tenant_id, family_code, status, fields, created_by,
             created_at, updated_at) VALUES
             ('x', 't1', 'task', 'todo', '{\"n\":1}', 'ada', '2026-11-20', '2026-11-22'),
             ('y', 't1', 'contact', 'active', '{}', 'ada', '2026-11-21', '2026-11-21')",
        ] {
            on_pool!(old, pool => sqlx::query(statement).execute(pool).await.map(drop)).unwrap();
        }
        old.close().await;

        // The host's own migrations take it the rest of the way.
        let upgraded = Database::connect_and_migrate(&database.database_config())
            .await
            .expect("upgrading");
        let rows: Vec<(String, String, String, Vec<u8>)> =
            on_pool!(upgraded, pool => sqlx::query_as(
            "SELECT engine_code, tenant_id, key, value FROM engine_kv
             ORDER BY engine_code, tenant_id, key",
        )
        .fetch_all(pool)
        .await)
            .unwrap();
        let row = |engine: &str, tenant: &str, key: &str, value: &[u8]| {
            (
                engine.to_owned(),
                tenant.to_owned(),
                key.to_owned(),
                value.to_vec(),
            )
        };
        assert_eq!(
            rows,
            [
                row("chat", "t1", "notes/1", b""),
                row("notes", "t1", "notes/1", b"first"),
                row("notes", "t1", "notes/2", b"second"),
                row("notes", "t2", "notes/1", &[0, 255, 7]),
            ]
        );
        // Engine storage reads and writes on the new table.
        let scope = KvScope {
            engine_code: "notes",
            tenant_id: "t1",
        };
        engine_kv::set(&upgraded, &scope, "notes/3", b"third")
            .await
            .unwrap();
        engine_kv::set(&upgraded, &scope, "notes/1", b"changed")
            .await
            .unwrap();
        assert_eq!(
            engine_kv::get(&upgraded, &scope, "notes/1").await.unwrap(),
            Some(b"changed".to_vec())
        );
        assert_eq!(
            engine_kv::get(&upgraded, &scope, "notes/3").await.unwrap(),
            Some(b"third".to_vec())
        );
        // Entities keep every column (two listing indexes instead of four, and on SQLite a
        // table without rowids; their tenant by its number in the log, numbered for them).
        let entities: Vec<String> = on_pool!(upgraded, pool => sqlx::query_scalar(
            "SELECT e.id || ' ' || s.tenant_id || ' ' || e.family_code || ' ' || e.status || ' '
                    || e.fields || ' ' || e.created_by || ' ' || e.created_at || ' ' || e.updated_at
             FROM entities AS e JOIN event_sequences AS s ON s.tenant_number = e.tenant_number
             ORDER BY e.updated_at DESC",
        )
        .fetch_all(pool)
        .await)
        .unwrap();
        assert_eq!(
            entities,
            [
                "x t1 task todo {\"n\":1} ada 2026-11-20 2026-11-22",
                "y t1 contact active {} ada 2026-11-21 2026-11-21",
            ]
        );
        // The timeline's copy is gone (the timeline reads the log), and on SQLite the search
        // index starts over from the log so its dictionary lists every word.
        let timeline_tables: i64 = on_pool!(upgraded, pool => sqlx::query_scalar(match backend {
            Backend::Sqlite => {
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'timeline_items'"
            }
            Backend::Postgres => {
                "SELECT COUNT(*) FROM pg_class WHERE relname = 'timeline_items'"
            }
        })
        .fetch_one(pool)
        .await)
        .unwrap();
        assert_eq!(timeline_tables, 0);
        if backend == Backend::Sqlite {
            let search_position: i64 = on_pool!(upgraded, pool => sqlx::query_scalar(
                "SELECT position FROM projection_checkpoints WHERE projection = 'search'",
            )
            .fetch_one(pool)
            .await)
            .unwrap();
            assert_eq!(search_position, 0);
        }
        upgraded.close().await;
    }
);

#[tokio::test]
async fn an_upgrade_keeps_sqlite_search_documents_under_their_tenants_key() {
    let (database, old) = migrated_to(Backend::Sqlite, 20261127000025).await;
    for statement in [
        "INSERT INTO search_tenants (key, tenant_id) VALUES (3, 't1'), (4, 't2')",
        "INSERT INTO search_documents (id, tenant_id, entity_id, family_code, fields) VALUES
         (7, 't1', 'x', 'task', '{\"n\":1}'), (9, 't2', 'x', 'contact', '{}')",
    ] {
        on_pool!(old, pool => sqlx::query(statement).execute(pool).await.map(drop)).unwrap();
    }
    old.close().await;
    // That migration alone (a later one rebuilds the index from the log, emptying it).
    let upgraded = database.connect().await;
    migrate_to(&upgraded, Backend::Sqlite, 20261127000026).await;
    let documents: Vec<(i64, i64, String, String, String)> =
        on_pool!(upgraded, pool => sqlx::query_as(
        "SELECT id, tenant_key, entity_id, family_code, fields FROM search_documents ORDER BY id",
    )
    .fetch_all(pool)
    .await)
        .unwrap();
    let document = |id, key, family: &str, fields: &str| {
        (
            id,
            key,
            "x".to_owned(),
            family.to_owned(),
            fields.to_owned(),
        )
    };
    // The rowids (the documents' rows in the FTS5 index) and every column are kept.
    assert_eq!(
        documents,
        [
            document(7, 3, "task", "{\"n\":1}"),
            document(9, 4, "contact", "{}"),
        ]
    );
    upgraded.close().await;
}

/// Every event of `database` as the readers see it through the `event_log` view, in log order.
async fn logged_events(database: &Database) -> Vec<tessera_host::core::events::StoredEvent> {
    on_pool!(database, pool => sqlx::query_as(LOGGED_EVENT_COLUMNS).fetch_all(pool).await).unwrap()
}

/// Every event as the readers see it through the `event_log` view, in log order.
const LOGGED_EVENT_COLUMNS: &str = "SELECT position, transaction_id, id, tenant_id, sequence, \
     event_type, entity_id, intention_id, actor_id, correlation_id, depth, data, occurred_at, \
     entity_state FROM event_log ORDER BY position";

database_test!(
    an_upgrade_moves_the_event_log_to_its_compact_layout_and_appends_continue_it,
    |backend| async move {
        use tessera_host::core::events::{self, EventContext, NewEvent, StoredEvent};

        // A log in the layout before the event groups: every shared column on every row.
        let (database, old) = migrated_to(backend, 20261126000017).await;
        on_pool!(old, pool => sqlx::query(
            "INSERT INTO events (id, tenant_id, sequence, event_type, entity_id, intention_id,
             actor_id, correlation_id, depth, data, occurred_at, entity_state) VALUES
             ('ev-1', 'acme', 1, 'entity.created', 'x', 'in-1', 'ada', 'c-1', 0,
              '{\"family\":\"contact\"}', '2026-11-20T10:00:00.000000Z', '{\"state\":1}'),
             ('ev-2', 'acme', 2, 'entity.field_set', 'x', 'in-1', 'ada', 'c-1', 0,
              '{\"field\":\"name\",\"value\":\"Ada\"}', '2026-11-20T10:00:00.000000Z', NULL),
             ('ev-3', 'globex', 1, 'inbox.item_read', NULL, NULL, 'bob', NULL, 2,
              '{}', '2026-11-20T11:00:00.000000Z', NULL)",
        )
        .execute(pool)
        .await
        .map(drop))
        .unwrap();
        on_pool!(old, pool => sqlx::query(
            "INSERT INTO event_sequences (tenant_id, last_sequence) VALUES ('acme', 2), ('globex', 1)",
        )
        .execute(pool)
        .await
        .map(drop))
        .unwrap();
        let before: Vec<StoredEvent> = on_pool!(old, pool => sqlx::query_as(sqlx::AssertSqlSafe(
            LOGGED_EVENT_COLUMNS.replace("event_log", "events"),
        ))
        .fetch_all(pool)
        .await)
        .unwrap();
        assert_eq!(before.len(), 3);
        old.close().await;

        // Upgraded: the readers' view shows every event exactly as it was.
        let upgraded = Database::connect_and_migrate(&database.database_config())
            .await
            .expect("upgrading");
        let upgraded_database = &upgraded;
        let read = || logged_events(upgraded_database);
        assert_eq!(read().await, before);

        // An append continues each tenant's sequence, its shared columns stored once and its
        // entity state read with its first event only.
        let context = EventContext {
            tenant_id: "acme".into(),
            actor_id: Some("grace".into()),
            correlation_id: Some("c-2".into()),
            intention_id: Some("in-2".into()),
            depth: 1,
            traceparent: None,
        };
        let new_event = |event_type: &str, field: &str| NewEvent {
            event_type: event_type.into(),
            entity_id: Some("y".into()),
            data: serde_json::json!({ "field": field })
                .as_object()
                .unwrap()
                .clone(),
        };
        let appended_events = [
            new_event("entity.created", "a"),
            new_event("entity.field_set", "b"),
        ];
        let group = events::AppendGroup {
            context: &context,
            events: &appended_events,
            occurred_at: "2026-11-21T09:00:00.000000Z",
            entity_state: Some("{\"state\":2}"),
        };
        let globex = EventContext {
            tenant_id: "globex".into(),
            ..EventContext::default()
        };
        let lone = [new_event("inbox.item_read", "c")];
        let other = events::AppendGroup {
            context: &globex,
            events: &lone,
            occurred_at: "2026-11-21T09:00:01.000000Z",
            entity_state: None,
        };
        let mut tx = upgraded.begin().await.unwrap();
        let assigned = events::append_groups(&mut tx, &[group, other])
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let sequences: Vec<Vec<i64>> = assigned
            .iter()
            .map(|group| group.iter().map(|event| event.sequence).collect())
            .collect();
        assert_eq!(sequences, [vec![3, 4], vec![2]]);

        let after = read().await;
        assert_eq!(after[..3], before[..]);
        let appended: Vec<_> = after[3..]
            .iter()
            .map(|event| {
                (
                    event.tenant_id.as_str(),
                    event.sequence,
                    event.event_type.as_str(),
                    event.intention_id.as_deref(),
                    event.actor_id.as_deref(),
                    event.correlation_id.as_deref(),
                    event.depth,
                    event.occurred_at.as_str(),
                    event.entity_state.as_deref(),
                )
            })
            .collect();
        let time = "2026-11-21T09:00:00.000000Z";
        assert_eq!(
            appended,
            [
                (
                    "acme",
                    3,
                    "entity.created",
                    Some("in-2"),
                    Some("grace"),
                    Some("c-2"),
                    1,
                    time,
                    Some("{\"state\":2}")
                ),
                (
                    "acme",
                    4,
                    "entity.field_set",
                    Some("in-2"),
                    Some("grace"),
                    Some("c-2"),
                    1,
                    time,
                    None
                ),
                (
                    "globex",
                    2,
                    "inbox.item_read",
                    None,
                    None,
                    None,
                    0,
                    "2026-11-21T09:00:01.000000Z",
                    None
                ),
            ]
        );
        // The events' ids and entity are their group's: the ids the append returned, one
        // prefix per group ending in the event's offset, and no copy on the event rows.
        let read_ids: Vec<&str> = after[3..].iter().map(|event| event.id.as_str()).collect();
        let assigned_ids: Vec<&str> = assigned
            .iter()
            .flatten()
            .map(|event| event.id.as_str())
            .collect();
        assert_eq!(read_ids, assigned_ids);
        assert_eq!(read_ids[0][..32], read_ids[1][..32]);
        assert_ne!(read_ids[0][..32], read_ids[2][..32]);
        assert_eq!(
            [&read_ids[0][32..], &read_ids[1][32..], &read_ids[2][32..]],
            ["0000", "0001", "0000"]
        );
        assert!(read_ids.iter().all(|id| uuid::Uuid::parse_str(id).is_ok()));
        let entities: Vec<Option<&str>> = after[3..]
            .iter()
            .map(|event| event.entity_id.as_deref())
            .collect();
        assert_eq!(entities, [Some("y"); 3]);
        let group_offsets: Vec<i64> = on_pool!(upgraded, pool => sqlx::query_scalar(
            "SELECT group_offset FROM event_log ORDER BY position",
        )
        .fetch_all(pool)
        .await)
        .unwrap();
        assert_eq!(group_offsets, [0, 0, 0, 0, 1, 0]);
        let stored_copies: i64 = on_pool!(upgraded, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM events WHERE id IS NOT NULL OR entity_id IS NOT NULL",
        )
        .fetch_one(pool)
        .await)
        .unwrap();
        assert_eq!(
            stored_copies, 3,
            "only the rows from before the upgrade name their own"
        );
        // Two groups for three events: what they share is stored once.
        let groups: i64 = on_pool!(upgraded, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM event_groups",
        )
        .fetch_one(pool)
        .await)
        .unwrap();
        assert_eq!(groups, 3 + 2);
        upgraded.close().await;
    }
);

database_test!(
    an_upgrade_numbers_event_types_and_appends_take_event_ids_from_their_intention,
    |backend| async move {
        use tessera_host::core::events::{self, EventContext, NewEvent, StoredEvent};

        // A log with every type as text and every group's prefix stored.
        let (database, old) = migrated_to(backend, 20261127000026).await;
        on_pool!(old, pool => sqlx::query(
            "INSERT INTO event_sequences (tenant_id, last_sequence) VALUES ('acme', 2)",
        )
        .execute(pool)
        .await
        .map(drop))
        .unwrap();
        on_pool!(old, pool => sqlx::query(
            "INSERT INTO event_groups (tenant_number, first_sequence, intention_id, actor_id,
             correlation_id, depth, occurred_at, entity_id, event_id_prefix, event_count)
             SELECT tenant_number, 1, 'in-1', 'ada', 'c-1', 0, '2026-11-20T10:00:00.000000Z', 'x',
                    '0190f0a0-0000-7000-8000-00000000', 2
             FROM event_sequences WHERE tenant_id = 'acme'",
        )
        .execute(pool)
        .await
        .map(drop))
        .unwrap();
        on_pool!(old, pool => sqlx::query(
            "INSERT INTO events (tenant_number, sequence, group_offset, event_type, data)
             SELECT tenant_number, 1, 0, 'entity.created', '{\"family\":\"contact\"}'
             FROM event_sequences WHERE tenant_id = 'acme'
             UNION ALL
             SELECT tenant_number, 2, 1, 'entity.field_set', '{\"field\":\"name\",\"value\":\"Ada\"}'
             FROM event_sequences WHERE tenant_id = 'acme'",
        )
        .execute(pool)
        .await
        .map(drop))
        .unwrap();
        let before: Vec<StoredEvent> = on_pool!(old, pool => sqlx::query_as(LOGGED_EVENT_COLUMNS)
            .fetch_all(pool)
            .await)
        .unwrap();
        assert_eq!(before.len(), 2);
        assert_eq!(before[1].id, "0190f0a0-0000-7000-8000-000000000001");
        old.close().await;

        let upgraded = Database::connect_and_migrate(&database.database_config())
            .await
            .expect("upgrading");
        let upgraded_database = &upgraded;
        let read = || logged_events(upgraded_database);
        assert_eq!(read().await, before, "the log reads as it did");

        // An intention of this host (a UUID v7 id): its events' ids are the intention's first
        // 32 characters and their offset; its group stores no prefix, its rows a type number.
        let intention_id = uuid::Uuid::now_v7().to_string();
        let context = EventContext {
            tenant_id: "acme".into(),
            actor_id: Some("grace".into()),
            correlation_id: Some("c-2".into()),
            intention_id: Some(intention_id.clone()),
            depth: 0,
            traceparent: None,
        };
        let new_event = |event_type: &str| NewEvent {
            event_type: event_type.into(),
            entity_id: Some("y".into()),
            data: serde_json::Map::new(),
        };
        let appended = [
            new_event("entity.created"),
            new_event("entity.field_set"),
            new_event("entity.status_changed"),
        ];
        let mut tx = upgraded.begin().await.unwrap();
        let assigned = events::append(&mut tx, &context, &appended, "2026-11-21T09:00:00.000000Z")
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let after = read().await;
        assert_eq!(after[..2], before[..]);
        let read_back: Vec<(&str, &str)> = after[2..]
            .iter()
            .map(|event| (event.id.as_str(), event.event_type.as_str()))
            .collect();
        let expected_ids: Vec<String> = (0..3)
            .map(|offset| format!("{}000{offset}", &intention_id[..32]))
            .collect();
        assert_eq!(
            read_back,
            [
                (expected_ids[0].as_str(), "entity.created"),
                (expected_ids[1].as_str(), "entity.field_set"),
                (expected_ids[2].as_str(), "entity.status_changed"),
            ]
        );
        let assigned_ids: Vec<&str> = assigned.iter().map(|event| event.id.as_str()).collect();
        assert_eq!(assigned_ids, expected_ids);
        let stored_prefixes: Vec<Option<String>> = on_pool!(upgraded, pool => sqlx::query_scalar(
            "SELECT event_id_prefix FROM event_groups ORDER BY first_sequence",
        )
        .fetch_all(pool)
        .await)
        .unwrap();
        assert_eq!(
            stored_prefixes,
            [Some("0190f0a0-0000-7000-8000-00000000".to_owned()), None]
        );
        // Each type is numbered once: the host's own ahead, a new one when first appended.
        let types = || async move {
            on_pool!(upgraded_database, pool => sqlx::query_scalar::<_, String>(
                "SELECT name FROM event_types ORDER BY type_number",
            )
            .fetch_all(pool)
            .await)
            .unwrap()
        };
        let host_types = types().await;
        assert_eq!(host_types, events::HOST_EVENT_TYPES);
        let numbers: Vec<i64> = on_pool!(upgraded, pool => sqlx::query_scalar(
            "SELECT CAST(type_number AS BIGINT) FROM event_types ORDER BY type_number",
        )
        .fetch_all(pool)
        .await)
        .unwrap();
        assert_eq!(
            numbers,
            [1, 2, 3, 4, 5, 6, 7],
            "the host binds these numbers"
        );
        let next = EventContext {
            intention_id: Some(uuid::Uuid::now_v7().to_string()),
            ..context.clone()
        };
        let mut tx = upgraded.begin().await.unwrap();
        events::append(
            &mut tx,
            &next,
            &[new_event("chat.mentioned"), new_event("entity.created")],
            "2026-11-21T09:00:01.000000Z",
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let mut with_new = host_types.clone();
        with_new.push("chat.mentioned".to_owned());
        assert_eq!(types().await, with_new);
        let newest = read().await.pop().unwrap();
        assert_eq!(newest.event_type, "entity.created");
        let before_last = &read().await[5];
        assert_eq!(before_last.event_type, "chat.mentioned");

        // Field events store their values alone; the log gives their object back.
        let with_data = |event_type: &str, data: serde_json::Value| NewEvent {
            event_type: event_type.into(),
            entity_id: Some("y".into()),
            data: data.as_object().unwrap().clone(),
        };
        let field_events = [
            with_data(
                "entity.field_set",
                serde_json::json!({"field": "city", "value": {"name": "Lon\"don", "n": [1, 2.5]}}),
            ),
            with_data(
                "entity.field_updated",
                serde_json::json!({"field": "city", "old_value": "London", "new_value": null}),
            ),
        ];
        let third = EventContext {
            intention_id: Some(uuid::Uuid::now_v7().to_string()),
            ..context.clone()
        };
        let mut tx = upgraded.begin().await.unwrap();
        events::append(
            &mut tx,
            &third,
            &field_events,
            "2026-11-21T09:00:02.000000Z",
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let stored: Vec<String> = on_pool!(upgraded, pool => sqlx::query_scalar(
            "SELECT data FROM events ORDER BY position DESC LIMIT 2",
        )
        .fetch_all(pool)
        .await)
        .unwrap();
        assert_eq!(
            stored,
            [
                r#"["city","London",null]"#,
                r#"["city",{"name":"Lon\"don","n":[1,2.5]}]"#
            ]
        );
        let logged = read().await;
        let logged_data: Vec<serde_json::Value> = logged[logged.len() - 2..]
            .iter()
            .map(|event| serde_json::Value::Object(event.data().unwrap()))
            .collect();
        let appended_data: Vec<serde_json::Value> = field_events
            .iter()
            .map(|event| serde_json::Value::Object(event.data.clone()))
            .collect();
        assert_eq!(logged_data, appended_data);
        upgraded.close().await;
    }
);

database_test!(
    compact_ids_and_times_read_back_as_they_were_written,
    |backend| async move {
        use tessera_host::storage::compact::{IdText, StoredId, StoredTime, TimeText};

        let database = TestDatabase::new(backend).await;
        let handle = Database::connect_and_migrate(&database.database_config())
            .await
            .unwrap();
        let values = [
            (
                "0195f3a2-7c41-7d2e-9f10-3b5c6d7e8f90",
                "2026-11-27T21:56:48.123456Z",
                true,
            ),
            // Not canonical: kept as text, so they read back exactly.
            (
                "0195F3A2-7C41-7D2E-9F10-3B5C6D7E8F90",
                "2026-11-27T21:56:48Z",
                false,
            ),
            ("ada", "2026-11-20", false),
        ];
        for (id, time, compact) in values {
            let (id_type, time_type, id_back, time_back): (String, String, IdText, TimeText) =
                on_pool!(handle, pool => {
                    let sql = match backend {
                        Backend::Sqlite => "SELECT typeof($1), typeof($2), $1, $2",
                        Backend::Postgres => "SELECT 'text', 'text', $1::text, $2::text",
                    };
                    sqlx::query_as(sql)
                        .bind(StoredId(id))
                        .bind(StoredTime(time))
                        .fetch_one(pool)
                        .await
                })
                .unwrap();
            assert_eq!((id_back.0.as_str(), time_back.0.as_str()), (id, time));
            let expected = match (backend, compact) {
                (Backend::Sqlite, true) => ("blob", "integer"),
                _ => ("text", "text"),
            };
            assert_eq!(
                (id_type.as_str(), time_type.as_str()),
                expected,
                "{id} {time}"
            );
        }
        handle.close().await;
    }
);
