//! Python engines: the pinned toolchain (componentize-py and pytest, the realtime tests'
//! clients websockets and httpx-sse, and the webhook tests' standardwebhooks and stripe,
//! installed into a virtual environment under the target dir), building a Python engine
//! folder into a component, and the Python kit's and engines' pytest tests.
//!
//! A Python engine is a folder under `engines/` with an `app.py`: the component module that
//! `componentize-py … componentize app` builds, with the engine folder and the kit
//! (`sdk/python`) on its path.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// The componentize-py that builds Python engines (docs/src/engines/python.md: 0.25.1 works).
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";
/// The pytest the kit's and the engines' tests run with.
pub const PYTEST_VERSION: &str = "8.3.4";
/// The realtime integration tests' clients (`tests/realtime/client.py`, run by
/// `tests/it/realtime.rs`): a WebSocket and a Server-Sent Events library nobody here wrote.
pub const WEBSOCKETS_VERSION: &str = "15.0.1";
pub const HTTPX_VERSION: &str = "0.28.1";
pub const HTTPX_SSE_VERSION: &str = "0.4.0";
/// The webhook tests' verifiers (`tests/webhooks/verify.py`, run by `tests/it/chat.rs`):
/// Standard Webhooks' reference library and Stripe's.
pub const STANDARDWEBHOOKS_VERSION: &str = "1.1.0";
pub const STRIPE_VERSION: &str = "16.1.0";
/// The world every engine implements.
pub const WORLD: &str = "tessera:engine/engine@0.3.0";

/// The virtual environment with the pinned tools.
pub struct Toolchain {
    venv: PathBuf,
}

/// True for a Python engine folder (it has the component module `app.py`).
pub fn is_python_engine(dir: &Path) -> bool {
    dir.join("app.py").is_file()
}

/// The toolchain, installed into `target_dir/polyglot/python-venv` when missing; `None`, with a
/// message naming what is skipped, on a machine without `python3`.
pub fn toolchain(target_dir: &Path, skipped: &str) -> anyhow::Result<Option<Toolchain>> {
    if !crate::runs("python3") {
        eprintln!("xtask: python3 not found; skipping {skipped}");
        return Ok(None);
    }
    let venv = target_dir.join("polyglot/python-venv");
    let python = venv.join("bin/python");
    if !python.is_file() {
        run(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "creating the Python toolchain's virtual environment",
        )?;
    }
    let toolchain = Toolchain { venv };
    let wanted = [
        ("componentize-py", COMPONENTIZE_PY_VERSION),
        ("pytest", PYTEST_VERSION),
        ("websockets", WEBSOCKETS_VERSION),
        ("httpx", HTTPX_VERSION),
        ("httpx-sse", HTTPX_SSE_VERSION),
        ("standardwebhooks", STANDARDWEBHOOKS_VERSION),
        ("stripe", STRIPE_VERSION),
    ];
    let installed = Command::new(toolchain.python())
        .args([
            "-m",
            "pip",
            "list",
            "--format=freeze",
            "--disable-pip-version-check",
        ])
        .output()
        .context("listing the Python toolchain's packages")?;
    let listed = String::from_utf8_lossy(&installed.stdout).to_lowercase();
    let missing: Vec<String> = wanted
        .iter()
        .filter(|(name, version)| {
            !listed
                .lines()
                .any(|line| line == format!("{name}=={version}"))
        })
        .map(|(name, version)| format!("{name}=={version}"))
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "xtask: installing {} into {}",
            missing.join(" "),
            toolchain.venv.display()
        );
        run(
            Command::new(toolchain.python())
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(&missing),
            "installing the Python toolchain",
        )?;
    }
    Ok(Some(toolchain))
}

impl Toolchain {
    fn python(&self) -> PathBuf {
        self.venv.join("bin/python")
    }

    /// The pinned componentize-py.
    pub fn componentize_py(&self) -> PathBuf {
        self.venv.join("bin/componentize-py")
    }

    /// Builds the Python engine in `engine_dir` into the component `out` (written beside it,
    /// then renamed, so a watching host never loads half a file).
    pub fn build(&self, root: &Path, engine_dir: &Path, out: &Path) -> anyhow::Result<()> {
        let name = out.file_name().unwrap_or_default().to_string_lossy();
        let staging = out.with_file_name(format!(".{name}.partial"));
        run(
            Command::new(self.componentize_py())
                .arg("-d")
                .arg(root.join("wit"))
                .args(["-w", WORLD, "componentize", "app", "-p"])
                .arg(engine_dir)
                .arg("-p")
                .arg(root.join("sdk/python"))
                .arg("-o")
                .arg(&staging)
                // Bytecode caches stay out of the source folders.
                .env("PYTHONDONTWRITEBYTECODE", "1"),
            &format!("building the Python engine {}", engine_dir.display()),
        )?;
        std::fs::rename(&staging, out).with_context(|| format!("moving {}", staging.display()))?;
        Ok(())
    }

    /// pytest in `dir` (its `pyproject.toml` says where the tests and the kit are).
    pub fn pytest(&self, dir: &Path) -> anyhow::Result<()> {
        run(
            Command::new(self.python())
                .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
                .current_dir(dir)
                .env("PYTHONDONTWRITEBYTECODE", "1"),
            &format!("the Python tests of {}", dir.display()),
        )
    }
}

/// The kit's tests (`sdk/python`) and each Python engine's (`engines/*/app.py`), with pytest.
pub fn kit_tests(root: &Path, target_dir: &Path, engines: &[PathBuf]) -> anyhow::Result<()> {
    let kit = root.join("sdk/python");
    if !kit.join("pyproject.toml").is_file() {
        return Ok(());
    }
    let Some(toolchain) = toolchain(target_dir, "the Python kit's and engines' tests")? else {
        return Ok(());
    };
    toolchain.pytest(&kit)?;
    for engine in engines {
        toolchain.pytest(engine)?;
    }
    Ok(())
}

/// Runs `command`, failing with `what` when it does not succeed.
pub fn run(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("{what}: starting {:?}", command.get_program()))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}
