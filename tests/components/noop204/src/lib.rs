//! Test `wasi:http` component (`noop204`): every request is answered 204 No Content with no
//! body, the least a component can do, so a benchmark measures the host around it.

use wasip2::http::types::{Fields, IncomingRequest, OutgoingResponse, ResponseOutparam};

wasip2::http::proxy::export!(Component);

struct Component;

impl wasip2::exports::http::incoming_handler::Guest for Component {
    fn handle(_request: IncomingRequest, response_out: ResponseOutparam) {
        let response = OutgoingResponse::new(Fields::new());
        response.set_status_code(204).expect("a valid status");
        ResponseOutparam::set(response_out, Ok(response));
    }
}
