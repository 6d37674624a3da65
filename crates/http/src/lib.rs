//! The HTTP kit every service of the host builds on: the API's error type and its bodies,
//! extractors that refuse bad input in the API's shapes, `{data}` envelopes, offset and cursor
//! paging, the request conventions (correlation id, logs, JSON error bodies, panics), rate
//! limits, the listener with its connection limits, the extractor of signed internal calls, and
//! the patterns that document request bodies as exactly as they are checked.
//! It knows no service: each service crate exports its own router, and the binary merges them.

pub mod backpressure;
pub mod client_address;
pub mod config;
pub mod connections;
pub mod conventions;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod metric_series;
pub mod operator;
pub mod paging;
pub mod rate_limit;
pub mod request_metrics;
pub mod schema;
pub mod signature;
pub mod trace_context;
pub mod usage;

pub use error::{ApiError, ApiResult, ValidationErrors};
