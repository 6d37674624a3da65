//! The console's browser tests' browser: Debian's `chromium` and `chromium-driver`,
//! installed with apt-get when missing and this runs as root (CI's machines). Without root or
//! apt they are left to the person, with a message naming them; the browser tests then fail
//! saying the same. (axe-core, from npm, the tests install themselves under the target dir.)

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, bail};

/// Where Debian's packages put the browser and its driver.
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Makes sure the browser tests have Chromium and chromedriver.
pub fn ensure_chromium() -> anyhow::Result<()> {
    if Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists() {
        return Ok(());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0");
    if !root || Command::new("apt-get").arg("--version").output().is_err() {
        eprintln!(
            "xtask: the console's browser tests need Debian's chromium and chromium-driver \
             (apt-get install chromium chromium-driver); they will fail until installed"
        );
        return Ok(());
    }
    eprintln!("xtask: installing chromium and chromium-driver for the console's browser tests");
    let installed = Command::new("apt-get")
        .args(["install", "-y", "-q", "chromium", "chromium-driver"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .context("running apt-get")?;
    if !installed.success() {
        // A stale package index: update it once and try again.
        Command::new("apt-get")
            .args(["update", "-q"])
            .status()
            .context("running apt-get update")?;
        let retried = Command::new("apt-get")
            .args(["install", "-y", "-q", "chromium", "chromium-driver"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .context("running apt-get")?;
        if !retried.success() {
            bail!("apt-get could not install chromium and chromium-driver");
        }
    }
    Ok(())
}
