//! Project commands for Tessera, run as `cargo xtask <command>` (see `.cargo/config.toml`).
//!
//! - `run [serve flags…]`: build everything (engines into `plugins/`, the host in release) and
//!   serve on the embedded defaults.
//! - `test [cargo test args…]`: build everything and run the whole test suite (the engines'
//!   crates natively, the Python kit's with pytest, then the host workspace's).
//! - `build-engines`: build every crate under `engines/` for `wasm32-wasip2` into `plugins/`.
//! - `new-engine NAME [--path DIR] [--sdk PACKAGED_DIR | --sdk-version VERSION]`: scaffold a
//!   working engine crate on the guest SDK: `engines/NAME` in the engines' workspace, or with
//!   `--path` a standalone crate anywhere (`new_engine.rs`).
//! - `dev [--path CRATE_DIR] [--plugins-dir DIR] [--no-serve] [-- serve flags…]`: build the
//!   engines, serve them, and rebuild and swap in each engine whose sources change (`dev.rs`).
//! - `package-sdk DIR [--no-verify]`: `cargo package` the SDK and the wire crate it depends on,
//!   unpacked into `DIR` for crates outside the repository (`package_sdk.rs`).
//!
//! Each installs the `wasm32-wasip2` target first when it is missing. `cargo test -p xtask` runs
//! the tidy tests (`src/tidy.rs`): the project rules no compiler checks.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context as _, bail};

mod dev;
mod new_engine;
mod package_sdk;
#[cfg(test)]
mod tidy;

const WASM_TARGET: &str = "wasm32-wasip2";

/// The pytest the Python kit's tests run with.
const PYTEST_VERSION: &str = "8.3.4";

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
            build_engines()?;
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
            build_engines()?;
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
            python_kit_tests()?;
            cargo(&["test", "--workspace"], rest)
        }
        "build-engines" => build_engines(),
        "new-engine" => {
            let (name, placement) = new_engine::parse(&workspace_root(), rest)?;
            new_engine::create(&name, &placement)
        }
        "dev" => {
            let options = dev::parse(&workspace_root(), rest)?;
            dev::run(&workspace_root(), &target_dir(), &options)
        }
        "package-sdk" => {
            let (out, verify) = package_sdk::parse(rest)?;
            package_sdk::package(&workspace_root(), &target_dir(), &out, verify)
        }
        "help" | "--help" | "-h" => {
            println!(
                "cargo xtask run [serve flags…] | test [cargo test args…] | build-engines \
                 | new-engine NAME [--path DIR] [--sdk PACKAGED_DIR | --sdk-version VERSION] \
                 | package-sdk DIR [--no-verify] \
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

/// The Python guest kit's tests (`sdk/python`, pytest), in a virtual environment under the
/// target dir that this installs pytest into; without `python3`, skipped with a message.
fn python_kit_tests() -> anyhow::Result<()> {
    let kit = workspace_root().join("sdk/python");
    if !kit.join("pyproject.toml").is_file() {
        return Ok(());
    }
    let found = Command::new("python3").arg("--version").output();
    if !found.is_ok_and(|output| output.status.success()) {
        eprintln!("xtask: python3 not found; skipping the Python kit's tests (sdk/python)");
        return Ok(());
    }
    let venv = target_dir().join("python-kit-venv");
    let python = venv.join("bin/python");
    if !python.is_file() {
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .context("creating the Python kit's virtual environment")?;
        if !status.success() {
            bail!("`python3 -m venv {}` failed", venv.display());
        }
    }
    let status = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg(format!("pytest=={PYTEST_VERSION}"))
        .status()
        .context("installing pytest")?;
    if !status.success() {
        bail!(
            "installing pytest {PYTEST_VERSION} into {} failed",
            venv.display()
        );
    }
    let status = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .current_dir(&kit)
        .status()
        .context("running pytest")?;
    if !status.success() {
        bail!("the Python kit's tests failed");
    }
    Ok(())
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

/// Builds the engines workspace for `wasm32-wasip2` (a component, no extra tooling needed) and
/// copies each engine to `plugins/<name>.wasm`.
fn build_engines() -> anyhow::Result<()> {
    ensure_wasm_target()?;
    let root = workspace_root();
    let crates = engine_crates(&root)?;
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
    let plugins = root.join("plugins");
    std::fs::create_dir_all(&plugins)?;
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
