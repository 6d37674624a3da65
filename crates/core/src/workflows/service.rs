//! Workflows as the domain sees them: a stored workflow with its parsed `Definition`, the
//! views the API shows, and the operations the routes and the runner call, which turn the
//! store's rows (`store.rs`) into workflows and back and hold what is not SQL (applying a
//! patch, the activation rules).

use anyhow::Context as _;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::definition::{self, Action, Condition, Definition, Trigger};
use super::store::{self, WorkflowRow, WorkflowRun};
use tessera_http::paging::OffsetPage;
use tessera_storage::{Database, Tx, time};

/// A stored workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct Workflow {
    pub id: String,
    pub tenant_id: String,
    pub definition: Definition,
    pub is_active: bool,
    pub created_at: String,
    pub updated_at: String,
}

/// A workflow as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct WorkflowView {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// `entity.created`, `entity.updated`, `entity.deleted` or `entity.status_changed`.
    pub trigger_event: String,
    /// Only entities of this family trigger the workflow (`null`: any family).
    pub family: Option<String>,
    /// `[{field, operator, value}]`, all of which must hold.
    #[schema(value_type = Vec<Object>)]
    pub conditions: Value,
    /// `[{type, config}]`, executed in order.
    #[schema(value_type = Vec<Object>)]
    pub actions: Value,
    pub is_active: bool,
    pub created_at: String,
    pub updated_at: String,
}

/// The answer to activate and deactivate.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct WorkflowActivation {
    pub id: String,
    pub name: String,
    pub is_active: bool,
}

impl Workflow {
    pub fn view(&self) -> WorkflowView {
        let definition = &self.definition;
        WorkflowView {
            id: self.id.clone(),
            name: definition.name.clone(),
            description: definition.description.clone(),
            trigger_event: definition.trigger.as_str().to_owned(),
            family: definition.family.clone(),
            conditions: definition::conditions_json(&definition.conditions),
            actions: definition::actions_json(&definition.actions),
            is_active: self.is_active,
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
        }
    }

    pub fn activation(&self) -> WorkflowActivation {
        WorkflowActivation {
            id: self.id.clone(),
            name: self.definition.name.clone(),
            is_active: self.is_active,
        }
    }

    /// The workflow a stored row holds; an error when its stored definition no longer
    /// parses.
    fn from_row(row: WorkflowRow) -> anyhow::Result<Self> {
        let id = row.id;
        let decode = |text: &str, what: &str| -> anyhow::Result<Value> {
            serde_json::from_str(text)
                .with_context(|| format!("decoding the {what} of workflow {id}"))
        };
        let conditions: Vec<Condition> =
            definition::parse_conditions(&decode(&row.conditions, "conditions")?)
                .map_err(|errors| anyhow::anyhow!("stored conditions of {id}: {errors:?}"))?;
        let actions: Vec<Action> = definition::parse_actions(&decode(&row.actions, "actions")?)
            .map_err(|errors| anyhow::anyhow!("stored actions of {id}: {errors:?}"))?;
        let trigger = Trigger::parse(&row.trigger_event)
            .with_context(|| format!("workflow {id} has an unknown trigger"))?;
        Ok(Workflow {
            id,
            tenant_id: row.tenant_id,
            definition: Definition {
                name: row.name,
                description: row.description,
                trigger,
                family: row.family_code,
                conditions,
                actions,
            },
            is_active: row.is_active,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }

    /// The row that stores the workflow.
    fn to_row(&self) -> WorkflowRow {
        let definition = &self.definition;
        WorkflowRow {
            id: self.id.clone(),
            tenant_id: self.tenant_id.clone(),
            name: definition.name.clone(),
            description: definition.description.clone(),
            trigger_event: definition.trigger.as_str().to_owned(),
            family_code: definition.family.clone(),
            conditions: definition::conditions_json(&definition.conditions).to_string(),
            actions: definition::actions_json(&definition.actions).to_string(),
            is_active: self.is_active,
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
        }
    }
}

/// Stores a new, inactive workflow.
pub async fn create(
    database: &Database,
    tenant_id: &str,
    created_by: &str,
    definition: Definition,
) -> anyhow::Result<Workflow> {
    let now = time::now();
    let workflow = Workflow {
        id: uuid::Uuid::now_v7().to_string(),
        tenant_id: tenant_id.to_owned(),
        definition,
        is_active: false,
        created_at: now.clone(),
        updated_at: now,
    };
    store::insert(database, &workflow.to_row(), created_by).await?;
    Ok(workflow)
}

/// One page of the tenant's workflows, newest first, and their total.
pub async fn list(
    database: &Database,
    tenant_id: &str,
    page: &OffsetPage,
) -> anyhow::Result<(Vec<Workflow>, u64)> {
    let total = store::count(database, tenant_id).await?;
    let workflows = store::list(database, tenant_id, page)
        .await?
        .into_iter()
        .map(Workflow::from_row)
        .collect::<anyhow::Result<_>>()?;
    Ok((workflows, total))
}

/// A workflow of the tenant.
pub async fn find(
    database: &Database,
    tenant_id: &str,
    id: &str,
) -> anyhow::Result<Option<Workflow>> {
    store::find(database, tenant_id, id)
        .await?
        .map(Workflow::from_row)
        .transpose()
}

/// The tenant's workflow, read in a transaction that will change it.
async fn find_for_update(
    tx: &mut Tx,
    tenant_id: &str,
    id: &str,
) -> anyhow::Result<Option<Workflow>> {
    store::find_for_update(tx, tenant_id, id)
        .await?
        .map(Workflow::from_row)
        .transpose()
}

/// Applies a change to the tenant's workflow (`None` when there is none), keeping its state.
pub async fn update(
    database: &Database,
    tenant_id: &str,
    id: &str,
    patch: definition::Patch,
) -> anyhow::Result<Option<Workflow>> {
    let mut tx = database.begin().await?;
    let Some(mut workflow) = find_for_update(&mut tx, tenant_id, id).await? else {
        tx.rollback().await?;
        return Ok(None);
    };
    workflow.definition.apply(patch);
    workflow.updated_at = time::now();
    store::update_definition(&mut tx, &workflow.to_row()).await?;
    tx.commit().await?;
    Ok(Some(workflow))
}

/// What a state change found.
#[derive(Debug)]
pub enum Activation {
    Changed(Box<Workflow>),
    /// Already in the requested state (409).
    AlreadyThere,
    /// The tenant already has this many active workflows, its limit (409).
    LimitReached(u32),
    NotFound,
}

/// Activates or deactivates the tenant's workflow, atomically: of two concurrent activations
/// exactly one changes it, and activations never take the tenant beyond `max_active` active
/// workflows (concurrent ones included: on PostgreSQL they queue on the tenant's row, on
/// SQLite writers are serialized).
pub async fn set_active(
    database: &Database,
    tenant_id: &str,
    id: &str,
    active: bool,
    max_active: u32,
) -> anyhow::Result<Activation> {
    let mut tx = database.begin().await?;
    if active {
        store::lock_tenant_activations(&mut tx, tenant_id).await?;
    }
    let Some(mut workflow) = find_for_update(&mut tx, tenant_id, id).await? else {
        tx.rollback().await?;
        return Ok(Activation::NotFound);
    };
    if workflow.is_active == active {
        tx.rollback().await?;
        return Ok(Activation::AlreadyThere);
    }
    if active && store::count_active(&mut tx, tenant_id).await? >= i64::from(max_active) {
        tx.rollback().await?;
        return Ok(Activation::LimitReached(max_active));
    }
    workflow.is_active = active;
    workflow.updated_at = time::now();
    store::update_active(&mut tx, tenant_id, id, active, &workflow.updated_at).await?;
    tx.commit().await?;
    Ok(Activation::Changed(Box::new(workflow)))
}

/// The tenant's active workflows with this trigger, oldest first (their order of execution).
pub async fn active_for(
    tx: &mut Tx,
    tenant_id: &str,
    trigger: Trigger,
) -> anyhow::Result<Vec<Workflow>> {
    store::active_for(tx, tenant_id, trigger.as_str())
        .await?
        .into_iter()
        .map(Workflow::from_row)
        .collect()
}

/// One page of a workflow's runs, newest first, and their total; `None` when the tenant has
/// neither the workflow nor any run of it (a deleted workflow's history stays readable).
pub async fn runs(
    database: &Database,
    tenant_id: &str,
    workflow_id: &str,
    page: &OffsetPage,
) -> anyhow::Result<Option<(Vec<WorkflowRun>, u64)>> {
    let total = store::count_runs(database, tenant_id, workflow_id).await?;
    if total == 0 && find(database, tenant_id, workflow_id).await?.is_none() {
        return Ok(None);
    }
    let runs = store::list_runs(database, tenant_id, workflow_id, page).await?;
    Ok(Some((runs, total)))
}
