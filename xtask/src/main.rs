//! Project commands for Tessera, run as `cargo xtask <command>` (see `.cargo/config.toml`).
//!
//! - `run [serve flags…]`: build everything (engines into `plugins/`, the host in release) and
//!   serve on the embedded defaults.
//! - `test [cargo test args…]`: build everything and run the whole test suite.
//! - `build-engines`: build every crate under `engines/` for `wasm32-wasip2` into `plugins/`.
//! - `new-engine NAME [--engines-dir DIR]`: scaffold a working engine crate `engines/NAME` on
//!   the guest SDK (in another engine workspace with `--engines-dir`).
//!
//! Each installs the `wasm32-wasip2` target first when it is missing. `cargo test -p xtask` runs
//! the tidy tests (`src/tidy.rs`): the project rules no compiler checks.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context as _, bail};

#[cfg(test)]
mod tidy;

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
            cargo(&["test", "--workspace"], rest)
        }
        "build-engines" => build_engines(),
        "new-engine" => match rest {
            [name] => new_engine(&workspace_root().join("engines"), name),
            [name, flag, engines_dir] if flag == "--engines-dir" => {
                new_engine(Path::new(engines_dir), name)
            }
            _ => bail!("usage: cargo xtask new-engine NAME [--engines-dir DIR]"),
        },
        "help" | "--help" | "-h" => {
            println!(
                "cargo xtask run [serve flags…] | test [cargo test args…] | build-engines | new-engine NAME"
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
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("engines");
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

/// Scaffolds `engines/NAME`: a routed, provisioned engine on the SDK, added to the engines
/// workspace, ready for `cargo xtask build-engines`.
/// Writes `<engines>/<name>` (a routed engine whose tenant and user provisioning are the SDK's
/// defaults) and adds it to the members of `<engines>/Cargo.toml`.
fn new_engine(engines: &Path, name: &str) -> anyhow::Result<()> {
    let valid = (1..=32).contains(&name.len())
        && name.as_bytes()[0].is_ascii_lowercase()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !["auth", "core", "api", "sdk"].contains(&name);
    if !valid {
        bail!(
            "{name:?} is not a valid engine code: 1-32 lower-case letters, digits or hyphens, starting with a letter, not auth/core/api/sdk"
        );
    }
    let crate_dir = engines.join(name);
    if crate_dir.exists() {
        bail!("{} already exists", crate_dir.display());
    }
    let manifest_path = engines.join("Cargo.toml");
    let manifest = std::fs::read_to_string(&manifest_path)
        .with_context(|| format!("reading {}", manifest_path.display()))?;
    let members_start = manifest
        .find("members = [")
        .context("engines/Cargo.toml has no members list")?;
    let members_end = members_start
        + manifest[members_start..]
            .find(']')
            .context("unterminated members list")?;
    let updated = format!(
        "{}    \"{name}\",\n{}",
        &manifest[..members_end],
        &manifest[members_end..]
    );

    let type_name: String = name
        .split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect();
    let variable_code = name.to_ascii_uppercase().replace('-', "_");
    std::fs::create_dir_all(crate_dir.join("src"))?;
    std::fs::write(
        crate_dir.join("Cargo.toml"),
        format!(
            r#"[package]
name = "{name}"
description = "The {name} engine for Tessera."
version.workspace = true
edition.workspace = true
rust-version.workspace = true
license.workspace = true
publish.workspace = true

[lib]
crate-type = ["cdylib"]

[dependencies]
tessera-sdk.workspace = true
serde.workspace = true
schemars.workspace = true
"#
        ),
    )?;
    std::fs::write(
        crate_dir.join("src/lib.rs"),
        format!(
            r#"//! The {name} engine: served by the host under `/{name}/api/v1/…`, its routes documented in
//! the host's OpenAPI document (`/api/openapi.json`) from `router()`.
//!
//! Tenant and user provisioning are the SDK's defaults: the tenant is recorded under `tenant`
//! and each user under `users/<user_id>` (storage is scoped to the engine and tenant by the
//! host); deprovisioning removes them. Override the `Engine` hooks to keep more.

use schemars::JsonSchema;
use serde::{{Deserialize, Serialize}};
use tessera_sdk::{{
    Context, Descriptor, Engine, HandlerResult, Operation, Request, Response, Router, Setting,
    SettingKind, settings, tenancy,
}};

/// The engine code, also its path prefix.
const CODE: &str = "{name}";

/// The setting of the word greetings start with (`TESSERA_ENGINES__{variable_code}__GREETING`).
const SETTING_GREETING: &str = "greeting";

struct {type_name};

/// The query of `GET /{name}/api/v1/hello`.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // Read by hand below; the type documents the query.
struct HelloQuery {{
    /// Who to greet (default `world`).
    name: Option<String>,
}}

/// A greeting.
#[derive(Serialize, JsonSchema)]
struct Greeting {{
    /// `<greeting>, <name>`.
    greeting: String,
    /// The caller.
    user_id: String,
}}

/// `GET /{name}/api/v1/hello?name=…`: a greeting for the verified caller.
fn hello(ctx: &Context, request: &Request) -> HandlerResult {{
    let query = request.query(&["name"])?;
    let name = query.get("name").unwrap_or("world");
    let word = settings::get(SETTING_GREETING).unwrap_or_else(|| "hello".to_owned());
    Ok(Response::ok(&Greeting {{
        greeting: format!("{{word}}, {{name}}"),
        user_id: ctx.user_id.clone(),
    }}))
}}

impl Engine for {type_name} {{
    fn describe() -> Descriptor {{
        Descriptor::new(CODE, "{type_name}", env!("CARGO_PKG_VERSION"))
            .tenant_provision(true)
            .user_provision(true)
    }}

    fn settings() -> Vec<Setting> {{
        vec![
            Setting::new(SETTING_GREETING, SettingKind::Text, "The word greetings start with.")
                .default_value("hello"),
        ]
    }}

    fn router() -> Router {{
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .doc(tenancy::status_operation())
            .get("/api/v1/hello", hello)
            .doc(Operation::new("Greet the caller").query::<HelloQuery>().ok::<Greeting>())
    }}
}}

tessera_sdk::export_engine!({type_name});
"#
        ),
    )?;
    std::fs::write(&manifest_path, updated)
        .with_context(|| format!("adding the engine to {}", manifest_path.display()))?;
    println!(
        "created {}; next: `cargo xtask build-engines` puts plugins/{name}.wasm in place,",
        crate_dir.display()
    );
    println!(
        "and a running `tessera serve` loads it: GET /{name}/api/v1/hello with a bearer token."
    );
    Ok(())
}
