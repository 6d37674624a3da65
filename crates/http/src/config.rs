//! The configuration pieces of the HTTP kit: the listener's limits ([`HttpConfig`]), the rate
//! limits ([`RateLimitConfig`]), secrets that never print ([`Secret`]) and the reader of
//! settings every config section uses ([`env_var`]: the flag, else the environment variable,
//! else the config file, once the binary [`install_sources`]). The binary assembles them into
//! its one `Config`.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::OnceLock;
use std::time::Duration;

/// What the command line and the config file say, by variable name, below and above the
/// environment ([`install_sources`]).
#[derive(Debug, Default)]
struct Sources {
    flags: BTreeMap<String, String>,
    file: BTreeMap<String, String>,
}

static SOURCES: OnceLock<Sources> = OnceLock::new();

/// Makes `flags` (above the environment) and the config file's `file` values (below it) the
/// other sources of [`env_var`], by variable name, for the rest of the process; once, at start
/// (later calls change nothing). Without it only the environment is read.
pub fn install_sources(flags: BTreeMap<String, String>, file: BTreeMap<String, String>) {
    let _ = SOURCES.set(Sources { flags, file });
}

/// `environment` (variable, value) merged with the installed file's values beneath it and the
/// flags' above it, by variable name.
pub fn all_values(environment: impl Iterator<Item = (String, String)>) -> Vec<(String, String)> {
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    if let Some(sources) = SOURCES.get() {
        values.extend(sources.file.clone());
    }
    values.extend(environment);
    if let Some(sources) = SOURCES.get() {
        values.extend(sources.flags.clone());
    }
    values.into_iter().collect()
}

/// A secret value: never printed, never logged.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Self {
        Self(value)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Secret(***)")
    }
}

#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub max_body_bytes: usize,
    /// `TESSERA_HTTP_HEADER_TIMEOUT` (default 10 s): a request head must arrive whole within it,
    /// counted from the connection's opening or from its first byte on a kept-alive connection.
    pub header_timeout: Duration,
    /// `TESSERA_HTTP_BODY_TIMEOUT` (default 60 s): a request body must arrive whole within it,
    /// counted from its head; beyond it, 408 and the connection is closed.
    pub body_timeout: Duration,
    /// `TESSERA_HTTP_IDLE_TIMEOUT` (default 60 s): a connection without a request in flight, or
    /// moving no bytes, is closed after it.
    pub idle_timeout: Duration,
    /// `TESSERA_HTTP_MAX_CONNECTIONS` (default 10,000): connections served at once; further
    /// ones wait in the listen backlog until one closes.
    pub max_connections: usize,
    /// `TESSERA_TRUSTED_PROXIES` (default none): addresses and CIDRs whose `Forwarded` /
    /// `X-Forwarded-For` headers are believed (`client_address.rs`).
    pub trusted_proxies: crate::client_address::TrustedProxies,
}

impl HttpConfig {
    /// The body limit given, the connection limits from the environment.
    pub fn from_env(max_body_bytes: usize) -> anyhow::Result<Self> {
        let timeout = |name: &str, default: u64| -> anyhow::Result<Duration> {
            let value = env_var::<humantime::Duration>(name)?
                .map_or(Duration::from_secs(default), Duration::from);
            anyhow::ensure!(!value.is_zero(), "{name} must be above zero");
            Ok(value)
        };
        let max_connections = env_var::<usize>("TESSERA_HTTP_MAX_CONNECTIONS")?.unwrap_or(10_000);
        anyhow::ensure!(
            max_connections >= 1,
            "TESSERA_HTTP_MAX_CONNECTIONS must be at least 1"
        );
        Ok(Self {
            max_body_bytes,
            header_timeout: timeout("TESSERA_HTTP_HEADER_TIMEOUT", 10)?,
            body_timeout: timeout("TESSERA_HTTP_BODY_TIMEOUT", 60)?,
            idle_timeout: timeout("TESSERA_HTTP_IDLE_TIMEOUT", 60)?,
            max_connections,
            trusted_proxies: match env_var::<String>("TESSERA_TRUSTED_PROXIES")? {
                Some(list) => crate::client_address::TrustedProxies::parse(&list)
                    .map_err(|error| anyhow::anyhow!("TESSERA_TRUSTED_PROXIES: {error}"))?,
                None => crate::client_address::TrustedProxies::default(),
            },
        })
    }
}

/// Requests per 60 s.
#[derive(Debug, Clone, Copy)]
pub struct RateLimitConfig {
    pub auth_per_minute: u32,
    pub read_per_minute: u32,
    pub write_per_minute: u32,
}

/// A setting parsed as `T` (its flag, else its environment variable `name`, else its key in the
/// config file); `None` when unset, a clear error naming `name` when malformed.
pub fn env_var<T>(name: &str) -> anyhow::Result<Option<T>>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    parse_var(name, read_env(name)?)
}

/// A setting under its current `name`, or else under an older `alias` still accepted (e.g.
/// `TESSERA_OUTBOUND_EXTRA_CA`, formerly `TESSERA_WEBHOOK_EXTRA_CA`). Both set to different
/// values is refused: the operator must say which one holds.
pub fn env_var_or_alias<T>(name: &str, alias: &str) -> anyhow::Result<Option<T>>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    setting_or_alias(name, alias, read_env)
}

/// [`env_var_or_alias`] over any source of raw values (`read` answers `None` when unset).
fn setting_or_alias<T>(
    name: &str,
    alias: &str,
    read: impl Fn(&str) -> anyhow::Result<Option<String>>,
) -> anyhow::Result<Option<T>>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    match (read(name)?, read(alias)?) {
        (Some(current), Some(old)) if current.trim() != old.trim() => anyhow::bail!(
            "{name} and {alias} (its older name) are both set, to different values; \
             keep {name} only"
        ),
        (Some(current), _) => parse_var(name, Some(current)),
        (None, old) => parse_var(alias, old),
    }
}

/// The raw value of the setting `name`: its flag, else the environment variable, else the
/// config file; `None` when none sets it.
fn read_env(name: &str) -> anyhow::Result<Option<String>> {
    let sources = SOURCES.get();
    if let Some(value) = sources.and_then(|sources| sources.flags.get(name)) {
        return Ok(Some(value.clone()));
    }
    match std::env::var(name) {
        Ok(text) => Ok(Some(text)),
        Err(std::env::VarError::NotPresent) => {
            Ok(sources.and_then(|sources| sources.file.get(name).cloned()))
        }
        Err(std::env::VarError::NotUnicode(_)) => anyhow::bail!("{name} is not valid UTF-8"),
    }
}

/// `text` (the value of `name`) parsed as `T`.
fn parse_var<T>(name: &str, text: Option<String>) -> anyhow::Result<Option<T>>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    text.map(|text| {
        text.trim()
            .parse()
            .map_err(|error| anyhow::anyhow!("{name}: cannot parse {text:?}: {error}"))
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(
        pairs: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&str) -> anyhow::Result<Option<String>> {
        move |name| {
            Ok(pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned()))
        }
    }

    #[test]
    fn the_current_name_wins_and_the_older_one_is_still_read() {
        let only_old = source(&[("OLD", "true")]);
        assert_eq!(
            setting_or_alias::<bool>("NEW", "OLD", only_old).unwrap(),
            Some(true)
        );
        let only_new = source(&[("NEW", "true")]);
        assert_eq!(
            setting_or_alias::<bool>("NEW", "OLD", only_new).unwrap(),
            Some(true)
        );
        let both_agree = source(&[("NEW", "true"), ("OLD", " true ")]);
        assert_eq!(
            setting_or_alias::<bool>("NEW", "OLD", both_agree).unwrap(),
            Some(true)
        );
        let neither = source(&[]);
        assert_eq!(
            setting_or_alias::<bool>("NEW", "OLD", neither).unwrap(),
            None
        );
    }

    #[test]
    fn both_names_set_differently_or_a_malformed_value_are_refused() {
        let conflict = source(&[("NEW", "true"), ("OLD", "false")]);
        let error = setting_or_alias::<bool>("NEW", "OLD", conflict).unwrap_err();
        assert!(error.to_string().contains("both set"), "{error}");
        let malformed = source(&[("OLD", "maybe")]);
        let error = setting_or_alias::<bool>("NEW", "OLD", malformed).unwrap_err();
        assert!(
            error.to_string().starts_with("OLD: cannot parse"),
            "{error}"
        );
    }
}
