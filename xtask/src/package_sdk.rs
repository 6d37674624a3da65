//! `cargo xtask package-sdk DIR`: packages the guest SDK for engine authors outside the
//! repository. `cargo package` packs `tessera-wire` and `tessera-sdk` together (the SDK depends
//! on the wire crate, which is not on a registry yet) and, unless `--no-verify`, builds the
//! packaged SDK on its own; the `.crate` files are copied to `DIR` and unpacked there as
//! `DIR/tessera-sdk` and `DIR/tessera-wire`, which `new-engine --path … --sdk DIR` depends on.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// The crates packaged, dependencies first.
const PACKAGED: [&str; 2] = ["tessera-wire", "tessera-sdk"];

/// `package-sdk DIR [--no-verify]`.
pub fn parse(arguments: &[String]) -> anyhow::Result<(PathBuf, bool)> {
    match arguments {
        [out] => Ok((PathBuf::from(out), true)),
        [out, flag] if flag == "--no-verify" => Ok((PathBuf::from(out), false)),
        _ => bail!("usage: cargo xtask package-sdk DIR [--no-verify]"),
    }
}

/// Packages the SDK with `cargo package` into `target/sdk-package/package/`, then copies and
/// unpacks each `.crate` into `out`.
pub fn package(root: &Path, target_dir: &Path, out: &Path, verify: bool) -> anyhow::Result<()> {
    let package_target = target_dir.join("sdk-package");
    let packages = package_target.join("package");
    if packages.exists() {
        std::fs::remove_dir_all(&packages)
            .with_context(|| format!("clearing {}", packages.display()))?;
    }
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .arg("package")
        .arg("--manifest-path")
        .arg(root.join("engines/Cargo.toml"))
        .arg("--target-dir")
        .arg(&package_target)
        // What is packaged is the working tree, committed or not.
        .arg("--allow-dirty");
    for name in PACKAGED {
        command.args(["--package", name]);
    }
    if !verify {
        command.arg("--no-verify");
    }
    let status = command.status().context("running cargo package")?;
    if !status.success() {
        bail!("`cargo package` of the SDK failed");
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    for name in PACKAGED {
        let packed = packed_crate(&packages, name)?;
        let file_name = packed.file_name().context("a .crate file name")?;
        std::fs::copy(&packed, out.join(file_name))
            .with_context(|| format!("copying {}", packed.display()))?;
        let unpacked = out.join(name);
        if unpacked.exists() {
            std::fs::remove_dir_all(&unpacked)?;
        }
        let status = Command::new("tar")
            .arg("-xzf")
            .arg(&packed)
            .arg("-C")
            .arg(out)
            .status()
            .context("running tar to unpack a .crate")?;
        if !status.success() {
            bail!("unpacking {} failed", packed.display());
        }
        let versioned = out.join(file_name.to_string_lossy().trim_end_matches(".crate"));
        std::fs::rename(&versioned, &unpacked).with_context(|| {
            format!("renaming {} to {}", versioned.display(), unpacked.display())
        })?;
        println!("packaged {} → {}", packed.display(), unpacked.display());
    }
    Ok(())
}

/// The one `.crate` of `name` in `packages`.
fn packed_crate(packages: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(packages).context("reading the packaged crates")? {
        let path = entry?.path();
        let file_name = path.file_name().unwrap_or_default().to_string_lossy();
        let version = file_name
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('-'))
            .and_then(|rest| rest.strip_suffix(".crate"));
        if version.is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit())) {
            found.push(path);
        }
    }
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => bail!("expected one packaged {name}, found {found:?}"),
    }
}
