//! Feed items: how a bus event becomes one item (its actor, entity and identifier-only data),
//! the index keys an item is stored under, and recording it exactly once however often the
//! event is delivered.
//!
//! Rules:
//! - `actor_id`: the event's actor; else the payload's `actor_id`; else, for the chat events
//!   whose payload's `user_id` is the user who acted (`message.*`, `conversation.*`), that
//!   `user_id` (for events published outside a request, which carry no actor: the host
//!   stamps the requesting user only on events published while serving a request).
//!   Otherwise null.
//! - `entity_id`: the payload's `entity_id`; else the id named after the event's noun
//!   (`message_id` for `message.*`, `note_id` for `note.*`, …); else the first of
//!   `conversation_id`, `folder_id`, `call_id`, `user_id` (so `member.*` → its conversation).
//!   Otherwise null.
//! - `data`: only identifiers: every payload key ending in `_id` with a string value, every key
//!   ending in `_ids` with an array of strings, and core's descriptive names `family`, `field`,
//!   `old_status`, `new_status`. Never field values, titles or text.
//!
//! A creation is one item: core writes `entity.created` and then one `entity.field_set` per
//! field, all of one intention (same entity, actor and time), and those field events fold into
//! the creation's item, whose `data.fields` lists the fields set, in order (at most
//! [`MAX_LISTED_IDS`]; a field past that, or one whose creation item is not found, is an item
//! of its own). An update's field events stay one item each.

use std::cell::RefCell;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tessera_sdk::serde_json::{Map, Value};
use tessera_sdk::storage;
use tessera_sdk::{Event, HostError};

/// Longest identifier kept (actor, entity, data values), in bytes.
pub const MAX_ID_BYTES: usize = 200;
/// Most elements of an `_ids` array kept in `data`.
const MAX_LISTED_IDS: usize = 100;
/// Descriptive keys kept in `data` although they are not `_id`s (core's entity events).
const DESCRIPTIVE_KEYS: [&str; 4] = ["family", "field", "old_status", "new_status"];
/// Fallback keys for `entity_id`, in order, when neither `entity_id` nor `<noun>_id` is there.
const PARENT_ID_KEYS: [&str; 4] = ["conversation_id", "folder_id", "call_id", "user_id"];
/// Event nouns whose payload's `user_id` names the user who acted (chat's events).
const USER_ID_IS_ACTOR: [&str; 2] = ["message", "conversation"];
/// Core's creation event, whose item the creation's field events fold into.
const ENTITY_CREATED: &str = "entity.created";
/// Core's event for a field given a value; at creation, one per field.
const ENTITY_FIELD_SET: &str = "entity.field_set";
/// The key of a creation item's `data` listing the fields set at creation.
const FIELDS_KEY: &str = "fields";

thread_local! {
    /// The creation item this instance last recorded or folded into: `(entity id, occurred at,
    /// item id)`. Only a hint saving the index look-up for the next field event of the same
    /// creation (usually in the same batch): the item itself is read before anything folds
    /// into it, so a hint from a batch that was rolled back misleads nothing.
    static LAST_CREATION: RefCell<Option<(String, String, String)>> = const { RefCell::new(None) };
}

/// One item of the feed: one event of the bus (core's `entity.*`, chat's `message.*`,
/// `conversation.*`, `member.*`, and `note.*`, `file.*`, `folder.*`, `call.*`, `user.*`).
// What the feed's storage holds is exactly what `GET /api/v1/feed` answers: the schema derived
// here documents it (the doc comments are its descriptions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = tessera_sdk::openapi::all_required)]
pub struct FeedItem {
    /// UUID v7: the event's id when it is one (the host's event ids are), else one taken when
    /// the item was recorded; ids sort by time (the feed lists newest first).
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    /// The bus event's id; an event delivered several times is one item.
    pub event_id: String,
    /// The event type, e.g. `message.created`, `entity.status_changed`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Who acted: the event's actor, else the payload's `actor_id`, else (chat's `message.*`
    /// and `conversation.*`) its `user_id`; null when none.
    pub actor_id: Option<String>,
    /// What the event is about: the payload's `entity_id`, else the id named after the event's
    /// noun (`message_id` for `message.*`, …), else the first of `conversation_id`,
    /// `folder_id`, `call_id`, `user_id`; null when none.
    pub entity_id: Option<String>,
    /// RFC 3339, when the event happened.
    pub occurred_at: String,
    /// The payload's identifiers only (`*_id` strings, `*_ids` string arrays, and core's
    /// `family`, `field`, `old_status`, `new_status`); never values or text. A creation's item
    /// (`entity.created`) lists the fields set with it under `fields`: its `entity.field_set`
    /// events are not items of their own.
    #[schemars(extend("additionalProperties" = {
        "anyOf": [
            {"type": "string"},
            {"type": "array", "items": {"type": "string"}},
        ]
    }))]
    pub data: Map<String, Value>,
}

impl FeedItem {
    /// The item of `event`, under `id`.
    pub fn from_event(id: String, event: &Event) -> Self {
        let payload = match &event.payload {
            Value::Object(payload) => payload.clone(),
            _ => Map::new(),
        };
        let noun = event
            .event_type
            .split('.')
            .next()
            .unwrap_or(&event.event_type);
        let actor_id = event
            .actor_id
            .clone()
            .filter(|actor| is_identifier(actor))
            .or_else(|| identifier(&payload, "actor_id"))
            .or_else(|| {
                USER_ID_IS_ACTOR
                    .contains(&noun)
                    .then(|| identifier(&payload, "user_id"))
                    .flatten()
            });
        let entity_id = identifier(&payload, "entity_id")
            .or_else(|| identifier(&payload, &format!("{noun}_id")))
            .or_else(|| {
                PARENT_ID_KEYS
                    .iter()
                    .find_map(|key| identifier(&payload, key))
            });
        let data = payload
            .into_iter()
            .filter(|(key, value)| is_data(key, value))
            .collect();
        Self {
            id,
            event_id: event.id.clone(),
            event_type: event.event_type.clone(),
            actor_id,
            entity_id,
            occurred_at: event.occurred_at.clone(),
            data,
        }
    }

    /// Whether the item's type is `pattern`: an exact type or `prefix.*`.
    pub fn has_type(&self, pattern: &str) -> bool {
        match pattern.strip_suffix('*') {
            Some(prefix) => self.event_type.starts_with(prefix),
            None => self.event_type == pattern,
        }
    }

    /// Whether this is the item of the creation `field_event` (an `entity.field_set`) belongs
    /// to: core's `entity.created` of the same entity, by the same actor, at the same time (the
    /// events of one intention share their time).
    fn is_creation_of(&self, field_event: &FeedItem) -> bool {
        self.event_type == ENTITY_CREATED
            && self.entity_id.is_some()
            && self.entity_id == field_event.entity_id
            && self.actor_id == field_event.actor_id
            && self.occurred_at == field_event.occurred_at
    }

    /// Adds `field` to the creation's `data.fields`: `Some(true)` when added, `Some(false)`
    /// when already listed (a redelivered event), `None` when the list is full.
    fn add_created_field(&mut self, field: &str) -> Option<bool> {
        let fields = self
            .data
            .entry(FIELDS_KEY)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(fields) = fields else {
            return None;
        };
        if fields.iter().any(|listed| listed.as_str() == Some(field)) {
            return Some(false);
        }
        if fields.len() >= MAX_LISTED_IDS {
            return None;
        }
        fields.push(Value::String(field.to_owned()));
        Some(true)
    }

    /// What recording the item writes: the item under `items/<id>`, and an empty entry under
    /// each index key (an index entry names its item by the id ending its key; copying the
    /// item there would store it five to seven times).
    pub fn entries(&self) -> Result<Vec<(String, Vec<u8>)>, HostError> {
        let mut entries = vec![self.entry()?];
        entries.extend(self.keys().into_iter().skip(1).map(|key| (key, Vec::new())));
        Ok(entries)
    }

    /// The item under `items/<id>`, in its stored form ([`StoredItem`]).
    pub fn entry(&self) -> Result<(String, Vec<u8>), HostError> {
        storage::json_entry(item_key(&self.id), &StoredItem::of(self))
    }

    /// Every key the item is stored under: the feed itself and each index (its actor's, its
    /// entity's, its exact type's). A type pattern `prefix.*` reads the indexes of the types
    /// under the prefix, merged (`feed.rs`).
    pub fn keys(&self) -> Vec<String> {
        let mut keys = vec![item_key(&self.id)];
        if let Some(actor_id) = &self.actor_id {
            keys.push(format!("{}{}", actor_prefix(actor_id), self.id));
        }
        if let Some(entity_id) = &self.entity_id {
            keys.push(format!("{}{}", entity_prefix(entity_id), self.id));
        }
        keys.push(format!("{}{}", type_prefix(&self.event_type), self.id));
        keys
    }
}

/// How an item is stored: [`FeedItem`] without what its key and its other fields already say
/// (the footprint per entity): its `id` (the key ends with it), its `event_id` when it
/// is the item's own id (items keyed by their event's id), and its `entity_id` when that is
/// `data.entity_id`. Items stored before 2026-11-27 hold every field and read the same.
#[derive(Serialize, Deserialize)]
struct StoredItem {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event_id: Option<String>,
    #[serde(rename = "type")]
    event_type: String,
    #[serde(default)]
    actor_id: Option<String>,
    /// Absent: `data.entity_id`; present (a string or null): the item's.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    entity_id: Option<Option<String>>,
    occurred_at: String,
    #[serde(default)]
    data: Map<String, Value>,
}

/// A field that is present, even as null (`Some(None)`); an absent one stays `None`.
fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

impl StoredItem {
    fn of(item: &FeedItem) -> Self {
        let entity_in_data = item.entity_id.is_some()
            && item.data.get("entity_id").and_then(Value::as_str) == item.entity_id.as_deref();
        Self {
            id: None,
            event_id: (item.event_id != item.id).then(|| item.event_id.clone()),
            event_type: item.event_type.clone(),
            actor_id: item.actor_id.clone(),
            entity_id: (!entity_in_data).then(|| item.entity_id.clone()),
            occurred_at: item.occurred_at.clone(),
            data: item.data.clone(),
        }
    }
}

/// The item stored under `key` (`items/<id>`, or an index key ending in the id, whose entries
/// written before 2026-11-26 hold the item itself).
pub fn decode(key: &str, value: &[u8]) -> Result<FeedItem, HostError> {
    let stored: StoredItem = storage::decode_json(key, value)?;
    let id = match stored.id {
        Some(id) => id,
        None => key.rsplit('/').next().unwrap_or(key).to_owned(),
    };
    let entity_id = match stored.entity_id {
        Some(entity_id) => entity_id,
        None => stored
            .data
            .get("entity_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    Ok(FeedItem {
        event_id: stored.event_id.unwrap_or_else(|| id.clone()),
        id,
        event_type: stored.event_type,
        actor_id: stored.actor_id,
        entity_id,
        occurred_at: stored.occurred_at,
        data: stored.data,
    })
}

/// The feed: `items/<item_id>`.
pub const ITEMS_PREFIX: &str = "items/";

pub fn item_key(item_id: &str) -> String {
    format!("{ITEMS_PREFIX}{item_id}")
}

/// The items an actor caused: `by-actor/<actor_id>/<item_id>`.
pub fn actor_prefix(actor_id: &str) -> String {
    format!("by-actor/{}/", key_segment(actor_id))
}

/// The items about an entity: `by-entity/<entity_id>/<item_id>`.
pub fn entity_prefix(entity_id: &str) -> String {
    format!("by-entity/{}/", key_segment(entity_id))
}

/// The items of a type pattern: `by-type/<type or prefix.*>/<item_id>`.
pub fn type_prefix(pattern: &str) -> String {
    format!("by-type/{pattern}/")
}

/// The marker of a recorded event: `seen-events/<event_id>`, holding the item's id.
fn event_marker_key(event_id: &str) -> String {
    format!("seen-events/{}", key_segment(event_id))
}

/// The prefix patterns an item of this type was also indexed under before 2026-11-27
/// (`a.b.c` → `a.*`, `a.b.*`): removing such an item removes those entries too.
fn legacy_type_patterns(event_type: &str) -> impl Iterator<Item = String> + '_ {
    event_type
        .match_indices('.')
        .map(|(index, _)| format!("{}*", &event_type[..=index]))
}

/// An id as one segment of a key: `%` and `/` escaped, so one id never prefixes another's keys.
fn key_segment(id: &str) -> String {
    id.replace('%', "%25").replace('/', "%2F")
}

/// A plausible identifier: 1 to [`MAX_ID_BYTES`] bytes without control characters.
pub fn is_identifier(value: &str) -> bool {
    (1..=MAX_ID_BYTES).contains(&value.len()) && !value.chars().any(char::is_control)
}

fn identifier(payload: &Map<String, Value>, key: &str) -> Option<String> {
    payload
        .get(key)
        .and_then(Value::as_str)
        .filter(|value| is_identifier(value))
        .map(str::to_owned)
}

/// Whether a payload entry belongs in an item's `data` (identifiers only, see the module doc).
fn is_data(key: &str, value: &Value) -> bool {
    let is_name = |value: &Value| value.as_str().is_some_and(is_identifier);
    if key.ends_with("_id") || DESCRIPTIVE_KEYS.contains(&key) {
        is_name(value)
    } else if key.ends_with("_ids") {
        value
            .as_array()
            .is_some_and(|ids| ids.len() <= MAX_LISTED_IDS && ids.iter().all(is_name))
    } else {
        false
    }
}

/// Records `event` once, as an item of its own or folded into its creation's, without a
/// synchronisation point: the item and its (empty) index entries are buffered in the delivery's unit of work, which the host commits
/// with the delivery's completion. The host queues one delivery of an event at a time (a copy
/// published while it waits or runs is dropped), so a copy delivered later finds the committed
/// item, and one earlier in the same batch of deliveries the buffered item: either writes
/// nothing.
///
/// The item's id is the event's when that is a UUID v7 (the host's event ids are, so items
/// still sort by time), and `items/<event_id>` is then its own proof of recording. Otherwise
/// (an event id of another form) the item gets a UUID v7 of its own and a marker
/// `seen-events/<event_id>` holding it, as every item recorded before 2026-11-26 has: a
/// redelivery of such an event finds that marker.
///
/// A creation's `entity.field_set` (module doc) folds into its creation's item instead: the item
/// is read (through the instance's hint, else the entity's oldest index entry), its
/// `data.fields` gains the field unless listed already (a redelivery), and it is written back
/// in the same unit of work.
pub fn record(event: &Event) -> Result<(), HostError> {
    let marker = event_marker_key(&event.id);
    let Some(own_id) = time_ordered_id(&event.id) else {
        if storage::exists(&marker)? {
            return Ok(());
        }
        let item = FeedItem::from_event(uuid::Uuid::now_v7().to_string(), event);
        let mut sets = item.entries()?;
        sets.push(storage::json_entry(marker.as_str(), &item.id)?);
        return storage::write_batch(&sets, &[], &[]).map(drop);
    };
    let item = FeedItem::from_event(own_id, event);
    let creation_field = (item.event_type == ENTITY_FIELD_SET)
        .then(|| item.data.get("field").and_then(Value::as_str))
        .flatten()
        .zip(item.entity_id.as_deref());
    // The creation this field event may belong to, when this instance knows its item's id.
    let hinted_creation = creation_field.and_then(|(_, entity_id)| {
        LAST_CREATION.with_borrow(|last| match last {
            Some((entity, occurred_at, item_id))
                if entity == entity_id && *occurred_at == item.occurred_at =>
            {
                Some(item_key(item_id))
            }
            _ => None,
        })
    });
    let own_key = item_key(&item.id);
    let mut keys = vec![own_key.as_str(), marker.as_str()];
    keys.extend(hinted_creation.as_deref());
    let mut read = storage::get_many(&keys)?.into_iter();
    if read.by_ref().take(2).any(|value| value.is_some()) {
        // Recorded before (its own item, or a marker).
        return Ok(());
    }
    if let Some((field, entity_id)) = creation_field {
        let creation = match (hinted_creation, read.next().flatten()) {
            (Some(key), Some(value)) => Some(decode(&key, &value)?),
            _ => first_item_about(entity_id)?,
        };
        if let Some(mut creation) = creation.filter(|creation| creation.is_creation_of(&item)) {
            // A full list (`None`) leaves the field to an item of its own.
            if let Some(added) = creation.add_created_field(field) {
                remember_creation(&creation);
                if added {
                    storage::write_batch(&[creation.entry()?], &[], &[])?;
                }
                return Ok(());
            }
        }
    }
    storage::write_batch(&item.entries()?, &[], &[])?;
    if item.event_type == ENTITY_CREATED {
        remember_creation(&item);
    }
    Ok(())
}

/// Keeps `creation`'s item id as the hint for the next field events of its creation.
fn remember_creation(creation: &FeedItem) {
    if let Some(entity_id) = &creation.entity_id {
        LAST_CREATION.set(Some((
            entity_id.clone(),
            creation.occurred_at.clone(),
            creation.id.clone(),
        )));
    }
}

/// The oldest item about `entity_id` (its creation's, when the feed has it), from the entity's
/// index: one entry and one item read.
fn first_item_about(entity_id: &str) -> Result<Option<FeedItem>, HostError> {
    let prefix = entity_prefix(entity_id);
    let Some((key, value)) = storage::scan(&prefix, None, 1, false)?
        .entries
        .into_iter()
        .next()
    else {
        return Ok(None);
    };
    if !value.is_empty() {
        // An index entry written before 2026-11-26 holds the item itself.
        return decode(&key, &value).map(Some);
    }
    let key = item_key(&key[prefix.len()..]);
    storage::get(&key)?
        .map(|value| decode(&key, &value))
        .transpose()
}

/// `id` in its canonical form when it is a UUID v7.
fn time_ordered_id(id: &str) -> Option<String> {
    uuid::Uuid::parse_str(id)
        .ok()
        .filter(|uuid| uuid.get_version_num() == 7)
        .map(|uuid| uuid.hyphenated().to_string())
}

/// Every key an item may occupy (what removing it deletes): [`FeedItem::keys`], the entries of
/// its type's prefix patterns that items recorded before 2026-11-27 have, and its event's
/// marker, which items keyed by their own id have not.
pub fn all_keys(item: &FeedItem) -> Vec<String> {
    let mut keys = item.keys();
    keys.extend(
        legacy_type_patterns(&item.event_type)
            .map(|pattern| format!("{}{}", type_prefix(&pattern), item.id)),
    );
    keys.push(event_marker_key(&item.event_id));
    keys
}

/// When an item's event was published (an item keyed by its event's id) or the item was
/// recorded, in Unix milliseconds (from its UUID v7 id).
pub fn recorded_at_ms(item: &FeedItem) -> Option<u64> {
    let (seconds, nanos) = uuid::Uuid::parse_str(&item.id)
        .ok()?
        .get_timestamp()?
        .to_unix();
    Some(seconds * 1000 + u64::from(nanos) / 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_sdk::serde_json::json;

    fn event(event_type: &str, actor_id: Option<&str>, payload: Value) -> Event {
        Event {
            id: "e1".into(),
            event_type: event_type.into(),
            tenant_id: "t".into(),
            occurred_at: "2026-01-01T00:00:00.000000Z".into(),
            actor_id: actor_id.map(str::to_owned),
            correlation_id: "c".into(),
            payload,
        }
    }

    #[test]
    fn core_events_keep_names_and_drop_values() {
        let item = FeedItem::from_event(
            "i".into(),
            &event(
                "entity.field_updated",
                Some("u1"),
                json!({"entity_id": "x", "field": "title", "old_value": "a", "new_value": "b"}),
            ),
        );
        assert_eq!(item.actor_id.as_deref(), Some("u1"));
        assert_eq!(item.entity_id.as_deref(), Some("x"));
        assert_eq!(
            Value::Object(item.data.clone()),
            json!({"entity_id": "x", "field": "title"})
        );
        assert_eq!(
            item.keys(),
            [
                "items/i",
                "by-actor/u1/i",
                "by-entity/x/i",
                "by-type/entity.field_updated/i",
            ]
        );
        // The item is stored once; its index entries are empty.
        let entries = item.entries().unwrap();
        assert_eq!(entries.len(), 4);
        assert_eq!(entries[0].0, "items/i");
        assert_eq!(decode(&entries[0].0, &entries[0].1).unwrap(), item);
        assert!(entries[1..].iter().all(|(_, value)| value.is_empty()));
    }

    #[test]
    fn chat_events_take_their_noun_id_and_actor() {
        let payload = json!({"conversation_id": "c", "message_id": "m", "user_id": "u"});
        let item = FeedItem::from_event("i".into(), &event("message.created", None, payload));
        assert_eq!(
            (item.actor_id.as_deref(), item.entity_id.as_deref()),
            (Some("u"), Some("m"))
        );
        let payload = json!({"conversation_id": "c", "user_id": "u"});
        let item = FeedItem::from_event("i".into(), &event("member.added", None, payload));
        assert_eq!(
            (item.actor_id.as_deref(), item.entity_id.as_deref()),
            (None, Some("c"))
        );
        let item = FeedItem::from_event("i".into(), &event("call.ended", None, json!({"x": 1})));
        assert_eq!((&item.actor_id, &item.entity_id), (&None, &None));
        assert!(item.has_type("call.*") && item.has_type("call.ended"));
        assert!(!item.has_type("calls.*") && !item.has_type("call.end"));
    }

    #[test]
    fn items_know_when_they_were_recorded() {
        let mut item = FeedItem::from_event(String::new(), &event("x.y", None, json!({})));
        // 2026-11-21T17:19:00Z in the first 48 bits.
        item.id = "01a1ff1e-53a0-7000-8000-000000000000".into();
        assert_eq!(recorded_at_ms(&item), Some(1_795_281_540_000));
        item.id = "not a uuid".into();
        assert_eq!(recorded_at_ms(&item), None);
    }

    #[test]
    fn an_item_is_stored_without_what_its_key_and_fields_say_and_reads_back_whole() {
        let id = "01a1ff1e-53a0-7000-8000-000000000001";
        let mut created = event(
            "entity.created",
            Some("u1"),
            json!({"entity_id": "x", "family": "contact"}),
        );
        created.id = id.into();
        let item = FeedItem::from_event(id.into(), &created);
        let (key, bytes) = item.entry().unwrap();
        let stored: Value = tessera_sdk::serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            stored,
            json!({
                "type": "entity.created", "actor_id": "u1",
                "occurred_at": "2026-01-01T00:00:00.000000Z",
                "data": {"entity_id": "x", "family": "contact"}
            })
        );
        assert_eq!(decode(&key, &bytes).unwrap(), item);

        // What differs is kept: another event id, an entity named elsewhere, or none.
        let member = FeedItem::from_event(
            "i2".into(),
            &event("member.added", None, json!({"conversation_id": "c"})),
        );
        let (key, bytes) = member.entry().unwrap();
        let stored: Value = tessera_sdk::serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            (&stored["event_id"], &stored["entity_id"]),
            (&json!("e1"), &json!("c"))
        );
        assert_eq!(decode(&key, &bytes).unwrap(), member);
        let lone = FeedItem::from_event("i3".into(), &event("call.ended", None, json!({})));
        let (key, bytes) = lone.entry().unwrap();
        assert_eq!(decode(&key, &bytes).unwrap(), lone);

        // An item stored whole before (also under an index key) reads as it was.
        let whole = tessera_sdk::serde_json::to_vec(&member).unwrap();
        assert_eq!(decode("by-entity/c/i2", &whole).unwrap(), member);
    }

    #[test]
    fn ids_with_slashes_never_prefix_other_keys() {
        assert_eq!(entity_prefix("a/b%"), "by-entity/a%2Fb%25/");
    }

    #[test]
    fn removing_an_item_removes_the_prefix_entries_older_items_have() {
        let item = FeedItem::from_event("i".into(), &event("a.b.c", None, json!({})));
        assert_eq!(item.keys(), ["items/i", "by-type/a.b.c/i"]);
        assert_eq!(
            all_keys(&item),
            [
                "items/i",
                "by-type/a.b.c/i",
                "by-type/a.*/i",
                "by-type/a.b.*/i",
                "seen-events/e1"
            ]
        );
    }
}
