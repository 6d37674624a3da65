//! The outbound side of `wasi:http` component engines: their `wasi:http/outgoing-handler`
//! requests go through the host's policed outbound client ([`PolicedOutbound`]), the same one
//! behind the engine world's `outbound-http`: the engine's allow-list, the address policy, the
//! size limits and the metrics of every engine's outbound HTTP.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use wasmtime_wasi_http::{
    Error as HttpError, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpHooks,
};

use crate::outbound::{
    AllowedHosts, FetchCaller, FetchError, FetchRequest, MAX_REQUEST_BODY_BYTES, OutboundClient,
};

/// Headers of an outgoing request the host's client sets itself.
const CLIENT_HEADERS: [http::HeaderName; 4] = [
    http::header::HOST,
    http::header::CONTENT_LENGTH,
    http::header::TRANSFER_ENCODING,
    http::header::CONNECTION,
];

/// The `wasi:http` state of a call's store: its context and the outbound policy of its engine.
pub(crate) struct HttpGuestState {
    context: WasiHttpCtx,
    outbound: PolicedOutbound,
}

impl HttpGuestState {
    /// The state of a call of engine `engine_code` whose declared outbound hosts are
    /// `declared`.
    pub(crate) fn new(
        client: Arc<OutboundClient>,
        declared: Arc<AllowedHosts>,
        engine_code: String,
        correlation_id: String,
    ) -> Self {
        Self {
            context: WasiHttpCtx::new(),
            outbound: PolicedOutbound {
                client,
                declared,
                engine_code,
                correlation_id,
            },
        }
    }

    /// Its context and its hooks, as a `WasiHttpCtxView` takes them.
    pub(crate) fn parts(&mut self) -> (&mut WasiHttpCtx, &mut dyn WasiHttpHooks) {
        (&mut self.context, &mut self.outbound)
    }
}

/// Sends a component's outgoing requests through the host's outbound client, as the engine
/// world's `outbound-http.fetch` does: the engine's declared hosts (or the operator's list for
/// it), the address policy, [`MAX_REQUEST_BODY_BYTES`] out, the client's response limit back.
pub(crate) struct PolicedOutbound {
    client: Arc<OutboundClient>,
    declared: Arc<AllowedHosts>,
    engine_code: String,
    correlation_id: String,
}

type SendFuture = Box<
    dyn Future<
            Output = wasmtime_wasi_http::Result<(
                http::Response<WasiBody>,
                Box<dyn Future<Output = Result<(), HttpError>> + Send>,
            )>,
        > + Send,
>;

impl WasiHttpHooks for PolicedOutbound {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _response_errors: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        let client = self.client.clone();
        let declared = self.declared.clone();
        let engine_code = self.engine_code.clone();
        let correlation_id = self.correlation_id.clone();
        Box::new(async move {
            let (parts, body) = request.into_parts();
            let body = Limited::new(body, MAX_REQUEST_BODY_BYTES)
                .collect()
                .await
                .map_err(|_| HttpError::HttpRequestBodySize(None))?
                .to_bytes();
            let timeout_ms = options
                .and_then(|options| options.first_byte_timeout)
                .map_or(0, |timeout| {
                    u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX)
                });
            let request = FetchRequest {
                method: parts.method.as_str().to_owned(),
                url: parts.uri.to_string(),
                headers: parts
                    .headers
                    .iter()
                    .filter(|(name, _)| !CLIENT_HEADERS.contains(name))
                    .filter_map(|(name, value)| {
                        Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
                    })
                    .collect(),
                body: body.to_vec(),
                timeout_ms,
            };
            let caller = FetchCaller {
                engine_code: &engine_code,
                correlation_id: &correlation_id,
            };
            let allowed = client.allowed_hosts(&engine_code, &declared);
            let response = client
                .fetch(caller, allowed, request)
                .await
                .map_err(error_code)?;
            let mut answer = http::Response::builder().status(response.status);
            for (name, value) in &response.headers {
                answer = answer.header(name, value);
            }
            let body = Full::new(Bytes::from(response.body))
                .map_err(|never: Infallible| match never {})
                .boxed_unsync();
            let answer = answer
                .body(body)
                .map_err(|error| HttpError::InternalError(Some(error.to_string())))?;
            let done: Box<dyn Future<Output = Result<(), HttpError>> + Send> =
                Box::new(async { Ok(()) });
            Ok((answer, done))
        })
    }
}

/// The `wasi:http` error code of an outbound failure.
fn error_code(error: FetchError) -> HttpError {
    match error {
        FetchError::Invalid(_) => HttpError::HttpRequestUriInvalid,
        FetchError::Refused(_) => HttpError::HttpRequestDenied,
        FetchError::Dns(reason) => HttpError::DnsError {
            rcode: Some(reason),
            info_code: None,
        },
        FetchError::Connect(_) => HttpError::ConnectionRefused,
        FetchError::Tls(_) => HttpError::TlsProtocolError,
        FetchError::Timeout(_) => HttpError::HttpResponseTimeout,
        FetchError::Failed(reason) => HttpError::InternalError(Some(reason)),
    }
}
