//! `cargo xtask new-engine`: scaffolds a working engine crate on the guest SDK, either as a
//! member of the repository's `engines/` workspace (the default) or, with `--path DIR`, as a
//! standalone crate anywhere that builds with `cargo build --release --target wasm32-wasip2`
//! alone.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

/// Where the new crate goes.
pub enum Placement {
    /// `<engines>/<name>`, added to the members of `<engines>/Cargo.toml`.
    Workspace { engines: PathBuf },
    /// A crate of its own in `dir`.
    Standalone { dir: PathBuf, sdk: SdkSource },
}

/// How a standalone crate finds the SDK.
pub enum SdkSource {
    /// The SDK crate of a Tessera checkout, by path (`engines/sdk`).
    Checkout(PathBuf),
    /// A folder written by `cargo xtask package-sdk`: the packaged `tessera-sdk` and
    /// `tessera-wire` crates, unpacked.
    Packaged(PathBuf),
    /// A version from the crate registry.
    Version(String),
}

/// `new-engine NAME [--path DIR] [--sdk PACKAGED_DIR | --sdk-version VERSION]`.
pub fn parse(root: &Path, arguments: &[String]) -> anyhow::Result<(String, Placement)> {
    const USAGE: &str = "usage: cargo xtask new-engine NAME [--path DIR] \
                         [--sdk PACKAGED_DIR | --sdk-version VERSION]";
    let Some((name, mut rest)) = arguments.split_first() else {
        bail!("{USAGE}");
    };
    let (mut path, mut sdk) = (None, None);
    while let [flag, value, more @ ..] = rest {
        match flag.as_str() {
            "--path" => path = Some(PathBuf::from(value)),
            "--sdk" => sdk = Some(SdkSource::Packaged(absolute(Path::new(value))?)),
            "--sdk-version" => sdk = Some(SdkSource::Version(value.clone())),
            _ => bail!("unknown option {flag:?}; {USAGE}"),
        }
        rest = more;
    }
    if !rest.is_empty() {
        bail!("{USAGE}");
    }
    let placement = match (path, sdk) {
        (None, None) => Placement::Workspace {
            engines: root.join("engines"),
        },
        (None, Some(_)) => bail!("--sdk and --sdk-version go with --path DIR"),
        (Some(dir), sdk) => Placement::Standalone {
            dir,
            sdk: sdk.unwrap_or_else(|| SdkSource::Checkout(root.join("engines/sdk"))),
        },
    };
    Ok((name.clone(), placement))
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("resolving {}", path.display()))
}

/// Checks `name` is an engine code the host accepts.
fn check_name(name: &str) -> anyhow::Result<()> {
    let valid = (1..=32).contains(&name.len())
        && name.as_bytes()[0].is_ascii_lowercase()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !["auth", "core", "api", "sdk"].contains(&name);
    if !valid {
        bail!(
            "{name:?} is not a valid engine code: 1-32 lower-case letters, digits or hyphens, \
             starting with a letter, not auth/core/api/sdk"
        );
    }
    Ok(())
}

/// Writes the engine `name` at `placement`.
pub fn create(name: &str, placement: &Placement) -> anyhow::Result<()> {
    check_name(name)?;
    let crate_dir = match placement {
        Placement::Workspace { engines } => engines.join(name),
        Placement::Standalone { dir, .. } => dir.clone(),
    };
    let occupied = crate_dir.join("Cargo.toml").exists()
        || crate_dir.join("src").exists()
        || matches!(placement, Placement::Workspace { .. }) && crate_dir.exists();
    if occupied {
        bail!("{} already holds a crate", crate_dir.display());
    }
    std::fs::create_dir_all(crate_dir.join("src"))
        .with_context(|| format!("creating {}", crate_dir.display()))?;
    let manifest = match placement {
        Placement::Workspace { .. } => workspace_manifest(name),
        Placement::Standalone { sdk, .. } => standalone_manifest(name, sdk)?,
    };
    std::fs::write(crate_dir.join("Cargo.toml"), manifest)?;
    std::fs::write(crate_dir.join("src/lib.rs"), library(name))?;
    std::fs::write(crate_dir.join("src/tests.rs"), tests(name))?;
    match placement {
        Placement::Workspace { engines } => add_member(engines, name)?,
        Placement::Standalone { .. } => {
            std::fs::write(crate_dir.join(".gitignore"), "/target\n")?;
        }
    }
    println!("created {}", crate_dir.display());
    match placement {
        Placement::Workspace { .. } => println!(
            "next: `cargo xtask build-engines` puts plugins/{name}.wasm in place, and a running \
             `tessera serve` loads it: GET /{name}/api/v1/hello with a bearer token."
        ),
        Placement::Standalone { .. } => println!(
            "next: `cargo build --release --target wasm32-wasip2` in it, then copy \
             target/wasm32-wasip2/release/{}.wasm to the host's plugins/{name}.wasm; a running \
             `tessera serve` loads it: GET /{name}/api/v1/hello with a bearer token.",
            name.replace('-', "_")
        ),
    }
    Ok(())
}

/// Adds `name` to the members of `<engines>/Cargo.toml`.
fn add_member(engines: &Path, name: &str) -> anyhow::Result<()> {
    let manifest_path = engines.join("Cargo.toml");
    let manifest = std::fs::read_to_string(&manifest_path)
        .with_context(|| format!("reading {}", manifest_path.display()))?;
    let members_start = manifest
        .find("members = [")
        .context("the engines' Cargo.toml has no members list")?;
    let members_end = members_start
        + manifest[members_start..]
            .find(']')
            .context("unterminated members list")?;
    let updated = format!(
        "{}    \"{name}\",\n{}",
        &manifest[..members_end],
        &manifest[members_end..]
    );
    std::fs::write(&manifest_path, updated)
        .with_context(|| format!("adding the engine to {}", manifest_path.display()))
}

/// The manifest of a member of the engines' workspace (its dependencies are the workspace's).
fn workspace_manifest(name: &str) -> String {
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

[dev-dependencies]
# `cargo test`: the routes against the SDK's fakes of the host (`src/tests.rs`).
tessera-sdk = {{ workspace = true, features = ["test-kit"] }}
"#
    )
}

/// The manifest of a crate of its own: the SDK from `sdk`, the release profile the repository's
/// engines use, and an empty `[workspace]` so an enclosing workspace does not claim it.
fn standalone_manifest(name: &str, sdk: &SdkSource) -> anyhow::Result<String> {
    let quoted = |path: PathBuf| format!("{:?}", path.display().to_string());
    let (sdk_dependency, patch) = match sdk {
        SdkSource::Checkout(sdk) => (format!("path = {}", quoted(absolute(sdk)?)), None),
        SdkSource::Packaged(packaged) => {
            for crate_name in ["tessera-sdk", "tessera-wire"] {
                let manifest = packaged.join(crate_name).join("Cargo.toml");
                if !manifest.is_file() {
                    bail!(
                        "{} is missing: --sdk names a folder written by `cargo xtask package-sdk`",
                        manifest.display()
                    );
                }
            }
            (
                format!("path = {}", quoted(packaged.join("tessera-sdk"))),
                // The packaged SDK names tessera-wire by version; until both are on the
                // registry, the packaged copy stands in for it.
                Some(format!(
                    "\n[patch.crates-io]\ntessera-wire = {{ path = {} }}\n",
                    quoted(packaged.join("tessera-wire"))
                )),
            )
        }
        SdkSource::Version(version) => (format!("version = {version:?}"), None),
    };
    let dev_dependency = format!("{{ {sdk_dependency}, features = [\"test-kit\"] }}");
    let sdk_dependency = format!("{{ {sdk_dependency} }}");
    Ok(format!(
        r#"[package]
name = "{name}"
description = "The {name} engine for Tessera."
version = "0.1.0"
edition = "2024"
rust-version = "1.95"
publish = false

# A WebAssembly component of the `tessera:engine/engine@0.3.0` world:
# `cargo build --release --target wasm32-wasip2`.
[lib]
crate-type = ["cdylib"]

[dependencies]
tessera-sdk = {sdk_dependency}
serde = {{ version = "1", features = ["derive"] }}
schemars = {{ version = "1.2", default-features = false, features = ["derive", "std"] }}

[dev-dependencies]
# `cargo test`: the routes against the SDK's fakes of the host (`src/tests.rs`).
tessera-sdk = {dev_dependency}
{patch}
[profile.release]
opt-level = "s"
lto = true
strip = true
codegen-units = 1

# A crate of its own, even inside another workspace's folder.
[workspace]
"#,
        patch = patch.unwrap_or_default()
    ))
}

/// The engine's type name: `hello-world` → `HelloWorld`.
fn type_name_of(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The engine's `src/lib.rs`: a routed engine with a setting, whose tenant and user
/// provisioning are the SDK's defaults.
fn library(name: &str) -> String {
    let type_name = type_name_of(name);
    let variable_code = name.to_ascii_uppercase().replace('-', "_");
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

#[cfg(test)]
mod tests;
"#
    )
}

/// The engine's `src/tests.rs`: its route driven by the SDK's test kit, natively.
fn tests(name: &str) -> String {
    let type_name = type_name_of(name);
    format!(
        r#"//! The {name} engine's routes, tested natively against the SDK's in-memory fakes of the
//! host (`cargo test`: no host, no database, no wasm build).

use tessera_sdk::Context;
use tessera_sdk::testkit::TestHost;

use crate::{type_name};

#[test]
fn hello_greets_the_caller_with_the_configured_word() {{
    let host = TestHost::<{type_name}>::new();
    let ada = Context::for_tests("tenant-1", "ada", "viewer");
    let greeted = host.get(&ada, "/api/v1/hello?name=Ada");
    assert_eq!(greeted.status, 200);
    assert_eq!(greeted.json()["data"]["greeting"], "hello, Ada");
    assert_eq!(greeted.json()["data"]["user_id"], "ada");

    // As the operator would set it (`TESSERA_ENGINES__<CODE>__GREETING`).
    host.set_setting("greeting", "hi");
    assert_eq!(host.get(&ada, "/api/v1/hello").json()["data"]["greeting"], "hi, world");
}}

#[test]
fn provisioning_records_the_tenant_and_the_route_is_documented() {{
    let host = TestHost::<{type_name}>::new();
    let tenant = tessera_sdk::TenantInfo {{
        tenant_id: "tenant-1".into(),
        tenant_short_id: "acme".into(),
        name: "Acme".into(),
    }};
    host.provision_tenant(&tenant).unwrap();
    let ada = Context::for_tests("tenant-1", "ada", "viewer");
    let status = host.get(&ada, "/api/v1/status");
    assert_eq!(status.json()["data"]["tenant_provisioned"], true);
    assert_eq!(host.api()["paths"]["/api/v1/hello"]["get"]["summary"], "Greet the caller");
}}
"#
    )
}
