//! Cursor paging, the same on the host and in engines: query `cursor` (opaque) and `limit`
//! (default 50, clamped to 100, `0` is 422 `{"limit": ["min:1"]}`), response `meta`
//! `{next_cursor, has_more}`. A cursor is the URL-safe, unpadded base64 of the JSON of the last
//! position returned (for storage lists, the last key as a JSON string); one that does not
//! decode is 422 `{"cursor": ["invalid"]}`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::validation::ValidationErrors;

/// The default page size (`limit`, and the host's `per_page`).
pub const DEFAULT_LIMIT: u32 = 50;
/// The maximum page size; larger limits are clamped to it.
pub const MAX_LIMIT: u32 = 100;

/// `meta` of a cursor-paged list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CursorMeta {
    /// Pass as `cursor` to continue after the last item returned; the input cursor when nothing
    /// was returned; null only when nothing was returned and no cursor was given.
    pub next_cursor: Option<String>,
    /// Whether more items follow.
    pub has_more: bool,
}

/// The schema of [`CursorMeta`] in the host's OpenAPI document, written out rather than derived
/// so that the document keeps its wording (the derive would take the field docs above).
#[cfg(feature = "openapi")]
mod openapi {
    use std::borrow::Cow;

    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};

    use super::CursorMeta;

    impl utoipa::PartialSchema for CursorMeta {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .description(Some("`meta` of a cursor-paged list."))
                .property(
                    "next_cursor",
                    ObjectBuilder::new()
                        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                        .description(Some(
                            "Pass as `cursor` to continue after the last item returned; null \
                             only when nothing was\nreturned and no cursor was given.",
                        )),
                )
                .property(
                    "has_more",
                    ObjectBuilder::new().schema_type(SchemaType::new(Type::Boolean)),
                )
                .required("has_more")
                .into()
        }
    }

    impl utoipa::ToSchema for CursorMeta {
        fn name() -> Cow<'static, str> {
            Cow::Borrowed("CursorMeta")
        }
    }
}

/// Where [`CursorPage::from_query`] reads `cursor` and `limit`: one side's parsed query string.
/// The SDK implements it for its `Query`.
pub trait QueryParameters {
    /// The error a bad parameter becomes on that side (its `ApiError`).
    type Error: From<ValidationErrors>;

    /// The value of parameter `name`, if given.
    fn parameter(&self, name: &str) -> Option<&str>;
}

/// A validated cursor page request over positions of type `P` (a storage key by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorPage<P = String> {
    /// The position to continue strictly after, decoded from the cursor.
    pub after: Option<P>,
    /// The page size, at least 1 and at most the maximum.
    pub limit: u32,
}

impl<P: Serialize + DeserializeOwned> CursorPage<P> {
    /// Validates `cursor` and `limit` with the default 50 and maximum 100 (see
    /// [`with_bounds`](Self::with_bounds)).
    pub fn new(cursor: Option<&str>, limit: Option<u32>) -> Result<Self, ValidationErrors> {
        Self::with_bounds(cursor, limit, DEFAULT_LIMIT, MAX_LIMIT)
    }

    /// Validates `cursor` and `limit` with another default and maximum: `limit` 0 is 422
    /// `{"limit": ["min:1"]}`, a larger one is clamped, a cursor that does not decode is 422
    /// `{"cursor": ["invalid"]}`, an empty cursor is none.
    pub fn with_bounds(
        cursor: Option<&str>,
        limit: Option<u32>,
        default: u32,
        max: u32,
    ) -> Result<Self, ValidationErrors> {
        let limit = limit.unwrap_or(default);
        if limit < 1 {
            return Err(ValidationErrors::single("limit", "min:1"));
        }
        let after = match cursor {
            None | Some("") => None,
            Some(cursor) => Some(decode_cursor(cursor)?),
        };
        Ok(Self {
            after,
            limit: limit.min(max),
        })
    }

    /// Reads `cursor` and `limit` from `query` with the default bounds (a `limit` that is not an
    /// unsigned integer is 422 `{"limit": ["integer"]}`), failing with the query's own error
    /// type. Check for unknown parameters first.
    pub fn from_query<Q: QueryParameters + ?Sized>(query: &Q) -> Result<Self, Q::Error> {
        let limit = match query.parameter("limit") {
            None => None,
            Some(limit) => Some(
                limit
                    .parse::<u32>()
                    .map_err(|_| ValidationErrors::single("limit", "integer"))?,
            ),
        };
        Ok(Self::new(query.parameter("cursor"), limit)?)
    }

    /// How many items to fetch: one more than the page, to learn whether more exist.
    pub fn fetch_limit(&self) -> u32 {
        self.limit.saturating_add(1)
    }

    /// Trims the extra item fetched and builds `meta`; `position` gives an item's position.
    /// `next_cursor` is the last item's position, or the input cursor on an empty page.
    pub fn finish<T>(&self, mut rows: Vec<T>, position: impl Fn(&T) -> P) -> (Vec<T>, CursorMeta) {
        let has_more = rows.len() > self.limit as usize;
        rows.truncate(self.limit as usize);
        let next_cursor = match rows.last() {
            Some(last) => Some(encode_cursor(&position(last))),
            None => self.after.as_ref().map(encode_cursor),
        };
        (
            rows,
            CursorMeta {
                next_cursor,
                has_more,
            },
        )
    }

    /// Like [`finish`](Self::finish), for a page read by a bounded scan: when reading stopped
    /// after `stopped_after` before the page was full, the page holds what was found (perhaps
    /// nothing), `has_more` is true and the cursor continues after `stopped_after`. Clients page
    /// on until `has_more` is false.
    pub fn finish_found<T>(
        &self,
        rows: Vec<T>,
        position: impl Fn(&T) -> P,
        stopped_after: Option<P>,
    ) -> (Vec<T>, CursorMeta) {
        match stopped_after {
            Some(stop) if rows.len() <= self.limit as usize => (
                rows,
                CursorMeta {
                    next_cursor: Some(encode_cursor(&stop)),
                    has_more: true,
                },
            ),
            _ => self.finish(rows, position),
        }
    }
}

impl<P: Serialize + DeserializeOwned + Clone> CursorPage<P> {
    /// [`finish`](Self::finish) for rows that carry their sort position beside the item.
    pub fn finish_positioned<T>(&self, rows: Vec<(P, T)>) -> (Vec<T>, CursorMeta) {
        let (rows, meta) = self.finish(rows, |(position, _)| position.clone());
        (rows.into_iter().map(|(_, item)| item).collect(), meta)
    }
}

/// Encodes a position as an opaque cursor: URL-safe base64 without padding of its JSON.
pub fn encode_cursor<P: Serialize + ?Sized>(position: &P) -> String {
    let json = serde_json::to_vec(position).expect("cursor positions serialize");
    URL_SAFE_NO_PAD.encode(json)
}

/// Decodes a cursor made by [`encode_cursor`] (on either side); anything else is 422
/// `{"cursor": ["invalid"]}`.
pub fn decode_cursor<P: DeserializeOwned>(cursor: &str) -> Result<P, ValidationErrors> {
    let invalid = || ValidationErrors::single("cursor", "invalid");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    serde_json::from_slice(&bytes).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A query string as a side would parse it, for [`CursorPage::from_query`].
    struct TestQuery(BTreeMap<String, String>);

    impl QueryParameters for TestQuery {
        type Error = ValidationErrors;

        fn parameter(&self, name: &str) -> Option<&str> {
            self.0.get(name).map(String::as_str)
        }
    }

    fn query(pairs: &[(&str, &str)]) -> TestQuery {
        TestQuery(
            pairs
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
        )
    }

    #[test]
    fn cursors_are_unpadded_urlsafe_base64_of_json() {
        // JSON `"notes/a"` is 9 bytes: base64 would pad it with `=`.
        let cursor = encode_cursor("notes/a");
        assert_eq!(cursor, "Im5vdGVzL2Ei");
        assert_eq!(decode_cursor::<String>(&cursor).unwrap(), "notes/a");
        let cursor = encode_cursor("k?>");
        assert!(!cursor.contains('=') && !cursor.contains('+') && !cursor.contains('/'));
        assert_eq!(cursor, "Ims_PiI");
        assert_eq!(decode_cursor::<String>(&cursor).unwrap(), "k?>");
        assert_eq!(encode_cursor(&7u32), "Nw");
        assert_eq!(decode_cursor::<i64>("Nw").unwrap(), 7);
        // The vectors the Python kit pins too (`sdk/python/tests/test_wire.py`): non-ASCII in
        // UTF-8, not escaped; set trailing bits and a lone character refused.
        assert_eq!(encode_cursor("é"), "IsOpIg");
        assert!(decode_cursor::<String>("Im5vdGVzL2Ej").is_err());
        assert!(decode_cursor::<String>("I").is_err());
        assert!(decode_cursor::<String>("Im5vdGVzL2Ei+").is_err());
    }

    #[test]
    fn bad_cursors_and_limits_are_422s() {
        let invalid = Err(ValidationErrors::single("cursor", "invalid"));
        assert_eq!(
            CursorPage::<String>::new(Some("not a cursor!"), None),
            invalid
        );
        // Valid base64 of something that is not a JSON string.
        assert_eq!(CursorPage::<String>::new(Some("Nw"), None), invalid);
        // Padded base64 is not the encoding.
        assert_eq!(
            CursorPage::<String>::new(Some("Im5vdGVzL2Ei=="), None),
            invalid
        );
        assert_eq!(
            CursorPage::<u32>::with_bounds(Some("not a cursor!"), None, 50, 100),
            Err(ValidationErrors::single("cursor", "invalid"))
        );
        assert_eq!(
            CursorPage::<String>::new(None, Some(0)),
            Err(ValidationErrors::single("limit", "min:1"))
        );
        for limit in ["x", "-1", "1.5", ""] {
            assert_eq!(
                CursorPage::<String>::from_query(&query(&[("limit", limit)])),
                Err(ValidationErrors::single("limit", "integer")),
                "{limit:?}"
            );
        }
        assert_eq!(
            CursorPage::<String>::from_query(&query(&[("limit", "0")])),
            Err(ValidationErrors::single("limit", "min:1"))
        );
    }

    #[test]
    fn limits_default_and_clamp() {
        let page = CursorPage::<String>::from_query(&query(&[])).unwrap();
        assert_eq!((page.after, page.limit), (None, 50));
        assert_eq!(
            CursorPage::<String>::new(None, Some(500)).unwrap().limit,
            100
        );
        assert_eq!(
            CursorPage::<u32>::with_bounds(None, Some(500), 20, 30)
                .unwrap()
                .limit,
            30
        );
        assert_eq!(
            CursorPage::<u32>::with_bounds(None, None, 20, 30)
                .unwrap()
                .limit,
            20
        );
        assert_eq!(
            CursorPage::<String>::new(Some(""), Some(3)).unwrap().after,
            None
        );
        let cursor = encode_cursor("kv/b");
        let page = CursorPage::<String>::from_query(&query(&[("cursor", &cursor), ("limit", "2")]))
            .unwrap();
        assert_eq!((page.after.as_deref(), page.limit), (Some("kv/b"), 2));
        assert_eq!(page.fetch_limit(), 3);
        // As Rust parses a u32: a leading `+` passes, a space or an overflow does not.
        let limit_of = |limit: &str| CursorPage::<String>::from_query(&query(&[("limit", limit)]));
        assert_eq!(limit_of("+5").unwrap().limit, 5);
        assert!(limit_of(" 5").is_err() && limit_of("4294967296").is_err());
    }

    #[test]
    fn pages_walk_without_gaps() {
        let keys: Vec<String> = ["kv/a", "kv/b", "kv/c", "kv/d", "kv/e"]
            .iter()
            .map(|key| key.to_string())
            .collect();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = CursorPage::<String>::new(cursor.as_deref(), Some(2)).unwrap();
            let rows: Vec<String> = keys
                .iter()
                .filter(|key| page.after.as_ref().is_none_or(|after| *key > after))
                .take(page.fetch_limit() as usize)
                .cloned()
                .collect();
            let (rows, meta) = page.finish(rows, Clone::clone);
            seen.extend(rows);
            cursor = meta.next_cursor;
            if !meta.has_more {
                // The last page ends on the last key.
                assert_eq!(cursor, Some(encode_cursor("kv/e")));
                break;
            }
        }
        assert_eq!(seen, keys);
    }

    #[test]
    fn positioned_pages_walk_without_gaps() {
        let items: Vec<(i64, String)> = (1..=5).map(|id| (id, format!("item {id}"))).collect();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = CursorPage::<i64>::with_bounds(cursor.as_deref(), Some(2), 50, 100).unwrap();
            let rows: Vec<(i64, String)> = items
                .iter()
                .filter(|(id, _)| page.after.is_none_or(|after| *id > after))
                .take(page.fetch_limit() as usize)
                .cloned()
                .collect();
            let (rows, meta) = page.finish_positioned(rows);
            seen.extend(rows);
            cursor = meta.next_cursor;
            if !meta.has_more {
                break;
            }
        }
        assert_eq!(
            seen,
            items.into_iter().map(|(_, item)| item).collect::<Vec<_>>()
        );
        assert_eq!(cursor, Some(encode_cursor(&5i64)));
    }

    #[test]
    fn a_page_stopped_by_the_scan_bound_continues_after_what_was_read() {
        let page = CursorPage::<String>::new(None, Some(2)).unwrap();
        // Nothing found before the bound: an empty page that goes on after the last key read.
        let (rows, meta) =
            page.finish_found(Vec::<String>::new(), Clone::clone, Some("kv/q".into()));
        assert!(rows.is_empty());
        assert_eq!(
            meta,
            CursorMeta {
                next_cursor: Some(encode_cursor("kv/q")),
                has_more: true
            }
        );
        // A full page (one more than the limit found) ends on its last item as usual.
        let rows = vec!["kv/a".to_owned(), "kv/b".to_owned(), "kv/c".to_owned()];
        let (rows, meta) = page.finish_found(rows, Clone::clone, None);
        assert_eq!(rows, vec!["kv/a", "kv/b"]);
        assert_eq!(meta.next_cursor, Some(encode_cursor("kv/b")));
        assert!(meta.has_more);
        // Not stopped: the end.
        let (_, meta) = page.finish_found(vec!["kv/a".to_owned()], Clone::clone, None);
        assert!(!meta.has_more);
    }

    #[test]
    fn empty_pages_keep_the_input_cursor_or_null() {
        let page = CursorPage::<String>::new(None, None).unwrap();
        let (_, meta) = page.finish(Vec::<String>::new(), Clone::clone);
        assert_eq!(
            meta,
            CursorMeta {
                next_cursor: None,
                has_more: false
            }
        );
        let cursor = encode_cursor("kv/z");
        let page = CursorPage::<String>::new(Some(&cursor), None).unwrap();
        let (_, meta) = page.finish(Vec::<String>::new(), Clone::clone);
        assert_eq!(meta.next_cursor, Some(cursor));
        assert_eq!(
            serde_json::to_value(&meta).unwrap(),
            serde_json::json!({"next_cursor": encode_cursor("kv/z"), "has_more": false})
        );
        assert_eq!(
            serde_json::from_value::<CursorMeta>(
                serde_json::json!({"next_cursor": null, "has_more": true})
            )
            .unwrap(),
            CursorMeta {
                next_cursor: None,
                has_more: true
            }
        );
    }

    #[cfg(feature = "openapi")]
    #[test]
    fn the_openapi_schema_matches_the_serialized_shape() {
        use utoipa::{PartialSchema as _, ToSchema as _};

        assert_eq!(CursorMeta::name(), "CursorMeta");
        let schema = serde_json::to_value(CursorMeta::schema()).unwrap();
        assert_eq!(schema["required"], serde_json::json!(["has_more"]));
        assert_eq!(
            schema["properties"]["next_cursor"]["type"],
            serde_json::json!(["string", "null"])
        );
        assert_eq!(
            schema["properties"]["has_more"]["type"],
            serde_json::json!("boolean")
        );
    }
}
