//! The JavaScript engines: the pinned toolchain that builds them (componentize-js,
//! with esbuild to bundle an engine's modules into the one module componentize-js takes),
//! installed with npm under the target dir; the build of a JavaScript engine folder into a
//! component; and the tests of the JavaScript kit (`sdk/javascript`) and of the JavaScript
//! engines, run with node's test runner. Without `node` and `npm` each is skipped with a
//! message. Nothing is written into the repository but the built `.wasm`.
//!
//! The tools' versions are pinned in `sdk/javascript/toolchain/package.json` and its lock
//! (`npm ci`): componentize-js 0.20.0, run through its own command line, and esbuild; jco
//! 1.34.0 beside them for `jco guest-types` (the kit's `types/`). componentize-js 0.21 and later generate bindings
//! that run every call through the component model's async task bookkeeping, which costs 2.6×
//! the requests per second in SpiderMonkey's interpreter; 0.20.0 has the lean bindings and the
//! fix of repeated export calls (a use-after-free, componentize-js #319). jco 1.35.0 fails with
//! `os error 44`. See `docs/src/engines/javascript.md`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};

/// The toolchain's manifest and lock, installed as they are with `npm ci`.
const TOOLCHAIN_MANIFEST: &str = include_str!("../../sdk/javascript/toolchain/package.json");
const TOOLCHAIN_LOCK: &str = include_str!("../../sdk/javascript/toolchain/package-lock.json");

/// The packages the build runs, at the versions the lock pins (checked after installing).
const PINNED: [(&str, &str); 3] = [
    ("@bytecodealliance/jco", "1.34.0"),
    ("@bytecodealliance/componentize-js", "0.20.0"),
    ("esbuild", "0.28.2"),
];

/// The oldest node the kit and the tools are used with.
const MIN_NODE_MAJOR: u32 = 20;

/// Where an engine folder keeps its component entry (it imports the WIT interfaces and exports
/// `guest`).
const COMPONENT_ENTRY: &str = "src/component.js";

/// The installed JavaScript toolchain: node, and the pinned tools under the target dir.
pub struct Toolchain {
    /// `<target>/polyglot/javascript`: the manifest, the lock and `node_modules`.
    dir: PathBuf,
}

/// The major version of `node`, or why there is none usable.
fn node_major() -> Result<u32, String> {
    let output = Command::new("node")
        .arg("--version")
        .output()
        .map_err(|_| "node is not installed".to_owned())?;
    if !output.status.success() {
        return Err("`node --version` failed".into());
    }
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|major| major.parse().ok())
        .ok_or_else(|| format!("node reports the version {version:?}"))
}

/// Why node cannot run the kit's tests or the tools, if it cannot.
fn node_missing() -> Option<String> {
    match node_major() {
        Err(reason) => Some(reason),
        Ok(major) if major < MIN_NODE_MAJOR => {
            Some(format!("node {major} is older than node {MIN_NODE_MAJOR}"))
        }
        Ok(_) => None,
    }
}

/// The toolchain, installed into `target_dir/polyglot/javascript` with `npm ci` unless it is
/// there already at the pinned versions. `None`, after saying what is skipped and why, when
/// `node` (20 or later) or `npm` is missing.
pub fn toolchain(target_dir: &Path) -> anyhow::Result<Option<Toolchain>> {
    let missing =
        node_missing().or_else(|| (!crate::runs("npm")).then(|| "npm is not installed".into()));
    if let Some(reason) = missing {
        eprintln!(
            "xtask: {reason}; skipping the JavaScript engines (engines/jsnotes and any folder with \
             {COMPONENT_ENTRY}): building them needs node {MIN_NODE_MAJOR}+ and npm"
        );
        return Ok(None);
    }
    let dir = target_dir.join("polyglot").join("javascript");
    let toolchain = Toolchain { dir };
    if toolchain.installed()? {
        return Ok(Some(toolchain));
    }
    let dir = &toolchain.dir;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join("package.json"), TOOLCHAIN_MANIFEST)?;
    std::fs::write(dir.join("package-lock.json"), TOOLCHAIN_LOCK)?;
    // The marker goes first: an install that stops half-way is not taken for a finished one.
    let _ = std::fs::remove_file(toolchain.marker());
    eprintln!(
        "xtask: installing the JavaScript toolchain ({}) into {}",
        PINNED
            .iter()
            .map(|(name, version)| format!("{name} {version}"))
            .collect::<Vec<_>>()
            .join(", "),
        dir.display()
    );
    // `--ignore-scripts`: none of the tools needs its install script (esbuild finds its
    // binary package without it).
    let status = Command::new("npm")
        .args([
            "ci",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ])
        .current_dir(dir)
        .status()
        .context("running npm ci for the JavaScript toolchain")?;
    if !status.success() {
        bail!(
            "`npm ci` of the JavaScript toolchain in {} failed",
            dir.display()
        );
    }
    for (name, version) in PINNED {
        let found = toolchain.version_of(name)?;
        if found.as_deref() != Some(version) {
            bail!(
                "npm installed {name} {} into {}; the lock pins {version}",
                found.as_deref().unwrap_or("(nothing)"),
                dir.display()
            );
        }
    }
    std::fs::write(toolchain.marker(), TOOLCHAIN_LOCK)?;
    Ok(Some(toolchain))
}

impl Toolchain {
    /// Written after a complete install: the lock it installed.
    fn marker(&self) -> PathBuf {
        self.dir
            .join("node_modules")
            .join(".tessera-installed-lock.json")
    }

    /// True when the pinned lock was installed here completely.
    fn installed(&self) -> anyhow::Result<bool> {
        let installed =
            std::fs::read_to_string(self.marker()).unwrap_or_default() == TOOLCHAIN_LOCK;
        Ok(installed
            && PINNED
                .iter()
                .map(|(name, version)| Ok(self.version_of(name)?.as_deref() == Some(*version)))
                .collect::<anyhow::Result<Vec<bool>>>()?
                .into_iter()
                .all(|pinned| pinned))
    }

    /// The installed version of package `name` (its `package.json`'s `version`).
    fn version_of(&self, name: &str) -> anyhow::Result<Option<String>> {
        let manifest = self
            .dir
            .join("node_modules")
            .join(name)
            .join("package.json");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            return Ok(None);
        };
        Ok(json_string_field(&text, "version"))
    }

    /// A tool's entry script under `node_modules`.
    fn script(&self, relative: &str) -> PathBuf {
        self.dir.join("node_modules").join(relative)
    }

    /// Builds the JavaScript engine in `engine_dir` (its `src/component.js` and the modules it
    /// imports; `root` is the repository, whose `wit/` the component implements) into the
    /// component `out`: bundled into one module with esbuild (the `tessera:` imports left to
    /// componentize-js), then componentized without `wasi:http` (the host provides none). The
    /// component is written beside `out` and renamed onto it, so a watching host never loads
    /// half a file; the bundle stays under the target dir.
    pub fn build(&self, root: &Path, engine_dir: &Path, out: &Path) -> anyhow::Result<()> {
        let entry = engine_dir.join(COMPONENT_ENTRY);
        if !entry.is_file() {
            bail!("{} has no {COMPONENT_ENTRY}", engine_dir.display());
        }
        let name = engine_dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| "engine".into());
        let work = self.dir.join("build").join(&name);
        std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
        let bundle = work.join("bundle.js");
        let started = Instant::now();
        let status = Command::new("node")
            .arg(self.script("esbuild/bin/esbuild"))
            .arg(&entry)
            .args([
                "--bundle",
                "--format=esm",
                "--platform=neutral",
                "--main-fields=module,main",
                "--target=es2022",
                "--external:tessera:*",
                "--log-level=warning",
            ])
            .arg(format!("--outfile={}", bundle.display()))
            .current_dir(&work)
            .status()
            .context("running esbuild")?;
        if !status.success() {
            bail!("bundling {} with esbuild failed", entry.display());
        }
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let file_name = out
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("{name}.wasm"));
        let staging = out.with_file_name(format!(".{file_name}.partial"));
        let _ = std::fs::remove_file(&staging);
        let output = Command::new("node")
            .arg(self.script("@bytecodealliance/componentize-js/src/cli.js"))
            .arg(&bundle)
            .arg("--wit")
            .arg(root.join("wit"))
            .args([
                "--world-name",
                "engine",
                "--disable",
                "http",
                "fetch-event",
                "-o",
            ])
            .arg(&staging)
            .current_dir(&work)
            .output()
            .context("running componentize-js")?;
        if !output.status.success() || !staging.is_file() {
            let _ = std::fs::remove_file(&staging);
            bail!(
                "componentizing {} failed ({}):\n{}{}",
                engine_dir.display(),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::fs::rename(&staging, out)
            .with_context(|| format!("moving the component to {}", out.display()))?;
        let bytes = std::fs::metadata(out).map(|meta| meta.len()).unwrap_or(0);
        eprintln!(
            "xtask: built the JavaScript engine {name} ({:.1} MB, {:.0} s)",
            bytes as f64 / 1e6,
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }
}

/// The value of the first `"field": "…"` of a JSON text (a package manifest), unescaped only
/// as far as versions need.
fn json_string_field(text: &str, field: &str) -> Option<String> {
    let key = format!("\"{field}\"");
    let after = &text[text.find(&key)? + key.len()..];
    let after = after.trim_start().strip_prefix(':')?.trim_start();
    let value = after.strip_prefix('"')?;
    Some(value[..value.find('"')?].to_owned())
}

/// True for a JavaScript engine folder (how `build-engines` recognises `engines/jsnotes`): a
/// `package.json` and the component entry `src/component.js`, and no `Cargo.toml`.
pub fn is_javascript_engine(dir: &Path) -> bool {
    dir.join("package.json").is_file()
        && dir.join(COMPONENT_ENTRY).is_file()
        && !dir.join("Cargo.toml").exists()
}

/// Where the kit keeps the TypeScript declarations of the engine world, as `jco guest-types`
/// makes them of `wit/`: the `tessera:engine/*` modules an engine imports and the `guest` it
/// exports.
pub const WIT_TYPES_DIR: &str = "sdk/javascript/types";

impl Toolchain {
    /// Writes the TypeScript declarations of the world in `root/wit` into `out` (replaced).
    pub fn wit_types(&self, root: &Path, out: &Path) -> anyhow::Result<()> {
        let _ = std::fs::remove_dir_all(out);
        let output = Command::new("node")
            .arg(self.script("@bytecodealliance/jco/dist/jco.js"))
            .arg("guest-types")
            .arg(root.join("wit"))
            .args(["--world-name", "engine", "--quiet", "--out-dir"])
            .arg(out)
            .output()
            .context("running jco guest-types")?;
        if !output.status.success() {
            bail!(
                "jco guest-types failed ({}):\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(())
    }
}

/// The files under `dir`, by their path relative to it, with their contents.
fn files_under(dir: &Path) -> anyhow::Result<std::collections::BTreeMap<PathBuf, Vec<u8>>> {
    let mut files = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in
            std::fs::read_dir(&current).with_context(|| format!("reading {}", current.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap_or(&path).to_path_buf();
                files.insert(relative, std::fs::read(&path)?);
            }
        }
    }
    Ok(files)
}

/// Fails when the kit's TypeScript declarations ([`WIT_TYPES_DIR`]) are not what `jco
/// guest-types` makes of `wit/` now (the WIT changed without them). Skipped, with a message,
/// without node and npm.
pub fn check_wit_types(root: &Path, target_dir: &Path) -> anyhow::Result<()> {
    let Some(toolchain) = toolchain(target_dir)? else {
        eprintln!("xtask: skipping the check of {WIT_TYPES_DIR}: it needs node and npm");
        return Ok(());
    };
    let fresh = toolchain.dir.join("wit-types");
    toolchain.wit_types(root, &fresh)?;
    if files_under(&fresh)? != files_under(&root.join(WIT_TYPES_DIR))? {
        bail!(
            "{WIT_TYPES_DIR} is not what `jco guest-types` makes of wit/; \
             run `cargo xtask js-types` and commit the result"
        );
    }
    eprintln!("xtask: {WIT_TYPES_DIR} matches wit/");
    Ok(())
}

/// Regenerates the kit's TypeScript declarations ([`WIT_TYPES_DIR`]) from `wit/`.
pub fn write_wit_types(root: &Path, target_dir: &Path) -> anyhow::Result<()> {
    let Some(toolchain) = toolchain(target_dir)? else {
        bail!("generating {WIT_TYPES_DIR} needs node and npm");
    };
    toolchain.wit_types(root, &root.join(WIT_TYPES_DIR))?;
    eprintln!("xtask: wrote {WIT_TYPES_DIR}");
    Ok(())
}

/// Runs `node --test` for the JavaScript kit (`sdk/javascript`) and for every JavaScript
/// engine under `engines/` that has a `test/` folder; skipped with a message without node 20+.
/// The tests need nothing installed (the kit has no dependencies), so `target_dir` holds
/// nothing of theirs.
pub fn kit_tests(root: &Path, target_dir: &Path) -> anyhow::Result<()> {
    let _ = target_dir;
    if let Some(reason) = node_missing() {
        eprintln!(
            "xtask: {reason}; skipping the JavaScript kit's tests (sdk/javascript, engines/jsnotes): \
             they need node {MIN_NODE_MAJOR}+"
        );
        return Ok(());
    }
    let mut suites = Vec::new();
    let kit = root.join("sdk").join("javascript");
    if kit.join("test").is_dir() {
        suites.push(kit);
    }
    let engines = root.join("engines");
    if engines.is_dir() {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&engines).context("reading engines/")? {
            let path = entry?.path();
            if is_javascript_engine(&path) && path.join("test").is_dir() {
                found.push(path);
            }
        }
        found.sort();
        suites.extend(found);
    }
    let mut failed = Vec::new();
    for suite in &suites {
        eprintln!("xtask: node --test in {}", suite.display());
        let status = Command::new("node")
            .args(["--test", "test/"])
            .current_dir(suite)
            .status()
            .with_context(|| format!("running node --test in {}", suite.display()))?;
        if !status.success() {
            failed.push(suite.display().to_string());
        }
    }
    if !failed.is_empty() {
        bail!("the JavaScript tests failed in {}", failed.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_pins_what_the_build_checks() {
        for (name, version) in PINNED {
            assert!(
                TOOLCHAIN_MANIFEST.contains(&format!("\"{name}\": \"{version}\"")),
                "package.json pins {name} {version}"
            );
            let entry = format!("\"node_modules/{name}\": {{");
            let at = TOOLCHAIN_LOCK
                .find(&entry)
                .unwrap_or_else(|| panic!("the lock has {name}"));
            assert_eq!(
                json_string_field(&TOOLCHAIN_LOCK[at..], "version").as_deref(),
                Some(version),
                "the lock pins {name} {version}"
            );
        }
    }

    #[test]
    fn manifests_give_their_version() {
        assert_eq!(
            json_string_field("{\"name\": \"x\", \"version\" : \"1.2.3\"}", "version").as_deref(),
            Some("1.2.3")
        );
        assert_eq!(json_string_field("{}", "version"), None);
    }

    #[test]
    fn the_example_is_a_javascript_engine() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert!(is_javascript_engine(&root.join("engines/jsnotes")));
        assert!(!is_javascript_engine(&root.join("engines/notes")));
        assert!(!is_javascript_engine(&root.join("sdk/javascript")));
    }
}
