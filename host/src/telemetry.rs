//! Logging: `tracing` to stderr (stdout belongs to the admin CLI's JSON), filtered by
//! `TESSERA_LOG`, as text or JSON (`TESSERA_LOG_FORMAT=json`).

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber; `default_filter` applies when `TESSERA_LOG` is unset.
pub fn init(default_filter: &str) {
    let filter =
        EnvFilter::try_from_env("TESSERA_LOG").unwrap_or_else(|_| EnvFilter::new(default_filter));
    let json =
        std::env::var("TESSERA_LOG_FORMAT").is_ok_and(|format| format.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let result = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    // A second init (tests) keeps the first subscriber.
    drop(result);
}
