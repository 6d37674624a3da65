//! Outbound HTTP for engines (`outbound-http.fetch`): the host's policy in front of one shared
//! HTTP client. Deny by default: an engine reaches only the origins its allow-list names (its
//! descriptor's `outbound-hosts`, or the operator's `TESSERA_ENGINE_OUTBOUND_HOSTS`), and never
//! a loopback, private, link-local, unspecified, CGNAT, multicast, tunnelled (6to4, Teredo),
//! NAT64 local-use or otherwise reserved address unless
//! `TESSERA_WEBHOOK_ALLOW_PRIVATE_TARGETS=true`. Names are checked after resolution by the
//! client's own resolver (so a public name that resolves to a private address, or a DNS answer
//! that changes between two requests, is refused too; the reason never names the address) and
//! IP literals in the URL before sending. Redirects are never followed, no proxy is used, TLS trusts the system and webpki
//! roots plus `TESSERA_WEBHOOK_EXTRA_CA`, and every exchange has a deadline and a response size
//! cap. Refusals and failures are logged with the engine code and correlation id, naming only
//! the target origin: URL paths and queries, header values and bodies may carry secrets.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use tracing::Instrument as _;

use crate::config::RuntimeSetup;

/// Timeout of a request that does not set one (`timeout-ms` 0).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest an engine may wait for one exchange, whatever it asks for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a TCP connection (and TLS handshake start) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest response body handed back to an engine; a larger one is an error.
pub const MAX_RESPONSE_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Largest request body an engine may send.
pub const MAX_REQUEST_BODY_BYTES: usize = 8 * 1024 * 1024;
/// The longest `check-target` waits for a name to resolve, unless
/// `TESSERA_WEBHOOK_CHECK_DNS_TIMEOUT` says otherwise: well within an engine call's deadline, so
/// creating a webhook never times out on slow DNS. A name not resolved by then passes (every
/// connection checks again).
pub const CHECK_DNS_TIMEOUT: Duration = Duration::from_secs(2);

/// Methods an engine may use.
const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// Request headers the host drops: hop-by-hop headers and those the client sets itself from
/// the URL and the body.
const DROPPED_REQUEST_HEADERS: [&str; 12] = [
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "http2-settings",
];

// ---------------------------------------------------------------------------------------------
// Allow-lists
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Http,
    Https,
}

impl Scheme {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "http" => Some(Self::Http),
            "https" => Some(Self::Https),
            _ => None,
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostMatch {
    /// `*`: any host, names and IP literals.
    Any,
    /// `api.example.com`.
    Exact(String),
    /// `*.example.com`: any name ending in `.example.com` (not `example.com` itself).
    Subdomains(String),
    /// `127.0.0.1`, `[::1]`.
    Ip(IpAddr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PortMatch {
    /// No port in the pattern: the scheme's default port only.
    Default,
    Any,
    Exact(u16),
}

/// One entry of an allow-list: `scheme://host[:port]` (see `outbound-hosts` in
/// `wit/engine.wit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    text: String,
    scheme: Scheme,
    host: HostMatch,
    port: PortMatch,
}

impl fmt::Display for HostPattern {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.text)
    }
}

/// A DNS name of a pattern: ASCII letters, digits and hyphens in dot-separated labels.
fn valid_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

impl FromStr for HostPattern {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let invalid = |why: &str| format!("{text:?} is not an outbound host pattern: {why}");
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| invalid("expected scheme://host[:port]"))?;
        let scheme = Scheme::parse(&scheme.to_ascii_lowercase())
            .ok_or_else(|| invalid("the scheme must be http or https"))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) {
            return Err(invalid("a pattern names an origin: no path, query or user"));
        }
        let (host, port) = if let Some(bracketed) = rest.strip_prefix('[') {
            let (address, after) = bracketed
                .split_once(']')
                .ok_or_else(|| invalid("an IPv6 address needs its closing bracket"))?;
            let port = match after {
                "" => None,
                _ => Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| invalid("expected :port after the IPv6 address"))?,
                ),
            };
            let address: Ipv6Addr = address
                .parse()
                .map_err(|_| invalid("not an IPv6 address between the brackets"))?;
            (HostMatch::Ip(IpAddr::V6(address)), port)
        } else {
            let (host, port) = match rest.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (rest, None),
            };
            let host = host.to_ascii_lowercase();
            let host = host.strip_suffix('.').unwrap_or(&host);
            let matcher = if host == "*" {
                HostMatch::Any
            } else if let Some(domain) = host.strip_prefix("*.") {
                if !valid_dns_name(domain) {
                    return Err(invalid("expected *.<domain name>"));
                }
                HostMatch::Subdomains(domain.to_owned())
            } else if let Ok(address) = host.parse::<Ipv4Addr>() {
                HostMatch::Ip(IpAddr::V4(address))
            } else if valid_dns_name(host) {
                HostMatch::Exact(host.to_owned())
            } else {
                return Err(invalid(
                    "the host must be *, *.<domain>, a domain name (punycode for non-ASCII), an IPv4 address or a bracketed IPv6 address",
                ));
            };
            (matcher, port)
        };
        let port = match port {
            None => PortMatch::Default,
            Some("*") => PortMatch::Any,
            Some(number) => match number.parse::<u16>() {
                Ok(port) if port > 0 => PortMatch::Exact(port),
                _ => return Err(invalid("the port must be 1-65535 or *")),
            },
        };
        Ok(Self {
            text: text.to_owned(),
            scheme,
            host,
            port,
        })
    }
}

impl HostPattern {
    fn matches(&self, scheme: Scheme, host: &url::Host<&str>, port: u16) -> bool {
        if scheme != self.scheme {
            return false;
        }
        let port_matches = match self.port {
            PortMatch::Default => port == scheme.default_port(),
            PortMatch::Any => true,
            PortMatch::Exact(expected) => port == expected,
        };
        if !port_matches {
            return false;
        }
        match (&self.host, host) {
            (HostMatch::Any, _) => true,
            (HostMatch::Exact(expected), url::Host::Domain(name)) => {
                name.strip_suffix('.').unwrap_or(name) == expected
            }
            (HostMatch::Subdomains(suffix), url::Host::Domain(name)) => {
                let name = name.strip_suffix('.').unwrap_or(name);
                name.len() > suffix.len() + 1
                    && name.ends_with(suffix.as_str())
                    && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
            }
            (HostMatch::Ip(expected), url::Host::Ipv4(address)) => {
                *expected == IpAddr::V4(*address)
            }
            (HostMatch::Ip(expected), url::Host::Ipv6(address)) => {
                *expected == IpAddr::V6(*address)
            }
            _ => false,
        }
    }
}

/// The origins an engine may reach. Empty (the default) allows nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedHosts(Vec<HostPattern>);

impl AllowedHosts {
    /// Parses every pattern; the first malformed one is the error.
    pub fn parse<S: AsRef<str>>(patterns: &[S]) -> Result<Self, String> {
        patterns
            .iter()
            .map(|pattern| pattern.as_ref().parse())
            .collect::<Result<Vec<_>, _>>()
            .map(Self)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether some pattern matches the URL's scheme, host and port.
    pub fn allows(&self, url: &Url) -> bool {
        let (Some(scheme), Some(host), Some(port)) = (
            Scheme::parse(url.scheme()),
            url.host(),
            url.port_or_known_default(),
        ) else {
            return false;
        };
        self.0
            .iter()
            .any(|pattern| pattern.matches(scheme, &host, port))
    }
}

impl fmt::Display for AllowedHosts {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, pattern) in self.0.iter().enumerate() {
            if index > 0 {
                formatter.write_str(",")?;
            }
            write!(formatter, "{pattern}")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Address classification
// ---------------------------------------------------------------------------------------------

/// Why an address is not a public internet address, or `None` when it is one. Engines reach
/// these only when the host allows private targets.
pub fn non_public_reason(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(address) => ipv4_reason(address),
        IpAddr::V6(address) => ipv6_reason(address),
    }
}

fn ipv4_reason(address: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = address.octets();
    Some(match (a, b, c) {
        _ if address.is_broadcast() => "broadcast",
        (0, _, _) => "unspecified",
        (127, _, _) => "loopback",
        (10, _, _) => "private",
        (172, 16..=31, _) => "private",
        (192, 168, _) => "private",
        (169, 254, _) => "link-local",
        (100, 64..=127, _) => "shared (CGNAT)",
        (192, 0, 0) => "reserved",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        // The former 6to4 relay anycast range (RFC 7526): relays nobody here controls.
        (192, 88, 99) => "reserved (6to4 relay anycast)",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved",
        _ => return None,
    })
}

fn ipv6_reason(address: Ipv6Addr) -> Option<&'static str> {
    let segments = address.segments();
    // IPv4-mapped (::ffff:a.b.c.d) and the deprecated IPv4-compatible (::a.b.c.d) forms, and
    // the NAT64 well-known prefix (64:ff9b::/96), reach the embedded IPv4 address: refused when
    // it is. Tunnels and local translators are refused whole, whatever they embed: 6to4
    // (2002::/16, the IPv4 address in bits 16-47, reached through relays nobody here controls;
    // `2002:7f00:1::` is 127.0.0.1), Teredo (2001::/32) and NAT64 local-use (64:ff9b:1::/48,
    // whose translator is the operator's own network).
    if let Some(mapped) = address.to_ipv4_mapped() {
        return ipv4_reason(mapped);
    }
    if segments[..6] == [0, 0, 0, 0, 0, 0] && !address.is_unspecified() && !address.is_loopback() {
        return ipv4_reason(Ipv4Addr::from_bits(address.to_bits() as u32)).or(Some("reserved"));
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return ipv4_reason(Ipv4Addr::from_bits(address.to_bits() as u32));
    }
    Some(match segments[0] {
        0x2002 => "6to4 (tunnelled IPv4)",
        0x2001 if segments[1] == 0 => "Teredo (tunnelled IPv4)",
        0x0064 if segments[1..3] == [0xff9b, 1] => "NAT64 local-use",
        _ if address.is_unspecified() => "unspecified",
        _ if address.is_loopback() => "loopback",
        first if first & 0xfe00 == 0xfc00 => "unique local (private)",
        first if first & 0xffc0 == 0xfe80 => "link-local",
        first if first & 0xffc0 == 0xfec0 => "site-local",
        first if first & 0xff00 == 0xff00 => "multicast",
        0x2001 if segments[1] == 0x0db8 => "documentation",
        0x3fff if segments[1] & 0xf000 == 0 => "documentation",
        0x2001 if segments[1..3] == [0x0002, 0] => "benchmarking",
        0x2001 if matches!(segments[1] & 0xfff0, 0x0010 | 0x0020) => "reserved (ORCHID)",
        0x0100 if segments[1..4] == [0, 0, 0] => "discard-only",
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// The resolver
// ---------------------------------------------------------------------------------------------

/// Why the resolver gave no address; found again in the client's error chain.
#[derive(Debug, thiserror::Error)]
enum ResolveError {
    #[error("DNS lookup of {host} failed: {source}")]
    Lookup {
        host: String,
        source: std::io::Error,
    },
    #[error("DNS lookup of {host} returned no address")]
    Empty { host: String },
    /// Names no address: the reason goes to the engine (and on into a delivery's
    /// `last_error`), the address to the host's debug log only.
    #[error(
        "{host} resolves only to private (non-public) addresses, and this host does not allow private targets"
    )]
    Private { host: String },
}

/// `TESSERA_WEBHOOK_DNS_SERVERS`: `ip`, `ip:port` or `[ipv6]:port`, comma-separated (port 53
/// when none is given).
pub fn parse_dns_servers(text: &str) -> Result<Vec<SocketAddr>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            item.parse::<SocketAddr>()
                .or_else(|_| item.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 53)))
                .map_err(|_| format!("{item:?} is not a name server address (ip or ip:port)"))
        })
        .collect()
}

/// Where names are looked up: the system resolver, or the operator's name servers.
enum Lookup {
    System,
    Servers(Box<hickory_resolver::TokioResolver>),
}

impl Lookup {
    fn new(servers: &[SocketAddr]) -> anyhow::Result<Self> {
        use hickory_resolver::config::{
            ConnectionConfig, LookupIpStrategy, NameServerConfig, ResolverConfig,
        };
        if servers.is_empty() {
            return Ok(Self::System);
        }
        let name_servers = servers
            .iter()
            .map(|server| {
                let connections = [ConnectionConfig::udp(), ConnectionConfig::tcp()]
                    .into_iter()
                    .map(|mut connection| {
                        connection.port = server.port();
                        connection
                    })
                    .collect();
                NameServerConfig::new(server.ip(), true, connections)
            })
            .collect();
        let mut builder = hickory_resolver::TokioResolver::builder_with_config(
            ResolverConfig::from_name_servers(name_servers),
            Default::default(),
        );
        // Both families: a name is refused only when every address it has is non-public.
        builder.options_mut().ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
        let resolver = builder
            .build()
            .context("building the resolver of TESSERA_WEBHOOK_DNS_SERVERS")?;
        Ok(Self::Servers(Box::new(resolver)))
    }

    /// The addresses of `host`.
    async fn addresses(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        match self {
            Self::System => Ok(tokio::net::lookup_host((host, 0))
                .await?
                .map(|address| address.ip())
                .collect()),
            Self::Servers(resolver) => match resolver.lookup_ip(host).await {
                Ok(found) => Ok(found.iter().collect()),
                Err(error) => Err(std::io::Error::other(error.to_string())),
            },
        }
    }
}

/// The resolver of every connection of the client (the system's, or the operator's name
/// servers), with non-public addresses removed unless private targets are allowed, so the
/// check holds at connect time.
struct PolicyResolver {
    allow_private: bool,
    lookup: Arc<Lookup>,
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let allow_private = self.allow_private;
        let lookup = self.lookup.clone();
        Box::pin(async move {
            let addresses: Vec<SocketAddr> = lookup
                .addresses(&host)
                .await
                .map_err(|source| ResolveError::Lookup {
                    host: host.clone(),
                    source,
                })?
                .into_iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            let Some(first) = addresses.first().copied() else {
                return Err(ResolveError::Empty { host }.into());
            };
            if allow_private {
                return Ok(Box::new(addresses.into_iter()) as Addrs);
            }
            let public: Vec<SocketAddr> = addresses
                .into_iter()
                .filter(|address| non_public_reason(address.ip()).is_none())
                .collect();
            if public.is_empty() {
                tracing::debug!(
                    host,
                    address = %first.ip(),
                    reason = non_public_reason(first.ip()).unwrap_or("reserved"),
                    "outbound name resolves only to non-public addresses"
                );
                return Err(ResolveError::Private { host }.into());
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------------------------

/// A request of an engine, as plain Rust.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// 0: [`DEFAULT_TIMEOUT`]; capped at [`MAX_TIMEOUT`].
    pub timeout_ms: u32,
}

/// The response handed back to the engine.
#[derive(Debug, Clone)]
pub struct FetchResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub elapsed_ms: u32,
}

/// Who is fetching, for the logs.
#[derive(Debug, Clone, Copy)]
pub struct FetchCaller<'a> {
    pub engine_code: &'a str,
    pub correlation_id: &'a str,
}

/// Why no response was obtained. `Display` is the reason the engine gets.
#[derive(Debug)]
pub enum FetchError {
    Invalid(String),
    Refused(String),
    Dns(String),
    Connect(String),
    Tls(String),
    Timeout(Duration),
    Failed(String),
}

impl FetchError {
    fn kind(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid request",
            Self::Refused(_) => "refused by policy",
            Self::Dns(_) => "dns",
            Self::Connect(_) => "connect",
            Self::Tls(_) => "tls",
            Self::Timeout(_) => "timeout",
            Self::Failed(_) => "failed",
        }
    }

    /// The outcome label of the metrics (`call_metrics::record_outbound`).
    fn label(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid",
            Self::Refused(_) => "refused",
            Self::Dns(_) => "dns",
            Self::Connect(_) => "connect",
            Self::Tls(_) => "tls",
            Self::Timeout(_) => "timeout",
            Self::Failed(_) => "failed",
        }
    }
}

impl fmt::Display for FetchError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid(why) => write!(formatter, "invalid outbound request: {why}"),
            Self::Refused(why) => write!(formatter, "refused by policy: {why}"),
            Self::Dns(why) => formatter.write_str(why),
            Self::Connect(why) => write!(formatter, "connection failed: {why}"),
            Self::Tls(why) => write!(formatter, "TLS failed: {why}"),
            Self::Timeout(after) => write!(
                formatter,
                "timed out after {} ms without a complete response",
                after.as_millis()
            ),
            Self::Failed(why) => write!(formatter, "the exchange failed: {why}"),
        }
    }
}

/// A request that passed the policy.
struct Prepared {
    /// `scheme://host:port`: what the logs name (never the path or query).
    target: String,
    request: reqwest::Request,
    timeout: Duration,
}

/// The host's outbound HTTP client and policy, built once from the configuration and shared
/// by every call.
pub struct OutboundClient {
    http: reqwest::Client,
    allow_private: bool,
    /// Where `check-target` looks names up: the client's own resolver's source.
    lookup: Arc<Lookup>,
    /// `TESSERA_WEBHOOK_CHECK_DNS_TIMEOUT`.
    check_dns_timeout: Duration,
    /// The operator's lists, replacing what the named engines declare.
    overrides: HashMap<String, Arc<AllowedHosts>>,
}

impl fmt::Debug for OutboundClient {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("OutboundClient")
            .field("allow_private", &self.allow_private)
            .field("overrides", &self.overrides)
            .finish_non_exhaustive()
    }
}

impl OutboundClient {
    /// The client of a host configured by `config`: system and webpki roots plus
    /// `TESSERA_WEBHOOK_EXTRA_CA`, private targets per `TESSERA_WEBHOOK_ALLOW_PRIVATE_TARGETS`,
    /// the operator's allow-lists of `TESSERA_ENGINE_OUTBOUND_HOSTS`.
    pub fn new(config: RuntimeSetup<'_>) -> anyhow::Result<Self> {
        let allow_private = config.outbound.allow_private_targets;
        let lookup = Arc::new(Lookup::new(&config.outbound.dns_servers)?);
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .connect_timeout(CONNECT_TIMEOUT)
            .pool_idle_timeout(Duration::from_secs(60))
            // As many kept-alive connections per origin as engine work runs at once (every
            // slot may be delivering to the same receiver) plus requests' own calls: fewer would
            // close connections after each burst and pay a TLS handshake per delivery.
            .pool_max_idle_per_host(config.work.concurrency * 2)
            .user_agent(concat!("tessera/", env!("CARGO_PKG_VERSION")))
            .dns_resolver(Arc::new(PolicyResolver {
                allow_private,
                lookup: lookup.clone(),
            }));
        if let Some(path) = &config.outbound.extra_ca {
            let pem = std::fs::read(path).with_context(|| {
                format!("reading TESSERA_WEBHOOK_EXTRA_CA ({})", path.display())
            })?;
            let certificates = reqwest::Certificate::from_pem_bundle(&pem).with_context(|| {
                format!(
                    "TESSERA_WEBHOOK_EXTRA_CA ({}) is not a PEM certificate bundle",
                    path.display()
                )
            })?;
            anyhow::ensure!(
                !certificates.is_empty(),
                "TESSERA_WEBHOOK_EXTRA_CA ({}) holds no certificate",
                path.display()
            );
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        let http = builder
            .build()
            .context("building the outbound HTTP client")?;
        let overrides = config
            .engine_outbound_hosts
            .iter()
            .map(|(code, patterns)| {
                AllowedHosts::parse(patterns)
                    .map(|allowed| (code.clone(), Arc::new(allowed)))
                    .map_err(|error| anyhow::anyhow!("TESSERA_ENGINE_OUTBOUND_HOSTS: {error}"))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self {
            http,
            allow_private,
            lookup,
            check_dns_timeout: config.outbound.check_dns_timeout,
            overrides,
        })
    }

    /// The allow-list in force for an engine: the operator's, when the engine is named in
    /// `TESSERA_ENGINE_OUTBOUND_HOSTS`, else what the engine declared.
    pub fn allowed_hosts<'a>(
        &'a self,
        engine_code: &str,
        declared: &'a AllowedHosts,
    ) -> &'a AllowedHosts {
        self.overrides
            .get(engine_code)
            .map(|allowed| allowed.as_ref())
            .unwrap_or(declared)
    }

    /// Sends the request of `caller` if `allowed` and the address policy permit it. `Err` is
    /// why no response was obtained (its `Display` the reason an engine is told); every
    /// refusal and failure is logged.
    pub async fn fetch(
        &self,
        caller: FetchCaller<'_>,
        allowed: &AllowedHosts,
        request: FetchRequest,
    ) -> Result<FetchResponse, FetchError> {
        let started = Instant::now();
        // What the engine sent is logged only when it is one of the methods allowed.
        let method = request.method.trim().to_ascii_uppercase();
        let method = METHODS
            .iter()
            .find(|allowed| **allowed == method)
            .copied()
            .unwrap_or("(invalid)");
        // A span per request, child of the engine call's: the request carries its trace
        // context (`traceparent`) to the receiver, replacing any the engine wrote.
        let span = tracing::info_span!(
            "outbound request",
            engine = caller.engine_code,
            method,
            target = tracing::field::Empty,
            status = tracing::field::Empty,
        );
        let (target, outcome) = async {
            match self.prepare(caller, allowed, request) {
                Ok(mut prepared) => {
                    tracing::Span::current().record("target", prepared.target.as_str());
                    tessera_http::trace_context::inject_current(prepared.request.headers_mut());
                    let outcome = self.send(prepared.request, prepared.timeout, started).await;
                    (Some(prepared.target), outcome)
                }
                Err((target, error)) => (target, Err(error)),
            }
        }
        .instrument(span.clone())
        .await;
        if let Ok(response) = &outcome {
            span.record("status", response.status);
        }
        let target = target.as_deref().unwrap_or("(invalid URL)");
        let elapsed_ms = started.elapsed().as_millis() as u64;
        crate::call_metrics::record_outbound(
            caller.engine_code,
            match &outcome {
                Ok(response) => crate::call_metrics::status_class(response.status),
                Err(error) => error.label(),
            },
        );
        match outcome {
            Ok(response) => {
                tracing::debug!(
                    engine = caller.engine_code,
                    correlation_id = caller.correlation_id,
                    method,
                    target,
                    status = response.status,
                    elapsed_ms,
                    "outbound HTTP request answered"
                );
                Ok(response)
            }
            Err(error) => {
                let reason = error.to_string();
                if matches!(error, FetchError::Refused(_)) {
                    tracing::warn!(
                        engine = caller.engine_code,
                        correlation_id = caller.correlation_id,
                        method,
                        target,
                        reason,
                        "outbound HTTP request refused by policy"
                    );
                } else {
                    tracing::warn!(
                        engine = caller.engine_code,
                        correlation_id = caller.correlation_id,
                        method,
                        target,
                        kind = error.kind(),
                        reason,
                        elapsed_ms,
                        "outbound HTTP request failed"
                    );
                }
                Err(error)
            }
        }
    }

    /// Checks, without sending, that `caller` could reach `url` now (see `check-target` in
    /// `wit/engine.wit`): the URL, the allow-list, IP literals, and the addresses a name
    /// resolves to. A name that does not resolve, or not within `TESSERA_WEBHOOK_CHECK_DNS_TIMEOUT`
    /// (2 s by default), passes (every connection checks again); only a name resolving to
    /// non-public addresses alone is refused, without naming them.
    pub async fn check_target(
        &self,
        caller: FetchCaller<'_>,
        allowed: &AllowedHosts,
        url: &str,
    ) -> Result<(), String> {
        let (url, target) = self
            .check_url(caller, allowed, url)
            .map_err(|(_, error)| error.to_string())?;
        let Some(url::Host::Domain(name)) = url.host() else {
            return Ok(());
        };
        if self.allow_private {
            return Ok(());
        }
        // Bounded: a slow or silent resolver must not hold the engine call past its deadline.
        let addresses =
            match tokio::time::timeout(self.check_dns_timeout, self.lookup.addresses(name)).await {
                Ok(Ok(addresses)) => addresses,
                Ok(Err(error)) => {
                    tracing::debug!(
                        engine = caller.engine_code,
                        correlation_id = caller.correlation_id,
                        target,
                        %error,
                        "outbound target does not resolve now: accepted, connections check again"
                    );
                    return Ok(());
                }
                Err(_) => {
                    tracing::info!(
                        engine = caller.engine_code,
                        correlation_id = caller.correlation_id,
                        target,
                        timeout_ms = self.check_dns_timeout.as_millis() as u64,
                        "outbound target did not resolve in time: accepted, connections check again"
                    );
                    return Ok(());
                }
            };
        match addresses.first() {
            Some(first)
                if addresses
                    .iter()
                    .all(|address| non_public_reason(*address).is_some()) =>
            {
                let reason = non_public_reason(*first).unwrap_or("reserved");
                tracing::debug!(
                    engine = caller.engine_code,
                    correlation_id = caller.correlation_id,
                    target,
                    address = %first,
                    reason,
                    "outbound target resolves only to non-public addresses"
                );
                tracing::warn!(
                    engine = caller.engine_code,
                    correlation_id = caller.correlation_id,
                    target,
                    reason,
                    "outbound target refused by policy"
                );
                Err(ResolveError::Private {
                    host: name.to_owned(),
                }
                .to_string())
            }
            _ => Ok(()),
        }
    }

    /// The URL checked against the scheme, the allow-list and (for IP literals) the address
    /// policy, with its target (`scheme://host:port`). The target comes back with the error
    /// when the URL parses.
    fn check_url(
        &self,
        caller: FetchCaller<'_>,
        allowed: &AllowedHosts,
        url: &str,
    ) -> Result<(Url, String), (Option<String>, FetchError)> {
        let url = Url::parse(url.trim()).map_err(|error| {
            (
                None,
                FetchError::Invalid(format!("the URL is not valid: {error}")),
            )
        })?;
        if Scheme::parse(url.scheme()).is_none() {
            return Err((
                None,
                FetchError::Invalid(format!(
                    "only http and https URLs are allowed, not {}:",
                    url.scheme()
                )),
            ));
        }
        let (Some(host), Some(port)) = (url.host(), url.port_or_known_default()) else {
            return Err((None, FetchError::Invalid("the URL has no host".into())));
        };
        let target = format!("{}://{host}:{port}", url.scheme());
        let fail = |error: FetchError| (Some(target.clone()), error);
        if !allowed.allows(&url) {
            return Err(fail(FetchError::Refused(if allowed.is_empty() {
                format!(
                    "outbound HTTP is not allowed for the engine {} (it has no outbound hosts)",
                    caller.engine_code
                )
            } else {
                format!(
                    "{target} is not among the outbound hosts allowed for the engine {} ({allowed})",
                    caller.engine_code
                )
            })));
        }
        // The resolver never sees IP literals: check them here.
        let literal = match host {
            url::Host::Ipv4(address) => Some(IpAddr::V4(address)),
            url::Host::Ipv6(address) => Some(IpAddr::V6(address)),
            url::Host::Domain(_) => None,
        };
        if let Some(address) = literal
            && !self.allow_private
            && let Some(reason) = non_public_reason(address)
        {
            return Err(fail(FetchError::Refused(format!(
                "{address} is a non-public address ({reason}), and this host does not allow private targets"
            ))));
        }
        Ok((url, target))
    }

    /// Checks the request against the policy and builds it. The target comes back in both
    /// cases when the URL parses.
    fn prepare(
        &self,
        caller: FetchCaller<'_>,
        allowed: &AllowedHosts,
        request: FetchRequest,
    ) -> Result<Prepared, (Option<String>, FetchError)> {
        let method = request.method.trim().to_ascii_uppercase();
        let (url, target) = self.check_url(caller, allowed, &request.url)?;
        let fail = |error: FetchError| (Some(target.clone()), error);
        if !METHODS.contains(&method.as_str()) {
            return Err(fail(FetchError::Invalid(format!(
                "the method {:?} is not one of {}",
                request.method,
                METHODS.join(", ")
            ))));
        }
        let method = Method::from_bytes(method.as_bytes()).expect("a standard method");

        let mut headers = HeaderMap::new();
        for (name, value) in &request.headers {
            let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
                fail(FetchError::Invalid(format!(
                    "{name:?} is not a valid header name"
                )))
            })?;
            if DROPPED_REQUEST_HEADERS.contains(&name.as_str()) {
                tracing::debug!(
                    engine = caller.engine_code,
                    correlation_id = caller.correlation_id,
                    header = name.as_str(),
                    "outbound HTTP: dropping a header the host sets itself"
                );
                continue;
            }
            // The value is never echoed: it may be a credential.
            let value = HeaderValue::from_str(value).map_err(|_| {
                fail(FetchError::Invalid(format!(
                    "the value of the header {name} is not valid"
                )))
            })?;
            headers.append(name, value);
        }
        if request.body.len() > MAX_REQUEST_BODY_BYTES {
            return Err(fail(FetchError::Invalid(format!(
                "the body exceeds {MAX_REQUEST_BODY_BYTES} bytes"
            ))));
        }

        let timeout = match request.timeout_ms {
            0 => DEFAULT_TIMEOUT,
            milliseconds => Duration::from_millis(milliseconds.into()),
        }
        .min(MAX_TIMEOUT);
        let mut built = reqwest::Request::new(method, url);
        *built.headers_mut() = headers;
        if !request.body.is_empty() {
            *built.body_mut() = Some(request.body.into());
        }
        Ok(Prepared {
            target,
            request: built,
            timeout,
        })
    }

    async fn send(
        &self,
        request: reqwest::Request,
        timeout: Duration,
        started: Instant,
    ) -> Result<FetchResponse, FetchError> {
        let exchange = async {
            let mut response = self
                .http
                .execute(request)
                .await
                .map_err(|error| classify(&error))?;
            if response
                .content_length()
                .is_some_and(|length| length > MAX_RESPONSE_BODY_BYTES as u64)
            {
                return Err(too_large());
            }
            let status = response.status().as_u16();
            let headers = response
                .headers()
                .iter()
                .map(|(name, value)| {
                    (
                        name.as_str().to_owned(),
                        String::from_utf8_lossy(value.as_bytes()).into_owned(),
                    )
                })
                .collect();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|error| classify(&error))? {
                if body.len() + chunk.len() > MAX_RESPONSE_BODY_BYTES {
                    return Err(too_large());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(FetchResponse {
                status,
                headers,
                body,
                elapsed_ms: 0,
            })
        };
        let mut response = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| FetchError::Timeout(timeout))??;
        response.elapsed_ms = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
        Ok(response)
    }
}

fn too_large() -> FetchError {
    FetchError::Failed(format!(
        "the response body exceeds {MAX_RESPONSE_BODY_BYTES} bytes"
    ))
}

/// Turns a client error into the reason an engine gets, by what is found in its source chain:
/// the resolver's refusal or failure, a TLS error, else a connect or protocol failure.
fn classify(error: &reqwest::Error) -> FetchError {
    let mut innermost = None;
    let mut source: Option<&(dyn StdError + 'static)> = error.source();
    while let Some(current) = source {
        // `io::Error::source` skips the error it wraps: look inside each layer too.
        let mut candidate = Some(current);
        while let Some(error) = candidate {
            if let Some(resolve) = error.downcast_ref::<ResolveError>() {
                return match resolve {
                    ResolveError::Private { .. } => FetchError::Refused(resolve.to_string()),
                    _ => FetchError::Dns(resolve.to_string()),
                };
            }
            if let Some(tls) = error.downcast_ref::<rustls::Error>() {
                return FetchError::Tls(tls.to_string());
            }
            candidate = error
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .map(|inner| inner as &(dyn StdError + 'static));
        }
        innermost = Some(current.to_string());
        source = current.source();
    }
    let detail = innermost.unwrap_or_else(|| without_url(error));
    if error.is_timeout() {
        FetchError::Connect(format!("timed out ({detail})"))
    } else if error.is_connect() {
        FetchError::Connect(detail)
    } else {
        FetchError::Failed(detail)
    }
}

/// What kind of client error it is, without its `Display` (which names the URL, and a URL may
/// carry secrets).
fn without_url(error: &reqwest::Error) -> String {
    if error.is_body() {
        "error reading the body"
    } else if error.is_decode() {
        "error decoding the response"
    } else if error.is_request() {
        "error sending the request"
    } else {
        "HTTP error"
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(patterns: &[&str]) -> AllowedHosts {
        AllowedHosts::parse(patterns).unwrap()
    }

    fn allows(patterns: &[&str], url: &str) -> bool {
        allowed(patterns).allows(&Url::parse(url).unwrap())
    }

    #[test]
    fn patterns_parse_or_say_why_not() {
        for good in [
            "https://*",
            "https://*:*",
            "http://127.0.0.1:*",
            "http://[::1]:8080",
            "https://api.example.com",
            "https://*.example.com:8443",
            "HTTPS://API.Example.com/",
            "http://localhost:3000",
        ] {
            assert!(good.parse::<HostPattern>().is_ok(), "{good}");
        }
        for bad in [
            "",
            "*",
            "api.example.com",
            "ftp://example.com",
            "*://example.com",
            "https://example.com/path",
            "https://user@example.com",
            "https://exa*mple.com",
            "https://*.*.com",
            "https://example.com:0",
            "https://example.com:99999",
            "https://example.com:http",
            "https://[::1",
            "https://[not-v6]:80",
            "https://ünïcode.example",
        ] {
            assert!(bad.parse::<HostPattern>().is_err(), "{bad:?} parsed");
        }
        let error = "ftp://x".parse::<HostPattern>().unwrap_err();
        assert!(error.contains("http or https"), "{error}");
    }

    #[test]
    fn the_scheme_must_match() {
        assert!(allows(&["https://*"], "https://example.com/x"));
        assert!(!allows(&["https://*"], "http://example.com/x"));
        assert!(!allows(&["http://*"], "https://example.com/x"));
    }

    #[test]
    fn without_a_port_only_the_default_port_matches() {
        assert!(allows(&["https://*"], "https://example.com:443/"));
        assert!(!allows(&["https://*"], "https://example.com:8443/"));
        assert!(allows(&["https://*:*"], "https://example.com:8443/"));
        assert!(allows(&["http://example.com"], "http://example.com/"));
        assert!(!allows(&["http://example.com"], "http://example.com:8080/"));
        assert!(allows(
            &["http://example.com:8080"],
            "http://example.com:8080/"
        ));
        assert!(!allows(
            &["http://example.com:8080"],
            "http://example.com:8081/"
        ));
    }

    #[test]
    fn hosts_match_exactly_or_by_subdomain() {
        let patterns = ["https://api.example.com", "https://*.hooks.example.org"];
        assert!(allows(&patterns, "https://API.example.com/v1"));
        assert!(allows(&patterns, "https://api.example.com./v1"));
        assert!(!allows(&patterns, "https://evil-api.example.com/"));
        assert!(!allows(&patterns, "https://api.example.com.evil.net/"));
        assert!(allows(&patterns, "https://a.hooks.example.org/"));
        assert!(allows(&patterns, "https://a.b.hooks.example.org/"));
        assert!(!allows(&patterns, "https://hooks.example.org/"));
        assert!(!allows(&patterns, "https://xhooks.example.org/"));
        assert!(allows(&["https://*"], "https://203.0.113.9/"));
    }

    #[test]
    fn ip_patterns_match_ip_literals() {
        assert!(allows(&["http://127.0.0.1:*"], "http://127.0.0.1:5000/"));
        assert!(!allows(&["http://127.0.0.1:*"], "http://localhost:5000/"));
        assert!(allows(&["http://[::1]:*"], "http://[::1]:5000/"));
        assert!(allows(&["http://[::1]:*"], "http://[0:0::1]:5000/"));
        // The URL parser normalises other spellings of an IPv4 address.
        assert!(allows(&["http://127.0.0.1"], "http://2130706433/"));
        assert!(allows(&["http://127.0.0.1"], "http://0x7f.1/"));
    }

    #[test]
    fn an_empty_list_allows_nothing() {
        assert!(!allows(&[], "https://example.com/"));
        assert!(AllowedHosts::default().is_empty());
        assert!(!allows(&["https://*"], "mailto:ada@example.com"));
    }

    #[test]
    fn name_servers_parse_with_or_without_a_port() {
        assert_eq!(
            parse_dns_servers(" 10.0.0.53, 127.0.0.1:5353,[::1]:53,::1 ").unwrap(),
            vec![
                "10.0.0.53:53".parse::<SocketAddr>().unwrap(),
                "127.0.0.1:5353".parse().unwrap(),
                "[::1]:53".parse().unwrap(),
                "[::1]:53".parse().unwrap(),
            ]
        );
        assert_eq!(parse_dns_servers("").unwrap(), vec![]);
        let error = parse_dns_servers("127.0.0.1,dns.example").unwrap_err();
        assert!(error.contains("\"dns.example\""), "{error}");
    }

    fn reason(address: &str) -> Option<&'static str> {
        non_public_reason(address.parse().unwrap())
    }

    #[test]
    fn non_public_ipv4_addresses_are_recognised() {
        for (address, expected) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("10.0.0.1", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("100.64.0.1", "shared (CGNAT)"),
            ("100.127.255.254", "shared (CGNAT)"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("240.0.0.1", "reserved"),
            ("192.0.2.10", "documentation"),
            ("198.18.0.1", "benchmarking"),
            ("192.88.99.1", "reserved (6to4 relay anycast)"),
        ] {
            assert_eq!(reason(address), Some(expected), "{address}");
        }
        for public in [
            "8.8.8.8",
            "1.1.1.1",
            "172.15.0.1",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "192.169.0.1",
            "93.184.216.34",
            "192.88.98.1",
            "192.88.100.1",
        ] {
            assert_eq!(reason(public), None, "{public}");
        }
    }

    #[test]
    fn non_public_ipv6_addresses_are_recognised() {
        for (address, expected) in [
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fc00::1", "unique local (private)"),
            ("fd12:3456::1", "unique local (private)"),
            ("fe80::1", "link-local"),
            ("fec0::1", "site-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.1.2.3", "private"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::10.0.0.1", "private"),
            ("64:ff9b::127.0.0.1", "loopback"),
            ("2002:7f00:1::", "6to4 (tunnelled IPv4)"),
            ("2002:808:808::1", "6to4 (tunnelled IPv4)"),
            ("2001::1", "Teredo (tunnelled IPv4)"),
            (
                "2001:0:4136:e378:8000:63bf:3fff:fdd2",
                "Teredo (tunnelled IPv4)",
            ),
            ("64:ff9b:1::a00:1", "NAT64 local-use"),
            ("64:ff9b:1:ffff::8.8.8.8", "NAT64 local-use"),
            ("2001:2::1", "benchmarking"),
            ("2001:10::1", "reserved (ORCHID)"),
            ("2001:20::1", "reserved (ORCHID)"),
            ("3fff::1", "documentation"),
        ] {
            assert_eq!(reason(address), Some(expected), "{address}");
        }
        for public in [
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
            "2001:4860:4860::8888",
            "2001:3::1",
            "2003::1",
            "4000::1",
        ] {
            assert_eq!(reason(public), None, "{public}");
        }
    }
}
