//! Every setting of the host in one registry: its environment variable, its flag, its key in
//! the `--config` file, its default and what it does (CONTRACT §2 and §8). The flags of
//! `tessera serve`, the file's keys and the book's configuration reference
//! (`docs/src/operating/configuration.md`) are all made from it.
//!
//! A value is taken from the flag, else the environment variable, else the file, else the
//! default: [`install`] hands the flags given and the file's values to
//! [`tessera_http::config`], whose readers (`env_var`) every part of the host reads its
//! settings through.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use anyhow::Context as _;

/// One setting.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The environment variable (`TESSERA_…`); the flag and the file key are made from it.
    pub variable: &'static str,
    /// The default, as the reference shows it.
    pub default: &'static str,
    /// What it does, and its bounds.
    pub help: &'static str,
    /// A secret: never printed, and a config file holding it must be private (mode 0600).
    pub secret: bool,
}

impl Setting {
    const fn new(variable: &'static str, default: &'static str, help: &'static str) -> Self {
        Self {
            variable,
            default,
            help,
            secret: false,
        }
    }

    const fn secret(variable: &'static str, default: &'static str, help: &'static str) -> Self {
        Self {
            variable,
            default,
            help,
            secret: true,
        }
    }

    /// The flag's long name: the variable without `TESSERA_`, lower-case, `_` as `-`
    /// (`TESSERA_RATE_LIMIT_AUTH` → `rate-limit-auth`).
    pub fn flag(&self) -> String {
        self.key().replace('_', "-")
    }

    /// The key in the config file: the variable without `TESSERA_`, lower-case
    /// (`rate_limit_auth`, also written `auth` in a `[rate_limit]` table).
    pub fn key(&self) -> String {
        self.variable
            .trim_start_matches(PREFIX)
            .to_ascii_lowercase()
    }
}

/// A family of settings named by the engine they are for
/// (`TESSERA_ENGINE_LIMITS__<CODE>__<LIMIT>`).
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// The variables' common start, with its trailing `__`.
    pub prefix: &'static str,
    /// The repeatable flag that sets one (`--engine-limit notes.handle_timeout=5s`).
    pub flag: &'static str,
    /// The config file's table of them (`[engine_limits.notes]`).
    pub table: &'static str,
    /// What they are.
    pub help: &'static str,
}

impl Family {
    /// The variable `flag` value `CODE.NAME=VALUE` sets, and the value.
    fn variable_of(&self, assignment: &str) -> anyhow::Result<(String, String)> {
        let malformed = || {
            anyhow::anyhow!(
                "--{} takes CODE.NAME=VALUE (e.g. notes.handle_timeout=5s), not {assignment:?}",
                self.flag
            )
        };
        let (name, value) = assignment.split_once('=').ok_or_else(malformed)?;
        let (code, setting) = name.split_once('.').ok_or_else(malformed)?;
        if code.is_empty() || setting.is_empty() {
            return Err(malformed());
        }
        Ok((self.variable(&[code, setting]), value.to_owned()))
    }

    /// The variable of `parts` (engine code, then setting name): upper-case, `-` as `_`,
    /// joined by `__`.
    fn variable(&self, parts: &[&str]) -> String {
        let parts: Vec<String> = parts
            .iter()
            .map(|part| part.to_ascii_uppercase().replace('-', "_"))
            .collect();
        format!("{}{}", self.prefix, parts.join("__"))
    }
}

const PREFIX: &str = "TESSERA_";

/// The families of settings named by engine.
pub const FAMILIES: &[Family] = &[
    Family {
        prefix: "TESSERA_ENGINE_LIMITS__",
        flag: "engine-limit",
        table: "engine_limits",
        help: "engine `<CODE>`'s own value of a sandbox limit (code upper-cased, `-` as `_`; `<LIMIT>` is the name after `TESSERA_ENGINE_`: `HANDLE_TIMEOUT`, `LIFECYCLE_TIMEOUT`, `MEMORY_LIMIT_BYTES`, `MAX_CORE_INSTANCES`, `MAX_MEMORIES`, `MAX_TABLES`, `MAX_TABLE_ELEMENTS`), same ranges, above or below the global value; and `MAX_INSTANCES`: that engine's calls alive at once (1–`TESSERA_ENGINE_MAX_INSTANCES`, default no cap of its own; beyond it 503 with `Retry-After`). An unknown limit or a bad value stops the host at start",
    },
    Family {
        prefix: "TESSERA_ENGINES__",
        flag: "engine-setting",
        table: "engines",
        help: "an engine's own declared setting (code and name upper-cased, `-` as `_`), e.g. `TESSERA_ENGINES__DRIVE__MAX_UPLOAD_BYTES`; checked against the engine's declaration when it loads",
    },
];

/// Every setting but the families, in the reference's order.
pub const SETTINGS: &[Setting] = &[
    Setting::new("TESSERA_LISTEN", "127.0.0.1:8080", "address to listen on"),
    Setting::new(
        "TESSERA_PUBLIC_URL",
        "http://<listen>",
        "public base URL: base of `meta.services` and engine URLs",
    ),
    Setting::new(
        "TESSERA_DATA_DIR",
        "./data",
        "folder of the SQLite file with engine blobs, generated keys and the compiled-component cache; created 0700, every file in it 0600",
    ),
    Setting::new(
        "TESSERA_DATABASE_URL",
        "sqlite://<data-dir>/tessera.db",
        "`sqlite://…`, or `postgres://…` to select PostgreSQL",
    ),
    Setting::new(
        "TESSERA_PLUGINS_DIR",
        "./plugins",
        "folder of engine components (`*.wasm`)",
    ),
    Setting::secret(
        "TESSERA_SERVICE_SECRET",
        "generated",
        "generated on first start into `<data-dir>/service_secret` (mode 0600); it seals the token signing keys, TOTP secrets and vault data, so hosts sharing a database must share it",
    ),
    Setting::new(
        "TESSERA_SQLITE_WAL_MAX_BYTES",
        "67108864",
        "64 MiB, at least 1 MiB: the size SQLite's write-ahead log stays under; past a quarter of it the next write first checkpoints the log",
    ),
    Setting::new(
        "TESSERA_SHUTDOWN_TIMEOUT",
        "30s",
        "above zero: after SIGTERM/SIGINT, how long requests in flight and started engine work may take before the host exits anyway",
    ),
    Setting::new(
        "TESSERA_MAX_BODY_BYTES",
        "1048576",
        "largest request body of the host's own API (413 beyond)",
    ),
    Setting::new(
        "TESSERA_HTTP_HEADER_TIMEOUT",
        "10s",
        "a request head must arrive whole within it (from the connection's opening, or from its first byte on a kept-alive connection); beyond it the connection is dropped without an answer",
    ),
    Setting::new(
        "TESSERA_HTTP_BODY_TIMEOUT",
        "60s",
        "a request body must arrive whole within it, counted from its head; beyond it 408 and the connection is closed",
    ),
    Setting::new(
        "TESSERA_HTTP_IDLE_TIMEOUT",
        "60s",
        "a connection with no request in flight is closed after it; one whose request moves no byte either way for that long is dropped",
    ),
    Setting::new(
        "TESSERA_HTTP_MAX_CONNECTIONS",
        "10000",
        "connections served at once (at least 1); further ones wait in the listen backlog until one closes",
    ),
    Setting::new(
        "TESSERA_TRUSTED_PROXIES",
        "none",
        "comma-separated addresses and CIDRs (`10.0.0.0/8, 192.0.2.7, fd00::/8`) of the reverse proxies whose `Forwarded`/`X-Forwarded-For` are believed",
    ),
    Setting::new(
        "TESSERA_RATE_LIMIT_AUTH",
        "60",
        "requests per 60 s per client address on `/auth` endpoints",
    ),
    Setting::new(
        "TESSERA_RATE_LIMIT_READ",
        "600",
        "reads per 60 s per token (per client address without one)",
    ),
    Setting::new(
        "TESSERA_RATE_LIMIT_WRITE",
        "120",
        "writes per 60 s per token (per client address without one)",
    ),
    Setting::new(
        "TESSERA_RATE_LIMIT_SCOPE",
        "cluster on PostgreSQL, host on SQLite",
        "`host`: each host keeps its rate-limit buckets in memory (behind a load balancer over N hosts a client gets N times each limit); `cluster` (PostgreSQL only): every host draws from the same buckets in the database, in batches, so each limit holds exactly for the cluster (and a set `TESSERA_ENGINE_TENANT_CONCURRENCY` is the cluster's total)",
    ),
    Setting::new(
        "TESSERA_AUTH_TOKEN_LIFETIME",
        "1h",
        "above zero: access tokens' lifetime (`expires_in`)",
    ),
    Setting::new(
        "TESSERA_AUTH_REFRESH_TOKEN_LIFETIME",
        "7days",
        "at least the token lifetime: refresh tokens' lifetime",
    ),
    Setting::new(
        "TESSERA_AUTH_MAX_SESSIONS",
        "10",
        "at least 1: sessions a user may hold; a new sign-in ends the oldest beyond it",
    ),
    Setting::new(
        "TESSERA_AUTH_LOCKOUT_MAX_ATTEMPTS",
        "5",
        "at least 1: wrong guesses (passwords or second factors) per login before it is locked",
    ),
    Setting::new(
        "TESSERA_AUTH_LOCKOUT_DURATION",
        "15m",
        "above zero: how long a locked login stays locked, even for the right password",
    ),
    Setting::new(
        "TESSERA_PASSWORD_MIN_LENGTH",
        "8",
        "1 to 1024: the shortest password of sign-up, resets and `admin create-user`",
    ),
    Setting::new(
        "TESSERA_PASSWORD_REQUIRE_UPPERCASE",
        "true",
        "passwords need an upper-case letter",
    ),
    Setting::new(
        "TESSERA_PASSWORD_REQUIRE_LOWERCASE",
        "true",
        "passwords need a lower-case letter",
    ),
    Setting::new(
        "TESSERA_PASSWORD_REQUIRE_NUMBER",
        "true",
        "passwords need a digit",
    ),
    Setting::new(
        "TESSERA_PASSWORD_REQUIRE_SPECIAL",
        "false",
        "passwords need a character that is neither a letter nor a digit",
    ),
    Setting::new(
        "TESSERA_SIGNING_KEYS_REFRESH",
        "30s",
        "above zero: how often a server rereads the token signing keys, so a rotation made elsewhere signs its new tokens, and `--revoke-previous` takes effect, within this time",
    ),
    Setting::secret(
        "TESSERA_METRICS_TOKEN",
        "none",
        "`/metrics` on the main listener answers a bearer of this token (at least 16 characters; compared in constant time), else 401; with neither this nor `TESSERA_METRICS_LISTEN`, metrics are off and `/metrics` answers 404",
    ),
    Setting::new(
        "TESSERA_METRICS_LISTEN",
        "none",
        "an address of its own (e.g. `10.0.0.5:9464`) serving `/metrics` without a token, and nothing else; put it on a management network",
    ),
    Setting::new(
        "TESSERA_USAGE_FLUSH_INTERVAL",
        "10s",
        "100ms to 1h: how often each host adds the per-tenant usage it counted (engine calls, limits hit) to the database; what a crash loses at most",
    ),
    Setting::new(
        "TESSERA_USAGE_RETENTION_DAYS",
        "90",
        "1 to 3660: days of per-tenant usage kept (`GET /core/api/v1/usage`); older days are deleted",
    ),
    Setting::new(
        "TESSERA_CLUSTER_HEARTBEAT_INTERVAL",
        "5s",
        "above zero: how often a host writes its heartbeat (with the engines it runs) to the cluster's list of hosts",
    ),
    Setting::new(
        "TESSERA_CLUSTER_HOST_TIMEOUT",
        "30s",
        "more than twice the heartbeat interval: a host whose last heartbeat is older is listed as gone (`tessera admin hosts`); its claimed work returns to the others when its leases end",
    ),
    Setting::new(
        "TESSERA_LOG",
        "info",
        "what is logged, in tracing's filter syntax",
    ),
    Setting::new(
        "TESSERA_LOG_FORMAT",
        "text",
        "`json` for one JSON object per line",
    ),
    Setting::new(
        "TESSERA_WEBHOOK_RETRY_SCHEDULE",
        "30s,2m,10m,30m",
        "delays before a webhook delivery's attempts 2, 3, …",
    ),
    Setting::new(
        "TESSERA_OUTBOUND_ALLOW_PRIVATE_TARGETS",
        "false",
        "engines' outbound HTTP may reach loopback, private, link-local and other non-public addresses (formerly `TESSERA_WEBHOOK_ALLOW_PRIVATE_TARGETS`)",
    ),
    Setting::new(
        "TESSERA_OUTBOUND_EXTRA_CA",
        "none",
        "a PEM file trusted for engines' outbound TLS besides the system roots (formerly `TESSERA_WEBHOOK_EXTRA_CA`)",
    ),
    Setting::new(
        "TESSERA_OUTBOUND_DNS_SERVERS",
        "the system resolver",
        "name servers (`ip` or `ip:port`, comma-separated, UDP and TCP) through which engines' outbound names resolve (formerly `TESSERA_WEBHOOK_DNS_SERVERS`)",
    ),
    Setting::new(
        "TESSERA_OUTBOUND_CHECK_DNS_TIMEOUT",
        "2s",
        "the longest the creation-time check of a webhook URL waits for DNS; a name not resolved by then is accepted and checked at each delivery (formerly `TESSERA_WEBHOOK_CHECK_DNS_TIMEOUT`)",
    ),
    Setting::new(
        "TESSERA_ENGINE_OUTBOUND_HOSTS",
        "each engine's own",
        "`<code>=<pattern>,<pattern>;<code>=…`: each named engine gets exactly these outbound host patterns instead of those it declares; an empty list forbids it outbound HTTP",
    ),
    Setting::new(
        "TESSERA_PROJECTION_WORKERS",
        "true",
        "`false` for a host that only serves HTTP (another host must run the workers)",
    ),
    Setting::new(
        "TESSERA_PROJECTION_BATCH_SIZE",
        "500",
        "1 to 10000 events per projection transaction",
    ),
    Setting::new(
        "TESSERA_BACKLOG_MAX_ITEMS",
        "50000",
        "items of accepted work waiting (engine deliveries and jobs due, events not yet applied by every projection); past it, writes answer 503 with `Retry-After`; `0`: no bound",
    ),
    Setting::new(
        "TESSERA_BACKLOG_MAX_AGE",
        "120s",
        "the longest the oldest of those items may have waited before writes answer 503; `0s`: no bound",
    ),
    Setting::new(
        "TESSERA_SEARCH_MAX_CANDIDATES",
        "500",
        "1 to 100000 matching documents a search ranks and counts at most: a query matching more ranks the first this many in the index's order and answers `meta.total` = this many",
    ),
    Setting::new(
        "TESSERA_REALTIME_MAX_CONNECTIONS_PER_USER",
        "20",
        "at least 1: realtime connections (WebSocket and Server-Sent Events) one user may hold in one tenant on one host; the next WebSocket closes with 4029, the next stream answers 429",
    ),
    Setting::new(
        "TESSERA_REALTIME_MAX_CONNECTIONS_PER_TENANT",
        "2000",
        "at least 1: realtime connections of one tenant on one host; the next WebSocket closes with 4029, the next stream answers 429",
    ),
    Setting::new(
        "TESSERA_REALTIME_MAX_SUBSCRIPTIONS",
        "100",
        "at least 1: topics one realtime connection subscribes to at once; one more answers an `error` frame with status 429",
    ),
    Setting::new(
        "TESSERA_REALTIME_MAX_PUBLISH_PER_SECOND",
        "1000",
        "at least 1: realtime events one engine may publish per second in one tenant on one host (as many at once); a publication beyond it is refused to the engine (`realtime.publish` answers an error it may retry), counted in `tessera_realtime_publish_refused_total`",
    ),
    Setting::new(
        "TESSERA_REALTIME_MAX_FRAME_BYTES",
        "16384",
        "64 to 16777216: the largest WebSocket message (and frame) a realtime client may send; a larger one closes the connection with 1009 (message too big). Frames of the protocol are a few hundred bytes",
    ),
    Setting::new(
        "TESSERA_REALTIME_SEND_QUEUE",
        "256",
        "at least 1: frames waiting to be sent to one realtime connection; a client that lets it fill is closed with 4008 (it may resume with `since`)",
    ),
    Setting::new(
        "TESSERA_WORKFLOW_MAX_ACTIVE_PER_TENANT",
        "100",
        "at least 1 active workflows per tenant; activating one more is 409",
    ),
    Setting::new(
        "TESSERA_WORKFLOW_CHAIN_WRITE_BUDGET",
        "100",
        "at least 1: intentions workflows may execute, at every depth, because of one person's intention; the run that would exceed it fails with that reason",
    ),
    Setting::new(
        "TESSERA_ENGINE_MAX_BODY_BYTES",
        "8388608",
        "largest request body an engine route accepts (413 beyond) and largest response an engine may return",
    ),
    Setting::new(
        "TESSERA_ENGINE_MAX_COMPONENT_BYTES",
        "67108864",
        "at least 1024: largest component `tessera admin engine publish` and `POST /core/api/operator/engines` accept (413 beyond)",
    ),
    Setting::new(
        "TESSERA_ENGINE_TRUSTED_KEYS",
        "none",
        "Ed25519 public key files (PEM, comma-separated) of the publishers whose signature every published component must carry (`tessera admin engine publish`, `POST /core/api/operator/engines`, `oci://…`); unset: no signature is required (docs/src/operating/engine-registries.md)",
    ),
    Setting::new(
        "TESSERA_ENGINE_RECONCILE_INTERVAL",
        "5s",
        "above zero: how often a host checks the engines published to the cluster besides being told (PostgreSQL tells at once; hosts on SQLite learn of a publication made by another process within it)",
    ),
    Setting::new(
        "TESSERA_ENGINE_WORK_CONCURRENCY",
        "64",
        "1 to 100 engine jobs and event deliveries run at once per host",
    ),
    Setting::new(
        "TESSERA_ENGINE_MAX_INSTANCES",
        "200",
        "1 to 10000 engine calls running at once per host (the instance pool); beyond it calls wait for a slot",
    ),
    Setting::new(
        "TESSERA_ENGINE_TENANT_CONCURRENCY",
        "a quarter of the pool",
        "engine calls one tenant may run at once (1 to `TESSERA_ENGINE_MAX_INSTANCES`); with `TESSERA_RATE_LIMIT_SCOPE=cluster`, for the whole cluster: each host takes it divided by the live hosts, rounded up",
    ),
    Setting::new(
        "TESSERA_ENGINE_TENANT_QUEUE",
        "100",
        "requests of one tenant that may wait beyond its share; more get 503 with `Retry-After` at once",
    ),
    Setting::new(
        "TESSERA_ENGINE_TENANT_QUEUE_TIMEOUT",
        "5s",
        "how long such a request waits for a slot before its 503 with `Retry-After`",
    ),
    Setting::new(
        "TESSERA_ENGINE_WARM_INSTANCES",
        "32",
        "0 to 10000 idle engine instances kept warm between calls (`0`: every call on a fresh instance); an instance serves one engine version in one tenant only",
    ),
    Setting::new(
        "TESSERA_ENGINE_INSTANCE_MAX_CALLS",
        "1000",
        "at least 1: calls one instance serves before it is retired",
    ),
    Setting::new(
        "TESSERA_ENGINE_WARM_IDLE_TIMEOUT",
        "30s",
        "how long an instance waits idle before it is retired",
    ),
    Setting::new(
        "TESSERA_ENGINE_HANDLE_TIMEOUT",
        "5s",
        "1ms to 1h: deadline of an engine's `handle` call; beyond it 504",
    ),
    Setting::new(
        "TESSERA_ENGINE_LIFECYCLE_TIMEOUT",
        "30s",
        "1ms to 1h: deadline of `describe`, lifecycle calls, jobs and event deliveries; beyond it the call fails",
    ),
    Setting::new(
        "TESSERA_ENGINE_MEMORY_LIMIT_BYTES",
        "67108864",
        "64 MiB; 65536 to 4294967296 bytes of one linear memory of an instance; a component whose memory starts larger is refused at load, growth beyond it traps (502)",
    ),
    Setting::new(
        "TESSERA_ENGINE_MAX_CORE_INSTANCES",
        "20",
        "1 to 1000 core module instances one component creates; more: refused at load",
    ),
    Setting::new(
        "TESSERA_ENGINE_MAX_MEMORIES",
        "2",
        "1 to 100 linear memories one component defines; more: refused at load",
    ),
    Setting::new(
        "TESSERA_ENGINE_MAX_TABLES",
        "4",
        "1 to 1000 tables one component defines; more: refused at load",
    ),
    Setting::new(
        "TESSERA_ENGINE_MAX_TABLE_ELEMENTS",
        "20000",
        "1 to 10000000 elements of one table; larger at start is refused at load, growth beyond it traps (502)",
    ),
    Setting::new(
        "TESSERA_ENGINE_SCAN_PAGE",
        "1000",
        "1 to 100000: most entries one engine `storage.scan` returns, whatever it asks",
    ),
    Setting::new(
        "TESSERA_ENGINE_SCAN_BUDGET",
        "10000",
        "at least 1: most entries all the scans of one engine call return together; past it `scan` fails with `scan budget exhausted`",
    ),
    Setting::secret(
        "TESSERA_SMTP_URL",
        "none",
        "the mail relay, e.g. `smtps://user:pass@relay.example.com` or `smtp://relay:25?tls=required`; unset, external mail stays `queued`",
    ),
    Setting::new(
        "TESSERA_SMTP_ENGINES",
        "the engines asking `send-mail`",
        "comma-separated codes of the engines that may send through the relay",
    ),
    Setting::new(
        "TESSERA_MAIL_FROM",
        "Tessera <no-reply@<public host>>",
        "the sender of sign-in mails (password resets, magic links, e-mail codes): `Name <address>` or an address",
    ),
    Setting::new(
        "TESSERA_MAIL_TEMPLATES",
        "the built-in templates",
        "a folder of sign-in mail templates (`password_reset`, `magic_link`, `email_code`, each `.subject`, `.txt`, `.html`; MiniJinja, HTML escaped) replacing the built-in ones; a template that does not render stops the start",
    ),
    Setting::new(
        "TESSERA_SIGN_IN_MAIL_INTERVAL",
        "1m",
        "above zero: at most one sign-in mail per login in this time; more are answered 429 with `Retry-After`, known and unknown logins alike",
    ),
    Setting::new(
        "TESSERA_SIGN_IN_MAILS_PER_ADDRESS",
        "20",
        "at least 1: most sign-in mails asked for from one client address in an hour; more are answered 429",
    ),
    Setting::new(
        "TESSERA_MAGIC_LINK_REDIRECT_ORIGINS",
        "none (the public URL only)",
        "comma-separated origins (`https://app.example.com`) a magic link's `redirect_url` may point at besides the public URL; any other is 422",
    ),
    Setting::new(
        "TESSERA_WEBAUTHN_RP_ID",
        "the public URL's host (`localhost` for a loopback address)",
        "the passkeys' relying-party id, a domain: credentials are bound to it, so changing it strands every registered passkey; with a public URL on another bare IP address passkeys are off unless this is set",
    ),
    Setting::new(
        "TESSERA_WEBAUTHN_ORIGINS",
        "the public URL's origin",
        "comma-separated origins (`https://app.example.com`) browsers may register and use passkeys from, each on the relying-party id's domain; another stops the start",
    ),
    Setting::new(
        "TESSERA_WEBAUTHN_RP_NAME",
        "Tessera",
        "the relying party's name authenticators show",
    ),
    Setting::new(
        "TESSERA_WEBAUTHN_MAX_CREDENTIALS",
        "20",
        "at least 1: passkeys one user may register; more are answered 409",
    ),
];

/// Older names still read when the current one is unset (`env_var_or_alias`): no flag or file
/// key of their own.
pub const ALIASES: &[&str] = &[
    "TESSERA_WEBHOOK_ALLOW_PRIVATE_TARGETS",
    "TESSERA_WEBHOOK_EXTRA_CA",
    "TESSERA_WEBHOOK_DNS_SERVERS",
    "TESSERA_WEBHOOK_CHECK_DNS_TIMEOUT",
];

/// The setting of `variable`, if it is one.
pub fn setting(variable: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|setting| setting.variable == variable)
}

/// Reads the config file `path` into `(variable, value)` pairs.
///
/// Keys are the variables' names without `TESSERA_`, lower-case, written at the top
/// (`rate_limit_auth = 60`) or in tables whose names join the key with `_` (`[rate_limit]`
/// then `auth = 60`); the families are tables per engine (`[engine_limits.notes]` then
/// `handle_timeout = "5s"`, `[engines.drive]` then `max_upload_bytes = 1048576`). Values are
/// strings, numbers or booleans; an array is its items joined with `,`. An unknown key, a
/// value of another kind, or a file holding a secret that others may read (not mode 0600)
/// stops the start with a message naming it.
pub fn read_file(path: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the config file {}", path.display()))?;
    let table: toml::Table = toml::from_str(&text)
        .with_context(|| format!("parsing the config file {}", path.display()))?;
    let values =
        file_values(&table).with_context(|| format!("in the config file {}", path.display()))?;
    let secrets: Vec<&str> = values
        .keys()
        .filter_map(|variable| setting(variable))
        .filter(|setting| setting.secret)
        .map(|setting| setting.variable)
        .collect();
    if !secrets.is_empty() {
        check_private(path, &secrets)?;
    }
    Ok(values)
}

/// The `(variable, value)` pairs of a parsed config file.
fn file_values(table: &toml::Table) -> anyhow::Result<BTreeMap<String, String>> {
    let mut values = BTreeMap::new();
    for (key, value) in table {
        if let Some(family) = FAMILIES.iter().find(|family| family.table == key) {
            let engines = value.as_table().with_context(|| {
                format!("`{key}` must be a table of engines (`[{key}.<code>]`)")
            })?;
            for (code, settings) in engines {
                let settings = settings.as_table().with_context(|| {
                    format!("`{key}.{code}` must be a table (`[{key}.{code}]`)")
                })?;
                for (name, value) in settings {
                    let path = format!("{key}.{code}.{name}");
                    values.insert(family.variable(&[code, name]), scalar(&path, value)?);
                }
            }
            continue;
        }
        collect(key, value, &mut values)?;
    }
    Ok(values)
}

/// `value` under the key path `path` (tables joined by `_`).
fn collect(
    path: &str,
    value: &toml::Value,
    values: &mut BTreeMap<String, String>,
) -> anyhow::Result<()> {
    if let Some(table) = value.as_table() {
        for (key, value) in table {
            collect(&format!("{path}_{key}"), value, values)?;
        }
        return Ok(());
    }
    let variable = format!("{PREFIX}{}", path.to_ascii_uppercase());
    if setting(&variable).is_none() {
        anyhow::bail!("`{path}` is not a setting (docs/src/operating/configuration.md)");
    }
    values.insert(variable, scalar(path, value)?);
    Ok(())
}

/// The text of a value: a string as it is, a number or boolean written out, an array's items
/// joined with `,`.
fn scalar(path: &str, value: &toml::Value) -> anyhow::Result<String> {
    Ok(match value {
        toml::Value::String(text) => text.clone(),
        toml::Value::Integer(number) => number.to_string(),
        toml::Value::Float(number) => number.to_string(),
        toml::Value::Boolean(flag) => flag.to_string(),
        toml::Value::Array(items) => items
            .iter()
            .map(|item| match item {
                toml::Value::Table(_) | toml::Value::Array(_) => {
                    anyhow::bail!("`{path}`: an array of strings, numbers or booleans only")
                }
                item => scalar(path, item),
            })
            .collect::<anyhow::Result<Vec<_>>>()?
            .join(","),
        toml::Value::Datetime(_) | toml::Value::Table(_) => {
            anyhow::bail!("`{path}`: a string, number, boolean or array")
        }
    })
}

/// Refuses a config file holding `secrets` that someone but its owner may read.
#[cfg(unix)]
fn check_private(path: &Path, secrets: &[&str]) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(path)
        .with_context(|| format!("reading the permissions of {}", path.display()))?
        .permissions()
        .mode();
    anyhow::ensure!(
        mode & 0o077 == 0,
        "the config file {} holds {} but others may read it (mode {:o}): chmod 600 it",
        path.display(),
        secrets.join(", "),
        mode & 0o777
    );
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &Path, _secrets: &[&str]) -> anyhow::Result<()> {
    Ok(())
}

/// The flags of every setting (`--listen`, `--rate-limit-auth`, …, and the families'
/// repeatable `--engine-limit` and `--engine-setting`), for `tessera serve`.
#[derive(Debug, Clone, Default)]
pub struct SettingFlags {
    /// `(variable, value)` of every flag given on the command line.
    pub given: BTreeMap<String, String>,
}

impl clap::FromArgMatches for SettingFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut given = BTreeMap::new();
        for setting in SETTINGS {
            // The environment is read after the flags and before the file (`install`); clap
            // only shows it in `--help`.
            if matches.value_source(setting.variable)
                == Some(clap::parser::ValueSource::CommandLine)
                && let Some(value) = matches.get_one::<String>(setting.variable)
            {
                given.insert(setting.variable.to_owned(), value.clone());
            }
        }
        for family in FAMILIES {
            if let Some(assignments) = matches.get_many::<String>(family.flag) {
                for assignment in assignments {
                    let (variable, value) = family.variable_of(assignment).map_err(|error| {
                        clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{error}\n"))
                    })?;
                    given.insert(variable, value);
                }
            }
        }
        Ok(Self { given })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for SettingFlags {
    fn augment_args(command: clap::Command) -> clap::Command {
        let command = SETTINGS.iter().fold(command, |command, setting| {
            let mut arg = clap::Arg::new(setting.variable)
                .long(setting.flag())
                .env(setting.variable)
                .value_name("VALUE")
                .help(format!(
                    "{} [default: {}]",
                    first_sentence(setting.help),
                    setting.default
                ))
                .long_help(format!("{} [default: {}]", setting.help, setting.default));
            if setting.secret {
                arg = arg.hide_env_values(true);
            }
            command.arg(arg)
        });
        FAMILIES.iter().fold(command, |command, family| {
            command.arg(
                clap::Arg::new(family.flag)
                    .long(family.flag)
                    .value_name("CODE.NAME=VALUE")
                    .action(clap::ArgAction::Append)
                    .help(format!("sets {}<CODE>__<NAME> (repeatable)", family.prefix))
                    .long_help(format!("{} (repeatable)", family.help)),
            )
        })
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}

/// `help` up to its first `;` or `:`, for the short `--help`.
fn first_sentence(help: &str) -> &str {
    help.split(['(', ';']).next().unwrap_or(help).trim_end()
}

/// Makes the flags given and the config file's values (if any) the sources of every setting,
/// below the flags and the environment (flag, else environment, else file, else default).
pub fn install(flags: BTreeMap<String, String>, file: Option<&Path>) -> anyhow::Result<()> {
    let file = match file {
        Some(path) => read_file(path)?,
        None => BTreeMap::new(),
    };
    tessera_http::config::install_sources(flags, file);
    Ok(())
}

/// Every `(variable, value)` the host sees for the families: the environment's, then the
/// file's and the flags' (a later source wins).
pub fn family_variables() -> Vec<(String, String)> {
    tessera_http::config::all_values(std::env::vars_os().filter_map(
        |(name, value): (OsString, OsString)| {
            Some((name.into_string().ok()?, value.into_string().ok()?))
        },
    ))
}

/// The configuration reference (`docs/src/operating/configuration.md`): a table of every
/// setting and family.
pub fn reference() -> String {
    let mut table = String::from(
        "| flag | environment variable | config file key | default | what it does |\n|---|---|---|---|---|\n",
    );
    for setting in SETTINGS {
        table.push_str(&format!(
            "| `--{}` | `{}` | `{}` | `{}` | {} |\n",
            setting.flag(),
            setting.variable,
            setting.key(),
            setting.default,
            setting.help
        ));
    }
    for family in FAMILIES {
        table.push_str(&format!(
            "| `--{} CODE.NAME=VALUE` | `{}<CODE>__<NAME>` | `[{}.<code>]` `name = …` | none | {} |\n",
            family.flag, family.prefix, family.table, family.help
        ));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_has_a_distinct_flag_and_key() {
        let mut flags: Vec<String> = SETTINGS.iter().map(Setting::flag).collect();
        flags.extend(FAMILIES.iter().map(|family| family.flag.to_owned()));
        let count = flags.len();
        flags.sort();
        flags.dedup();
        assert_eq!(flags.len(), count);
        assert_eq!(
            setting("TESSERA_RATE_LIMIT_AUTH").unwrap().flag(),
            "rate-limit-auth"
        );
        assert_eq!(setting("TESSERA_LISTEN").unwrap().key(), "listen");
        assert!(
            SETTINGS
                .iter()
                .all(|setting| setting.variable.starts_with(PREFIX))
        );
    }

    #[test]
    fn a_file_maps_tables_and_families_to_variables() {
        let table: toml::Table = toml::from_str(
            r#"
            listen = "0.0.0.0:8080"
            trusted_proxies = ["10.0.0.0/8", "192.0.2.7"]
            [rate_limit]
            auth = 30
            [engine]
            warm_instances = 0
            [password.require]
            special = true
            [engine_limits.user-manager]
            handle_timeout = "2s"
            [engines.drive]
            max_upload_bytes = 1024
            "#,
        )
        .unwrap();
        let values = file_values(&table).unwrap();
        let expected: BTreeMap<String, String> = [
            ("TESSERA_LISTEN", "0.0.0.0:8080"),
            ("TESSERA_TRUSTED_PROXIES", "10.0.0.0/8,192.0.2.7"),
            ("TESSERA_RATE_LIMIT_AUTH", "30"),
            ("TESSERA_ENGINE_WARM_INSTANCES", "0"),
            ("TESSERA_PASSWORD_REQUIRE_SPECIAL", "true"),
            ("TESSERA_ENGINE_LIMITS__USER_MANAGER__HANDLE_TIMEOUT", "2s"),
            ("TESSERA_ENGINES__DRIVE__MAX_UPLOAD_BYTES", "1024"),
        ]
        .into_iter()
        .map(|(variable, value)| (variable.to_owned(), value.to_owned()))
        .collect();
        assert_eq!(values, expected);

        for (text, error) in [
            ("lisen = 1", "`lisen` is not a setting"),
            (
                "[rate_limit]\nauht = 1",
                "`rate_limit_auht` is not a setting",
            ),
            ("engines = 1", "`engines` must be a table"),
            ("listen = 1979-05-27", "`listen`: a string"),
        ] {
            let table: toml::Table = toml::from_str(text).unwrap();
            let message = format!("{:#}", file_values(&table).unwrap_err());
            assert!(message.contains(error), "{text:?}: {message}");
        }
    }

    /// The book's configuration reference (`docs/src/operating/configuration.md`) is
    /// [`reference`]'s table (`UPDATE_REFERENCE=1` rewrites it).
    #[test]
    fn the_configuration_reference_lists_every_setting() {
        const BEGIN: &str = "<!-- settings reference: made by host/src/settings.rs -->\n";
        const END: &str = "<!-- end of the settings reference -->";
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/operating/configuration.md");
        let page = std::fs::read_to_string(&path).unwrap();
        let start = page
            .find(BEGIN)
            .expect("docs/src/operating/configuration.md has the settings reference's markers")
            + BEGIN.len();
        let end = start + page[start..].find(END).expect("the reference's end marker");
        let table = reference();
        if page[start..end] != table {
            if std::env::var_os("UPDATE_REFERENCE").is_some() {
                std::fs::write(&path, format!("{}{table}{}", &page[..start], &page[end..]))
                    .unwrap();
            } else {
                panic!(
                    "the configuration reference in docs/src/operating/configuration.md is out of date: run `UPDATE_REFERENCE=1 cargo test -p tessera-host --lib settings`"
                );
            }
        }
    }

    /// Every `"TESSERA_…"` name the host's code reads is a setting, an alias or a family's.
    #[test]
    fn every_variable_the_code_names_is_registered() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut sources = vec![root.join("host/src")];
        for crate_dir in std::fs::read_dir(root.join("crates")).unwrap() {
            sources.push(crate_dir.unwrap().path().join("src"));
        }
        let mut unregistered = Vec::new();
        let mut files = Vec::new();
        while let Some(path) = sources.pop() {
            if path.is_dir() {
                sources.extend(
                    std::fs::read_dir(&path)
                        .unwrap()
                        .map(|entry| entry.unwrap().path()),
                );
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path);
            }
        }
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (start, _) in text.match_indices("\"TESSERA_") {
                let name: String = text[start + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                // Whole literals only, and not the bare prefix.
                if name == PREFIX || !text[start + 1 + name.len()..].starts_with('"') {
                    continue;
                }
                let known = setting(&name).is_some()
                    || ALIASES.contains(&name.as_str())
                    || FAMILIES
                        .iter()
                        .any(|family| name.starts_with(family.prefix));
                if !known {
                    unregistered.push(format!("{name} ({})", file.display()));
                }
            }
        }
        assert!(
            unregistered.is_empty(),
            "read but not in settings::SETTINGS: {unregistered:?}"
        );
    }

    #[test]
    fn family_flags_name_their_variable() {
        let limits = &FAMILIES[0];
        assert_eq!(
            limits.variable_of("user-manager.max_instances=3").unwrap(),
            (
                "TESSERA_ENGINE_LIMITS__USER_MANAGER__MAX_INSTANCES".to_owned(),
                "3".to_owned()
            )
        );
        assert!(limits.variable_of("notes=3").is_err());
        assert!(limits.variable_of("notes.handle_timeout").is_err());
        assert!(limits.variable_of(".x=1").is_err());
    }
}
