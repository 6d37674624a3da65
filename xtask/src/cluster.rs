//! `cargo xtask cluster [--hosts N] [--database-url postgres://…] [--base-port PORT]`: a
//! cluster to try on one machine, as the tests start one: the engines built into
//! `plugins/`, the host built in release, then N `tessera serve` processes on one PostgreSQL
//! database, each on its own loopback port (`PORT`, `PORT+1`, …; default 8081) with its own
//! data dir under the target dir (`cluster/host-<n>`) and one shared service secret. A line per
//! host once it reports ready; Ctrl-C stops them all.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// What `cargo xtask cluster` was asked for.
pub struct Options {
    pub hosts: u16,
    pub database_url: String,
    pub base_port: u16,
}

pub fn parse(arguments: &[String]) -> anyhow::Result<Options> {
    let mut options = Options {
        hosts: 3,
        database_url: std::env::var("TESSERA_DATABASE_URL").unwrap_or_default(),
        base_port: 8081,
    };
    let mut arguments = arguments.iter();
    while let Some(argument) = arguments.next() {
        let mut value = || {
            arguments
                .next()
                .with_context(|| format!("{argument} takes a value"))
        };
        match argument.as_str() {
            "--hosts" => options.hosts = value()?.parse().context("--hosts takes a number")?,
            "--database-url" => options.database_url = value()?.clone(),
            "--base-port" => {
                options.base_port = value()?.parse().context("--base-port takes a port")?;
            }
            other => bail!("unknown argument {other:?} for `cargo xtask cluster`"),
        }
    }
    if !(options.database_url.starts_with("postgres://")
        || options.database_url.starts_with("postgresql://"))
    {
        bail!(
            "a cluster shares one PostgreSQL database: give --database-url postgres://… (or TESSERA_DATABASE_URL)"
        );
    }
    if !(1..=16).contains(&options.hosts) {
        bail!("--hosts takes 1 to 16");
    }
    Ok(options)
}

/// Builds, starts the hosts, prints a line per host, and waits for them.
pub fn run(root: &Path, target_dir: &Path, options: &Options) -> anyhow::Result<()> {
    crate::build_engines(&crate::BuildOptions::everything())?;
    crate::cargo(
        &[
            "build",
            "--release",
            "--package",
            "tessera-host",
            "--bin",
            "tessera",
        ],
        &[],
    )?;
    let binary = target_dir.join("release").join("tessera");
    let cluster_dir = target_dir.join("cluster");
    std::fs::create_dir_all(&cluster_dir)?;
    // One service secret for every host: it seals what they all read from the database.
    let secret_file = cluster_dir.join("service_secret");
    if !secret_file.is_file() {
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut random| random.read_exact(&mut bytes))
            .context("reading /dev/urandom for the service secret")?;
        let secret: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        std::fs::write(&secret_file, secret)?;
    }
    let secret = std::fs::read_to_string(&secret_file)?;
    let mut children: Vec<Child> = Vec::new();
    for index in 0..options.hosts {
        let port = options.base_port + index;
        let data_dir = cluster_dir.join(format!("host-{}", index + 1));
        std::fs::create_dir_all(&data_dir)?;
        let child = Command::new(&binary)
            .arg("serve")
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(&data_dir)
            .arg("--database-url")
            .arg(&options.database_url)
            .arg("--plugins-dir")
            .arg(root.join("plugins"))
            .env("TESSERA_SERVICE_SECRET", secret.trim())
            .env(
                "TESSERA_LOG",
                std::env::var("TESSERA_LOG").unwrap_or("warn".into()),
            )
            .spawn()
            .with_context(|| format!("starting host {}", index + 1))?;
        children.push(child);
        wait_until_ready(port, &mut children)?;
        println!(
            "host {}: http://127.0.0.1:{port}  (data dir {})",
            index + 1,
            data_dir.display()
        );
    }
    println!(
        "{} hosts on {}; try `{} admin hosts --format table --database-url {} --data-dir {}`. Ctrl-C stops them.",
        options.hosts,
        options.database_url,
        binary.display(),
        options.database_url,
        cluster_dir.join("host-1").display()
    );
    for mut child in children {
        child.wait()?;
    }
    Ok(())
}

/// Asks `GET /readyz` on `port` until it answers 200 (at most two minutes: a first start
/// compiles the engines); fails if a host exits meanwhile.
fn wait_until_ready(port: u16, children: &mut [Child]) -> anyhow::Result<()> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        for child in children.iter_mut() {
            if let Some(status) = child.try_wait()? {
                bail!("a host exited before the cluster was up ({status})");
            }
        }
        if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
            stream.set_read_timeout(Some(Duration::from_secs(2)))?;
            stream.write_all(
                b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            )?;
            let mut answer = String::new();
            let _ = stream.read_to_string(&mut answer);
            if answer.starts_with("HTTP/1.1 200") {
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    bail!("the host on port {port} did not report ready within two minutes")
}
