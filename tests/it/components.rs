//! Engine components for the tests, built once per test run by the harness with the same
//! toolchains as the project's: the purpose-built ones of `tests/components/` and the real
//! engines of `engines/` (`cargo build --target wasm32-wasip2`), and the Python and
//! JavaScript engines of `engines/` and `tests/polyglot/` (`cargo xtask build-engines`, which
//! installs the pinned componentize-py and componentize-js under the target dir).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The folder of built `.wasm` files of the test components.
#[allow(dead_code)]
fn built_components() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| build_workspace("tests/components", "test-components"))
}

/// The folder of built `.wasm` files of the real engines.
fn built_engines() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| build_workspace("engines", "engines"))
}

/// The Python and JavaScript engines: the examples of `engines/` and the test engines of
/// `tests/polyglot/`, built into one folder.
fn built_polyglot_engines() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = target_dir().join("polyglot-engines");
        for from in ["engines", "tests/polyglot"] {
            let output = xtask(&[
                "build-engines",
                "--languages",
                "python,javascript",
                "--from",
                repository().join(from).to_str().unwrap(),
                "--plugins-dir",
                out.to_str().unwrap(),
            ])
            .env("CARGO_TARGET_DIR", target_dir())
            .output()
            .expect("running cargo xtask build-engines");
            assert!(
                output.status.success(),
                "building the Python and JavaScript engines of {from} failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        out
    })
}

/// The Python and JavaScript example engines of `engines/`.
#[allow(dead_code)]
pub const POLYGLOT_ENGINES: [&str; 2] = ["jsnotes", "pynotes"];

/// Copies the named Python or JavaScript engines (of `engines/` or `tests/polyglot/`) into
/// `plugins_dir`; a missing one names the tools it needs.
#[allow(dead_code)]
pub fn install_polyglot_engines(plugins_dir: &Path, names: &[&str]) {
    std::fs::create_dir_all(plugins_dir).unwrap();
    for name in names {
        let built = built_polyglot_engines().join(format!("{name}.wasm"));
        assert!(
            built.is_file(),
            "{} was not built: the Python and JavaScript engines need python3 and node with npm",
            built.display()
        );
        std::fs::copy(&built, plugins_dir.join(format!("{name}.wasm")))
            .unwrap_or_else(|error| panic!("copying {}: {error}", built.display()));
    }
}

/// The seven engines of the platform.
#[allow(dead_code)]
pub const ENGINES: [&str; 7] = [
    "activity",
    "chat",
    "drive",
    "mail",
    "notes",
    "usermanager",
    "voip",
];

/// Copies the named real engines into `plugins_dir`.
#[allow(dead_code)]
pub fn install_engines(plugins_dir: &Path, names: &[&str]) {
    std::fs::create_dir_all(plugins_dir).unwrap();
    for name in names {
        let built = built_engines().join(format!("{name}.wasm"));
        std::fs::copy(&built, plugins_dir.join(format!("{name}.wasm")))
            .unwrap_or_else(|error| panic!("copying {}: {error}", built.display()));
    }
}

/// The repository's root.
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `CARGO_TARGET_DIR`, else the repository's `target/`: the harness's nested cargo runs build
/// in folders of it.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository().join("target"))
}

/// `cargo xtask ARGUMENTS…` of this checkout, built in a target folder of its own.
#[allow(dead_code)]
pub fn xtask(arguments: &[&str]) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .args(["run", "--quiet", "--manifest-path"])
        .arg(repository().join("xtask/Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir().join("xtask-scaffold"))
        .arg("--")
        .args(arguments);
    command
}

fn build_workspace(folder: &str, target_name: &str) -> PathBuf {
    {
        let workspace = repository();
        let target_dir = target_dir().join(target_name);
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let output = Command::new(cargo)
            .args([
                "build",
                "--release",
                "--quiet",
                "--target",
                "wasm32-wasip2",
                "--manifest-path",
            ])
            .arg(workspace.join(folder).join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target_dir)
            .output()
            .expect("running cargo to build the test components");
        assert!(
            output.status.success(),
            "building {folder} failed (is the wasm32-wasip2 target installed? `cargo xtask test` installs it):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        target_dir.join("wasm32-wasip2").join("release")
    }
}

/// The built component of the crate `name` (e.g. `memory-bomb`).
#[allow(dead_code)]
pub fn component(name: &str) -> PathBuf {
    let path = built_components().join(format!("{}.wasm", name.replace('-', "_")));
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// Copies the named components into `plugins_dir` as `<name>.wasm`.
#[allow(dead_code)]
pub fn install(plugins_dir: &Path, names: &[&str]) {
    std::fs::create_dir_all(plugins_dir).unwrap();
    for name in names {
        std::fs::copy(component(name), plugins_dir.join(format!("{name}.wasm"))).unwrap();
    }
}

/// `component` with a custom section naming `label` appended: the same engine, other bytes
/// (another digest), as a new build of it would be.
#[allow(dead_code)]
pub fn another_build_of(component: &[u8], label: &str) -> Vec<u8> {
    let name = b"tessera-test-build";
    let mut content = vec![u8::try_from(name.len()).expect("a short name")];
    content.extend_from_slice(name);
    content.extend_from_slice(label.as_bytes());
    let mut bytes = component.to_vec();
    bytes.push(0);
    let mut size = content.len();
    loop {
        let byte = u8::try_from(size & 0x7f).expect("seven bits");
        size >>= 7;
        if size == 0 {
            bytes.push(byte);
            break;
        }
        bytes.push(byte | 0x80);
    }
    bytes.extend_from_slice(&content);
    bytes
}

/// The `wasi:http` example components of published packages, built unedited by
/// `cargo xtask wasi-http-examples` (`xtask/src/wasi_http_examples.rs`), by engine code.
#[allow(dead_code)]
pub const WASI_HTTP_EXAMPLES: [&str; 3] = [
    "wstd-http-server",
    "wasip2-http-proxy",
    "componentize-py-http",
];

/// Copies the named `wasi:http` examples (of [`WASI_HTTP_EXAMPLES`]) into `plugins_dir`.
#[allow(dead_code)]
pub fn install_wasi_http_examples(plugins_dir: &Path, codes: &[&str]) {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let out = target_dir().join("wasi-http-example-components");
        let output = xtask(&["wasi-http-examples", "--out", out.to_str().unwrap()])
            .env("CARGO_TARGET_DIR", target_dir())
            .output()
            .expect("running cargo xtask wasi-http-examples");
        assert!(
            output.status.success(),
            "building the wasi:http examples failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        out
    });
    std::fs::create_dir_all(plugins_dir).unwrap();
    for code in codes {
        let component = built.join(format!("{code}.wasm"));
        std::fs::copy(&component, plugins_dir.join(format!("{code}.wasm")))
            .unwrap_or_else(|error| panic!("copying {}: {error}", component.display()));
    }
}
