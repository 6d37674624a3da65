//! The API description's own types: the request body and query the handlers read by hand
//! (`calls.rs` parses them field by field, to name every failing rule), and the schema
//! transforms the documented types share. Nothing here is constructed; the call record itself
//! (`call.rs`) documents the answers.

use schemars::JsonSchema;

use crate::call::{CallKind, CallStatus};

/// `POST /api/v1/calls`: whom to call, and how. The body must be a JSON object (422 rule
/// `object` on `body` otherwise); other fields are ignored.
#[derive(JsonSchema)]
#[allow(
    dead_code,
    reason = "documentation only: the handler reads the body by hand"
)]
pub struct NewCall {
    /// 1 to 50 distinct users of the tenant to call, not the caller (422 rules on
    /// `participant_ids`: `required`, `array`, `min:1`, `max:50`; on `participant_ids.N`:
    /// `string`, `exists`, `distinct`, `not_self`).
    #[schemars(
        length(min = 1, max = 50),
        inner(length(min = 1, max = 100)),
        extend("uniqueItems" = true)
    )]
    participant_ids: Vec<String>,
    /// Default (absent or null) `audio` (422 rules `string`, `in` otherwise).
    kind: Option<CallKind>,
    /// Seconds before an unanswered call becomes `missed`; default (absent or null) the
    /// tenant's setting, 60 (422 rules `integer`, `min:1`, `max:300`).
    #[schemars(range(min = 1, max = 300))]
    ring_timeout_seconds: Option<u32>,
}

/// The query of the call history.
#[derive(JsonSchema)]
#[allow(
    dead_code,
    reason = "documentation only: the handler reads the query by hand"
)]
pub struct CallsQuery {
    /// Only calls in this status; empty means all (422 rule `in` otherwise).
    status: Option<CallStatus>,
    /// Opaque cursor from a previous page's `meta.next_cursor` (422 rule `invalid` when it
    /// does not decode).
    cursor: Option<String>,
    /// Page size: default 50; larger values than 100 are taken as 100 (422 rules `integer`,
    /// `min:1`).
    #[schemars(range(min = 1, max = 4_294_967_295u64), extend("default" = 50))]
    limit: Option<u32>,
}
