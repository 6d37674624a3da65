//! Project commands for Tessera, run as `cargo xtask <command>` (see `.cargo/config.toml`).
//!
//! - `run [serve flags…]`: build everything (engines into `plugins/`, the host in release) and
//!   serve on the embedded defaults.
//! - `test [cargo test args…]`: build everything and run the whole test suite (the engines'
//!   crates natively, the Python kit and engines with pytest, the JavaScript kit and engines
//!   with node's test runner, then the host workspace's).
//! - `build-engines [--plugins-dir DIR] [--languages rust,python,javascript] [--from DIR]`:
//!   build every engine under `engines/` into `plugins/`: the Rust crates for `wasm32-wasip2`,
//!   the Python engines (a folder with `app.py`) with componentize-py (`python.rs`), the
//!   JavaScript engines (a folder with `package.json`) with componentize-js (`javascript.rs`),
//!   installing the pinned Python and JavaScript toolchains under the target dir when missing.
//!   `--from` takes the Python and JavaScript engine folders from another folder (the test
//!   harness builds its own that way).
//! - `new-engine NAME [--path DIR] [--sdk PACKAGED_DIR | --sdk-version VERSION]`: scaffold a
//!   working engine crate on the guest SDK: `engines/NAME` in the engines' workspace, or with
//!   `--path` a standalone crate anywhere (`new_engine.rs`).
//! - `dev [--path CRATE_DIR] [--plugins-dir DIR] [--no-serve] [-- serve flags…]`: build the
//!   engines, serve them, and rebuild and swap in each engine whose sources change (`dev.rs`).
//! - `package-sdk DIR [--no-verify]`: `cargo package` the SDK and the wire crate it depends on,
//!   unpacked into `DIR` for crates outside the repository (`package_sdk.rs`).
//! - `cluster [--hosts N] [--database-url postgres://…] [--base-port PORT]`: N hosts (3) on one
//!   PostgreSQL database, each on its own port and data dir, to try a cluster (`cluster.rs`).
//! - `book`: build the book in `docs/` with mdBook (installed under the target dir when missing)
//!   and fail on any link or anchor that does not resolve (`book.rs`).
//! - `wasi-http-examples --out DIR`: download and build, unedited, the `wasi:http` example
//!   components of published packages (`wasi_http_examples.rs`), for the tests and benchmarks.
//! - `js-types`: regenerate the JavaScript kit's TypeScript declarations of the engine world
//!   (`sdk/javascript/types`, `jco guest-types` of `wit/`); `test` checks they are current.
//!
//! Each installs the `wasm32-wasip2` target first when it is missing. `cargo test -p xtask` runs
//! the tidy tests (`src/tidy.rs`): the project rules no compiler checks.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context as _, bail};

mod book;
mod cluster;
mod debian_packages;
mod dev;
mod javascript;
mod new_engine;
mod package_sdk;
mod python;
#[cfg(test)]
mod tidy;
mod wasi_http_examples;

const WASM_TARGET: &str = "wasm32-wasip2";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(arguments: Vec<String>) -> anyhow::Result<()> {
    let (command, rest) = arguments
        .split_first()
        .map_or(("help", &[][..]), |(c, r)| (c.as_str(), r));
    match command {
        "run" => {
            build_engines(&BuildOptions::everything())?;
            cargo(
                &[
                    "run",
                    "--release",
                    "--package",
                    "tessera-host",
                    "--bin",
                    "tessera",
                    "--",
                    "serve",
                ],
                rest,
            )
        }
        "test" => {
            build_engines(&BuildOptions::everything())?;
            if workspace_root().join("engines/sdk/Cargo.toml").is_file() {
                cargo(
                    &[
                        "test",
                        "--manifest-path",
                        "engines/Cargo.toml",
                        "--workspace",
                    ],
                    &[],
                )?;
            }
            let root = workspace_root();
            let engines = polyglot_engines(&root.join("engines"))?;
            python::kit_tests(&root, &target_dir(), &engines.python)?;
            javascript::kit_tests(&root, &target_dir())?;
            javascript::check_wit_types(&root, &target_dir())?;
            debian_packages::ensure_test_peers()?;
            cargo(&["test", "--workspace"], rest)
        }
        "build-engines" => build_engines(&BuildOptions::parse(rest)?),
        "new-engine" => {
            let (name, placement) = new_engine::parse(&workspace_root(), rest)?;
            new_engine::create(&name, &placement)
        }
        "dev" => {
            let options = dev::parse(&workspace_root(), rest)?;
            dev::run(&workspace_root(), &target_dir(), &options)
        }
        "cluster" => {
            let options = cluster::parse(rest)?;
            cluster::run(&workspace_root(), &target_dir(), &options)
        }
        "js-types" => javascript::write_wit_types(&workspace_root(), &target_dir()),
        "wasi-http-examples" => {
            ensure_wasm_target()?;
            wasi_http_examples::build(&target_dir(), &wasi_http_examples::parse(rest)?)
        }
        "book" => book::build_and_check(&workspace_root(), &target_dir()),
        "package-sdk" => {
            let (out, verify) = package_sdk::parse(rest)?;
            package_sdk::package(&workspace_root(), &target_dir(), &out, verify)
        }
        "help" | "--help" | "-h" => {
            println!(
                "cargo xtask run [serve flags…] | test [cargo test args…] \
                 | build-engines [--plugins-dir DIR] [--languages rust,python,javascript] \
                 | new-engine NAME [--path DIR] [--sdk PACKAGED_DIR | --sdk-version VERSION] \
                 | package-sdk DIR [--no-verify] | js-types | book \
                 | wasi-http-examples --out DIR \
                 | cluster [--hosts N] [--database-url postgres://…] [--base-port PORT] \
                 | dev [--path CRATE_DIR] [--plugins-dir DIR] [--no-serve] [-- serve flags…]"
            );
            Ok(())
        }
        other => bail!("unknown command {other:?}; try `cargo xtask help`"),
    }
}

/// The workspace of the `CARGO_MANIFEST_DIR` cargo gives the process at run time (`cargo run`,
/// `cargo test`); the compile-time one only outside cargo, since a binary built in another
/// clone sharing the target dir carries that clone's path.
fn workspace_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// `CARGO_TARGET_DIR`, else the repository's `target/`.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

fn cargo(arguments: &[&str], extra: &[String]) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args(arguments)
        .args(extra)
        .current_dir(workspace_root())
        .status()
        .with_context(|| format!("running {cargo} {}", arguments.join(" ")))?;
    if !status.success() {
        bail!("`cargo {}` failed ({status})", arguments.join(" "));
    }
    Ok(())
}

/// Whether `program --version` runs (a tool the Python or JavaScript engines need).
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// Installs the `wasm32-wasip2` target through rustup when it is not installed yet.
fn ensure_wasm_target() -> anyhow::Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context("running rustup (engines are built with the wasm32-wasip2 target it installs)")?;
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|line| line.trim() == WASM_TARGET)
    {
        return Ok(());
    }
    eprintln!("xtask: installing the {WASM_TARGET} target");
    let status = Command::new("rustup")
        .args(["target", "add", WASM_TARGET])
        .status()?;
    if !status.success() {
        bail!("`rustup target add {WASM_TARGET}` failed");
    }
    Ok(())
}

/// Every engine crate: a folder under `engines/` with a `Cargo.toml` that builds a `cdylib`.
fn engine_crates(root: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let engines_dir = root.join("engines");
    let mut crates = Vec::new();
    if !engines_dir.is_dir() {
        return Ok(crates);
    }
    for entry in std::fs::read_dir(&engines_dir).context("reading engines/")? {
        let path = entry?.path();
        let manifest = path.join("Cargo.toml");
        if manifest.is_file() && std::fs::read_to_string(&manifest)?.contains("cdylib") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            crates.push((name, path));
        }
    }
    crates.sort();
    Ok(crates)
}

/// What `build-engines` builds, and where to.
struct BuildOptions {
    plugins_dir: PathBuf,
    /// Where the Python and JavaScript engine folders are (`engines/`).
    polyglot_dir: PathBuf,
    rust: bool,
    python: bool,
    javascript: bool,
}

impl BuildOptions {
    fn everything() -> Self {
        Self {
            plugins_dir: workspace_root().join("plugins"),
            polyglot_dir: workspace_root().join("engines"),
            rust: true,
            python: true,
            javascript: true,
        }
    }

    /// `[--plugins-dir DIR] [--languages rust,python,javascript]`.
    fn parse(arguments: &[String]) -> anyhow::Result<Self> {
        const USAGE: &str = "usage: cargo xtask build-engines [--plugins-dir DIR] \
                             [--languages rust,python,javascript] [--from DIR]";
        let mut options = Self::everything();
        let mut rest = arguments;
        while let Some((flag, more)) = rest.split_first() {
            match (flag.as_str(), more) {
                ("--plugins-dir", [dir, more @ ..]) => {
                    options.plugins_dir = std::path::absolute(dir)?;
                    rest = more;
                }
                ("--from", [dir, more @ ..]) => {
                    options.polyglot_dir = std::path::absolute(dir)?;
                    rest = more;
                }
                ("--languages", [languages, more @ ..]) => {
                    (options.rust, options.python, options.javascript) = (false, false, false);
                    for language in languages.split(',') {
                        match language.trim() {
                            "rust" => options.rust = true,
                            "python" => options.python = true,
                            "javascript" => options.javascript = true,
                            other => bail!("unknown language {other:?}; {USAGE}"),
                        }
                    }
                    rest = more;
                }
                _ => bail!("{USAGE}"),
            }
        }
        Ok(options)
    }
}

/// The Python and JavaScript engine folders of a folder.
struct PolyglotEngines {
    python: Vec<PathBuf>,
    javascript: Vec<PathBuf>,
}

/// The Python and JavaScript engine folders under `engines_dir`.
fn polyglot_engines(engines_dir: &Path) -> anyhow::Result<PolyglotEngines> {
    let mut engines = PolyglotEngines {
        python: Vec::new(),
        javascript: Vec::new(),
    };
    if !engines_dir.is_dir() {
        return Ok(engines);
    }
    for entry in std::fs::read_dir(engines_dir)
        .with_context(|| format!("reading {}", engines_dir.display()))?
    {
        let path = entry?.path();
        if python::is_python_engine(&path) {
            engines.python.push(path);
        } else if javascript::is_javascript_engine(&path) {
            engines.javascript.push(path);
        }
    }
    engines.python.sort();
    engines.javascript.sort();
    Ok(engines)
}

/// The engine file of the engine folder `dir`: `<plugins>/<folder name>.wasm`.
fn plugin_file(plugins: &Path, dir: &Path) -> PathBuf {
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    plugins.join(format!("{name}.wasm"))
}

/// Builds the engines `options` names into its plugins dir.
fn build_engines(options: &BuildOptions) -> anyhow::Result<()> {
    let root = workspace_root();
    std::fs::create_dir_all(&options.plugins_dir)
        .with_context(|| format!("creating {}", options.plugins_dir.display()))?;
    if options.rust {
        build_rust_engines(&root, &options.plugins_dir)?;
    }
    let engines = polyglot_engines(&options.polyglot_dir)?;
    if options.python
        && !engines.python.is_empty()
        && let Some(toolchain) = python::toolchain(&target_dir(), "the Python engines")?
    {
        for engine in &engines.python {
            let out = plugin_file(&options.plugins_dir, engine);
            toolchain.build(&root, engine, &out)?;
            eprintln!("xtask: {}", out.display());
        }
    }
    if options.javascript
        && !engines.javascript.is_empty()
        && let Some(toolchain) = javascript::toolchain(&target_dir())?
    {
        for engine in &engines.javascript {
            let out = plugin_file(&options.plugins_dir, engine);
            toolchain.build(&root, engine, &out)?;
            eprintln!("xtask: {}", out.display());
        }
    }
    Ok(())
}

/// Builds the engines workspace for `wasm32-wasip2` (a component, no extra tooling needed) and
/// copies each engine to `<plugins>/<name>.wasm`.
fn build_rust_engines(root: &Path, plugins: &Path) -> anyhow::Result<()> {
    ensure_wasm_target()?;
    let crates = engine_crates(root)?;
    if crates.is_empty() {
        eprintln!("xtask: no engine crates under engines/ yet; nothing to build");
        return Ok(());
    }
    let target_dir = target_dir().join("engines");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--target", WASM_TARGET, "--workspace"])
        .arg("--manifest-path")
        .arg(root.join("engines").join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .status()
        .context("running cargo for the engines")?;
    if !status.success() {
        bail!("building the engines failed");
    }
    for (name, _) in crates {
        let artifact = target_dir
            .join(WASM_TARGET)
            .join("release")
            .join(format!("{}.wasm", name.replace('-', "_")));
        let destination = plugins.join(format!("{name}.wasm"));
        // Copy then rename, so a running host's watcher never loads a half-written file.
        let staging = plugins.join(format!(".{name}.wasm.partial"));
        std::fs::copy(&artifact, &staging)
            .with_context(|| format!("copying {}", artifact.display()))?;
        std::fs::rename(&staging, &destination)?;
        eprintln!("xtask: {}", destination.display());
    }
    Ok(())
}
