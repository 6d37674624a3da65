//! `wasi:http` components as engines (CONTRACT §10): a component exporting
//! `wasi:http/incoming-handler@0.2` is called with the request the host authenticated, on a
//! fresh instance per request as `wasmtime serve` does, and its answer is collected within the
//! engine limits. Its outgoing requests (`wasi:http/outgoing-handler`) go through the host's
//! policed outbound client ([`PolicedOutbound`]): the engine's allow-list, the address policy,
//! the size limits and the metrics of every engine's outbound HTTP.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use wasmtime::Store;
use wasmtime_wasi_http::p2::bindings::exports::wasi::http::incoming_handler::Guest as IncomingHandler;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::{
    Error as HttpError, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks,
    WasiHttpView,
};

use crate::bindings::v0_3::tessera::engine::types as wit;
use crate::imports::{CallScope, HostServices, StoreState};
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
    pub(crate) fn new(scope: &CallScope, services: &HostServices) -> Self {
        Self {
            context: WasiHttpCtx::new(),
            outbound: PolicedOutbound {
                client: services.outbound.clone(),
                declared: scope.outbound_hosts.clone(),
                engine_code: scope.engine_code.clone(),
                correlation_id: scope.correlation_id.clone().unwrap_or_default(),
            },
        }
    }
}

impl WasiHttpView for StoreState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        let (state, table) = self.http_parts();
        WasiHttpCtxView {
            ctx: &mut state.context,
            table,
            hooks: &mut state.outbound,
        }
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

/// Hands `request` to the component's `incoming-handler` and collects what it answers, the
/// body at most `max_response_bytes`. The handler runs while its answer is read (a body larger
/// than the channel between them would otherwise never finish); the call ends when both have.
pub(crate) async fn handle(
    handler: &IncomingHandler,
    store: &mut Store<StoreState>,
    request: http::Request<Bytes>,
    max_response_bytes: usize,
) -> wasmtime::Result<wit::Response> {
    let request = request
        .map(|body| Full::new(body).map_err(|never: Infallible| -> HttpError { match never {} }));
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let (incoming, outparam) = {
        let mut http = store.data_mut().http();
        (
            http.new_incoming_request(Scheme::Http, request)?,
            http.new_response_outparam(sender)?,
        )
    };
    let call = handler.call_handle(&mut *store, incoming, outparam);
    let answer = async move {
        let response = match receiver.await {
            Ok(Ok(response)) => response,
            Ok(Err(code)) => wasmtime::bail!("the component answered the error {code:?}"),
            Err(_) => wasmtime::bail!("the component returned without setting a response"),
        };
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, max_response_bytes)
            .collect()
            .await
            .map_err(|error| {
                wasmtime::Error::msg(format!(
                    "reading the component's response body (at most {max_response_bytes} bytes): {error}"
                ))
            })?
            .to_bytes();
        Ok(wit::Response {
            status: parts.status.as_u16(),
            headers: parts
                .headers
                .iter()
                .filter_map(|(name, value)| {
                    Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
                })
                .collect(),
            body: body.to_vec(),
        })
    };
    let ((), response) = tokio::try_join!(call, answer)?;
    Ok(response)
}
