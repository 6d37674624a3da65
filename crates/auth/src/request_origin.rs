//! Where a request came from ([`RequestOrigin`]): the client's address, the correlation id and
//! the `User-Agent`, read from a request's parts. The audit trail, the sessions list and the
//! sign-in mail limits keep or count it; extracting it never fails and needs no state.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use tessera_http::client_address::ClientAddress;
use tessera_http::conventions::CorrelationId;

/// Where a request came from: the peer's IP address (from `ConnectInfo<SocketAddr>`, which the
/// server provides) and the request's correlation id (from the conventions layer). Either is
/// `None` when the router runs without them (e.g. `oneshot` in unit tests); extracting never
/// fails.
///
/// The IP is the client's as the host resolved it (`tessera_http::client_address`): the TCP
/// peer's, or behind a trusted proxy the client it forwarded for; behind a proxy that is not
/// in `TESSERA_TRUSTED_PROXIES`, the proxy's (a client could write any address in
/// `X-Forwarded-For`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestOrigin {
    pub client_ip: Option<IpAddr>,
    pub correlation_id: Option<String>,
    /// The `User-Agent` header, printable ASCII only, cut at [`MAX_USER_AGENT_CHARS`]: what a
    /// user's sessions list shows of the device (never trusted for anything).
    pub user_agent: Option<String>,
}

/// The most characters of a `User-Agent` kept.
pub const MAX_USER_AGENT_CHARS: usize = 256;

impl RequestOrigin {
    /// Reads the origin from a request's parts.
    pub fn from_parts(parts: &Parts) -> Self {
        Self {
            client_ip: match parts.extensions.get::<ClientAddress>() {
                Some(ClientAddress(address)) => Some(address.to_canonical()),
                None => parts
                    .extensions
                    .get::<ConnectInfo<SocketAddr>>()
                    .map(|ConnectInfo(address)| address.ip().to_canonical()),
            },
            correlation_id: parts
                .extensions
                .get::<CorrelationId>()
                .map(|CorrelationId(id)| id.clone()),
            user_agent: parts
                .headers
                .get(axum::http::header::USER_AGENT)
                .map(|value| {
                    value
                        .as_bytes()
                        .iter()
                        .filter(|byte| byte.is_ascii_graphic() || **byte == b' ')
                        .take(MAX_USER_AGENT_CHARS)
                        .map(|byte| char::from(*byte))
                        .collect::<String>()
                })
                .map(|agent| agent.trim().to_owned())
                .filter(|agent| !agent.is_empty()),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for RequestOrigin {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::from_parts(parts))
    }
}
