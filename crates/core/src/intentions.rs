//! Intentions: the write path. An intention is validated, prepared, then processed
//! synchronously in a transaction that writes the entity and appends its domain events to the
//! log (the outbox); projections pick the events up from there. Invalid intentions change
//! nothing. Concurrent intentions share transactions (group commit, `intention_writer.rs`):
//! each is decided in order against the effects of those before it (`intention_batch.rs`). A
//! refused intention is an [`IntentionError`], which the route answers as the matching
//! [`ApiError`](tessera_http::ApiError).

use serde_json::{Map, Value};

use crate::entities::Entity;
use crate::families::{self, FamilyCache};
use crate::intention_batch::invalid;
pub use crate::intention_batch::{
    IntentionError, Prepared, ProcessedIntention, Submitter, apply_batch, apply_chained_batch,
};
use crate::intention_writer::IntentionWriter;
use tessera_http::ValidationErrors;
use tessera_storage::{Database, time};

/// Fields one intention may carry.
pub const MAX_FIELDS: usize = 100;
/// Longest field code.
pub const MAX_FIELD_CODE: usize = 64;
/// Largest value of one field, as JSON text.
pub const MAX_VALUE_BYTES: usize = 10_000;

/// A validated intention.
#[derive(Debug, Clone, PartialEq)]
pub enum Intention {
    Create {
        family: String,
        fields: Map<String, Value>,
        status: Option<String>,
    },
    Update {
        entity_id: String,
        fields: Map<String, Value>,
    },
    Delete {
        entity_id: String,
    },
    StatusChange {
        entity_id: String,
        status: String,
    },
}

impl Intention {
    /// Validates a request's `type` and `payload`; errors are keyed `type`, `payload` and
    /// `payload.<name>` (`payload.fields.<code>` for one field).
    pub fn parse(kind: Option<&str>, payload: Option<&Value>) -> Result<Self, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let kind = match kind {
            None | Some("") => {
                errors.add("type", "required");
                None
            }
            Some(
                kind @ ("entity.create"
                | "entity.update"
                | "entity.delete"
                | "entity.status_change"),
            ) => Some(kind),
            Some(_) => {
                errors.add("type", "in");
                None
            }
        };
        let payload = match payload {
            None | Some(Value::Null) => {
                errors.add("payload", "required");
                None
            }
            Some(Value::Object(payload)) => Some(payload),
            Some(_) => {
                errors.add("payload", "object");
                None
            }
        };
        let (Some(kind), Some(payload)) = (kind, payload) else {
            return Err(errors);
        };
        let intention = match kind {
            "entity.create" => {
                let family = required_string(&mut errors, payload, "family");
                let fields = fields(&mut errors, payload, false);
                let status = optional_string(&mut errors, payload, "status");
                Self::Create {
                    family,
                    fields,
                    status,
                }
            }
            "entity.update" => Self::Update {
                entity_id: entity_id(&mut errors, payload),
                fields: fields(&mut errors, payload, true),
            },
            "entity.delete" => Self::Delete {
                entity_id: entity_id(&mut errors, payload),
            },
            _ => Self::StatusChange {
                entity_id: entity_id(&mut errors, payload),
                status: required_string(&mut errors, payload, "status"),
            },
        };
        if errors.is_empty() {
            Ok(intention)
        } else {
            Err(errors)
        }
    }
}

fn optional_string(
    errors: &mut ValidationErrors,
    payload: &Map<String, Value>,
    name: &str,
) -> Option<String> {
    match payload.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.trim().is_empty() => {
            errors.add(format!("payload.{name}"), "required");
            None
        }
        Some(Value::String(text)) => Some(text.trim().to_owned()),
        Some(_) => {
            errors.add(format!("payload.{name}"), "string");
            None
        }
    }
}

fn required_string(
    errors: &mut ValidationErrors,
    payload: &Map<String, Value>,
    name: &str,
) -> String {
    if payload.get(name).is_none_or(Value::is_null) {
        errors.add(format!("payload.{name}"), "required");
        return String::new();
    }
    optional_string(errors, payload, name).unwrap_or_default()
}

fn entity_id(errors: &mut ValidationErrors, payload: &Map<String, Value>) -> String {
    let id = required_string(errors, payload, "entity_id");
    if !id.is_empty() && uuid::Uuid::parse_str(&id).is_err() {
        errors.add("payload.entity_id", "uuid");
    }
    id
}

/// A field code: a letter, then letters, digits or `_`; at most 64 characters.
pub fn is_field_code(code: &str) -> bool {
    (1..=MAX_FIELD_CODE).contains(&code.len())
        && code.as_bytes()[0].is_ascii_alphabetic()
        && code.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// What [`is_field_code`] accepts, as a pattern without anchors (for the API's documentation).
pub fn field_code_pattern() -> String {
    format!("[A-Za-z][A-Za-z0-9_]{{0,{}}}", MAX_FIELD_CODE - 1)
}

fn fields(
    errors: &mut ValidationErrors,
    payload: &Map<String, Value>,
    at_least_one: bool,
) -> Map<String, Value> {
    let fields = match payload.get("fields") {
        None | Some(Value::Null) => {
            errors.add("payload.fields", "required");
            return Map::new();
        }
        Some(Value::Object(fields)) => fields,
        Some(_) => {
            errors.add("payload.fields", "object");
            return Map::new();
        }
    };
    if at_least_one && fields.is_empty() {
        errors.add("payload.fields", "required");
    }
    if fields.len() > MAX_FIELDS {
        errors.add("payload.fields", format!("max:{MAX_FIELDS}"));
    }
    for (code, value) in fields {
        if !is_field_code(code) {
            errors.add(format!("payload.fields.{code}"), "regex");
        } else if value.to_string().len() > MAX_VALUE_BYTES {
            errors.add(
                format!("payload.fields.{code}"),
                format!("max:{MAX_VALUE_BYTES}"),
            );
        }
    }
    fields.clone()
}

/// Prepares an intention: 422 for an unknown family or a status outside its pipeline.
pub async fn prepare(
    database: &Database,
    families: &FamilyCache,
    submitter: &Submitter,
    intention: Intention,
) -> Result<Prepared, IntentionError> {
    let family = match &intention {
        Intention::Create { family, .. } => {
            families
                .find(database, &submitter.tenant_id, family)
                .await?
        }
        _ => None,
    };
    prepare_with_family(intention, family)
}

/// [`prepare`] with the family of an `entity.create` already looked up (`None`: the tenant
/// has no such family).
pub fn prepare_with_family(
    intention: Intention,
    family: Option<families::Family>,
) -> Result<Prepared, IntentionError> {
    Ok(match intention {
        Intention::Create {
            family: _,
            fields,
            status,
        } => {
            let family = family.ok_or_else(|| invalid("payload.family", "exists"))?;
            let status = match status {
                None => family.statuses.first().cloned().unwrap_or_default(),
                Some(status) if family.statuses.contains(&status) => status,
                Some(_) => return Err(invalid("payload.status", "in")),
            };
            let now = time::now();
            Prepared::Create(Entity {
                id: uuid::Uuid::now_v7().to_string(),
                family_code: family.code,
                fields,
                status,
                created_at: now.clone(),
                updated_at: now,
            })
        }
        Intention::Update { entity_id, fields } => Prepared::Update { entity_id, fields },
        Intention::Delete { entity_id } => Prepared::Delete { entity_id },
        Intention::StatusChange { entity_id, status } => {
            Prepared::StatusChange { entity_id, status }
        }
    })
}

/// Validated, prepared and processed: the whole write path of one intention, through the
/// group-committing writer.
pub async fn process(
    database: &Database,
    writer: &IntentionWriter,
    submitter: Submitter,
    intention: Intention,
) -> Result<ProcessedIntention, IntentionError> {
    let prepared = prepare(database, writer.families(), &submitter, intention).await?;
    writer.submit(submitter, prepared).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors_of(kind: Option<&str>, payload: Value) -> Vec<String> {
        Intention::parse(kind, Some(&payload))
            .unwrap_err()
            .fields()
            .keys()
            .cloned()
            .collect()
    }

    #[test]
    fn payloads_are_validated_per_type_with_keyed_errors() {
        assert_eq!(errors_of(None, json!({})), ["type"]);
        assert_eq!(errors_of(Some("entity.merge"), json!({})), ["type"]);
        assert_eq!(
            errors_of(Some("entity.create"), json!({"fields": []})),
            ["payload.family", "payload.fields"]
        );
        assert_eq!(
            errors_of(
                Some("entity.create"),
                json!({"family": "task", "fields": {"9lives": 1, "ok": 2}})
            ),
            ["payload.fields.9lives"]
        );
        assert_eq!(
            errors_of(
                Some("entity.update"),
                json!({"entity_id": "nope", "fields": {}})
            ),
            ["payload.entity_id", "payload.fields"]
        );
        assert_eq!(
            errors_of(
                Some("entity.status_change"),
                json!({"entity_id": uuid::Uuid::now_v7()})
            ),
            ["payload.status"]
        );
        assert!(Intention::parse(Some("entity.delete"), None).is_err());
        assert_eq!(
            Intention::parse(
                Some("entity.create"),
                Some(&json!({"family": "task", "fields": {}, "status": "done"}))
            )
            .unwrap(),
            Intention::Create {
                family: "task".into(),
                fields: Map::new(),
                status: Some("done".into())
            }
        );
    }
}
