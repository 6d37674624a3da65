//! The workflow runner: the `workflow` worker's consumer of the event log. For each
//! intention in a batch it finds the trigger (`entity.created`, `entity.updated`,
//! `entity.deleted`, `entity.status_changed`), the tenant's active workflows that react to it,
//! evaluates their conditions against the entity as that intention left it, executes the
//! actions in order through intentions, and records a run.
//!
//! A batch is run in three steps: every matching workflow's actions are planned (templates
//! rendered, intentions validated and prepared, recipients checked); all planned intentions
//! are decided in one chained batch (`intentions::apply_chained_batch`), in trigger order and
//! each run's actions in order, so each sees the effects of the ones before it exactly as if
//! the runs had executed one after another, and a refused action skips the rest of its run;
//! then the notifications of the actions that took effect are appended and the runs recorded,
//! with multi-row writes. (Notifications come after the batch's intention events in the log.)
//!
//! Everything happens in the batch's transaction, with the worker's checkpoint: a crash or
//! restart mid-batch rolls back the actions and the runs together, and the batch is applied
//! again, so each trigger runs each workflow exactly once. The actions' events are appended
//! one hop deeper than their trigger, and events at [`MAX_DEPTH`] trigger nothing.
//!
//! A chain (everything workflows do, at every depth, because of one person's intention, its
//! root) has a budget of writes: the intentions its actions execute
//! (`TESSERA_WORKFLOW_CHAIN_WRITE_BUDGET`). Each intention a workflow executes is recorded
//! with its root in `workflow_chain_writes`, in the batch's transaction, so a later trigger
//! of the chain finds its root and the count of its writes whichever batch, restart or host
//! runs it, and a re-run batch never counts twice. A run whose next write would exceed the
//! budget fails there with that reason; nothing more of the chain is executed.
//!
//! It is not a read model: `tessera admin rebuild-projections` leaves it alone, since
//! replaying it would run actions again.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::Context as _;
use serde_json::{Map, Value, json};

use super::conditions::{self, Subject};
use super::definition::{Action, Trigger};
use super::service::{self, Workflow};
use super::store::{self, ChainWrite, RunRecord, WorkflowRun};
use super::templates::{self, Context};
use crate::events::{self, AppendGroup, EntityState, EventContext, NewEvent, StoredEvent};
use crate::families;
use crate::intentions::{self, Intention, IntentionError, Prepared, Submitter};
use crate::projections::projection::Projection;
use tessera_storage::{Tx, time};

/// Events at this depth (three workflow hops from a person's intention) trigger nothing:
/// a workflow that triggers itself runs at most three times per intention.
pub const MAX_DEPTH: i64 = 3;

/// Runs the tenants' workflows.
#[derive(Debug, Clone)]
pub struct WorkflowRunner {
    /// Intentions workflows may execute in one chain (`TESSERA_WORKFLOW_CHAIN_WRITE_BUDGET`).
    pub chain_write_budget: u32,
}

impl Projection for WorkflowRunner {
    fn name(&self) -> &'static str {
        "workflow"
    }

    async fn apply(&self, tx: &mut Tx, events: &[StoredEvent]) -> anyhow::Result<()> {
        let mut active: HashMap<(String, Trigger), Vec<Workflow>> = HashMap::new();
        // Each trigger with the workflows (indices in `active`) whose conditions hold.
        let mut matched: Vec<(Triggered<'_>, Vec<usize>)> = Vec::new();
        for event in events {
            let Some((trigger, entity_id, recorded)) = Triggered::recorded(event) else {
                continue;
            };
            if event.depth >= MAX_DEPTH {
                continue;
            }
            let key = (event.tenant_id.clone(), trigger);
            if !active.contains_key(&key) {
                let workflows = service::active_for(tx, &key.0, key.1).await?;
                active.insert(key.clone(), workflows);
            }
            if active[&key].is_empty() {
                // No workflow to evaluate: the state is not even decoded.
                continue;
            }
            let triggered = match Triggered::of(tx, event, trigger, entity_id, recorded).await? {
                Ok(triggered) => triggered,
                Err(error) => {
                    // A malformed entity state would otherwise stop every workflow for good.
                    tracing::warn!(
                        event_id = %event.id,
                        error = format!("{error:#}"),
                        "the workflow runner skips an undecodable event"
                    );
                    continue;
                }
            };
            let subject = triggered.subject();
            let workflows: Vec<usize> = active[&key]
                .iter()
                .enumerate()
                .filter(|(_, workflow)| {
                    workflow
                        .definition
                        .reacts_to(triggered.trigger, &triggered.state.family)
                        && conditions::all_hold(&workflow.definition.conditions, &subject)
                })
                .map(|(index, _)| index)
                .collect();
            if !workflows.is_empty() {
                matched.push((triggered, workflows));
            }
        }
        if matched.is_empty() {
            return Ok(());
        }
        let mut budget = ChainBudget::load(
            tx,
            matched.iter().map(|(triggered, _)| triggered),
            self.chain_write_budget,
        )
        .await?;
        let mut planned = Vec::new();
        for (triggered, workflows) in &matched {
            let key = (triggered.event.tenant_id.clone(), triggered.trigger);
            for &index in workflows {
                let workflow = &active[&key][index];
                planned.push(plan(tx, workflow, triggered, &mut budget).await?);
            }
        }
        execute(tx, planned).await
    }

    async fn reset(&self, _tx: &mut Tx) -> anyhow::Result<bool> {
        Ok(false)
    }
}

/// An intention that triggers workflows, from its first event (which carries the entity
/// state, or a creation's status with its events in the log, so an intention split across
/// batches is still seen whole).
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
    /// The trigger an intention's first event stands for, its entity and the state its group
    /// recorded: creation, deletion, a status change, or (field events) one `entity.updated`
    /// however many fields changed. `None` for every other event.
    fn recorded(event: &'a StoredEvent) -> Option<(Trigger, &'a str, &'a str)> {
        let (Some(entity_id), Some(state)) = (&event.entity_id, &event.entity_state) else {
            return None;
        };
        let trigger = match event.event_type.as_str() {
            "entity.created" => Trigger::EntityCreated,
            "entity.deleted" => Trigger::EntityDeleted,
            "entity.status_changed" => Trigger::EntityStatusChanged,
            "entity.field_set" | "entity.field_updated" => Trigger::EntityUpdated,
            _ => return None,
        };
        Some((trigger, entity_id, state))
    }

    /// The trigger with the entity as its intention left it: the recorded state, or for a
    /// creation, which records only its status, the state its events describe (read from the
    /// log: the intention's events need not all be in this batch). The inner error is an
    /// undecodable state, which the runner skips; the outer one a failed read.
    async fn of(
        tx: &mut Tx,
        event: &'a StoredEvent,
        trigger: Trigger,
        entity_id: &'a str,
        recorded: &str,
    ) -> anyhow::Result<anyhow::Result<Self>> {
        let recorded: events::RecordedState = match serde_json::from_str(recorded) {
            Ok(recorded) => recorded,
            Err(error) => {
                return Ok(Err(anyhow::Error::new(error).context(format!(
                    "decoding the entity state on event {}",
                    event.id
                ))));
            }
        };
        let state = match recorded {
            events::RecordedState::Whole(state) => state,
            events::RecordedState::Created { status } => {
                let followers = crate::store::events::group_followers(
                    tx,
                    &event.tenant_id,
                    event.group_first_sequence(),
                )
                .await?;
                match EntityState::of_creation(event, status, &followers) {
                    Ok(state) => state,
                    Err(error) => return Ok(Err(error)),
                }
            }
        };
        let changed = state.changed.iter().cloned().collect();
        Ok(Ok(Self {
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

    /// The intention that caused this trigger.
    fn intention_id(&self) -> &'a str {
        self.event.intention_id.as_deref().unwrap_or(&self.event.id)
    }

    /// The person whose intention started the chain (workflow writes carry it on).
    fn current_user(&self) -> &str {
        self.event
            .actor_id
            .as_deref()
            .unwrap_or(&self.state.created_by)
    }
}

/// The writes of the chains a batch runs in: how many each has made (recorded by earlier
/// batches) or reserved (by runs planned in this one).
struct ChainBudget {
    budget: i64,
    /// The root intention of each trigger, by its intention id.
    roots: HashMap<String, String>,
    /// Writes per root.
    spent: HashMap<String, i64>,
}

impl ChainBudget {
    /// Finds the chains of these triggers and what each has spent.
    async fn load<'t, 'e: 't>(
        tx: &mut Tx,
        triggers: impl Iterator<Item = &'t Triggered<'e>>,
        budget: u32,
    ) -> anyhow::Result<Self> {
        // Per tenant: the intentions whose roots are to be looked up (those of people are
        // their own roots).
        let mut per_tenant: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        let mut roots = HashMap::new();
        for triggered in triggers {
            let intention_id = triggered.intention_id();
            roots.insert(intention_id.to_owned(), intention_id.to_owned());
            if triggered.event.depth > 0 {
                per_tenant
                    .entry(&triggered.event.tenant_id)
                    .or_default()
                    .insert(intention_id);
            }
        }
        for (tenant_id, intention_ids) in &per_tenant {
            let ids: Vec<&str> = intention_ids.iter().copied().collect();
            roots.extend(store::chain_roots(tx, tenant_id, &ids).await?);
        }
        let mut spent = HashMap::new();
        for (tenant_id, intention_ids) in &per_tenant {
            let chains: BTreeSet<&str> =
                intention_ids.iter().map(|id| roots[*id].as_str()).collect();
            let chains: Vec<&str> = chains.into_iter().collect();
            spent.extend(store::chain_writes(tx, tenant_id, &chains).await?);
        }
        Ok(Self {
            budget: i64::from(budget),
            roots,
            spent,
        })
    }

    /// The root intention of the chain this trigger belongs to.
    fn root_of(&self, triggered: &Triggered<'_>) -> String {
        let intention_id = triggered.intention_id();
        self.roots
            .get(intention_id)
            .map_or_else(|| intention_id.to_owned(), Clone::clone)
    }

    /// Reserves one write of the chain; `false` when its budget is spent.
    fn take(&mut self, root: &str) -> bool {
        let spent = self.spent.entry(root.to_owned()).or_default();
        if *spent >= self.budget {
            return false;
        }
        *spent += 1;
        true
    }

    /// Gives back a reservation whose action was refused before it was executed.
    fn give_back(&mut self, root: &str) {
        if let Some(spent) = self.spent.get_mut(root) {
            *spent -= 1;
        }
    }

    /// Why a run fails when its chain's budget is spent.
    fn spent_reason(&self, root: &str) -> String {
        format!(
            "the write budget of {} intentions of the workflow chain started by intention \
             {root} is spent; the rest of the chain is not executed",
            self.budget
        )
    }
}

/// One action of a planned run.
enum PlannedAction {
    /// Decided with the batch's other intentions.
    Intention(Prepared),
    /// `notification.created`, appended once the actions before it took effect.
    Notification(NewEvent),
}

/// A run whose actions are ready to execute.
struct PlannedRun {
    workflow_id: String,
    trigger_event_id: String,
    depth: i64,
    /// The root intention of the chain the run belongs to.
    root: String,
    submitter: Submitter,
    started_at: String,
    /// `(type name, action)` in order, up to the first action that could not be planned.
    actions: Vec<(&'static str, PlannedAction)>,
    /// Why the next action could not be planned (the run fails there).
    planning_failure: Option<String>,
}

/// Renders and checks one workflow's actions for one trigger.
async fn plan(
    tx: &mut Tx,
    workflow: &Workflow,
    triggered: &Triggered<'_>,
    budget: &mut ChainBudget,
) -> anyhow::Result<PlannedRun> {
    let root = budget.root_of(triggered);
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
        traceparent: triggered.event.traceparent.clone(),
    };
    let mut actions = Vec::with_capacity(workflow.definition.actions.len());
    let mut planning_failure = None;
    for (index, action) in workflow.definition.actions.iter().enumerate() {
        let writes = action.executes_intention();
        if writes && !budget.take(&root) {
            planning_failure = Some(failure(
                index,
                action.type_name(),
                &budget.spent_reason(&root),
            ));
            break;
        }
        match plan_action(tx, action, &context, &submitter, workflow).await? {
            Ok(planned) => actions.push((action.type_name(), planned)),
            Err(reason) => {
                if writes {
                    budget.give_back(&root);
                }
                planning_failure = Some(failure(index, action.type_name(), &reason));
                break;
            }
        }
    }
    Ok(PlannedRun {
        workflow_id: workflow.id.clone(),
        trigger_event_id: triggered.event.id.clone(),
        depth: triggered.event.depth,
        root,
        submitter,
        started_at,
        actions,
        planning_failure,
    })
}

fn failure(index: usize, type_name: &str, reason: &str) -> String {
    format!("action {index} ({type_name}) failed: {reason}")
}

/// One action made ready: `Ok(Err(reason))` when it is refused already (the run fails there),
/// `Err` when the database fails (the batch is retried).
async fn plan_action(
    tx: &mut Tx,
    action: &Action,
    context: &Context<'_>,
    submitter: &Submitter,
    workflow: &Workflow,
) -> anyhow::Result<Result<PlannedAction, String>> {
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
            return Ok(
                notification(context, workflow, recipient, title, message.as_deref())
                    .map(PlannedAction::Notification),
            );
        }
    };
    let intention = match Intention::parse(Some(kind), Some(&payload)) {
        Ok(intention) => intention,
        Err(errors) => return Ok(Err(describe(&IntentionError::Validation(errors)))),
    };
    let family = match &intention {
        Intention::Create { family, .. } => {
            families::find_in(tx, &submitter.tenant_id, family).await?
        }
        _ => None,
    };
    Ok(intentions::prepare_with_family(intention, family)
        .map(PlannedAction::Intention)
        .map_err(|refusal| describe(&refusal)))
}

/// `send_notification`: the `notification.created` event the projector turns into an inbox
/// item of the recipient.
fn notification(
    context: &Context<'_>,
    workflow: &Workflow,
    recipient: &str,
    title: &str,
    message: Option<&str>,
) -> Result<NewEvent, String> {
    let recipient = templates::render_text(recipient, context);
    let Ok(recipient_id) = uuid::Uuid::try_parse(recipient.trim()) else {
        return Err(format!("the recipient {recipient:?} is not a user id"));
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
    Ok(NewEvent {
        event_type: "notification.created".to_owned(),
        entity_id: Some(context.subject.entity_id.to_owned()),
        data,
    })
}

/// Executes the planned runs of a batch and records them.
async fn execute(tx: &mut Tx, planned: Vec<PlannedRun>) -> anyhow::Result<()> {
    let mut jobs = Vec::new();
    let mut continues_previous = Vec::new();
    let mut chain_writes = Vec::new();
    for run in &planned {
        let mut first = true;
        for (_, action) in &run.actions {
            if let PlannedAction::Intention(prepared) = action {
                jobs.push((run.submitter.clone(), prepared.clone()));
                continues_previous.push(!first);
                first = false;
            }
        }
    }
    let mut outcomes = intentions::apply_chained_batch(tx, &jobs, &continues_previous)
        .await?
        .into_iter();

    let mut contexts: Vec<EventContext> = Vec::new();
    let mut notifications: Vec<NewEvent> = Vec::new();
    let mut records = Vec::with_capacity(planned.len());
    for run in planned {
        let mut actions_executed = 0;
        let mut error = None;
        for (index, (type_name, action)) in run.actions.into_iter().enumerate() {
            match action {
                PlannedAction::Intention(_) => {
                    let outcome = outcomes.next().context("an outcome per intention")?;
                    if error.is_some() {
                        continue;
                    }
                    match outcome {
                        Ok(processed) => {
                            actions_executed += 1;
                            chain_writes.push(ChainWrite {
                                tenant_id: run.submitter.tenant_id.clone(),
                                intention_id: processed.id,
                                root_intention_id: run.root.clone(),
                            });
                        }
                        Err(refusal) => {
                            error = Some(failure(index, type_name, &describe(&refusal)))
                        }
                    }
                }
                PlannedAction::Notification(_) if error.is_some() => {}
                PlannedAction::Notification(event) => {
                    contexts.push(EventContext {
                        tenant_id: run.submitter.tenant_id.clone(),
                        actor_id: Some(run.submitter.user_id.clone()),
                        correlation_id: run.submitter.correlation_id.clone(),
                        intention_id: None,
                        depth: run.submitter.depth,
                        traceparent: run.submitter.traceparent.clone(),
                    });
                    notifications.push(event);
                    actions_executed += 1;
                }
            }
        }
        let error = error.or(run.planning_failure);
        records.push(RunRecord {
            tenant_id: run.submitter.tenant_id,
            depth: run.depth,
            run: WorkflowRun {
                id: uuid::Uuid::now_v7().to_string(),
                workflow_id: run.workflow_id,
                trigger_event_id: run.trigger_event_id,
                status: if error.is_none() {
                    "completed"
                } else {
                    "failed"
                }
                .to_owned(),
                error,
                started_at: run.started_at,
                completed_at: time::now(),
                actions_executed,
            },
        });
    }
    if !notifications.is_empty() {
        let occurred_at = time::now();
        let groups: Vec<AppendGroup<'_>> = contexts
            .iter()
            .zip(&notifications)
            .map(|(context, event)| AppendGroup {
                context,
                events: std::slice::from_ref(event),
                occurred_at: &occurred_at,
                entity_state: None,
            })
            .collect();
        events::append_groups(tx, &groups).await?;
    }
    store::record_chain_writes(tx, &chain_writes).await?;
    let recorded = store::record_runs(tx, &records).await?;
    if recorded < records.len() as u64 {
        tracing::warn!(
            runs = records.len(),
            recorded,
            "some workflow runs were already recorded for their trigger"
        );
    }
    Ok(())
}

/// A refused intention, in words for the run's `error`.
fn describe(refusal: &IntentionError) -> String {
    match refusal {
        IntentionError::Validation(errors) => {
            let details: Vec<String> = errors
                .fields()
                .iter()
                .map(|(field, rules)| format!("{field}: {}", rules.join(", ")))
                .collect();
            format!("validation failed ({})", details.join("; "))
        }
        IntentionError::NotFound(message) => message.clone(),
        IntentionError::Forbidden => "not permitted".to_owned(),
        other @ (IntentionError::Conflict(_) | IntentionError::Internal(_)) => other.to_string(),
    }
}
