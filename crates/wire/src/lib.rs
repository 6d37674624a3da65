//! `tessera-wire`: the wire rules Tessera's host and its engine SDK share, so that an engine's
//! API answers exactly like the host's.
//!
//! - [`ValidationErrors`]: the field-level failures of a 422 (`{"field": ["rule", …]}`) and the
//!   small rule checks that build them ([`ValidationErrors::check`], [`ValidationErrors::required`],
//!   [`is_email`], …).
//! - [`parse_json`]: a JSON body, classified as 400 when it is not JSON
//!   ([`BodyError::Malformed`]) and 422 naming the field path and rule when it has the wrong
//!   shape ([`BodyError::Invalid`]).
//! - [`CursorPage`] and [`CursorMeta`]: cursor paging (`cursor`, `limit` with default 50 and
//!   maximum 100, `meta` `{next_cursor, has_more}`) with opaque cursors ([`encode_cursor`],
//!   [`decode_cursor`]).
//! - [`messages`]: the `message` of the spec's error bodies.
//! - [`engine`]: the engine world's records as plain Rust ([`engine::Descriptor`],
//!   [`engine::Event`], …), converted from and to WIT at the boundary on each side.
//!
//! The crate has no host dependencies (no async runtime, HTTP framework or database) and builds
//! for `wasm32-wasip2`. Its errors are its own small types; the host's and the SDK's `ApiError`
//! convert from them, so `?` turns them into the right response on either side. The optional
//! `openapi` feature implements `utoipa::ToSchema` for the types the host's OpenAPI document
//! shows.

#![deny(missing_docs)]

pub mod engine;
pub mod json;
pub mod messages;
pub mod paging;
pub mod validation;

pub use json::{
    BodyError, describe_data_error, is_json_content_type, parse_json, parse_json_object,
};
pub use messages::{MESSAGE_EXPECTED_JSON, unknown_query_parameter};
pub use paging::{
    CursorMeta, CursorPage, DEFAULT_LIMIT, MAX_LIMIT, QueryParameters, decode_cursor, encode_cursor,
};
pub use validation::{ValidationErrors, is_email};
