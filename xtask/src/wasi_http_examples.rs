//! `wasi:http` components nobody in this project wrote, built from their published sources
//! without editing them (`cargo xtask wasi-http-examples --out DIR`): the `http_server` example
//! of the `wstd` crate and the `http-proxy` example of the `wasip2` crate (crates.io), and the
//! `http` example of componentize-py's source distribution (PyPI), each checked against the
//! digest its registry publishes. The tests drop them into a host's plugins dir; the benchmark
//! serves the `wasip2` one beside `wasmtime serve`.
//!
//! Each lands as `<code>.wasm` in `DIR`: `wstd-http-server`, `wasip2-http-proxy` and
//! `componentize-py-http`. A JavaScript one is not among them: no npm package ships a
//! `wasi:http` example's sources (jco's and componentize-js's examples live in their
//! repositories only).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

use crate::python::run;

/// A crate of crates.io with a `wasi:http` example.
struct CrateExample {
    name: &'static str,
    version: &'static str,
    /// The `cksum` crates.io's index gives the `.crate` file (SHA-256).
    sha256: &'static str,
    example: &'static str,
    features: &'static [&'static str],
    /// The engine code it is installed under.
    code: &'static str,
}

const CRATE_EXAMPLES: [CrateExample; 2] = [
    CrateExample {
        name: "wstd",
        version: "0.6.8",
        sha256: "29b52936db10a79bb724dadd1c2c3aac958e8229dcb1f1c7f2b7044ca9fc6a3a",
        example: "http_server",
        features: &[],
        code: "wstd-http-server",
    },
    CrateExample {
        name: "wasip2",
        version: "1.0.4+wasi-0.2.12",
        sha256: "b67efb37e106e55ce722a510d6b5f9c17f083e5fc79afc2badeb12cc313d9487",
        example: "http-proxy",
        features: &["std"],
        code: "wasip2-http-proxy",
    },
];

/// componentize-py's source distribution (its `examples/http`), at the version the Python
/// toolchain installs (`python::COMPONENTIZE_PY_VERSION`).
const COMPONENTIZE_PY_SDIST: &str = "https://files.pythonhosted.org/packages/77/3d/c769bac866429f36a6d52451fb2980d5e8784efb1d265fb85eaaceb3c285/componentize_py-0.25.1.tar.gz";
const COMPONENTIZE_PY_SDIST_SHA256: &str =
    "e4087e916b06171303f803c8ffdd5f177e2422e87d9bed6ffe55cc41b2248aa8";
const COMPONENTIZE_PY_CODE: &str = "componentize-py-http";

/// `--out DIR`.
pub fn parse(arguments: &[String]) -> anyhow::Result<PathBuf> {
    match arguments {
        [flag, out] if flag == "--out" => Ok(PathBuf::from(out)),
        _ => bail!("usage: cargo xtask wasi-http-examples --out DIR"),
    }
}

/// Downloads, checks and builds every example into `out` (a built one is kept).
pub fn build(target_dir: &Path, out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let sources = target_dir.join("wasi-http-examples");
    for example in &CRATE_EXAMPLES {
        let built = out.join(format!("{}.wasm", example.code));
        if !built.is_file() {
            build_crate_example(&sources, example, &built)?;
        }
    }
    let built = out.join(format!("{COMPONENTIZE_PY_CODE}.wasm"));
    if !built.is_file() {
        build_componentize_py_example(target_dir, &sources, &built)?;
    }
    Ok(())
}

fn build_crate_example(sources: &Path, example: &CrateExample, out: &Path) -> anyhow::Result<()> {
    let folder = format!("{}-{}", example.name, example.version);
    let url = format!(
        "https://static.crates.io/crates/{}/{}.crate",
        example.name,
        folder.replace('+', "%2B")
    );
    let unpacked = download_and_unpack(sources, &url, example.sha256, &folder)?;
    let target = sources.join("rust-target");
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .args(["build", "--release", "--locked", "--quiet", "--target"])
        .arg(crate::WASM_TARGET)
        .args(["--example", example.example, "--manifest-path"])
        .arg(unpacked.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        // Not the crate's folder: a `rust-toolchain.toml` there would ask rustup for another
        // toolchain than the one building the project.
        .current_dir(sources);
    if !example.features.is_empty() {
        cargo.args(["--features", &example.features.join(",")]);
    }
    run(
        &mut cargo,
        &format!("building the {} example {}", example.name, example.example),
    )?;
    let built = target
        .join(crate::WASM_TARGET)
        .join("release/examples")
        .join(format!("{}.wasm", example.example.replace('-', "_")));
    copy_into_place(&built, out)
}

fn build_componentize_py_example(
    target_dir: &Path,
    sources: &Path,
    out: &Path,
) -> anyhow::Result<()> {
    let Some(toolchain) = crate::python::toolchain(target_dir, "componentize-py's http example")?
    else {
        bail!("componentize-py's http example needs python3");
    };
    let unpacked = download_and_unpack(
        sources,
        COMPONENTIZE_PY_SDIST,
        COMPONENTIZE_PY_SDIST_SHA256,
        "componentize_py-0.25.1",
    )?;
    let example = unpacked.join("examples/http");
    let staging = out.with_extension("partial");
    // The command its README gives.
    run(
        Command::new(toolchain.componentize_py())
            .arg("-d")
            .arg(unpacked.join("wit"))
            .args(["-w", "wasi:http/proxy@0.2.0", "componentize", "app", "-o"])
            .arg(&staging)
            .current_dir(&example)
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        "building componentize-py's http example",
    )?;
    std::fs::rename(&staging, out).with_context(|| format!("moving {}", staging.display()))
}

/// `url` downloaded into `sources` and unpacked there (a `.crate` and an sdist are both gzipped
/// tarballs holding one folder, `folder`), once its SHA-256 is `sha256`.
fn download_and_unpack(
    sources: &Path,
    url: &str,
    sha256: &str,
    folder: &str,
) -> anyhow::Result<PathBuf> {
    let unpacked = sources.join(folder);
    if unpacked.join(".verified").is_file() {
        return Ok(unpacked);
    }
    std::fs::create_dir_all(sources).with_context(|| format!("creating {}", sources.display()))?;
    let archive = sources.join(format!("{folder}.tar.gz"));
    run(
        Command::new("curl")
            .args([
                "--silent",
                "--show-error",
                "--fail",
                "--location",
                "--retry",
                "3",
                "-o",
            ])
            .arg(&archive)
            .arg(url),
        &format!("downloading {url}"),
    )?;
    let output = Command::new("sha256sum")
        .arg(&archive)
        .output()
        .context("running sha256sum")?;
    let digest = String::from_utf8_lossy(&output.stdout);
    let digest = digest.split_whitespace().next().unwrap_or_default();
    if digest != sha256 {
        bail!("{url} has the SHA-256 {digest}, not the published {sha256}");
    }
    if unpacked.exists() {
        std::fs::remove_dir_all(&unpacked)
            .with_context(|| format!("removing {}", unpacked.display()))?;
    }
    run(
        Command::new("tar")
            .arg("-xzf")
            .arg(&archive)
            .arg("-C")
            .arg(sources),
        &format!("unpacking {}", archive.display()),
    )?;
    std::fs::write(unpacked.join(".verified"), sha256)
        .with_context(|| format!("marking {}", unpacked.display()))?;
    Ok(unpacked)
}

fn copy_into_place(built: &Path, out: &Path) -> anyhow::Result<()> {
    let staging = out.with_extension("partial");
    std::fs::copy(built, &staging).with_context(|| format!("copying {}", built.display()))?;
    std::fs::rename(&staging, out).with_context(|| format!("moving {}", staging.display()))
}
