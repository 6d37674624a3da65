//! `GET /api/v1/feed`: the tenant's feed, newest first, cursor paged, filtered by any
//! combination of `actor_id`, `entity_id` and `type` (exact or `prefix.*`).
//!
//! A filtered page reads one index (`by-entity/…`, else `by-actor/…`, else `by-type/…`), never
//! the whole feed, and checks the other filters on the items it reads. An item is indexed under
//! its exact type only: a type pattern `prefix.*` alone reads the indexes of the types found
//! under the prefix, merged newest first ([`TypeMerge`]). An index entry is
//! empty: its key ends with the item's id, and the items are read from `items/` (one
//! `get-many` for a page with one filter; an entry written before 2026-11-26 holds the item
//! itself). With several filters a request reads at most [`SCAN_BUDGET`] index entries: a page
//! may then come back short, with `has_more` and a cursor after the last entry read.

use tessera_sdk::storage::Scan;
use tessera_sdk::{
    ApiError, Context, CursorMeta, CursorPage, HandlerResult, HostError, Query, Request, Response,
    ValidationErrors, storage,
};

use crate::items::{
    self, FeedItem, ITEMS_PREFIX, MAX_ID_BYTES, actor_prefix, entity_prefix, item_key, type_prefix,
};
use crate::require_reader;

/// Index entries read per storage call when other filters must be checked.
const SCAN_BATCH: u32 = 200;
/// Most index entries one request reads.
const SCAN_BUDGET: usize = 2000;
/// Longest event type, as the host allows them.
const MAX_TYPE_BYTES: usize = 100;

/// The feed's filters, validated.
#[derive(Debug, Default)]
struct Filter {
    actor_id: Option<String>,
    entity_id: Option<String>,
    /// An exact type or `prefix.*`; `*` is no filter.
    event_type: Option<String>,
}

impl Filter {
    fn parse(query: &Query, errors: &mut ValidationErrors) -> Self {
        let mut filter = Self {
            actor_id: id_parameter(query, "actor_id", errors),
            entity_id: id_parameter(query, "entity_id", errors),
            event_type: None,
        };
        match query.get("type") {
            None | Some("*") => {}
            Some(pattern) if is_type_pattern(pattern) => {
                filter.event_type = Some(pattern.to_owned());
            }
            Some(_) => errors.add("type", "format"),
        }
        filter
    }

    /// The key prefix of the index a page reads: the most selective filter's.
    fn index_prefix(&self) -> String {
        if let Some(entity_id) = &self.entity_id {
            entity_prefix(entity_id)
        } else if let Some(actor_id) = &self.actor_id {
            actor_prefix(actor_id)
        } else if let Some(pattern) = &self.event_type {
            type_prefix(pattern)
        } else {
            ITEMS_PREFIX.to_owned()
        }
    }

    /// The prefix pattern (`a.*`) that is the filter's only one, if so: its page merges the
    /// indexes of the types under the prefix.
    fn only_type_prefix(&self) -> Option<&str> {
        let pattern = self.event_type.as_deref()?;
        (self.actor_id.is_none() && self.entity_id.is_none() && pattern.ends_with(".*"))
            .then_some(pattern)
    }

    /// Whether the index alone answers the filter (at most one filter is set).
    fn index_suffices(&self) -> bool {
        [
            self.actor_id.is_some(),
            self.entity_id.is_some(),
            self.event_type.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
            <= 1
    }

    fn matches(&self, item: &FeedItem) -> bool {
        let same =
            |wanted: &Option<String>, actual: &Option<String>| wanted.is_none() || wanted == actual;
        same(&self.actor_id, &item.actor_id)
            && same(&self.entity_id, &item.entity_id)
            && self
                .event_type
                .as_deref()
                .is_none_or(|pattern| item.has_type(pattern))
    }
}

/// An id filter: absent, or 1 to [`MAX_ID_BYTES`] bytes without control characters.
fn id_parameter(query: &Query, name: &str, errors: &mut ValidationErrors) -> Option<String> {
    let value = query.get(name)?;
    if value.is_empty() {
        errors.add(name, "min:1");
    } else if value.len() > MAX_ID_BYTES {
        errors.add(name, format!("max:{MAX_ID_BYTES}"));
    } else if value.chars().any(char::is_control) {
        errors.add(name, "format");
    } else {
        return Some(value.to_owned());
    }
    None
}

/// An event type (1-100 lower-case letters, digits, `.`, `_`, `-`, starting with a letter, as
/// the host's bus allows) or such a type's prefix followed by `.*`.
fn is_type_pattern(pattern: &str) -> bool {
    let name = pattern.strip_suffix(".*").unwrap_or(pattern);
    (1..=MAX_TYPE_BYTES).contains(&pattern.len())
        && name.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
        && !name.ends_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

/// A cursor position is an item id (a UUID).
fn is_item_id(position: &str) -> bool {
    uuid::Uuid::parse_str(position).is_ok()
}

pub fn list(ctx: &Context, req: &Request) -> HandlerResult {
    require_reader(ctx)?;
    let query = req.query(&["actor_id", "entity_id", "type", "cursor", "limit"])?;
    let mut errors = ValidationErrors::new();
    let filter = Filter::parse(query, &mut errors);
    let page = match CursorPage::<String>::from_query(query) {
        Ok(page) if page.after.as_deref().is_none_or(is_item_id) => Some(page),
        Ok(_) => {
            errors.add("cursor", "invalid");
            None
        }
        Err(ApiError::Validation(page_errors)) => {
            for (field, rules) in page_errors.fields() {
                rules.iter().for_each(|rule| errors.add(field, rule));
            }
            None
        }
        Err(other) => return Err(other),
    };
    errors.into_result()?;
    let page = page.expect("validated");
    let (items, meta) = read_page(&filter, &page)?;
    Ok(Response::ok_with_meta(&items, &meta))
}

/// Reads the page newest first from the filter's index, checking the other filters, reading at
/// most [`SCAN_BUDGET`] index entries (or what the call's scan budget has left).
fn read_page(
    filter: &Filter,
    page: &CursorPage<String>,
) -> Result<(Vec<FeedItem>, CursorMeta), HostError> {
    let prefix = filter.index_prefix();
    let merge = filter
        .only_type_prefix()
        .map(TypeMerge::discover)
        .transpose()?;
    // Every entry read matches: one index for one filter (or the merge of a pattern's types,
    // unless it reads the whole feed).
    let one_filter = filter.index_suffices() && !merge.as_ref().is_some_and(|merge| merge.feed);
    let batch = if one_filter {
        page.fetch_limit()
    } else {
        SCAN_BATCH
    };
    let after = page
        .after
        .as_ref()
        .map(|item_id| format!("{prefix}{item_id}"));
    let read = |after: Option<&str>, limit: u32| match &merge {
        Some(merge) => merge.read(after, limit),
        None => storage::scan(&prefix, after, limit, true),
    };
    let found = storage::find_by::<Indexed, HostError>(
        read,
        after.as_deref(),
        page.fetch_limit() as usize,
        SCAN_BUDGET,
        batch,
        |key, value| {
            let indexed = Indexed::decode(&key, prefix.len(), &value)?;
            if one_filter {
                // Every entry of the index matches: the items are read together below.
                return Ok(Some(indexed));
            }
            let item = resolve(vec![indexed])?.pop();
            Ok(item.filter(|item| filter.matches(item)).map(Indexed::Item))
        },
    )?;
    let items = resolve(found.items)?;
    let stopped_after = found
        .stopped_after
        .map(|key| key[prefix.len()..].to_owned());
    Ok(page.finish_found(items, |item| item.id.clone(), stopped_after))
}

/// Most types a pattern's page merges; a pattern with more under its prefix reads the feed and
/// checks each item's type (a bounded read, like several filters).
const MAX_MERGED_TYPES: usize = 64;

/// The indexes of the types under a pattern's prefix (`a.*`: `by-type/a.b/`, `by-type/a.b.c/`,
/// …, and `by-type/a.*/`, `by-type/a.b.*/` where items recorded before 2026-11-27 are also
/// indexed), read as one index newest first under the pattern's own prefix (`by-type/a.*/`),
/// whose keys end with the item's id like every index's.
struct TypeMerge {
    /// The pattern's prefix: the keys the merged read answers.
    prefix: String,
    /// Each type's index prefix.
    indexes: Vec<String>,
    /// More types than [`MAX_MERGED_TYPES`]: the whole feed is read instead.
    feed: bool,
}

impl TypeMerge {
    /// The types with items under `pattern`'s prefix: a skip scan of the type indexes, one
    /// entry read per type.
    fn discover(pattern: &str) -> Result<Self, HostError> {
        let search = type_prefix(pattern.trim_end_matches('*'));
        let search = search.trim_end_matches('/');
        let mut indexes = Vec::new();
        let mut after: Option<String> = None;
        while indexes.len() <= MAX_MERGED_TYPES {
            let found = storage::scan(search, after.as_deref(), 1, false)?;
            let Some((key, _)) = found.entries.into_iter().next() else {
                break;
            };
            let Some(end) = key[search.len()..].find('/') else {
                break;
            };
            let index = key[..=search.len() + end].to_owned();
            // Past every key of this type's index (keys are text; no character sorts later).
            after = Some(format!("{index}{}", char::MAX));
            indexes.push(index);
        }
        Ok(Self {
            prefix: type_prefix(pattern),
            feed: indexes.len() > MAX_MERGED_TYPES,
            indexes,
        })
    }

    /// The next at most `limit` entries after the key `after` (of this merge's prefix), newest
    /// first, each item once (an older item is in two of these indexes), and whether the
    /// indexes are exhausted.
    fn read(&self, after: Option<&str>, limit: u32) -> Result<Scan, HostError> {
        if self.feed {
            let after = after.map(|key| item_key(&key[self.prefix.len()..]));
            let found = storage::scan(ITEMS_PREFIX, after.as_deref(), limit, true)?;
            let entries = found
                .entries
                .into_iter()
                .map(|(key, value)| {
                    (
                        format!("{}{}", self.prefix, &key[ITEMS_PREFIX.len()..]),
                        value,
                    )
                })
                .collect();
            return Ok(Scan {
                entries,
                exhausted: found.exhausted,
            });
        }
        let after_id = after.map(|key| &key[self.prefix.len()..]);
        let mut merged: Vec<(String, Vec<u8>)> = Vec::new();
        let mut exhausted = true;
        for index in &self.indexes {
            let start = after_id.map(|id| format!("{index}{id}"));
            let found = storage::scan(index, start.as_deref(), limit, true)?;
            exhausted &= found.exhausted;
            merged.extend(
                found
                    .entries
                    .into_iter()
                    .map(|(key, value)| (key[index.len()..].to_owned(), value)),
            );
        }
        merged.sort_by(|left, right| right.0.cmp(&left.0));
        merged.dedup_by(|later, earlier| later.0 == earlier.0);
        let limit = limit as usize;
        if merged.len() > limit {
            merged.truncate(limit);
            exhausted = false;
        }
        let entries = merged
            .into_iter()
            .map(|(id, value)| (format!("{}{id}", self.prefix), value))
            .collect();
        Ok(Scan { entries, exhausted })
    }
}

/// What an entry of the feed or of an index gives: the item, or (an index entry) the id of the
/// item to read from `items/`.
enum Indexed {
    Item(FeedItem),
    Id(String),
}

impl Indexed {
    /// The entry under `key` (its item's id follows the first `prefix_len` bytes): the feed's
    /// entries, and index entries written before 2026-11-26, hold the item; an index entry is
    /// empty and names it.
    fn decode(key: &str, prefix_len: usize, value: &[u8]) -> Result<Self, HostError> {
        if value.is_empty() {
            return Ok(Self::Id(key[prefix_len..].to_owned()));
        }
        items::decode(key, value).map(Self::Item)
    }
}

/// The items `entries` give, in their order, reading those named by id with one `get-many`;
/// an id whose item is gone (never the case: an item and its entries are removed together) is
/// skipped.
fn resolve(entries: Vec<Indexed>) -> Result<Vec<FeedItem>, HostError> {
    let keys: Vec<String> = entries
        .iter()
        .filter_map(|entry| match entry {
            Indexed::Id(id) => Some(item_key(id)),
            Indexed::Item(_) => None,
        })
        .collect();
    let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let mut read = storage::get_many(&key_refs)?.into_iter().zip(&keys);
    let mut items = Vec::with_capacity(entries.len());
    for entry in entries {
        match entry {
            Indexed::Item(item) => items.push(item),
            Indexed::Id(_) => {
                let (value, key) = read.next().ok_or_else(|| {
                    HostError::new("storage.get-many", "fewer values than keys were read")
                })?;
                if let Some(value) = value {
                    items.push(items::decode(key, &value)?);
                }
            }
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_patterns_follow_the_bus_rules() {
        for good in [
            "message.created",
            "message.*",
            "entity.status_changed",
            "a",
            "a.b.*",
        ] {
            assert!(is_type_pattern(good), "{good}");
        }
        for bad in [
            "",
            "*",
            ".*",
            "Message.created",
            "message.",
            "message.**",
            "1.x",
            "a b",
        ] {
            assert!(!is_type_pattern(bad), "{bad}");
        }
    }

    #[test]
    fn filters_pick_the_most_selective_index() {
        let mut errors = ValidationErrors::new();
        let filter = Filter::parse(
            &Query::parse("actor_id=u&entity_id=e&type=message.*"),
            &mut errors,
        );
        assert!(errors.is_empty());
        assert_eq!(filter.index_prefix(), "by-entity/e/");
        assert!(!filter.index_suffices());
        let filter = Filter::parse(&Query::parse("type=*"), &mut errors);
        assert_eq!(filter.index_prefix(), "items/");
        assert!(filter.index_suffices());
        Filter::parse(&Query::parse("actor_id=&type=Nope"), &mut errors);
        assert_eq!(errors.fields()["actor_id"], ["min:1"]);
        assert_eq!(errors.fields()["type"], ["format"]);
    }
}
