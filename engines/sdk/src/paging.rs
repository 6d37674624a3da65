//! Cursor paging exactly like the host's (the rules live in `tessera-wire`, shared with the
//! host): query `cursor` (opaque) and `limit` (default 50, clamped to 100, `0` is 422
//! `{"limit": ["min:1"]}`), response `meta` `{next_cursor, has_more}`. A cursor is the
//! URL-safe, unpadded base64 of the JSON of the last position returned (for storage lists, the
//! last key as a JSON string).
//!
//! [`CursorPage::from_query`] reads a [`Query`]: check unknown parameters first with
//! [`Request::query`](crate::Request::query).

use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::request::Query;

pub use tessera_wire::paging::{CursorMeta, CursorPage, DEFAULT_LIMIT, MAX_LIMIT, encode_cursor};

/// `cursor` and `limit` for [`CursorPage::from_query`]: a non-integer `limit` is 422
/// `{"limit": ["integer"]}`.
impl tessera_wire::QueryParameters for Query {
    type Error = ApiError;

    fn parameter(&self, name: &str) -> Option<&str> {
        self.get(name)
    }
}

/// Decodes a cursor made by [`encode_cursor`] (or by the host); anything else is 422
/// `{"cursor": ["invalid"]}`.
pub fn decode_cursor<P: DeserializeOwned>(cursor: &str) -> Result<P, ApiError> {
    Ok(tessera_wire::decode_cursor(cursor)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_read_the_query_and_fail_as_api_errors() {
        assert_eq!(
            CursorPage::<String>::from_query(&Query::parse("limit=x")),
            Err(ApiError::invalid("limit", "integer"))
        );
        assert_eq!(
            CursorPage::<String>::from_query(&Query::parse("limit=0")),
            Err(ApiError::invalid("limit", "min:1"))
        );
        assert_eq!(
            CursorPage::<String>::from_query(&Query::parse("cursor=Nw")),
            Err(ApiError::invalid("cursor", "invalid"))
        );
        let page = CursorPage::<String>::from_query(&Query::parse("")).unwrap();
        assert_eq!((page.after, page.limit), (None, DEFAULT_LIMIT));
        let page = CursorPage::<String>::from_query(&Query::parse(&format!(
            "cursor={}&limit=2&limit=500",
            encode_cursor("kv/b")
        )))
        .unwrap();
        // The last of a repeated parameter wins, and is clamped.
        assert_eq!(
            (page.after.as_deref(), page.limit),
            (Some("kv/b"), MAX_LIMIT)
        );
    }

    #[test]
    fn cursors_decode_into_api_errors() {
        assert_eq!(
            decode_cursor::<String>(&encode_cursor("kv/a")),
            Ok("kv/a".to_string())
        );
        assert_eq!(
            decode_cursor::<String>("not a cursor!"),
            Err(ApiError::invalid("cursor", "invalid"))
        );
    }
}
