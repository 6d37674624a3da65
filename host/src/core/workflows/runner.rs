//! The workflow runner: the `workflow` worker's consumer of the event log. For each
//! intention in a batch it finds the trigger (`entity.created`, `entity.updated`,
//! `entity.deleted`, `entity.status_changed`), the tenant's active workflows that react to it,
//! evaluates their conditions against the entity as that intention left it, executes the
//! actions in order through intentions, and records a run.
//!
//! Everything happens in the batch's transaction, with the worker's checkpoint: a crash or
//! restart mid-batch rolls back the actions and the runs together, and the batch is applied
//! again, so each trigger runs each workflow exactly once. The actions' events are appended
//! one hop deeper than their trigger, and events at [`MAX_DEPTH`] trigger nothing.
//!
//! It is not a read model: `tessera admin rebuild-projections` leaves it alone, since
//! replaying it would run actions again.

use std::collections::{BTreeSet, HashMap};

use anyhow::Context as _;
use serde_json::{Map, Value, json};

use super::conditions::{self, Subject};
use super::definition::{Action, Trigger};
use super::store::{self, Workflow, WorkflowRun};
use super::templates::{self, Context};
use crate::core::events::{self, EntityState, EventContext, NewEvent, StoredEvent};
use crate::core::families;
use crate::core::intentions::{self, Intention, Submitter};
use crate::core::projections::Projection;
use crate::http::ApiError;
use crate::storage::{Tx, time};

/// Events at this depth (three workflow hops from a person's intention) trigger nothing:
/// a workflow that triggers itself runs at most three times per intention.
pub const MAX_DEPTH: i64 = 3;

/// Runs the tenants' workflows.
#[derive(Debug, Clone, Default)]
pub struct WorkflowRunner;

impl Projection for WorkflowRunner {
    fn name(&self) -> &'static str {
        "workflow"
    }

    async fn apply(&self, tx: &mut Tx, events: &[StoredEvent]) -> anyhow::Result<()> {
        let mut active: HashMap<(String, Trigger), Vec<Workflow>> = HashMap::new();
        for event in events {
            let Some(triggered) = Triggered::of(event)? else {
                continue;
            };
            if event.depth >= MAX_DEPTH {
                continue;
            }
            let key = (event.tenant_id.clone(), triggered.trigger);
            if !active.contains_key(&key) {
                let workflows = store::active_for(tx, &key.0, key.1).await?;
                active.insert(key.clone(), workflows);
            }
            for workflow in &active[&key] {
                if !workflow
                    .definition
                    .reacts_to(triggered.trigger, &triggered.state.family)
                {
                    continue;
                }
                let subject = triggered.subject();
                if !conditions::all_hold(&workflow.definition.conditions, &subject) {
                    continue;
                }
                run(tx, workflow, &triggered).await?;
            }
        }
        Ok(())
    }

    async fn reset(&self, _tx: &mut Tx) -> anyhow::Result<bool> {
        Ok(false)
    }
}

/// An intention that triggers workflows, from its first event (which carries the entity
/// state, so an intention split across batches is still seen whole).
struct Triggered<'a> {
    trigger: Trigger,
    /// The event a run names as its trigger: the intention's first.
    event: &'a StoredEvent,
    entity_id: &'a str,
    state: EntityState,
    /// The fields the intention set or changed.
    changed: BTreeSet<String>,
}

impl<'a> Triggered<'a> {
    /// The trigger an intention's first event stands for: creation, deletion, a status
    /// change, or (field events) one `entity.updated` however many fields changed. `None` for
    /// every other event.
    fn of(event: &'a StoredEvent) -> anyhow::Result<Option<Self>> {
        let (Some(entity_id), Some(state)) = (&event.entity_id, &event.entity_state) else {
            return Ok(None);
        };
        let trigger = match event.event_type.as_str() {
            "entity.created" => Trigger::EntityCreated,
            "entity.deleted" => Trigger::EntityDeleted,
            "entity.status_changed" => Trigger::EntityStatusChanged,
            "entity.field_set" | "entity.field_updated" => Trigger::EntityUpdated,
            _ => return Ok(None),
        };
        let state: EntityState = serde_json::from_str(state)
            .with_context(|| format!("decoding the entity state on event {}", event.id))?;
        let changed = state.changed.iter().cloned().collect();
        Ok(Some(Self {
            trigger,
            event,
            entity_id,
            state,
            changed,
        }))
    }

    fn subject(&self) -> Subject<'_> {
        Subject {
            entity_id: self.entity_id,
            owner_id: Some(&self.state.created_by),
            status: Some(&self.state.status),
            fields: &self.state.fields,
            changed: &self.changed,
        }
    }

    /// The person whose intention started the chain (workflow writes carry it on).
    fn current_user(&self) -> &str {
        self.event
            .actor_id
            .as_deref()
            .unwrap_or(&self.state.created_by)
    }
}

/// Runs one workflow for one trigger and records the run.
async fn run(tx: &mut Tx, workflow: &Workflow, triggered: &Triggered<'_>) -> anyhow::Result<()> {
    let started_at = time::now();
    let subject = triggered.subject();
    let context = Context {
        current_user: triggered.current_user(),
        now: &started_at,
        subject: &subject,
    };
    let submitter = Submitter {
        tenant_id: triggered.event.tenant_id.clone(),
        user_id: context.current_user.to_owned(),
        // A workflow acts for its tenant: it may change any of the tenant's entities.
        may_modify_others: true,
        correlation_id: triggered.event.correlation_id.clone(),
        depth: triggered.event.depth + 1,
    };
    let mut actions_executed = 0;
    let mut error = None;
    for (index, action) in workflow.definition.actions.iter().enumerate() {
        match execute(tx, action, &context, &submitter, workflow).await? {
            Ok(()) => actions_executed += 1,
            Err(reason) => {
                error = Some(format!(
                    "action {index} ({}) failed: {reason}",
                    action.type_name()
                ));
                break;
            }
        }
    }
    let run = WorkflowRun {
        id: uuid::Uuid::now_v7().to_string(),
        workflow_id: workflow.id.clone(),
        trigger_event_id: triggered.event.id.clone(),
        status: if error.is_none() {
            "completed"
        } else {
            "failed"
        }
        .to_owned(),
        error,
        started_at,
        completed_at: time::now(),
        actions_executed,
    };
    if !store::record_run(tx, &submitter.tenant_id, &run, triggered.event.depth).await? {
        tracing::warn!(
            workflow_id = %workflow.id,
            trigger_event_id = %triggered.event.id,
            "a workflow run was already recorded for this trigger"
        );
    }
    Ok(())
}

/// Executes one action: `Ok(Err(reason))` when it is refused (the run fails), `Err` when the
/// database fails (the batch is retried).
async fn execute(
    tx: &mut Tx,
    action: &Action,
    context: &Context<'_>,
    submitter: &Submitter,
    workflow: &Workflow,
) -> anyhow::Result<Result<(), String>> {
    // Through the same validation as a person's intention.
    let (kind, payload) = match action {
        Action::UpdateField { field, value } => (
            "entity.update",
            json!({
                "entity_id": context.subject.entity_id,
                "fields": {field.as_str(): templates::render(value, context)},
            }),
        ),
        Action::CreateEntity {
            family,
            fields,
            status,
        } => {
            let fields: Map<String, Value> = fields
                .iter()
                .map(|(field, value)| (field.clone(), templates::render(value, context)))
                .collect();
            let mut payload = json!({"family": family, "fields": fields});
            if let Some(status) = status {
                payload["status"] = json!(status);
            }
            ("entity.create", payload)
        }
        Action::SendNotification {
            recipient,
            title,
            message,
        } => {
            return notify(tx, context, submitter, workflow, recipient, title, message).await;
        }
    };
    let intention = match Intention::parse(Some(kind), Some(&payload)) {
        Ok(intention) => intention,
        Err(errors) => return Ok(Err(describe(&ApiError::Validation(errors)))),
    };
    let family = match &intention {
        Intention::Create { family, .. } => {
            families::find_in(tx, &submitter.tenant_id, family).await?
        }
        _ => None,
    };
    let prepared = match intentions::prepare_with_family(intention, family) {
        Ok(prepared) => prepared,
        Err(refusal) => return Ok(Err(describe(&refusal))),
    };
    let mut outcomes = intentions::apply_batch(tx, &[(submitter.clone(), prepared)]).await?;
    Ok(match outcomes.pop() {
        Some(Ok(_)) => Ok(()),
        Some(Err(refusal)) => Err(describe(&refusal)),
        None => Err("the intention was not decided".to_owned()),
    })
}

/// `send_notification`: appends `notification.created`, which the projector turns into an
/// inbox item of the recipient.
async fn notify(
    tx: &mut Tx,
    context: &Context<'_>,
    submitter: &Submitter,
    workflow: &Workflow,
    recipient: &str,
    title: &str,
    message: &Option<String>,
) -> anyhow::Result<Result<(), String>> {
    let recipient = templates::render_text(recipient, context);
    let Ok(recipient_id) = uuid::Uuid::try_parse(recipient.trim()) else {
        return Ok(Err(format!("the recipient {recipient:?} is not a user id")));
    };
    let mut data = Map::new();
    data.insert(
        "recipient_id".into(),
        json!(recipient_id.hyphenated().to_string()),
    );
    data.insert(
        "title".into(),
        json!(templates::render_text(title, context)),
    );
    if let Some(message) = message {
        data.insert(
            "message".into(),
            json!(templates::render_text(message, context)),
        );
    }
    data.insert("entity_id".into(), json!(context.subject.entity_id));
    data.insert("workflow_id".into(), json!(workflow.id));
    let event_context = EventContext {
        tenant_id: submitter.tenant_id.clone(),
        actor_id: Some(submitter.user_id.clone()),
        correlation_id: submitter.correlation_id.clone(),
        intention_id: None,
        depth: submitter.depth,
    };
    let event = NewEvent {
        event_type: "notification.created".to_owned(),
        entity_id: Some(context.subject.entity_id.to_owned()),
        data,
    };
    events::append(tx, &event_context, &[event], &time::now()).await?;
    Ok(Ok(()))
}

/// A refused intention, in words for the run's `error`.
fn describe(refusal: &ApiError) -> String {
    match refusal {
        ApiError::Validation(errors) => {
            let details: Vec<String> = errors
                .fields()
                .iter()
                .map(|(field, rules)| format!("{field}: {}", rules.join(", ")))
                .collect();
            format!("validation failed ({})", details.join("; "))
        }
        ApiError::NotFound(message) => message.clone(),
        ApiError::Forbidden => "not permitted".to_owned(),
        other => other.to_string(),
    }
}
