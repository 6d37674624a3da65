//! Sandbox limits an operator sets (`TESSERA_ENGINE_<LIMIT>`,
//! `TESSERA_ENGINE_LIMITS__<CODE>__<LIMIT>`): a component over a limit is refused at load with a
//! message naming the limit, its figure and the setting to change, while the other engines of
//! the plugins dir keep serving; raised, the same component loads and serves. Per engine also:
//! the `handle` deadline, and a cap on the engine's calls alive at once (503 with
//! `Retry-After` beyond it, other engines unaffected).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tessera_host::config::Config;
use tessera_host::runtime::component_limits::{ComponentFigures, EngineLimits};

use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, json_with_status, spawn_app_with,
};

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A host whose plugins dir holds the real `notes` engine and the test component `echo`,
/// configured by `configure`. Returns it with the path of `notes.wasm` in its plugins dir.
async fn notes_and_echo(
    configure: impl FnOnce(&mut Config) + Send + 'static,
) -> (TestApp, PathBuf) {
    let database = TestDatabase::new(Backend::Sqlite).await;
    let plugins = database.data_dir.join("plugins");
    crate::components::install_engines(&plugins, &["notes"]);
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            plugins: vec!["echo"],
            database: Some(database),
            ..AppOptions::unlimited_and(configure)
        },
    )
    .await;
    (app, plugins.join("notes.wasm"))
}

/// The figures of the built `notes` engine, as the host reads them.
fn notes_figures() -> ComponentFigures {
    let directory = std::env::temp_dir().join(format!("tessera-figures-{}", uuid()));
    crate::components::install_engines(&directory, &["notes"]);
    let bytes = std::fs::read(directory.join("notes.wasm")).unwrap();
    let _ = std::fs::remove_dir_all(&directory);
    ComponentFigures::of(&bytes).expect("the notes engine's figures")
}

/// Whether the engine `code` is loaded and answers a request (not a 404 of the host).
async fn serves(app: &TestApp, code: &str, path: &str) -> bool {
    if app.state().engines.get(code).is_none() {
        return false;
    }
    let token = app.token(&uuid(), &uuid(), "editor").await;
    app.get_as(path, &token).await.status().as_u16() == 200
}

/// The engine list's `is_active` of `code` (`None`: never recorded).
async fn listed_active(app: &TestApp, code: &str) -> Option<bool> {
    let token = app.token(&uuid(), &uuid(), "viewer").await;
    let list = json_with_status(app.get_as("/core/api/v1/engines", &token).await, 200).await;
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|engine| engine["code"] == code)
        .map(|engine| engine["is_active"].as_bool().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_over_its_engines_limit_is_refused_by_name_and_loads_once_raised() {
    let figures = notes_figures();
    assert!(figures.complete, "{figures:?}");
    assert!(
        figures.core_instances >= 2,
        "the test lowers the limit below the figure: {figures:?}"
    );
    let needs = figures.core_instances;
    let below = u32::try_from(needs - 1).unwrap();

    // The limit of the notes engine alone, below its figure: notes is refused, echo serves.
    let (app, notes) = notes_and_echo(move |config| {
        config.runtime.engine_limits.insert(
            "notes".into(),
            EngineLimits {
                max_core_instances: Some(below),
                ..EngineLimits::default()
            },
        );
    })
    .await;
    assert!(!serves(&app, "notes", "/notes/api/v1/notes").await);
    assert!(serves(&app, "echo", "/echo/api/v1/echo").await);
    assert_eq!(listed_active(&app, "notes").await, None);
    // The refusal the loader logged, as the registry gives it.
    let refused = app.state().engines.load_file(&notes).await.unwrap_err();
    assert_eq!(
        format!("{refused:#}"),
        format!(
            "notes.wasm needs {needs} core instances per component; the limit is {below} \
             (TESSERA_ENGINE_LIMITS__NOTES__MAX_CORE_INSTANCES or TESSERA_ENGINE_MAX_CORE_INSTANCES)"
        )
    );
    // The host keeps serving the others after the refusal.
    assert!(serves(&app, "echo", "/echo/api/v1/echo").await);
    app.stop().await;

    // Raised to the figure, the same component loads and serves.
    let at = u32::try_from(needs).unwrap();
    let (app, _) = notes_and_echo(move |config| {
        config.runtime.engine_limits.insert(
            "notes".into(),
            EngineLimits {
                max_core_instances: Some(at),
                ..EngineLimits::default()
            },
        );
    })
    .await;
    assert!(serves(&app, "notes", "/notes/api/v1/notes").await);
    assert!(serves(&app, "echo", "/echo/api/v1/echo").await);
    assert_eq!(listed_active(&app, "notes").await, Some(true));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_limit_refuses_before_compiling_and_an_engine_may_be_raised_above_it() {
    let figures = notes_figures();
    let echo = ComponentFigures::of(&std::fs::read(crate::components::component("echo")).unwrap())
        .unwrap();
    // A global limit on table elements below notes' largest table (and not below echo's).
    let needs = figures.largest_initial_table_elements;
    let limit = u32::try_from(needs - 1).unwrap();
    assert!(
        echo.largest_initial_table_elements <= u64::from(limit),
        "notes {figures:?}, echo {echo:?}"
    );

    let (app, notes) = notes_and_echo(move |config| {
        config.runtime.max_table_elements = limit;
    })
    .await;
    assert!(!serves(&app, "notes", "/notes/api/v1/notes").await);
    assert!(serves(&app, "echo", "/echo/api/v1/echo").await);
    // Refused before its engine is known: the message names the global setting and the
    // per-engine one to raise it for one engine.
    let refused = app.state().engines.load_file(&notes).await.unwrap_err();
    assert_eq!(
        format!("{refused:#}"),
        format!(
            "notes.wasm needs a table of {needs} elements at start; the limit is {limit} elements \
             (TESSERA_ENGINE_MAX_TABLE_ELEMENTS, or TESSERA_ENGINE_LIMITS__<CODE>__MAX_TABLE_ELEMENTS \
             for its engine alone)"
        )
    );
    app.stop().await;

    // The notes engine alone raised to its figure: the pool is sized for it and it loads, while
    // echo keeps the global limit.
    let raised = u32::try_from(needs).unwrap();
    let (app, _) = notes_and_echo(move |config| {
        config.runtime.max_table_elements = limit;
        config.runtime.engine_limits.insert(
            "notes".into(),
            EngineLimits {
                max_table_elements: Some(raised),
                ..EngineLimits::default()
            },
        );
    })
    .await;
    assert!(serves(&app, "notes", "/notes/api/v1/notes").await);
    assert!(serves(&app, "echo", "/echo/api/v1/echo").await);
    let config = app.state().engines.runtime().config();
    assert_eq!(config.limits_of("echo").max_table_elements, limit);
    assert_eq!(config.loosest_limits().max_table_elements, raised);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engines_own_deadline_and_cap_on_calls_alive_hold_it_alone() {
    let configure = |config: &mut Config| {
        crate::helpers::without_rate_limits(config);
        config.runtime.tenant_queue_timeout = Duration::from_millis(300);
        config.runtime.engine_limits.insert(
            "looper".into(),
            EngineLimits {
                handle_timeout: Some(Duration::from_millis(300)),
                ..EngineLimits::default()
            },
        );
        config.runtime.engine_limits.insert(
            "napper".into(),
            EngineLimits {
                max_instances: Some(1),
                ..EngineLimits::default()
            },
        );
    };
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            plugins: vec!["looper", "napper", "echo"],
            configure: Some(Box::new(configure)),
            ..AppOptions::default()
        },
    )
    .await;
    let token = app.token(&uuid(), &uuid(), "editor").await;

    // The looper's own deadline (300 ms), not the global 5 s.
    let started = Instant::now();
    json_with_status(app.get_as("/looper/api/v1/spin", &token).await, 504).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // One napper call alive at once: a second waits its 300 ms, then 503 with Retry-After;
    // another engine is not held up meanwhile.
    let napping = tokio::spawn({
        let (client, url, token) = (
            app.client.clone(),
            app.url("/napper/api/v1/nap?ms=1500"),
            token.clone(),
        );
        async move {
            client
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
        }
    });
    let admission = app.state().engines.runtime().admission().clone();
    let deadline = Instant::now() + Duration::from_secs(5);
    while admission.running_in_engine("napper") == 0 {
        assert!(Instant::now() < deadline, "the first nap never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let refused = app.get_as("/napper/api/v1/nap?ms=1", &token).await;
    assert_eq!(refused.status().as_u16(), 503);
    assert!(refused.headers().get("retry-after").is_some());
    json_with_status(refused, 503).await;
    json_with_status(app.get_as("/echo/api/v1/echo", &token).await, 200).await;
    assert_eq!(napping.await.unwrap().as_u16(), 200);
    // Freed, the engine serves again.
    json_with_status(app.get_as("/napper/api/v1/nap?ms=1", &token).await, 200).await;
    app.stop().await;
}
