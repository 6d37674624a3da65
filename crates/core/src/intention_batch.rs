//! Deciding and writing a batch of prepared intentions in one transaction, and what the write
//! path hands on: who submits ([`Submitter`]), the prepared intention ([`Prepared`]), its
//! outcome ([`ProcessedIntention`]) or refusal ([`IntentionError`]). The group-committing
//! writer (`intention_writer.rs`) and the workflow runner call [`apply_batch`] and
//! [`apply_chained_batch`]; `intentions.rs` validates and prepares above them and re-exports
//! all of it.

use std::collections::HashMap;

use anyhow::Context as _;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::entities::{self, Entity};
use crate::events::{self, AppendGroup, DomainEvent, EventContext, NewEvent};
use crate::families;
use tessera_http::{ApiError, ValidationErrors};
use tessera_storage::{Tx, time};

/// Why an intention was refused, or failed: the write path's own error. The route answers it
/// as the matching [`ApiError`] (`From`); a workflow run records it in words.
///
/// Worded as the matching [`ApiError`] is.
#[derive(Debug, thiserror::Error)]
pub enum IntentionError {
    /// 422: an invalid payload, an unknown family, or a status outside the pipeline.
    #[error("validation failed")]
    Validation(ValidationErrors),
    /// 404, with its message: the entity is not in the submitter's tenant.
    #[error("not found: {0}")]
    NotFound(String),
    /// 403: someone else's entity, and the submitter may not change others' entities.
    #[error("forbidden")]
    Forbidden,
    /// 409, with its message: skipped, as the previous intention of its chain was refused.
    #[error("conflict: {0}")]
    Conflict(String),
    /// 500: the database or the writer failed.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl IntentionError {
    /// A 404 whose message names what was not found (`Entity not found.`).
    pub fn not_found(what: &str) -> Self {
        Self::NotFound(format!("{what} not found."))
    }
}

/// The answer to a refused intention: the same status and body as the HTTP layer's own
/// errors of the same kind.
impl From<IntentionError> for ApiError {
    fn from(error: IntentionError) -> Self {
        match error {
            IntentionError::Validation(errors) => Self::Validation(errors),
            IntentionError::NotFound(message) => Self::NotFound(message),
            IntentionError::Forbidden => Self::Forbidden,
            IntentionError::Conflict(message) => Self::Conflict(message),
            IntentionError::Internal(error) => Self::Internal(error),
        }
    }
}

/// An intention's `data` in the response.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ProcessedIntention {
    pub id: String,
    /// `entity.create`, `entity.update`, `entity.delete` or `entity.status_change`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Always `processed`: a rejected intention is answered with an error and stores nothing.
    pub status: String,
    pub entity_id: String,
    /// The domain events, in order.
    pub events: Vec<DomainEvent>,
}

/// Who submits an intention, and in which request.
#[derive(Debug, Clone)]
pub struct Submitter {
    pub tenant_id: String,
    pub user_id: String,
    /// Whether entities created by others may be changed (tenant owners); others change only
    /// their own (spec: no modifying someone else's resource without admin rights).
    pub may_modify_others: bool,
    pub correlation_id: Option<String>,
    /// Workflow hops that led to this intention; 0 for a person.
    pub depth: i64,
    /// The W3C `traceparent` of the request (or of the event a workflow runs for), which the
    /// engines' deliveries of its events continue (tracing on).
    pub traceparent: Option<String>,
}

/// An intention checked against everything that does not change under it (the family of a
/// new entity: families are never edited), ready for the writer.
#[derive(Debug, Clone)]
pub enum Prepared {
    Create(Entity),
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

impl Prepared {
    /// The existing entity the intention changes, if any.
    fn existing_entity(&self) -> Option<&str> {
        match self {
            Self::Create(_) => None,
            Self::Update { entity_id, .. }
            | Self::Delete { entity_id }
            | Self::StatusChange { entity_id, .. } => Some(entity_id),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Self::Create(_) => "entity.create",
            Self::Update { .. } => "entity.update",
            Self::Delete { .. } => "entity.delete",
            Self::StatusChange { .. } => "entity.status_change",
        }
    }
}

/// The state of one entity across a batch.
struct EntityState {
    /// `None` once deleted.
    entity: Option<Entity>,
    created_by: String,
    /// Whether a row exists in the database (before this batch).
    stored: bool,
    changed: bool,
}

/// One intention's outcome inside a batch, before its events are numbered.
struct Decided {
    intention_id: String,
    kind: &'static str,
    entity_id: String,
    context: EventContext,
    events: Vec<DomainEvent>,
    entries: Vec<NewEvent>,
    occurred_at: String,
    /// [`events::EntityState`] JSON.
    entity_state: String,
}

/// Applies a batch of prepared intentions in `tx`, in order: each sees the effects of those
/// before it. An intention refused here (404, 403, 422) writes nothing and leaves the others
/// alone; the entity rows, then every event (one sequence reservation per tenant), are written
/// with multi-row statements. The caller commits.
pub async fn apply_batch(
    tx: &mut Tx,
    jobs: &[(Submitter, Prepared)],
) -> anyhow::Result<Vec<Result<ProcessedIntention, IntentionError>>> {
    apply_chained_batch(tx, jobs, &[]).await
}

/// [`apply_batch`] where `continues_previous[i]` makes intention `i` depend on intention
/// `i − 1` (a workflow run's next action): it is skipped, with [`IntentionError::Conflict`], when
/// that one was refused or skipped.
pub async fn apply_chained_batch(
    tx: &mut Tx,
    jobs: &[(Submitter, Prepared)],
    continues_previous: &[bool],
) -> anyhow::Result<Vec<Result<ProcessedIntention, IntentionError>>> {
    let keys: Vec<(String, String)> = jobs
        .iter()
        .filter_map(|(submitter, prepared)| {
            prepared
                .existing_entity()
                .map(|id| (submitter.tenant_id.clone(), id.to_owned()))
        })
        .collect();
    let mut states: HashMap<(String, String), EntityState> = entities::lock_many(tx, &keys)
        .await?
        .into_iter()
        .map(|(key, owned)| {
            let state = EntityState {
                entity: Some(owned.entity),
                created_by: owned.created_by,
                stored: true,
                changed: false,
            };
            (key, state)
        })
        .collect();
    let mut pipelines: HashMap<(String, String), Vec<String>> = HashMap::new();
    let mut decisions: Vec<Result<Decided, IntentionError>> = Vec::with_capacity(jobs.len());
    for (index, (submitter, prepared)) in jobs.iter().enumerate() {
        let chained = continues_previous.get(index).copied().unwrap_or(false);
        if chained && !matches!(decisions.last(), Some(Ok(_))) {
            decisions.push(Err(IntentionError::Conflict(
                "skipped: the previous intention of its chain was refused".to_owned(),
            )));
            continue;
        }
        let decided = decide(tx, &mut states, &mut pipelines, submitter, prepared).await?;
        decisions.push(decided);
    }

    // The events first: appending numbers a tenant new to the log, and an entity row names
    // its tenant by that number (`store/entities.rs`).
    let groups: Vec<AppendGroup<'_>> = decisions
        .iter()
        .filter_map(|decided| decided.as_ref().ok())
        .map(|decided| AppendGroup {
            context: &decided.context,
            events: &decided.entries,
            occurred_at: &decided.occurred_at,
            entity_state: Some(&decided.entity_state),
        })
        .collect();
    events::append_groups(tx, &groups).await?;

    let mut upserts = Vec::new();
    for ((tenant_id, entity_id), state) in &states {
        match &state.entity {
            Some(entity) if state.changed => upserts.push(entities::TenantEntity {
                tenant_id,
                entity,
                created_by: &state.created_by,
            }),
            None if state.stored => entities::delete(tx, tenant_id, entity_id).await?,
            _ => {}
        }
    }
    entities::upsert_many(tx, &upserts).await?;
    Ok(decisions
        .into_iter()
        .map(|decided| {
            decided.map(|decided| ProcessedIntention {
                id: decided.intention_id,
                kind: decided.kind.to_owned(),
                status: "processed".to_owned(),
                entity_id: decided.entity_id,
                events: decided.events,
            })
        })
        .collect())
}

/// Decides one intention against the batch's entity states (changing them when it passes).
async fn decide(
    tx: &mut Tx,
    states: &mut HashMap<(String, String), EntityState>,
    pipelines: &mut HashMap<(String, String), Vec<String>>,
    submitter: &Submitter,
    prepared: &Prepared,
) -> anyhow::Result<Result<Decided, IntentionError>> {
    let intention_id = uuid::Uuid::now_v7().to_string();
    let now = time::now();
    let tenant_id = &submitter.tenant_id;
    let (entity_id, domain_events, entity_state) = match prepared {
        Prepared::Create(entity) => {
            let mut entity = entity.clone();
            entity.updated_at.clone_from(&now);
            entity.created_at.clone_from(&now);
            let mut domain_events = Vec::with_capacity(1 + entity.fields.len());
            domain_events.push(DomainEvent::Created {
                entity_id: entity.id.clone(),
                family: entity.family_code.clone(),
                timestamp: now.clone(),
            });
            domain_events.extend(entity.fields.iter().map(|(field, value)| {
                DomainEvent::FieldSet {
                    entity_id: entity.id.clone(),
                    field: field.clone(),
                    value: value.clone(),
                    timestamp: now.clone(),
                }
            }));
            let entity_id = entity.id.clone();
            // Its events say the rest (`events::RecordedState`).
            let entity_state = serde_json::to_string(&events::RecordedState::Created {
                status: entity.status.clone(),
            })
            .expect("entity states serialize");
            states.insert(
                (tenant_id.clone(), entity_id.clone()),
                EntityState {
                    entity: Some(entity),
                    created_by: submitter.user_id.clone(),
                    stored: false,
                    changed: true,
                },
            );
            (entity_id, domain_events, entity_state)
        }
        Prepared::Update { entity_id, fields } => {
            let state = match changeable(states, submitter, entity_id) {
                Ok(state) => state,
                Err(refusal) => return Ok(Err(refusal)),
            };
            let entity = state.entity.as_mut().expect("changeable entities exist");
            let domain_events = fields
                .iter()
                .map(
                    |(field, value)| match entity.fields.insert(field.clone(), value.clone()) {
                        Some(old_value) => DomainEvent::FieldUpdated {
                            entity_id: entity_id.clone(),
                            field: field.clone(),
                            old_value,
                            new_value: value.clone(),
                            timestamp: now.clone(),
                        },
                        None => DomainEvent::FieldSet {
                            entity_id: entity_id.clone(),
                            field: field.clone(),
                            value: value.clone(),
                            timestamp: now.clone(),
                        },
                    },
                )
                .collect();
            entity.updated_at.clone_from(&now);
            state.changed = true;
            let entity_state = state_of(entity, &state.created_by, fields);
            (entity_id.clone(), domain_events, entity_state)
        }
        Prepared::Delete { entity_id } => {
            let state = match changeable(states, submitter, entity_id) {
                Ok(state) => state,
                Err(refusal) => return Ok(Err(refusal)),
            };
            let entity = state.entity.take().expect("changeable entities exist");
            state.changed = true;
            let entity_state = state_of(&entity, &state.created_by, &Map::new());
            let domain_events = vec![DomainEvent::Deleted {
                entity_id: entity_id.clone(),
                family: entity.family_code,
                timestamp: now.clone(),
            }];
            (entity_id.clone(), domain_events, entity_state)
        }
        Prepared::StatusChange { entity_id, status } => {
            let family_code = match changeable(states, submitter, entity_id) {
                Ok(state) => state
                    .entity
                    .as_ref()
                    .expect("changeable entities exist")
                    .family_code
                    .clone(),
                Err(refusal) => return Ok(Err(refusal)),
            };
            let pipeline_key = (tenant_id.clone(), family_code.clone());
            if !pipelines.contains_key(&pipeline_key) {
                let family = families::find_in(tx, tenant_id, &family_code)
                    .await?
                    .with_context(|| format!("entity {entity_id} has no family"))?;
                pipelines.insert(pipeline_key.clone(), family.statuses);
            }
            if !pipelines[&pipeline_key].contains(status) {
                return Ok(Err(invalid("payload.status", "in")));
            }
            let state = states
                .get_mut(&(tenant_id.clone(), entity_id.clone()))
                .expect("checked above");
            let entity = state.entity.as_mut().expect("changeable entities exist");
            let old_status = std::mem::replace(&mut entity.status, status.clone());
            entity.updated_at.clone_from(&now);
            state.changed = true;
            let entity_state = state_of(entity, &state.created_by, &Map::new());
            let domain_events = vec![DomainEvent::StatusChanged {
                entity_id: entity_id.clone(),
                old_status,
                new_status: status.clone(),
                timestamp: now.clone(),
            }];
            (entity_id.clone(), domain_events, entity_state)
        }
    };
    let entries = domain_events
        .iter()
        .map(DomainEvent::to_new_event)
        .collect();
    Ok(Ok(Decided {
        context: EventContext {
            tenant_id: tenant_id.clone(),
            actor_id: Some(submitter.user_id.clone()),
            correlation_id: submitter.correlation_id.clone(),
            intention_id: Some(intention_id.clone()),
            depth: submitter.depth,
            traceparent: submitter.traceparent.clone(),
        },
        intention_id,
        kind: prepared.kind(),
        entity_id,
        events: domain_events,
        entries,
        occurred_at: now,
        entity_state,
    }))
}

/// The [`events::EntityState`] JSON of `entity`, whose fields `changed` the intention set.
fn state_of(entity: &Entity, created_by: &str, changed: &Map<String, Value>) -> String {
    #[derive(serde::Serialize)]
    struct Borrowed<'a> {
        family: &'a str,
        status: &'a str,
        fields: &'a Map<String, Value>,
        created_by: &'a str,
        changed: Vec<&'a str>,
    }
    serde_json::to_string(&Borrowed {
        family: &entity.family_code,
        status: &entity.status,
        fields: &entity.fields,
        created_by,
        changed: changed.keys().map(String::as_str).collect(),
    })
    .expect("entity states serialize")
}

/// The entity an intention changes: 404 when it is not in the submitter's tenant (or was
/// deleted earlier in the batch), 403 when it is someone else's and the submitter may not
/// change others' entities.
fn changeable<'s>(
    states: &'s mut HashMap<(String, String), EntityState>,
    submitter: &Submitter,
    entity_id: &str,
) -> Result<&'s mut EntityState, IntentionError> {
    let state = states
        .get_mut(&(submitter.tenant_id.clone(), entity_id.to_owned()))
        .filter(|state| state.entity.is_some())
        .ok_or_else(|| IntentionError::not_found("Entity"))?;
    if !submitter.may_modify_others && state.created_by != submitter.user_id {
        return Err(IntentionError::Forbidden);
    }
    Ok(state)
}

/// A 422 naming the field and the rule it broke.
pub(crate) fn invalid(field: &str, rule: &str) -> IntentionError {
    IntentionError::Validation(ValidationErrors::single(field, rule))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_answer_as_the_http_errors_of_their_kind() {
        use axum::http::StatusCode;
        let cases = [
            (
                IntentionError::Validation(ValidationErrors::single("payload.status", "in")),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (IntentionError::not_found("Entity"), StatusCode::NOT_FOUND),
            (IntentionError::Forbidden, StatusCode::FORBIDDEN),
            (
                IntentionError::Conflict("skipped".into()),
                StatusCode::CONFLICT,
            ),
            (
                IntentionError::from(anyhow::anyhow!("the batch failed")),
                StatusCode::INTERNAL_SERVER_ERROR,
            ),
        ];
        for (refusal, status) in cases {
            let words = refusal.to_string();
            let answer = ApiError::from(refusal);
            assert_eq!(answer.status(), status);
            assert_eq!(answer.to_string(), words);
        }
        assert!(matches!(
            ApiError::from(IntentionError::not_found("Entity")),
            ApiError::NotFound(message) if message == "Entity not found."
        ));
    }
}
