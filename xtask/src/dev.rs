//! `cargo xtask dev`: the engine author's loop. Builds the engines (every engine of `engines/`,
//! Rust, Python and JavaScript, or with `--path DIR` one standalone engine anywhere: a Rust
//! crate, a Python folder with `app.py`, a JavaScript folder with `package.json`) into the
//! plugins dir, serves them
//! (`tessera serve`, unless `--no-serve` because a host already runs on that plugins dir), then
//! watches the sources: on every change it rebuilds the engine that changed (all of them when
//! the SDK or the wire crate changed; every Python or JavaScript engine when its kit changed),
//! prints the build's result, and copies the component
//! into the plugins dir, where the running host's watcher swaps it in (calls in flight finish
//! on the old version; a component that does not load is logged by the host, which keeps
//! serving the one before).
//!
//! Builds use the release profile without LTO, at `opt-level = 1`, incremental, in a target dir
//! of their own (`<target>/engines-dev`, or `dev-loop` in `CARGO_TARGET_DIR` or the crate's
//! `target/`), so a change is served in seconds and the optimised release artifacts stay
//! untouched.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use notify::{RecursiveMode, Watcher as _};

/// How long the loop waits for more changes after the first (an editor saving several files).
const SETTLE: Duration = Duration::from_millis(250);

/// What the loop watches and builds.
enum Watched {
    /// The crates of an engines workspace (`engines/`), each `<dir>/<crate>`.
    Workspace(PathBuf),
    /// One standalone engine crate.
    Crate(PathBuf),
}

/// `dev [--path ENGINE_DIR] [--plugins-dir DIR] [--no-serve] [-- serve flags…]`.
pub struct Options {
    watched: Watched,
    plugins_dir: PathBuf,
    serve: bool,
    serve_arguments: Vec<String>,
}

/// Reads the command line of `cargo xtask dev`.
pub fn parse(root: &Path, arguments: &[String]) -> anyhow::Result<Options> {
    const USAGE: &str = "usage: cargo xtask dev [--path ENGINE_DIR] [--plugins-dir DIR] \
                         [--no-serve] [-- serve flags…]";
    let mut options = Options {
        watched: Watched::Workspace(root.join("engines")),
        plugins_dir: root.join("plugins"),
        serve: true,
        serve_arguments: Vec::new(),
    };
    let mut rest = arguments;
    while let Some((flag, more)) = rest.split_first() {
        match (flag.as_str(), more) {
            ("--", serve_arguments) => {
                options.serve_arguments = serve_arguments.to_vec();
                break;
            }
            ("--no-serve", more) => {
                options.serve = false;
                rest = more;
            }
            ("--path", [dir, more @ ..]) => {
                options.watched = Watched::Crate(std::path::absolute(dir)?);
                rest = more;
            }
            ("--plugins-dir", [dir, more @ ..]) => {
                options.plugins_dir = std::path::absolute(dir)?;
                rest = more;
            }
            _ => bail!("{USAGE}"),
        }
    }
    Ok(options)
}

/// One engine crate: its folder, package name and engine file name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct EngineCrate {
    dir: PathBuf,
    package: String,
}

impl EngineCrate {
    /// The crate in `dir`, if it builds a component (a `cdylib`).
    fn at(dir: &Path) -> anyhow::Result<Option<Self>> {
        let manifest = dir.join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            return Ok(None);
        };
        if !text.contains("cdylib") {
            return Ok(None);
        }
        let package = text
            .lines()
            .find_map(|line| {
                let (key, value) = line.split_once('=')?;
                (key.trim() == "name").then(|| value.trim().trim_matches('"').to_owned())
            })
            .with_context(|| format!("{} names no package", manifest.display()))?;
        Ok(Some(Self {
            dir: dir.to_path_buf(),
            package,
        }))
    }

    /// `plugins/<package>.wasm`: the package name is the engine file's name.
    fn plugin_file(&self) -> String {
        format!("{}.wasm", self.package)
    }

    /// The built component under `target_dir`.
    fn artifact(&self, target_dir: &Path) -> PathBuf {
        target_dir
            .join(crate::WASM_TARGET)
            .join("release")
            .join(format!("{}.wasm", self.package.replace('-', "_")))
    }
}

impl Watched {
    /// The folder watched.
    fn root(&self) -> &Path {
        match self {
            Self::Workspace(dir) | Self::Crate(dir) => dir,
        }
    }

    /// Every Rust engine crate watched.
    fn crates(&self) -> anyhow::Result<Vec<EngineCrate>> {
        match self {
            Self::Crate(dir) => Ok(EngineCrate::at(dir)?.into_iter().collect()),
            Self::Workspace(dir) => {
                let mut crates = Vec::new();
                for entry in
                    std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?
                {
                    if let Some(found) = EngineCrate::at(&entry?.path())? {
                        crates.push(found);
                    }
                }
                crates.sort();
                Ok(crates)
            }
        }
    }

    /// The target dir of the loop's builds: `engines-dev` in the checkout's target dir; for a
    /// standalone crate `dev-loop` in `CARGO_TARGET_DIR` when set (shared by every crate, so
    /// the SDK is compiled once), else in the crate's own `target/`.
    fn target_dir(&self, target_dir: &Path) -> PathBuf {
        match self {
            Self::Workspace(_) => target_dir.join("engines-dev"),
            Self::Crate(dir) => std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| dir.join("target"), PathBuf::from)
                .join("dev-loop"),
        }
    }

    /// The manifest cargo builds.
    fn manifest(&self) -> PathBuf {
        self.root().join("Cargo.toml")
    }

    /// The crates a change of `changed` (paths) rebuilds: the crate a file is in, or every
    /// crate when a shared file changed (the SDK, the workspace's manifest). Build output and
    /// files that are not sources are ignored.
    fn affected(&self, crates: &[EngineCrate], changed: &[PathBuf]) -> BTreeSet<EngineCrate> {
        let mut affected = BTreeSet::new();
        for path in changed {
            let is_source = path
                .extension()
                .and_then(|extension| extension.to_str())
                .is_some_and(|extension| matches!(extension, "rs" | "toml" | "wit" | "json"));
            let in_target = path
                .components()
                .any(|component| component.as_os_str() == "target");
            if !is_source || in_target || path.ends_with("Cargo.lock") {
                continue;
            }
            match crates.iter().find(|engine| path.starts_with(&engine.dir)) {
                Some(engine) => {
                    affected.insert(engine.clone());
                }
                None => affected.extend(crates.iter().cloned()),
            }
        }
        affected
    }
}

/// The Python and JavaScript engines watched.
fn polyglot(watched: &Watched) -> anyhow::Result<crate::PolyglotEngines> {
    match watched {
        Watched::Workspace(dir) => crate::polyglot_engines(dir),
        Watched::Crate(dir) => Ok(crate::PolyglotEngines {
            python: [dir.clone()]
                .into_iter()
                .filter(|dir| crate::python::is_python_engine(dir))
                .collect(),
            javascript: [dir.clone()]
                .into_iter()
                .filter(|dir| crate::javascript::is_javascript_engine(dir))
                .collect(),
        }),
    }
}

/// A language's engines (folders) and the kit they are built with.
struct Kit<'a> {
    engines: &'a [PathBuf],
    kit: PathBuf,
    extensions: &'a [&'a str],
}

impl Kit<'_> {
    /// The engines a change of `changed` rebuilds: the engine a source is in, or every engine
    /// when the kit changed. Caches, dependencies and build output are ignored.
    fn affected(&self, changed: &[PathBuf]) -> BTreeSet<PathBuf> {
        let mut affected = BTreeSet::new();
        for path in changed {
            let is_source = path
                .extension()
                .and_then(|extension| extension.to_str())
                .is_some_and(|extension| self.extensions.contains(&extension));
            let generated = path.components().any(|component| {
                matches!(
                    component.as_os_str().to_str(),
                    Some("__pycache__" | "node_modules" | "target" | "dist")
                )
            });
            if !is_source || generated {
                continue;
            }
            if path.starts_with(&self.kit) {
                affected.extend(self.engines.iter().cloned());
            } else if let Some(engine) = self.engines.iter().find(|dir| path.starts_with(dir)) {
                affected.insert(engine.clone());
            }
        }
        affected
    }
}

/// Builds the Python or JavaScript `engines` with `build` into `plugins_dir`; false when one
/// failed (the plugins dir keeps the component from before).
fn build_polyglot(
    engines: &BTreeSet<PathBuf>,
    plugins_dir: &Path,
    build: &dyn Fn(&Path, &Path) -> anyhow::Result<()>,
) -> bool {
    let mut built = true;
    for engine in engines {
        let started = Instant::now();
        let out = crate::plugin_file(plugins_dir, engine);
        match build(engine, &out) {
            Ok(()) => eprintln!(
                "dev: built {} in {:.1} s → {}",
                engine.display(),
                started.elapsed().as_secs_f64(),
                out.display()
            ),
            Err(error) => {
                eprintln!(
                    "dev: building {} failed after {:.1} s ({error:#}); the host keeps serving \
                     the last build",
                    engine.display(),
                    started.elapsed().as_secs_f64()
                );
                built = false;
            }
        }
    }
    built
}

/// Builds `crates` and copies each into `plugins_dir`; false when the build failed (cargo
/// printed why; the plugins dir keeps the components from before).
fn build(
    watched: &Watched,
    crates: &BTreeSet<EngineCrate>,
    target_dir: &Path,
    plugins_dir: &Path,
) -> anyhow::Result<bool> {
    if crates.is_empty() {
        return Ok(true);
    }
    let started = Instant::now();
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .args(["build", "--release", "--target", crate::WASM_TARGET])
        .arg("--manifest-path")
        .arg(watched.manifest())
        .arg("--target-dir")
        .arg(target_dir)
        // Fast builds for the loop: no LTO, a little optimisation, incremental.
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
        .env("CARGO_PROFILE_RELEASE_INCREMENTAL", "true");
    for engine in crates {
        command.args(["--package", &engine.package]);
    }
    let status = command.status().context("running cargo for the engines")?;
    let names: Vec<&str> = crates
        .iter()
        .map(|engine| engine.package.as_str())
        .collect();
    if !status.success() {
        eprintln!(
            "dev: building {} failed after {:.1} s; the host keeps serving the last build",
            names.join(", "),
            started.elapsed().as_secs_f64()
        );
        return Ok(false);
    }
    std::fs::create_dir_all(plugins_dir)
        .with_context(|| format!("creating {}", plugins_dir.display()))?;
    for engine in crates {
        let artifact = engine.artifact(target_dir);
        let destination = plugins_dir.join(engine.plugin_file());
        // Copy beside, then rename in: the host never loads a half-written file.
        let staging = plugins_dir.join(format!(".{}.partial", engine.plugin_file()));
        std::fs::copy(&artifact, &staging)
            .with_context(|| format!("copying {}", artifact.display()))?;
        std::fs::rename(&staging, &destination)
            .with_context(|| format!("placing {}", destination.display()))?;
    }
    eprintln!(
        "dev: built {} in {:.1} s → {}",
        names.join(", "),
        started.elapsed().as_secs_f64(),
        plugins_dir.display()
    );
    Ok(true)
}

/// `tessera serve` on the plugins dir, from this checkout.
fn serve(root: &Path, options: &Options) -> anyhow::Result<Child> {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["run", "--package", "tessera-host", "--bin", "tessera", "--"])
        .arg("serve")
        .arg("--plugins-dir")
        .arg(&options.plugins_dir)
        .args(&options.serve_arguments)
        .current_dir(root)
        .spawn()
        .context("starting tessera serve")
}

/// Runs the loop until the host it serves exits (or forever with `--no-serve`).
pub fn run(root: &Path, target_dir: &Path, options: &Options) -> anyhow::Result<()> {
    crate::ensure_wasm_target()?;
    let watched = &options.watched;
    let dev_target = watched.target_dir(target_dir);
    let crates = watched.crates()?;
    let polyglot = polyglot(watched)?;
    if crates.is_empty() && polyglot.python.is_empty() && polyglot.javascript.is_empty() {
        bail!(
            "no engine under {} (a Rust crate building a cdylib, a Python folder with app.py, \
             a JavaScript folder with package.json)",
            watched.root().display()
        );
    }
    let python_toolchain = if polyglot.python.is_empty() {
        None
    } else {
        crate::python::toolchain(target_dir, "the Python engines")?
    };
    let javascript_toolchain = if polyglot.javascript.is_empty() {
        None
    } else {
        crate::javascript::toolchain(target_dir)?
    };
    let build_python = |engine: &Path, out: &Path| match &python_toolchain {
        Some(toolchain) => toolchain.build(root, engine, out),
        None => Ok(()),
    };
    let build_javascript = |engine: &Path, out: &Path| match &javascript_toolchain {
        Some(toolchain) => toolchain.build(root, engine, out),
        None => Ok(()),
    };
    let python_kit = Kit {
        engines: &polyglot.python,
        kit: root.join("sdk/python"),
        extensions: &["py", "toml"],
    };
    let javascript_kit = Kit {
        engines: &polyglot.javascript,
        kit: root.join("sdk/javascript"),
        extensions: &["js", "mjs", "ts", "json"],
    };
    std::fs::create_dir_all(&options.plugins_dir)
        .with_context(|| format!("creating {}", options.plugins_dir.display()))?;
    build(
        watched,
        &crates.iter().cloned().collect(),
        &dev_target,
        &options.plugins_dir,
    )?;
    build_polyglot(
        &polyglot.python.iter().cloned().collect(),
        &options.plugins_dir,
        &build_python,
    );
    build_polyglot(
        &polyglot.javascript.iter().cloned().collect(),
        &options.plugins_dir,
        &build_javascript,
    );
    let mut host = if options.serve {
        Some(serve(root, options)?)
    } else {
        None
    };

    let (changes, changed) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Writes, creations, removals and renames; not reads (cargo opens the manifests) nor
        // metadata (access times).
        use notify::EventKind;
        use notify::event::ModifyKind;
        if let Ok(event) = event {
            let written = match event.kind {
                EventKind::Modify(ModifyKind::Metadata(_)) => false,
                EventKind::Create(_)
                | EventKind::Modify(_)
                | EventKind::Remove(_)
                | EventKind::Any => true,
                EventKind::Access(_) | EventKind::Other => false,
            };
            if written {
                let _ = changes.send(event.paths);
            }
        }
    })
    .context("watching the sources")?;
    watcher
        .watch(watched.root(), RecursiveMode::Recursive)
        .with_context(|| format!("watching {}", watched.root().display()))?;
    // The kits the Python and JavaScript engines are built with.
    for kit in [&python_kit, &javascript_kit] {
        if !kit.engines.is_empty() && kit.kit.is_dir() && !kit.kit.starts_with(watched.root()) {
            watcher
                .watch(&kit.kit, RecursiveMode::Recursive)
                .with_context(|| format!("watching {}", kit.kit.display()))?;
        }
    }
    eprintln!("dev: watching {} (ctrl-c stops)", watched.root().display());
    loop {
        if let Some(child) = host.as_mut()
            && let Some(status) = child.try_wait()?
        {
            bail!("tessera serve exited ({status})");
        }
        let Ok(mut paths) = changed.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        // The rest of a save (several files, several events) before building once.
        let settle_until = Instant::now() + SETTLE;
        while let Ok(more) =
            changed.recv_timeout(settle_until.saturating_duration_since(Instant::now()))
        {
            paths.extend(more);
        }
        // Crates may have been added (new-engine) since the start.
        let crates = watched.crates()?;
        let affected = watched.affected(&crates, &paths);
        build(watched, &affected, &dev_target, &options.plugins_dir)?;
        build_polyglot(
            &python_kit.affected(&paths),
            &options.plugins_dir,
            &build_python,
        );
        build_polyglot(
            &javascript_kit.affected(&paths),
            &options.plugins_dir,
            &build_javascript,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(dir: &str, package: &str) -> EngineCrate {
        EngineCrate {
            dir: PathBuf::from(dir),
            package: package.into(),
        }
    }

    #[test]
    fn a_change_rebuilds_its_crate_or_every_crate_when_shared() {
        let watched = Watched::Workspace(PathBuf::from("/r/engines"));
        let crates = vec![
            engine("/r/engines/chat", "chat"),
            engine("/r/engines/notes", "notes"),
        ];
        let names = |changed: &[&str]| -> Vec<String> {
            let changed: Vec<PathBuf> = changed.iter().map(PathBuf::from).collect();
            watched
                .affected(&crates, &changed)
                .into_iter()
                .map(|engine| engine.package)
                .collect()
        };
        assert_eq!(names(&["/r/engines/notes/src/lib.rs"]), ["notes"]);
        assert_eq!(names(&["/r/engines/sdk/src/storage.rs"]), ["chat", "notes"]);
        assert!(names(&["/r/engines/notes/target/x.rs"]).is_empty());
        assert!(names(&["/r/engines/notes/src/.lib.rs.swp"]).is_empty());
        assert!(names(&["/r/engines/Cargo.lock"]).is_empty());
    }

    #[test]
    fn a_change_rebuilds_its_python_engine_or_every_one_when_the_kit_changed() {
        let engines = [
            PathBuf::from("/r/engines/pynotes"),
            PathBuf::from("/r/engines/pyother"),
        ];
        let kit = Kit {
            engines: &engines,
            kit: PathBuf::from("/r/sdk/python"),
            extensions: &["py", "toml"],
        };
        let names = |changed: &[&str]| -> Vec<PathBuf> {
            let changed: Vec<PathBuf> = changed.iter().map(PathBuf::from).collect();
            kit.affected(&changed).into_iter().collect()
        };
        assert_eq!(
            names(&["/r/engines/pynotes/notes_engine.py"]),
            [engines[0].clone()]
        );
        assert_eq!(names(&["/r/sdk/python/tessera_engine/http.py"]), engines);
        assert!(names(&["/r/engines/pynotes/__pycache__/app.cpython-311.pyc"]).is_empty());
        assert!(names(&["/r/engines/pynotes/__pycache__/x.py"]).is_empty());
        assert!(names(&["/r/engines/notes/src/lib.rs"]).is_empty());
    }
}
