//! `wasi:http` components as engines (CONTRACT §10): a component exporting
//! `wasi:http/incoming-handler@0.2` is called with the request the host authenticated, on a
//! fresh instance per request as `wasmtime serve` does, and its answer is collected within the
//! engine limits. Its outgoing requests (`wasi:http/outgoing-handler`) go through the host's
//! policed outbound client (`wasi_http_outbound.rs`).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use wasmtime::Store;
use wasmtime_wasi_http::p2::bindings::exports::wasi::http::incoming_handler::Guest as IncomingHandler;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::{Error as HttpError, WasiHttpCtxView, WasiHttpView};

use crate::bindings::v0_3::tessera::engine::types as wit;
use crate::imports::StoreState;

impl WasiHttpView for StoreState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        let (state, table) = self.http_parts();
        let (ctx, hooks) = state.parts();
        WasiHttpCtxView { ctx, table, hooks }
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
