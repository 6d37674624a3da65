//! The spec's two list conventions: offset paging (`page`, `per_page` →
//! `{current_page, last_page, per_page, total}`) and cursor paging (`cursor`, `limit` →
//! `{next_cursor, has_more}`) with opaque cursors. Sizes above the maximum are clamped.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use utoipa::ToSchema;

use super::error::{ApiError, ValidationErrors};

/// The spec's default and maximum for `per_page` and `limit`.
pub const DEFAULT_PAGE_SIZE: u32 = 50;
pub const MAX_PAGE_SIZE: u32 = 100;

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

/// `meta` of a cursor-paged list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct CursorMeta {
    /// Pass as `cursor` to continue after the last item returned; null only when nothing was
    /// returned and no cursor was given.
    pub next_cursor: Option<String>,
    pub has_more: bool,
}

/// A validated cursor page request, generic over the position type the list sorts by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorPage<P> {
    pub after: Option<P>,
    pub limit: u32,
}

impl<P: Serialize + DeserializeOwned> CursorPage<P> {
    pub fn new(
        cursor: Option<&str>,
        limit: Option<u32>,
        default: u32,
        max: u32,
    ) -> Result<Self, ApiError> {
        let limit = limit.unwrap_or(default);
        if limit < 1 {
            return Err(ApiError::Validation(ValidationErrors::single(
                "limit", "min:1",
            )));
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

    /// How many rows to fetch: one more than the page, to learn whether more exist.
    pub fn fetch_limit(&self) -> i64 {
        i64::from(self.limit) + 1
    }

    /// Trims the extra row and builds `meta`; `position` gives an item's sort position.
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
}

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

impl<P: Serialize + DeserializeOwned + Clone> CursorPage<P> {
    /// [`CursorPage::finish`] for rows that carry their sort position beside the item.
    pub fn finish_positioned<T>(&self, rows: Vec<(P, T)>) -> (Vec<T>, CursorMeta) {
        let (rows, meta) = self.finish(rows, |(position, _)| position.clone());
        (rows.into_iter().map(|(_, item)| item).collect(), meta)
    }
}

/// Encodes a position as an opaque, URL-safe cursor.
pub fn encode_cursor<P: Serialize>(position: &P) -> String {
    let json = serde_json::to_vec(position).expect("cursor positions serialize");
    URL_SAFE_NO_PAD.encode(json)
}

/// Decodes a cursor made by [`encode_cursor`]; anything else is a 422 on `cursor`.
pub fn decode_cursor<P: DeserializeOwned>(cursor: &str) -> Result<P, ApiError> {
    let invalid = || ApiError::Validation(ValidationErrors::single("cursor", "invalid"));
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    serde_json::from_slice(&bytes).map_err(|_| invalid())
}

/// The common cursor query of list endpoints.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CursorQuery {
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, clamped to 100.
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

    #[test]
    fn cursor_pages_walk_without_gaps_and_refuse_garbage() {
        let items: Vec<u32> = (1..=5).collect();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = CursorPage::<u32>::new(cursor.as_deref(), Some(2), 50, 100).unwrap();
            let rows: Vec<u32> = items
                .iter()
                .copied()
                .filter(|item| page.after.is_none_or(|after| *item > after))
                .take(page.fetch_limit() as usize)
                .collect();
            let (rows, meta) = page.finish(rows, |item| *item);
            seen.extend(rows);
            cursor = meta.next_cursor;
            if !meta.has_more {
                break;
            }
        }
        assert_eq!(seen, items);
        assert!(CursorPage::<u32>::new(Some("not a cursor!"), None, 50, 100).is_err());
        assert_eq!(
            CursorPage::<u32>::new(None, Some(500), 50, 100)
                .unwrap()
                .limit,
            100
        );
    }
}
