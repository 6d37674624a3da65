//! The spec's two list conventions: offset paging (`page`, `per_page` →
//! `{current_page, last_page, per_page, total}`) and cursor paging (`cursor`, `limit` →
//! `{next_cursor, has_more}`) with opaque cursors. Sizes above the maximum are clamped.
//! Cursor paging is `tessera-wire`'s, shared with the engine SDK (engines' cursors and the
//! host's are made alike); this module adds the host's SQL-side view of a page.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiError, ValidationErrors};

pub use tessera_wire::paging::{CursorMeta, decode_cursor, encode_cursor};

/// The spec's default and maximum for `per_page` and `limit`.
pub const DEFAULT_PAGE_SIZE: u32 = tessera_wire::DEFAULT_LIMIT;
pub const MAX_PAGE_SIZE: u32 = tessera_wire::MAX_LIMIT;

/// A validated offset page request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPage {
    pub page: u32,
    pub per_page: u32,
}

impl OffsetPage {
    /// Defaults an absent `page` to 1 and `per_page` to `default`, clamps `per_page` to `max`,
    /// and refuses zeros with 422.
    pub fn new(
        page: Option<u32>,
        per_page: Option<u32>,
        default: u32,
        max: u32,
    ) -> Result<Self, ApiError> {
        let mut errors = ValidationErrors::new();
        let page = page.unwrap_or(1);
        if page < 1 {
            errors.add("page", "min:1");
        }
        let per_page = per_page.unwrap_or(default);
        if per_page < 1 {
            errors.add("per_page", "min:1");
        }
        errors.into_result()?;
        Ok(Self {
            page,
            per_page: per_page.min(max),
        })
    }

    pub fn offset(&self) -> i64 {
        i64::from(self.page - 1) * i64::from(self.per_page)
    }

    pub fn limit(&self) -> i64 {
        i64::from(self.per_page)
    }

    pub fn meta(&self, total: u64) -> OffsetMeta {
        let last_page = total.div_ceil(u64::from(self.per_page)).max(1);
        OffsetMeta {
            current_page: self.page,
            last_page,
            per_page: self.per_page,
            total,
        }
    }
}

/// `meta` of an offset-paged list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct OffsetMeta {
    pub current_page: u32,
    pub last_page: u64,
    pub per_page: u32,
    pub total: u64,
}

/// A validated cursor page request, generic over the position type the list sorts by (the
/// wire rules engines follow too: `limit` 0 and undecodable cursors are 422s, larger limits are
/// clamped).
pub use tessera_wire::CursorPage;

/// One value a list accepts for `sort`.
#[derive(Debug, Clone, Copy)]
pub struct SortKey<S> {
    pub name: &'static str,
    pub key: S,
    /// Timestamps sort newest first by default, names alphabetically.
    pub is_timestamp: bool,
}

/// Parses `sort` (one of `allowed`, the first being the default) and `direction` (`asc` or
/// `desc`; by default descending for timestamps and ascending for names, as the spec's list
/// conventions say). Returns the key and whether to sort descending; unknown values are 422.
pub fn sorting<S: Copy>(
    sort: Option<&str>,
    direction: Option<&str>,
    allowed: &[SortKey<S>],
) -> Result<(S, bool), ApiError> {
    let mut errors = ValidationErrors::new();
    let chosen = match sort {
        None => Some(allowed[0]),
        Some(name) => allowed.iter().copied().find(|key| key.name == name),
    };
    if chosen.is_none() {
        errors.add("sort", "in");
    }
    let chosen = chosen.unwrap_or(allowed[0]);
    let descending = match direction {
        None => chosen.is_timestamp,
        Some("asc") => false,
        Some("desc") => true,
        Some(_) => {
            errors.add("direction", "in");
            false
        }
    };
    errors.into_result()?;
    Ok((chosen.key, descending))
}

/// The common cursor query of list endpoints.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CursorQuery {
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, clamped to 100.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 4294967295_u64)]
    pub limit: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_pages_default_clamp_and_refuse_zero() {
        let page = OffsetPage::new(None, None, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE).unwrap();
        assert_eq!(
            page,
            OffsetPage {
                page: 1,
                per_page: 50
            }
        );
        let clamped =
            OffsetPage::new(Some(3), Some(1000), DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE).unwrap();
        assert_eq!(clamped.per_page, 100);
        assert_eq!(clamped.offset(), 200);
        assert!(OffsetPage::new(Some(0), None, 50, 100).is_err());
        assert!(OffsetPage::new(None, Some(0), 50, 100).is_err());
    }

    #[test]
    fn offset_meta_counts_pages() {
        let page = OffsetPage::new(Some(2), Some(10), 50, 100).unwrap();
        assert_eq!(
            page.meta(25),
            OffsetMeta {
                current_page: 2,
                last_page: 3,
                per_page: 10,
                total: 25
            }
        );
        assert_eq!(page.meta(0).last_page, 1);
    }

    /// The paging rules are `tessera-wire`'s (and tested there); here, the host's view.
    #[test]
    fn cursor_pages_fail_as_422s_and_fetch_one_more() {
        let page = CursorPage::<i64>::with_bounds(None, Some(500), 50, 100).unwrap();
        assert_eq!(
            (page.after, page.limit, page.fetch_limit()),
            (None, 100, 101)
        );
        let cursor = encode_cursor(&7i64);
        let page = CursorPage::<i64>::with_bounds(Some(&cursor), None, 20, 100).unwrap();
        assert_eq!((page.after, page.limit), (Some(7), 20));
        let (items, meta) = page.finish_positioned(vec![(8i64, "a"), (9, "b")]);
        assert_eq!(items, vec!["a", "b"]);
        assert_eq!(
            meta,
            CursorMeta {
                next_cursor: Some(encode_cursor(&9i64)),
                has_more: false
            }
        );
        for (cursor, limit, field, rule) in [
            (Some("not a cursor!"), None, "cursor", "invalid"),
            (None, Some(0), "limit", "min:1"),
        ] {
            match CursorPage::<i64>::with_bounds(cursor, limit, 50, 100) {
                Err(errors) => assert_eq!(errors, ValidationErrors::single(field, rule)),
                other => panic!("expected a 422, got {other:?}"),
            }
        }
    }
}
