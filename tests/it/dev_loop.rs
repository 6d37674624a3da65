//! The engine author's dev loop (`cargo xtask dev --path`): a standalone engine crate is built
//! into a running host's plugins dir, and a change to its source is rebuilt and served by the
//! host while clients keep calling it, none of their requests lost through the swap.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::components::{repository, target_dir, xtask};
use crate::helpers::{AppOptions, Backend, eventually, spawn_app_with, without_rate_limits};

/// The dev loop, killed when dropped.
struct DevLoop {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl DevLoop {
    fn start(crate_dir: &Path, plugins: &Path) -> Self {
        let mut child = xtask(&[
            "dev",
            "--path",
            crate_dir.to_str().unwrap(),
            "--plugins-dir",
            plugins.to_str().unwrap(),
            "--no-serve",
        ])
        .env("CARGO_TARGET_DIR", target_dir())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("starting cargo xtask dev");
        let stderr = child.stderr.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self { child, lines }
    }

    /// Waits for a line of the loop containing `text`; the lines seen on the way.
    fn wait_for(&self, text: &str, patience: Duration) -> Vec<String> {
        let deadline = std::time::Instant::now() + patience;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(text) => {
                    seen.push(line);
                    return seen;
                }
                Ok(line) => seen.push(line),
                Err(_) => panic!(
                    "the dev loop never printed {text:?}; it printed:\n{}",
                    seen.join("\n")
                ),
            }
        }
    }
}

impl Drop for DevLoop {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_changed_engine_is_rebuilt_and_served_with_no_request_lost() {
    // The clients call as fast as the host answers: no rate limit for them to hit.
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            configure: Some(Box::new(without_rate_limits)),
            ..AppOptions::default()
        },
    )
    .await;
    let plugins = app.database.data_dir.join("plugins");
    let crate_dir = app.database.data_dir.join("outside/dev-probe");
    let created = xtask(&[
        "new-engine",
        "dev-probe",
        "--path",
        crate_dir.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(created.status.success(), "{created:?}");
    // The same dependency versions as the real engines, so the build reuses their artifacts.
    std::fs::copy(
        repository().join("engines/Cargo.lock"),
        crate_dir.join("Cargo.lock"),
    )
    .unwrap();

    let dev = DevLoop::start(&crate_dir, &plugins);
    let (dev, _) = tokio::task::spawn_blocking(move || {
        let seen = dev.wait_for("dev: watching", Duration::from_secs(600));
        (dev, seen)
    })
    .await
    .unwrap();
    crate::engines::wait_for_engine(&app, "dev-probe", true).await;
    let token = app
        .token(&uuid::Uuid::new_v4().to_string(), "ada", "viewer")
        .await;
    let greeting_of = |body: &Value| body["data"]["greeting"].as_str().unwrap_or("").to_owned();

    // Clients call the engine all through the change.
    let running = Arc::new(AtomicBool::new(true));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (client, url, token, running) = (
                reqwest::Client::new(),
                app.url("/dev-probe/api/v1/hello"),
                token.clone(),
                running.clone(),
            );
            tokio::spawn(async move {
                let mut answers = Vec::new();
                while running.load(Ordering::Relaxed) {
                    let answer = client.get(&url).bearer_auth(&token).send().await.unwrap();
                    let status = answer.status().as_u16();
                    let body: Value = answer.json().await.unwrap_or(Value::Null);
                    answers.push((status, body["data"]["greeting"].clone()));
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                answers
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The author changes the default greeting.
    let source = crate_dir.join("src/lib.rs");
    let code = std::fs::read_to_string(&source).unwrap();
    assert!(code.contains("\"hello\""), "{code}");
    std::fs::write(&source, code.replace("\"hello\"", "\"howdy\"")).unwrap();
    let dev = tokio::task::spawn_blocking(move || {
        dev.wait_for("dev: built dev-probe", Duration::from_secs(300));
        dev
    })
    .await
    .unwrap();
    let served = eventually(60, "the changed engine served", || {
        let app = &app;
        let token = &token;
        async move {
            let answer = app.get_as("/dev-probe/api/v1/hello", token).await;
            let body: Value = answer.json().await.ok()?;
            let greeting = greeting_of(&body);
            greeting.starts_with("howdy").then_some(greeting)
        }
    })
    .await;
    assert_eq!(served, "howdy, world");
    tokio::time::sleep(Duration::from_millis(300)).await;
    running.store(false, Ordering::Relaxed);

    let mut answers = Vec::new();
    for client in clients {
        answers.extend(client.await.unwrap());
    }
    let lost: Vec<_> = answers
        .iter()
        .filter(|(status, _)| *status != 200)
        .collect();
    assert!(lost.is_empty(), "requests lost through the swap: {lost:?}");
    let greetings: Vec<&str> = answers
        .iter()
        .map(|(_, greeting)| greeting.as_str().unwrap_or(""))
        .collect();
    assert!(
        greetings.contains(&"hello, world"),
        "served before the change"
    );
    assert!(
        greetings.contains(&"howdy, world"),
        "served after the change"
    );
    assert!(
        greetings
            .iter()
            .all(|greeting| *greeting == "hello, world" || *greeting == "howdy, world"),
        "{greetings:?}"
    );
    drop(dev);
    app.stop().await;
}
