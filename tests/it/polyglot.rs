//! Engines written in Python and JavaScript: the kits' example engines
//! (`engines/pynotes`, built with componentize-py; `engines/jsnotes`, built with
//! componentize-js) dropped into a running host beside the seven Rust engines, provisioned, and
//! driven through the host: routes, storage, cursor paging, validation, an operator setting, an
//! event each way, a job, the OpenAPI document and the engine list; a swap of the Python engine
//! while clients call it; and the Python guest's WASI imports, which link but grant nothing,
//! and its instances, which start from the build's pre-initialised snapshot and serve calls in
//! turn when the host keeps them warm. And the Python and
//! JavaScript test kits against the host: the scenario of `test_kit.rs` through a conformance
//! engine in each language (`tests/polyglot/{py,js}conformance`) on a real host and through
//! the kit's fakes, equal.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tessera_host::config::{Config, Secret};

use crate::components::{
    ENGINES, POLYGLOT_ENGINES, install, install_engines, install_polyglot_engines, repository,
    target_dir,
};
use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, assert_engine_documented, eventually,
    json_with_status, observe_events, observed_events, spawn_app_with, without_rate_limits,
};

/// The engine code the test subscribes to the examples' events: no such engine is loaded, so
/// each delivery stays in `engine_work` for the test to read.
const OBSERVER: &str = "polyglot-observer";
/// The operator's `max-title-length` for both examples (their default is 200).
const MAX_TITLE_LENGTH: &str = "12";

/// A host with the seven Rust engines, no rate limits and the examples' setting, and a tenant
/// created through the admin CLI (with its default families) before the Python and JavaScript
/// engines are dropped in.
async fn polyglot_host(backend: Backend) -> (TestApp, String) {
    let database = TestDatabase::new(backend).await;
    install_engines(&database.data_dir.join("plugins"), &ENGINES);
    let configure = |config: &mut Config| {
        without_rate_limits(config);
        for code in POLYGLOT_ENGINES {
            config
                .engine_settings
                .entry(code.into())
                .or_default()
                .insert(
                    "max-title-length".into(),
                    Secret::new(MAX_TITLE_LENGTH.into()),
                );
        }
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
    observe_events(&app, OBSERVER, &["pynotes.note.*", "jsnotes.note.*"]);
    let tenant_id = app.create_tenant("acme");

    // Dropped into the running host, as an operator would.
    let staging = app.database.data_dir.join("staging");
    install_polyglot_engines(&staging, &POLYGLOT_ENGINES);
    for code in POLYGLOT_ENGINES {
        let file = format!("{code}.wasm");
        std::fs::rename(
            staging.join(&file),
            app.database.data_dir.join("plugins").join(&file),
        )
        .unwrap();
    }
    for code in POLYGLOT_ENGINES {
        crate::engines::wait_for_engine(&app, code, true).await;
    }
    let provisioned = json_with_status(
        app.post_signed(
            "/core/api/internal/orchestration/provision/tenant",
            &json!({ "tenant_id": tenant_id, "tenant_short_id": "acme", "name": "Acme" }),
        )
        .await,
        202,
    )
    .await;
    assert_eq!(provisioned["data"]["status"], "completed", "{provisioned}");
    for code in POLYGLOT_ENGINES {
        assert_eq!(
            provisioned["data"]["engines"][code]["status"], "provisioned",
            "{code}: {provisioned}"
        );
    }
    (app, tenant_id)
}

/// The scenario both examples must pass, through the host.
async fn exercise(app: &TestApp, tenant_id: &str, code: &str, owner: &str, viewer: &str) {
    let notes = format!("/{code}/api/v1/notes");

    // Storage, and the job the host runs: the note's word count.
    let created = json_with_status(
        app.post_as(
            &notes,
            owner,
            &json!({"title": "First", "body": "one two  three"}),
        )
        .await,
        201,
    )
    .await["data"]
        .clone();
    assert_eq!(created["title"], "First", "{code}: {created}");
    assert_eq!(created["body"], "one two  three");
    assert!(created["word_count"].is_null(), "{code}: {created}");
    assert!(created["created_at"].as_str().unwrap().ends_with('Z'));
    let note_path = format!("{notes}/{}", created["id"].as_str().unwrap());
    let counted = eventually(30, "the word-count job to run", || async {
        let note = json_with_status(app.get_as(&note_path, viewer).await, 200).await;
        note["data"]["word_count"].as_u64()
    })
    .await;
    assert_eq!(counted, 3, "{code}");

    // Validation, with the operator's setting: refused calls keep nothing.
    let refused = json_with_status(
        app.post_as(&notes, owner, &json!({"title": " ", "body": 5}))
            .await,
        422,
    )
    .await;
    assert_eq!(
        refused,
        json!({
            "message": "The given data was invalid.",
            "errors": {"body": ["string"], "title": ["required"]},
        }),
        "{code}"
    );
    let too_long = json_with_status(
        app.post_as(&notes, owner, &json!({"title": "thirteen char"}))
            .await,
        422,
    )
    .await;
    assert_eq!(
        too_long["errors"],
        json!({"title": [format!("max:{MAX_TITLE_LENGTH}")]}),
        "{code}"
    );

    // Cursor paging, oldest first, through the host.
    let mut ids = vec![created["id"].as_str().unwrap().to_owned()];
    for index in 2..=5 {
        let note = json_with_status(
            app.post_as(&notes, owner, &json!({"title": format!("Note {index}")}))
                .await,
            201,
        )
        .await;
        ids.push(note["data"]["id"].as_str().unwrap().to_owned());
    }
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(cursor) => format!("{notes}?limit=2&cursor={cursor}"),
            None => format!("{notes}?limit=2"),
        };
        let page = json_with_status(app.get_as(&path, viewer).await, 200).await;
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= 2, "{code}: {page}");
        listed.extend(
            data.iter()
                .map(|note| note["id"].as_str().unwrap().to_owned()),
        );
        if page["meta"]["has_more"] != true {
            break;
        }
        cursor = Some(page["meta"]["next_cursor"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        listed, ids,
        "{code}: the pages hold every note once, in order"
    );
    json_with_status(
        app.get_as(&format!("{notes}?colour=red"), viewer).await,
        400,
    )
    .await;
    let wrong_method = app.put_as(&notes, owner, "{}").await;
    assert_eq!(wrong_method.status(), 405, "{code}");
    assert_eq!(wrong_method.headers()["allow"], "GET, POST", "{code}");

    // An event it publishes: committed with the note, delivered to its subscribers.
    let published = eventually(30, "the published events", || async {
        let events = observed_events(app, OBSERVER, Some(tenant_id)).await;
        let mine: Vec<Value> = events
            .into_iter()
            .filter(|(event_type, _)| *event_type == format!("{code}.note.created"))
            .map(|(_, payload)| payload)
            .collect();
        (mine.len() == ids.len()).then_some(mine)
    })
    .await;
    assert!(
        published.contains(&json!({"note_id": ids[0], "title": "First"})),
        "{code}: {published:?}"
    );

    // An event it consumes: the core's `entity.created` (one entity created before), counted
    // once.
    let stats = format!("/{code}/api/v1/stats");
    let seen = eventually(30, "the entity.created delivery", || async {
        let body = json_with_status(app.get_as(&stats, viewer).await, 200).await;
        (body["data"]["entities_seen"].as_u64() >= Some(1)).then_some(body)
    })
    .await;
    assert_eq!(
        seen["data"],
        json!({"notes_created": 5, "entities_seen": 1}),
        "{code}: five notes created (the refused ones not counted), the entity seen once"
    );

    // Deletion (an audited operation: in the tenant's audit trail), and the kit's 404.
    assert_eq!(app.delete_as(&note_path, owner).await.status(), 204);
    let gone = json_with_status(app.get_as(&note_path, viewer).await, 404).await;
    assert_eq!(gone, json!({"message": "Note not found."}), "{code}");
    let trail = json_with_status(
        app.get_as(
            &format!("/auth/api/v1/audit?event={code}.note.deleted"),
            owner,
        )
        .await,
        200,
    )
    .await;
    let entries = trail["data"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{code}: {trail}");
    assert_eq!(entries[0]["engine"], code);
    assert_eq!(entries[0]["details"]["status"], 204, "{code}: {trail}");
    assert_eq!(
        entries[0]["details"]["parameters"]["note_id"],
        ids[0].as_str(),
        "{code}: {trail}"
    );
}

database_test!(
    python_and_javascript_engines_serve_beside_the_rust_engines,
    |backend| async move {
        let (app, tenant_id) = polyglot_host(backend).await;
        let owner = app
            .token(&tenant_id, &uuid::Uuid::new_v4().to_string(), "owner")
            .await;
        let viewer = app
            .token(&tenant_id, &uuid::Uuid::new_v4().to_string(), "viewer")
            .await;
        app.create_entity(&owner, "task", json!({"title": "Seen by both"}))
            .await;
        for code in POLYGLOT_ENGINES {
            exercise(&app, &tenant_id, code, &owner, &viewer).await;
        }

        // Every engine active, in one list.
        let listed = json_with_status(app.get("/core/api/v1/engines").await, 200).await;
        for code in ENGINES.iter().chain(POLYGLOT_ENGINES.iter()) {
            let engine = listed["data"]
                .as_array()
                .unwrap()
                .iter()
                .find(|engine| engine["code"] == *code)
                .unwrap_or_else(|| panic!("{code} is listed: {listed}"));
            assert_eq!(engine["is_active"], true, "{code}");
        }

        // Their API in the host's document, and their settings as the operator set them.
        let document = json_with_status(app.get("/api/openapi.json").await, 200).await;
        for code in POLYGLOT_ENGINES {
            let notes = format!("/{code}/api/v1/notes");
            let note = format!("/{code}/api/v1/notes/{{note_id}}");
            let stats = format!("/{code}/api/v1/stats");
            assert_engine_documented(
                &document,
                code,
                &[
                    ("get", &notes),
                    ("post", &notes),
                    ("get", &note),
                    ("delete", &note),
                    ("get", &stats),
                ],
                &[
                    &format!("{code}.Note"),
                    &format!("{code}.NewNote"),
                    &format!("{code}.Stats"),
                ],
            );
            let create = &document["paths"][&notes]["post"];
            assert_eq!(create["operationId"], format!("{code}.post_api_v1_notes"));
            assert_eq!(
                document["paths"][&note]["delete"]["x-tessera-audit"],
                format!("{code}.note.deleted"),
                "the audited operation, named in full"
            );
            assert_eq!(
                create["requestBody"]["content"]["application/json"]["schema"]["$ref"],
                format!("#/components/schemas/{code}.NewNote")
            );
            for status in [
                "201", "400", "401", "403", "404", "422", "429", "502", "503",
            ] {
                assert!(create["responses"][status].is_object(), "{code} {status}");
            }
            let details = json_with_status(
                app.get_as(&format!("/core/api/v1/engines/{code}"), &owner)
                    .await,
                200,
            )
            .await;
            assert_eq!(details["data"]["operations"], 5, "{code}: {details}");
            assert_eq!(details["data"]["settings"][0]["name"], "max-title-length");
            assert_eq!(details["data"]["settings"][0]["value"], MAX_TITLE_LENGTH);
            assert_eq!(details["data"]["settings"][0]["default_value"], "200");
        }
        app.stop().await;
    }
);

/// Calls of one client one after another: each runs on the instance the last one gave back
/// (`warm_instances.rs`), past the default of 1000 calls an instance serves.
const CALLS_IN_TURN: usize = 1_200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_example_serves_its_calls_on_a_warm_instance_one_after_another() {
    let (app, tenant_id) = polyglot_host(Backend::Sqlite).await;
    let owner = app
        .token(&tenant_id, &uuid::Uuid::new_v4().to_string(), "owner")
        .await;
    for code in POLYGLOT_ENGINES {
        let notes = format!("/{code}/api/v1/notes");
        let created = json_with_status(
            app.post_as(&notes, &owner, &json!({"title": "Warm", "body": "kept"}))
                .await,
            201,
        )
        .await;
        let note_path = format!("{notes}/{}", created["data"]["id"].as_str().unwrap());
        for call in 0..CALLS_IN_TURN {
            let read = json_with_status(app.get_as(&note_path, &owner).await, 200).await;
            assert_eq!(read["data"]["title"], "Warm", "{code}, call {call}: {read}");
            // Now and then a refusal and a write, which must not disturb the instance either.
            if call % 100 == 0 {
                json_with_status(app.get_as(&format!("{notes}?limit=0"), &owner).await, 422).await;
                json_with_status(
                    app.post_as(&notes, &owner, &json!({"title": format!("n{call}")}))
                        .await,
                    201,
                )
                .await;
            }
        }
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_swap_of_the_python_engine_under_load_loses_no_request() {
    let (app, tenant_id) = polyglot_host(Backend::Sqlite).await;
    let owner = app
        .token(&tenant_id, &uuid::Uuid::new_v4().to_string(), "owner")
        .await;
    json_with_status(
        app.post_as("/pynotes/api/v1/notes", &owner, &json!({"title": "Kept"}))
            .await,
        201,
    )
    .await;
    let before = app.state().engines.get("pynotes").unwrap().sha256.clone();

    // Clients read and write all through the swap.
    let running = Arc::new(AtomicBool::new(true));
    let clients: Vec<_> = (0..4)
        .map(|client_index| {
            let (client, url, token, running) = (
                reqwest::Client::new(),
                app.url("/pynotes/api/v1/notes"),
                owner.clone(),
                running.clone(),
            );
            tokio::spawn(async move {
                let mut answers = Vec::new();
                let mut round = 0;
                while running.load(Ordering::Relaxed) {
                    round += 1;
                    let answer = if round % 2 == 0 {
                        client
                            .get(format!("{url}?limit=5"))
                            .bearer_auth(&token)
                            .send()
                            .await
                    } else {
                        let title = format!("c{client_index} r{round}");
                        client
                            .post(&url)
                            .bearer_auth(&token)
                            .json(&json!({ "title": title }))
                            .send()
                            .await
                    };
                    answers.push(
                        answer
                            .map(|answer| answer.status().as_u16())
                            .map_err(|e| e.to_string()),
                    );
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                answers
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    // A new build of the engine (the same code, other bytes: a custom section appended),
    // renamed into place as `cargo xtask dev` does.
    let plugins = app.database.data_dir.join("plugins");
    let mut bytes = std::fs::read(plugins.join("pynotes.wasm")).unwrap();
    let name = b"tessera-test-build";
    let payload = b"2";
    bytes.push(0); // a custom section
    bytes.push(u8::try_from(1 + name.len() + payload.len()).unwrap());
    bytes.push(u8::try_from(name.len()).unwrap());
    bytes.extend_from_slice(name);
    bytes.extend_from_slice(payload);
    let staging = app.database.data_dir.join("pynotes.wasm.partial");
    std::fs::write(&staging, &bytes).unwrap();
    std::fs::rename(&staging, plugins.join("pynotes.wasm")).unwrap();
    eventually(120, "the new build to be served", || async {
        let now = app.state().engines.get("pynotes")?.sha256.clone();
        (now != before).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    running.store(false, Ordering::Relaxed);

    let mut answers = Vec::new();
    for client in clients {
        answers.extend(client.await.unwrap());
    }
    let lost: Vec<_> = answers
        .iter()
        .filter(|answer| !matches!(answer, Ok(200 | 201)))
        .collect();
    assert!(answers.len() > 20, "the clients ran: {}", answers.len());
    assert!(lost.is_empty(), "requests lost through the swap: {lost:?}");
    let created = answers
        .iter()
        .filter(|answer| matches!(answer, Ok(201)))
        .count();
    let stats = json_with_status(app.get_as("/pynotes/api/v1/stats", &owner).await, 200).await;
    assert_eq!(
        stats["data"]["notes_created"],
        created + 1,
        "every acknowledged note was kept through the swap"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_guests_wasi_imports_link_but_grant_nothing_and_it_starts_pre_initialised() {
    let database = TestDatabase::new(Backend::Sqlite).await;
    install_polyglot_engines(&database.data_dir.join("plugins"), &["pyprobe"]);
    let installed_at_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            database: Some(database),
            ..AppOptions::default()
        },
    )
    .await;
    crate::engines::wait_for_engine(&app, "pyprobe", true).await;
    // The host's own environment has variables and files the guest must not see.
    assert!(std::path::Path::new("/etc/passwd").is_file());
    let token = app
        .token(
            &uuid::Uuid::new_v4().to_string(),
            &uuid::Uuid::new_v4().to_string(),
            "viewer",
        )
        .await;
    let attempts = json_with_status(app.get_as("/pyprobe/api/v1/attempts", &token).await, 200)
        .await["data"]
        .clone();
    for attempt in [
        "read_file",
        "list_root",
        "list_cwd",
        "write_file",
        "connect",
        "resolve",
    ] {
        let outcome = attempts[attempt].as_str().unwrap();
        assert!(
            outcome.starts_with("refused: "),
            "{attempt} must be refused: {outcome}"
        );
    }
    assert_eq!(attempts["environment"], json!({}), "an empty environment");
    assert_eq!(attempts["arguments"], json!([]), "no arguments");
    assert!(!std::path::Path::new("/tmp/pyprobe-was-here").exists());

    // Instances start from componentize-py's pre-initialised snapshot: the module's top level
    // ran when the component was built, not again in each instance.
    let initialised_at_ns = attempts["initialised_at_ns"].as_u64().unwrap();
    assert!(
        u128::from(initialised_at_ns) < installed_at_ns,
        "initialised at {initialised_at_ns}, after the component was installed ({installed_at_ns})"
    );
    let again = json_with_status(app.get_as("/pyprobe/api/v1/attempts", &token).await, 200).await;
    assert_eq!(again["data"]["initialised_at_ns"], initialised_at_ns);
    app.stop().await;
}

/// The transcript of `steps` through a kit's test kit: `runner` (a conformance engine's
/// `run_fake` script) reads the scenario file and writes the transcript file it is given.
fn through_a_test_kit(
    mut runner: std::process::Command,
    steps: &[Value],
    scratch: &std::path::Path,
) -> Vec<Value> {
    let scenario = scratch.join("scenario.json");
    let transcript = scratch.join("transcript.json");
    let settings = json!({
        "storage.scan-page": crate::test_kit::SCAN_PAGE.to_string(),
        "storage.scan-budget": crate::test_kit::SCAN_BUDGET.to_string(),
    });
    std::fs::write(
        &scenario,
        json!({ "settings": settings, "steps": steps }).to_string(),
    )
    .unwrap();
    let output = runner
        .env("TESSERA_CONFORMANCE_SCENARIO", &scenario)
        .env("TESSERA_CONFORMANCE_TRANSCRIPT", &transcript)
        .output()
        .unwrap_or_else(|error| panic!("running {runner:?}: {error}"));
    assert!(
        output.status.success(),
        "the scenario through the test kit ({runner:?}) failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&transcript).unwrap()).unwrap()
}

/// The scenario of `test_kit.rs` through the conformance engine `code` on a real host (with
/// the operator's scan page and budget) and through its kit's fakes (`runner`): equal.
async fn a_kit_answers_the_scenario_as_the_host_does(
    backend: Backend,
    code: &str,
    runner: std::process::Command,
) {
    let steps = crate::test_kit::scenario();
    let database = TestDatabase::new(backend).await;
    let plugins = database.data_dir.join("plugins");
    install_polyglot_engines(&plugins, &[code]);
    install(&plugins, &["listener"]);
    let app = spawn_app_with(
        backend,
        AppOptions {
            database: Some(database),
            configure: Some(Box::new(|config| {
                config.engine_scans.page = crate::test_kit::SCAN_PAGE;
                config.engine_scans.budget = crate::test_kit::SCAN_BUDGET;
            })),
            ..AppOptions::default()
        },
    )
    .await;
    let fake = through_a_test_kit(runner, &steps, &app.database.data_dir);
    // Not vacuous: the kit keeps the contract (as the Rust kit's checks in test_kit.rs).
    assert_eq!(
        fake[2]["body"]["data"][0],
        json!([null, null, null]),
        "{code}: a 422 keeps nothing"
    );
    assert_eq!(
        fake[4]["body"]["data"][0],
        json!(["1", "held", null]),
        "{code}"
    );
    assert_eq!(
        fake[13]["body"]["data"][11],
        json!({ "error": true }),
        "{code}: budget exhausted"
    );
    assert_eq!(fake[steps.len()], json!({ "published": [2] }), "{code}");

    let real = crate::test_kit::host_transcript(&app, &steps, code).await;
    for (index, (real, fake)) in real.iter().zip(&fake).enumerate() {
        assert_eq!(
            real, fake,
            "{code}, step {index}: the host (left) and the test kit (right)"
        );
    }
    assert_eq!(real.len(), fake.len());
    app.stop().await;
}

database_test!(
    the_python_test_kit_answers_the_scenario_exactly_as_the_host_does,
    |backend| async move {
        let engine = repository().join("tests/polyglot/pyconformance");
        let python_path =
            std::env::join_paths([engine.clone(), repository().join("sdk/python")]).unwrap();
        // The toolchain's interpreter, installed by `cargo xtask build-engines`.
        let mut runner =
            std::process::Command::new(target_dir().join("polyglot/python-venv/bin/python"));
        runner
            .arg(engine.join("run_fake.py"))
            .env("PYTHONPATH", python_path)
            .env("PYTHONDONTWRITEBYTECODE", "1");
        a_kit_answers_the_scenario_as_the_host_does(backend, "pyconformance", runner).await;
    }
);

database_test!(
    the_javascript_test_kit_answers_the_scenario_exactly_as_the_host_does,
    |backend| async move {
        let mut runner = std::process::Command::new("node");
        runner.arg(repository().join("tests/polyglot/jsconformance/run_fake.js"));
        a_kit_answers_the_scenario_as_the_host_does(backend, "jsconformance", runner).await;
    }
);
