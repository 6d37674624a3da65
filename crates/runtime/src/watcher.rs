//! Drop-in plugins: watches the plugins dir and reloads the registry when a `*.wasm` file (or
//! the `*.toml` manifest of a `wasi:http` component) is added, replaced or removed, without a
//! restart. Bursts of file events are coalesced.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use notify::{RecursiveMode, Watcher as _};
use tokio_util::sync::CancellationToken;

use crate::registry::EngineRegistry;

/// How long the folder must be quiet before a rescan (a copy in progress emits many events).
pub const SETTLE_TIME: Duration = Duration::from_millis(250);

/// Watches `directory` until `stop` is cancelled.
pub async fn watch_plugins(
    registry: Arc<EngineRegistry>,
    directory: PathBuf,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&directory)
        .with_context(|| format!("creating {}", directory.display()))?;
    let (changes, mut changed) = tokio::sync::mpsc::channel::<()>(1);
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Files written, created, removed or renamed; not read (the rescan itself opens every
        // file, and rescanning on those events would rescan forever) nor touched in metadata.
        use notify::EventKind;
        use notify::event::ModifyKind;
        let relevant = match &event {
            Ok(event) => {
                let written = match event.kind {
                    EventKind::Modify(ModifyKind::Metadata(_)) => false,
                    EventKind::Create(_)
                    | EventKind::Modify(_)
                    | EventKind::Remove(_)
                    | EventKind::Any => true,
                    EventKind::Access(_) | EventKind::Other => false,
                };
                written
                    && event.paths.iter().any(|path| {
                        path.extension()
                            .is_some_and(|extension| extension == "wasm" || extension == "toml")
                    })
            }
            Err(_) => true,
        };
        if relevant {
            // A full channel already holds a pending rescan.
            let _ = changes.try_send(());
        }
    })
    .context("creating the plugins watcher")?;
    watcher
        .watch(&directory, RecursiveMode::NonRecursive)
        .with_context(|| format!("watching {}", directory.display()))?;
    tracing::info!(directory = %directory.display(), "watching the plugins dir");
    // A file that arrived between the start-up load and the watch being in place produced no
    // event: one rescan now catches it (unchanged files are skipped by their hash).
    if let Err(error) = registry.load_directory(&directory).await {
        tracing::error!(
            error = format!("{error:#}"),
            "rescanning the plugins dir failed"
        );
    }

    loop {
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            received = changed.recv() => if received.is_none() { return Ok(()) },
        }
        // Let the burst settle, then rescan once.
        loop {
            tokio::select! {
                () = stop.cancelled() => return Ok(()),
                () = tokio::time::sleep(SETTLE_TIME) => break,
                received = changed.recv() => if received.is_none() { return Ok(()) },
            }
        }
        if let Err(error) = registry.load_directory(&directory).await {
            tracing::error!(
                error = format!("{error:#}"),
                "rescanning the plugins dir failed"
            );
        }
    }
}
