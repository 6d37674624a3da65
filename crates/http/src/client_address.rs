//! The client's address behind reverse proxies: the TCP peer, unless the peer is one of the
//! operator's trusted proxies (`TESSERA_TRUSTED_PROXIES`, a comma-separated list of addresses
//! and CIDRs), in which case the address the proxies say the request came from. Rate limits, the
//! audit trail and the request log all read the one [`ClientAddress`] this middleware puts in
//! the request's extensions.
//!
//! Rules (what a client cannot forge, it cannot pick):
//! - From a peer outside the list, forwarding headers are ignored: the peer is the client.
//! - From a trusted peer, the hops of `Forwarded` (RFC 7239, its `for=` parameters) are read,
//!   else those of `X-Forwarded-For`, every instance of the header in order. They are walked
//!   from the right (the hop the nearest proxy added) past every trusted address; the first
//!   address not in the list is the client. A hop that is not an IP address (`unknown`, an
//!   obfuscated name, garbage) ends the walk: the client is then the last trusted hop (the
//!   proxy that forwarded it), never something further left that anyone could have written.
//!   When every hop is trusted, the leftmost is the client.
//! - No list (the default): no header is ever believed.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use ipnet::IpNet;

/// The client's address, as [`resolve`] found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

/// The proxies whose forwarding headers are believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Arc<[IpNet]>);

impl TrustedProxies {
    /// Parses `a.b.c.d`, `a.b.c.d/n`, IPv6 and IPv6 CIDRs, separated by commas (spaces allowed);
    /// an empty list trusts nobody.
    pub fn parse(list: &str) -> Result<Self, String> {
        let networks = list
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                entry
                    .parse::<IpNet>()
                    .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("`{entry}` is neither an IP address nor a CIDR"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self(networks.into()))
    }

    /// Whether nobody is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `address` is a trusted proxy.
    pub fn contains(&self, address: IpAddr) -> bool {
        let address = address.to_canonical();
        self.0.iter().any(|network| network.contains(&address))
    }

    /// The client of a request from `peer` with `headers` (the module's rules).
    pub fn client_address(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.contains(peer) {
            return peer;
        }
        let hops = forwarded_hops(headers);
        let mut client = peer;
        for hop in hops.iter().rev() {
            let Some(address) = hop.map(|address| address.to_canonical()) else {
                return client;
            };
            client = address;
            if !self.contains(address) {
                return address;
            }
        }
        client
    }
}

/// The forwarding hops of a request, leftmost first: `Forwarded`'s `for=` values when the
/// header is there, else `X-Forwarded-For`'s; `None` for a hop that is not an IP address.
fn forwarded_hops(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let forwarded: Vec<&str> = headers
        .get_all("forwarded")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect();
    if !forwarded.is_empty() {
        return forwarded
            .iter()
            .flat_map(|value| value.split(','))
            .filter_map(|element| {
                element.split(';').find_map(|pair| {
                    let (name, value) = pair.trim().split_once('=')?;
                    name.trim()
                        .eq_ignore_ascii_case("for")
                        .then(|| parse_forwarded_node(value.trim()))
                })
            })
            .collect();
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .flat_map(|value| match value.to_str() {
            Ok(text) => text.split(',').map(|hop| parse_hop(hop.trim())).collect(),
            Err(_) => vec![None],
        })
        .collect()
}

/// An RFC 7239 node: `192.0.2.60`, `"192.0.2.60:8080"`, `"[2001:db8::1]:4711"`, `unknown`, …
fn parse_forwarded_node(node: &str) -> Option<IpAddr> {
    parse_hop(node.trim_matches('"'))
}

/// An address, with or without a port: `192.0.2.1`, `192.0.2.1:443`, `2001:db8::1`,
/// `[2001:db8::1]:443`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(address) = hop.parse::<IpAddr>() {
        return Some(address);
    }
    if let Ok(socket) = hop.parse::<SocketAddr>() {
        return Some(socket.ip());
    }
    hop.strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .and_then(|inner| inner.parse().ok())
}

/// The middleware: puts the request's [`ClientAddress`] in its extensions (nothing without a
/// TCP peer, e.g. a router served by an embedder without `ConnectInfo`).
pub async fn resolve(
    State(proxies): State<TrustedProxies>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(address)| address.ip());
    if let Some(peer) = peer {
        let client = proxies.client_address(peer, request.headers());
        request.extensions_mut().insert(ClientAddress(client));
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_list_takes_addresses_and_cidrs_and_names_what_it_refuses() {
        let proxies = TrustedProxies::parse(" 10.0.0.0/8, 192.0.2.7 ,2001:db8::/32").unwrap();
        assert!(proxies.contains(ip("10.1.2.3")));
        assert!(
            proxies.contains(ip("::ffff:10.1.2.3")),
            "IPv4-mapped counts as IPv4"
        );
        assert!(proxies.contains(ip("192.0.2.7")));
        assert!(!proxies.contains(ip("192.0.2.8")));
        assert!(proxies.contains(ip("2001:db8:1::1")));
        assert!(TrustedProxies::parse("").unwrap().is_empty());
        assert_eq!(
            TrustedProxies::parse("10.0.0.0/8,proxy.local").unwrap_err(),
            "`proxy.local` is neither an IP address nor a CIDR"
        );
    }

    #[test]
    fn headers_from_an_untrusted_peer_are_ignored() {
        let proxies = TrustedProxies::parse("10.0.0.0/8").unwrap();
        let forged = headers(&[("x-forwarded-for", "203.0.113.9")]);
        assert_eq!(
            proxies.client_address(ip("198.51.100.1"), &forged),
            ip("198.51.100.1")
        );
        let nobody = TrustedProxies::default();
        assert_eq!(
            nobody.client_address(ip("10.0.0.1"), &forged),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn the_walk_stops_at_the_first_untrusted_hop_from_the_right() {
        let proxies = TrustedProxies::parse("10.0.0.0/8").unwrap();
        // A client that prepends its own forged hop does not get it believed.
        let chain = headers(&[("x-forwarded-for", "1.1.1.1, 203.0.113.9, 10.0.0.2")]);
        assert_eq!(
            proxies.client_address(ip("10.0.0.1"), &chain),
            ip("203.0.113.9")
        );
        // Several header instances are one list, in order.
        let split = headers(&[
            ("x-forwarded-for", "1.1.1.1"),
            ("x-forwarded-for", "203.0.113.9:5123, 10.0.0.2"),
        ]);
        assert_eq!(
            proxies.client_address(ip("10.0.0.1"), &split),
            ip("203.0.113.9")
        );
        // Every hop trusted: the leftmost.
        let internal = headers(&[("x-forwarded-for", "10.9.9.9, 10.0.0.2")]);
        assert_eq!(
            proxies.client_address(ip("10.0.0.1"), &internal),
            ip("10.9.9.9")
        );
        // Garbage ends the walk at the proxy that forwarded it.
        let garbage = headers(&[("x-forwarded-for", "203.0.113.9, nonsense, 10.0.0.2")]);
        assert_eq!(
            proxies.client_address(ip("10.0.0.1"), &garbage),
            ip("10.0.0.2")
        );
        // No header from a trusted peer: the peer.
        assert_eq!(
            proxies.client_address(ip("10.0.0.1"), &HeaderMap::new()),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn forwarded_takes_precedence_and_its_nodes_are_parsed() {
        let proxies = TrustedProxies::parse("10.0.0.0/8").unwrap();
        let both = headers(&[
            (
                "forwarded",
                r#"for="[2001:db8:cafe::17]:4711";proto=https, for=10.0.0.2"#,
            ),
            ("x-forwarded-for", "203.0.113.9"),
        ]);
        assert_eq!(
            proxies.client_address(ip("10.0.0.1"), &both),
            ip("2001:db8:cafe::17")
        );
        let unknown = headers(&[("forwarded", "for=unknown, for=10.0.0.2")]);
        assert_eq!(
            proxies.client_address(ip("10.0.0.1"), &unknown),
            ip("10.0.0.2")
        );
        let port = headers(&[("forwarded", r#"For="192.0.2.60:8080""#)]);
        assert_eq!(
            proxies.client_address(ip("10.0.0.1"), &port),
            ip("192.0.2.60")
        );
    }
}
