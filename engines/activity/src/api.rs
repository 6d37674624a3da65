//! The activity engine's API description: the documented routes ([`router`]) and the schemas of
//! what they read and answer. [`Unseen`](crate::seen::Unseen) is what both "since last seen"
//! routes serialize, and the feed's items are the engine's own
//! [`FeedItem`](crate::items::FeedItem); the query and the body of marking are documentation
//! types. The host shows them under `/activity/…` as `activity.<Name>`.

use schemars::JsonSchema;
use tessera_sdk::{Operation, Router, tenancy};

use crate::items::FeedItem;
use crate::seen::{self, Unseen};
use crate::{CODE, feed};

/// Who may read the feed.
const GUESTS_FORBIDDEN: &str = "Guest tokens do not see the tenant's feed";

/// The engine's routes, each documented.
pub fn router() -> Router {
    Router::new()
        .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
        .doc(tenancy::status_operation())
        .get("/api/v1/feed", feed::list)
        .doc(
            Operation::new("The tenant's activity feed, newest first")
                .description(
                    "Filters combine; a filtered page reads an index (by entity, actor or type), \
                     not the whole feed. With several filters one request reads at most 2000 \
                     index entries, so a page may come back short with `has_more` true: continue \
                     with `next_cursor`. Every member reads; guest tokens get 403.",
                )
                .query::<FeedQuery>()
                .page::<FeedItem>()
                .error(403, GUESTS_FORBIDDEN)
                .invalid("Invalid `actor_id`, `entity_id`, `type`, `cursor` or `limit`"),
        )
        .get("/api/v1/feed/unseen", seen::unseen)
        .doc(
            Operation::new("How many items came since the caller last marked the feed seen")
                .description("The caller's own actions are not counted.")
                .answers::<Unseen>(200, "The count")
                .error(403, GUESTS_FORBIDDEN),
        )
        .post("/api/v1/feed/seen", seen::mark_seen)
        .doc(
            Operation::new("Mark the feed seen, up to now or up to an item")
                .description(
                    "The caller's own read state, so viewers may. The mark only moves forward: \
                     an item before it changes nothing. Without a body (or with `{}`), \
                     everything up to now is seen.",
                )
                .optional_body::<Seen>()
                .answers::<Unseen>(200, "The count after the new mark")
                .error(
                    400,
                    "The body is not JSON, not a JSON object, or sent with a `Content-Type` other \
                     than JSON",
                )
                .error(403, GUESTS_FORBIDDEN)
                .invalid("`item_id`: `exists` (not an item of the feed), `string` (not a string)"),
        )
}

/// `POST /activity/api/v1/feed/seen`: the body is optional.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Seen {
    /// Everything up to and including this item is seen; absent or null: everything up to now.
    /// 422 `exists` when it is not an item of the feed, `string` when not a string.
    pub item_id: Option<String>,
}

/// The query of the feed.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct FeedQuery {
    /// Only items caused by this user: 1 to 200 bytes without control characters (422 `min:1`,
    /// `max:200`, `format`).
    #[schemars(length(min = 1, max = 200))]
    pub actor_id: Option<String>,
    /// Only items about this entity: 1 to 200 bytes without control characters (422 `min:1`,
    /// `max:200`, `format`).
    #[schemars(length(min = 1, max = 200))]
    pub entity_id: Option<String>,
    /// Only items of this type: exact (`message.created`) or a prefix (`message.*`); `*` is
    /// every type (422 `format` otherwise). A type is lower-case letters, digits, `.`, `_` and
    /// `-`, starting with a letter and not ending with `.`; at most 100 characters in all.
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 100), regex(pattern = TYPE_PATTERN))]
    pub event_type: Option<String>,
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, larger values are taken as 100.
    #[schemars(range(min = 1, max = 4_294_967_295u64), extend("default" = 50))]
    pub limit: Option<u32>,
}

/// `*`, an event type, or an event type's prefix followed by `.*` (`feed::is_type_pattern`).
const TYPE_PATTERN: &str = r"^(\*|[a-z]([a-z0-9._-]*[a-z0-9_-])?(\.\*)?)$";

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use tessera_sdk::serde_json::{self, Value, json};
    use tessera_sdk::{Engine, Event};

    use super::*;

    fn document() -> Value {
        crate::Activity::router().openapi()
    }

    fn schema<'a>(document: &'a Value, name: &str) -> &'a Value {
        &document["components"]["schemas"][name]
    }

    fn names(values: &Value) -> BTreeSet<String> {
        match values {
            Value::Object(object) => object.keys().cloned().collect(),
            Value::Array(array) => array
                .iter()
                .map(|name| name.as_str().unwrap().to_owned())
                .collect(),
            other => panic!("neither an object nor an array: {other}"),
        }
    }

    fn parameter<'a>(operation: &'a Value, name: &str) -> &'a Value {
        operation["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|parameter| parameter["name"] == name)
            .unwrap_or_else(|| panic!("no parameter {name}"))
    }

    #[test]
    fn every_route_is_documented_with_a_summary_and_a_success() {
        let document = document();
        let mut documented = Vec::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                documented.push(format!("{} {path}", method.to_uppercase()));
                let summary = operation["summary"].as_str().unwrap();
                assert!(
                    !summary.is_empty() && summary != format!("{} {path}", method.to_uppercase()),
                    "{method} {path}"
                );
                let responses = operation["responses"].as_object().unwrap();
                assert!(
                    responses.keys().any(|status| status.starts_with('2')),
                    "{method} {path} has no 2xx answer"
                );
            }
        }
        documented.sort();
        assert_eq!(
            documented,
            [
                "GET /api/v1/feed",
                "GET /api/v1/feed/unseen",
                "GET /api/v1/status",
                "POST /api/v1/feed/seen",
            ]
        );
    }

    #[test]
    fn the_feed_query_and_the_mark_carry_their_rules() {
        let document = document();
        let feed = &document["paths"]["/api/v1/feed"]["get"];
        assert_eq!(
            names(&Value::Array(
                feed["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|parameter| parameter["name"].clone())
                    .collect()
            )),
            names(&json!(["actor_id", "entity_id", "type", "cursor", "limit"]))
        );
        let event_type = parameter(feed, "type");
        assert_eq!(event_type["required"], false);
        assert_eq!(event_type["schema"]["maxLength"], 100);
        assert_eq!(event_type["schema"]["pattern"], TYPE_PATTERN);
        assert_eq!(parameter(feed, "actor_id")["schema"]["maxLength"], 200);
        assert_eq!(parameter(feed, "entity_id")["schema"]["minLength"], 1);
        assert_eq!(parameter(feed, "limit")["schema"]["minimum"], 1);
        assert_eq!(parameter(feed, "limit")["schema"]["default"], 50);
        assert_eq!(
            feed["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["data"]
                ["items"]["$ref"],
            "#/components/schemas/FeedItem"
        );
        assert!(
            feed["responses"]["403"]["description"]
                .as_str()
                .unwrap()
                .contains("Guest")
        );

        let seen = &document["paths"]["/api/v1/feed/seen"]["post"];
        assert_eq!(seen["requestBody"]["required"], false);
        let body = schema(&document, "Seen");
        assert!(body.get("required").is_none());
        assert_eq!(
            body["properties"]["item_id"]["type"],
            json!(["string", "null"])
        );
        assert!(seen["responses"]["200"].is_object());

        let unseen = schema(&document, "Unseen");
        assert_eq!(unseen["properties"]["count"]["maximum"], 1000);
        assert_eq!(
            names(&unseen["required"]),
            names(&json!(["count", "capped", "last_seen_at"]))
        );
        let item = schema(&document, "FeedItem");
        assert_eq!(item["properties"]["type"]["type"], "string");
        assert_eq!(
            item["properties"]["actor_id"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(item["properties"]["data"]["type"], "object");
    }

    /// The documented answers are what the engine serializes, every field always there.
    #[test]
    fn answers_match_what_the_engine_serializes() {
        let document = document();
        let event = Event {
            id: "e1".into(),
            event_type: "note.created".into(),
            tenant_id: "t".into(),
            occurred_at: "2026-01-01T00:00:00.000000Z".into(),
            actor_id: None,
            correlation_id: "c".into(),
            payload: json!({"note_id": "n"}),
        };
        let item = FeedItem::from_event("i".into(), &event);
        let unseen = Unseen {
            count: 0,
            capped: false,
            last_seen_at: None,
        };
        for (name, value) in [
            ("FeedItem", serde_json::to_value(item).unwrap()),
            ("Unseen", serde_json::to_value(unseen).unwrap()),
        ] {
            let schema = schema(&document, name);
            assert_eq!(names(&value), names(&schema["properties"]), "{name}");
            assert_eq!(names(&value), names(&schema["required"]), "{name}");
        }
    }
}
