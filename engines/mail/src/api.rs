//! The JSON the mail API reads and answers, as documentation types: their schemas (derived with
//! `schemars`, doc comments becoming descriptions) are what [`Mail::router`](crate::Mail)
//! documents each route with. Nothing here is built or parsed: the handlers read bodies field by
//! field (`compose.rs`, `handlers.rs`) and answer the records of `store.rs`, whose shapes a unit
//! test below holds against these.

// Documentation only: the types are never constructed, their fields never read.
#![allow(dead_code)]

use schemars::JsonSchema;

use crate::compose::{MAX_ADDRESS_CHARS, MAX_RECIPIENTS, MAX_SUBJECT_CHARS};

/// A folder of the caller's mailbox.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FolderId {
    Inbox,
    Sent,
    Outbox,
    Trash,
}

/// A folder with its counts.
#[derive(JsonSchema)]
pub struct Folder {
    pub id: FolderId,
    /// `Inbox`, `Sent`, `Outbox`, `Trash`.
    pub name: String,
    /// The copies in the folder.
    pub total: u64,
    /// The unread copies in the folder.
    pub unread: u64,
}

/// Where a recipient, or the external recipients as a whole, stand: `delivered` (a user of the
/// tenant: the copy is in their inbox), `queued` (external, not handed to the SMTP relay yet: an
/// attempt is scheduled, or none will be when the host's mail transport was not available at
/// sending), `sent` (external, accepted by the relay), `failed` (external, refused on every
/// attempt).
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Delivered,
    Queued,
    Sent,
    Failed,
}

/// One recipient of a sent message.
#[derive(JsonSchema)]
pub struct Recipient {
    pub address: String,
    /// A user of the tenant (internal delivery) rather than an outside address.
    pub internal: bool,
    pub status: Status,
}

/// The delivery state of a sent message (on the sender's copy only).
#[derive(JsonSchema)]
#[schemars(transform = tessera_sdk::openapi::all_required)]
pub struct Delivery {
    /// `delivered` when every recipient is a user of the tenant, else the external
    /// recipients' status.
    pub status: Status,
    /// `to` then `cc`, each address once (case-insensitively).
    pub recipients: Vec<Recipient>,
    /// Attempts made to hand the external recipients to the relay (1 + 3 retries at most).
    pub attempts: u32,
    /// RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub last_attempt_at: Option<String>,
    /// RFC 3339; null when no attempt is scheduled (done, failed, or the host's mail transport
    /// was not available when the message was sent).
    #[schemars(extend("format" = "date-time"))]
    pub next_attempt_at: Option<String>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// RFC 3339: when the relay accepted the message.
    #[schemars(extend("format" = "date-time"))]
    pub sent_at: Option<String>,
}

/// The caller's copy of a message, as lists show it (without its body).
#[derive(JsonSchema)]
#[schemars(transform = tessera_sdk::openapi::all_required)]
pub struct MessageSummary {
    /// The copy's id (UUID v7): each mailbox has its own copy.
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    /// The message's id, shared by all its copies; the SMTP `Message-ID` is
    /// `<message_id@sender's domain>`.
    #[schemars(extend("format" = "uuid"))]
    pub message_id: String,
    pub folder: FolderId,
    /// The sender's own copy is read; received copies start unread.
    pub read: bool,
    /// The sender's address.
    pub from: String,
    pub sender_id: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub subject: String,
    /// The sender's copy only; null on received copies.
    pub delivery: Option<Delivery>,
    /// RFC 3339: when it was sent.
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    /// RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub updated_at: String,
}

/// The caller's copy of a message with its body.
#[derive(JsonSchema)]
pub struct Message {
    #[serde(flatten)]
    pub message: MessageSummary,
    /// Plain text.
    pub body: String,
}

/// `POST /mail/api/v1/messages`.
#[derive(JsonSchema)]
pub struct MessageSend {
    /// 1 to 100 addresses (`local@domain`, ASCII; surrounding whitespace is trimmed). Users of
    /// the tenant get a copy in their inbox; the others are external.
    #[schemars(
        length(min = 1, max = MAX_RECIPIENTS),
        inner(email, length(max = MAX_ADDRESS_CHARS))
    )]
    pub to: Vec<String>,
    /// Further addresses; `to` and `cc` together at most 100 distinct addresses. `null` is the
    /// same as none.
    #[schemars(
        length(max = MAX_RECIPIENTS),
        inner(email, length(max = MAX_ADDRESS_CHARS))
    )]
    pub cc: Option<Vec<String>>,
    /// One line (no control characters), at most 998 characters once trimmed. `null` is the
    /// same as `""`.
    #[schemars(length(max = MAX_SUBJECT_CHARS), extend("default" = ""))]
    pub subject: Option<String>,
    /// Plain text, at most 1,000,000 bytes of UTF-8. `null` is the same as `""`.
    #[schemars(extend("default" = ""))]
    pub body: Option<String>,
}

/// `PATCH /mail/api/v1/messages/{id}`: either field, or both; a field left out or `null`
/// changes nothing.
#[derive(JsonSchema)]
pub struct MessageUpdate {
    /// Marks the copy read (`true`) or unread (`false`).
    pub read: Option<bool>,
    /// `trash`, or the copy's own folder: `inbox` for a received copy; `sent` (or `outbox`
    /// while its external delivery is queued or failed) for a sent one.
    pub folder: Option<FolderId>,
}

/// The query of `GET /mail/api/v1/folders/{folder}/messages`.
#[derive(JsonSchema)]
pub struct ListQuery {
    /// Only unread (`true`) or read (`false`) messages; `1` and `0` work too.
    pub unread: Option<bool>,
    /// Opaque cursor from a previous page's `meta.next_cursor`.
    pub cursor: Option<String>,
    /// Page size; default 50, and a larger value than 100 is taken as 100.
    #[schemars(range(min = 1, max = 4_294_967_295u64), extend("default" = 50))]
    pub limit: Option<u32>,
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use tessera_sdk::Engine;
    use tessera_sdk::serde_json::{Value, json, to_value};

    use crate::store::{self, Delivery, Recipient, Status};
    use crate::{Mail, view};

    /// Every route of the engine.
    const ROUTES: [(&str, &str); 7] = [
        ("get", "/api/v1/status"),
        ("get", "/api/v1/folders"),
        ("get", "/api/v1/folders/{folder}/messages"),
        ("post", "/api/v1/messages"),
        ("get", "/api/v1/messages/{id}"),
        ("patch", "/api/v1/messages/{id}"),
        ("delete", "/api/v1/messages/{id}"),
    ];

    fn document() -> Value {
        Mail::router().openapi()
    }

    /// Every `$ref` in `value`.
    fn references(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(object) => {
                for (key, value) in object {
                    match (key.as_str(), value) {
                        ("$ref", Value::String(reference)) => found.push(reference.clone()),
                        _ => references(value, found),
                    }
                }
            }
            Value::Array(values) => values.iter().for_each(|value| references(value, found)),
            _ => {}
        }
    }

    #[test]
    fn every_route_is_documented_with_a_summary_and_a_success() {
        let document = document();
        let mut routes: Vec<(String, String)> = Vec::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                routes.push((method.clone(), path.clone()));
                let summary = operation["summary"].as_str().unwrap();
                assert!(!summary.is_empty(), "{method} {path}");
                assert_ne!(
                    summary,
                    format!("{} {path}", method.to_ascii_uppercase()),
                    "{method} {path} has no summary of its own"
                );
                let responses = operation["responses"].as_object().unwrap();
                assert!(
                    responses.keys().any(|status| status.starts_with('2')),
                    "{method} {path} documents no success"
                );
                assert!(!responses.contains_key("default"), "{method} {path}");
            }
        }
        routes.sort();
        let mut expected: Vec<(String, String)> = ROUTES
            .iter()
            .map(|(method, path)| ((*method).to_owned(), (*path).to_owned()))
            .collect();
        expected.sort();
        assert_eq!(routes, expected);
    }

    #[test]
    fn every_reference_names_a_schema() {
        let document = document();
        let mut found = Vec::new();
        references(&document, &mut found);
        assert!(!found.is_empty());
        for reference in found {
            let name = reference
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("{reference}"));
            assert!(
                document["components"]["schemas"][name].is_object(),
                "{reference}"
            );
        }
    }

    #[test]
    fn schemas_keep_the_rules_of_the_handlers() {
        let document = document();
        let schemas = &document["components"]["schemas"];
        assert!(schemas.get("MailMessage").is_none() && schemas["Message"].is_object());

        let send = &schemas["MessageSend"];
        assert_eq!(send["required"], json!(["to"]));
        let to = &send["properties"]["to"];
        assert_eq!((&to["minItems"], &to["maxItems"]), (&json!(1), &json!(100)));
        assert_eq!(to["items"]["format"], "email");
        assert_eq!(to["items"]["maxLength"], 254);
        assert_eq!(send["properties"]["subject"]["maxLength"], 998);
        // The engine takes `null` for the optional fields.
        assert_eq!(send["properties"]["cc"]["type"], json!(["array", "null"]));
        assert!(schemas["MessageUpdate"].get("required").is_none());

        assert_eq!(
            schemas["FolderId"]["enum"],
            json!(["inbox", "sent", "outbox", "trash"])
        );
        assert_eq!(
            schemas["Status"]["enum"],
            json!(["delivered", "queued", "sent", "failed"])
        );
        // Answers always carry `delivery`, null on received copies.
        let summary = &schemas["MessageSummary"];
        assert!(
            summary["required"]
                .as_array()
                .unwrap()
                .contains(&json!("delivery"))
        );
        assert_eq!(
            summary["properties"]["delivery"]["anyOf"][0]["$ref"],
            "#/components/schemas/Delivery"
        );
        let message_required = schemas["Message"]["required"].as_array().unwrap();
        assert!(message_required.contains(&json!("body")));
        assert!(message_required.contains(&json!("delivery")));

        let list = &document["paths"]["/api/v1/folders/{folder}/messages"]["get"];
        let limit = list["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|parameter| parameter["name"] == "limit")
            .unwrap();
        assert_eq!(limit["schema"]["minimum"], 1);
        let update = &document["paths"]["/api/v1/messages/{id}"]["patch"];
        assert!(update["responses"]["409"].is_object());
    }

    /// The sorted keys of the JSON object `value` serialises to.
    fn keys(value: impl Serialize) -> Vec<String> {
        let Value::Object(object) = to_value(value).unwrap() else {
            panic!("not an object");
        };
        let mut names: Vec<String> = object.keys().cloned().collect();
        names.sort();
        names
    }

    /// The sorted property names of the documented schema `name`.
    fn documented(document: &Value, name: &str) -> Vec<String> {
        let mut names: Vec<String> = document["components"]["schemas"][name]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no schema {name}"))
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }

    #[test]
    fn answers_have_the_documented_shapes() {
        let document = document();
        let recipient = Recipient {
            address: "ada@example.com".into(),
            internal: false,
            status: Status::Queued,
        };
        let delivery = Delivery {
            status: Status::Queued,
            recipients: vec![recipient.clone()],
            attempts: 0,
            last_attempt_at: None,
            next_attempt_at: None,
            last_error: None,
            sent_at: None,
        };
        let message = store::Message {
            id: "0190e1f2-0000-7000-8000-000000000001".into(),
            message_id: "0190e1f2-0000-7000-8000-000000000000".into(),
            folder: store::Folder::Outbox,
            read: true,
            from: "grace@example.com".into(),
            sender_id: "u1".into(),
            to: vec!["ada@example.com".into()],
            cc: Vec::new(),
            subject: "Hello".into(),
            delivery: Some(delivery.clone()),
            created_at: "2025-01-01T00:00:00Z".into(),
            updated_at: "2025-01-01T00:00:00Z".into(),
        };
        assert_eq!(keys(&recipient), documented(&document, "Recipient"));
        assert_eq!(keys(&delivery), documented(&document, "Delivery"));
        assert_eq!(keys(&message), documented(&document, "MessageSummary"));
        assert_eq!(
            keys(view(&message, "Body")),
            documented(&document, "Message")
        );
        let received = store::Message {
            delivery: None,
            ..message
        };
        assert_eq!(to_value(&received).unwrap()["delivery"], Value::Null);
    }
}
