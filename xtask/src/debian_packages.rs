//! The Debian packages the tests run as real peers: Chromium and its WebDriver (the console's
//! browser tests), `docker-registry` (the CNCF distribution registry) and `skopeo` (the
//! engine-registry tests). Installed with apt-get when missing and this runs as root (CI's
//! machines); without root or apt they are left to the person, with a message naming them, and
//! the tests that need them fail saying the same. (axe-core, from npm, the browser tests install
//! themselves under the target dir.)

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, bail};

/// A program the tests run, and the package that installs it.
struct Needed {
    program: &'static str,
    package: &'static str,
}

/// What the tests need.
const NEEDED: &[Needed] = &[
    Needed {
        program: "/usr/bin/chromium",
        package: "chromium",
    },
    Needed {
        program: "/usr/bin/chromedriver",
        package: "chromium-driver",
    },
    Needed {
        program: "/usr/bin/docker-registry",
        package: "docker-registry",
    },
    Needed {
        program: "/usr/bin/skopeo",
        package: "skopeo",
    },
];

/// Makes sure the tests have the programs of [`NEEDED`].
pub fn ensure_test_peers() -> anyhow::Result<()> {
    let missing: Vec<&str> = NEEDED
        .iter()
        .filter(|needed| !Path::new(needed.program).exists())
        .map(|needed| needed.package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let listed = missing.join(" ");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0");
    if !root || Command::new("apt-get").arg("--version").output().is_err() {
        eprintln!(
            "xtask: the tests need Debian's {listed} (apt-get install {listed}); the tests that \
             run them will fail until installed"
        );
        return Ok(());
    }
    eprintln!("xtask: installing {listed} for the tests");
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .context("running apt-get")
    };
    if !install()?.success() {
        // A stale package index: update it once and try again.
        Command::new("apt-get")
            .args(["update", "-q"])
            .status()
            .context("running apt-get update")?;
        if !install()?.success() {
            bail!("apt-get could not install {listed}");
        }
    }
    Ok(())
}
