//! Entity families: the default families every tenant starts with, and their storage
//! (`store/families.rs`). Every function takes the tenant it acts for; no query reads across
//! tenants.

use anyhow::Context as _;

/// What families can be sorted by (the store orders by it).
pub use crate::store::families::FamilySort;
use crate::store::families::{self as store, FamilyInsert, FamilyRow};
use tessera_http::paging::OffsetPage;
use tessera_storage::{Database, Tx, time};

/// A family and its status pipeline; the first status is the default of new entities.
#[derive(Debug, Clone, Copy)]
pub struct FamilyTemplate {
    pub code: &'static str,
    pub label: &'static str,
    pub statuses: &'static [&'static str],
}

/// The families created with every tenant (CONTRACT §6).
pub const DEFAULT_FAMILIES: [FamilyTemplate; 4] = [
    FamilyTemplate {
        code: "contact",
        label: "Contact",
        statuses: &["active", "archived"],
    },
    FamilyTemplate {
        code: "company",
        label: "Company",
        statuses: &["active", "archived"],
    },
    FamilyTemplate {
        code: "deal",
        label: "Deal",
        statuses: &["lead", "qualified", "proposal", "won", "lost"],
    },
    FamilyTemplate {
        code: "task",
        label: "Task",
        statuses: &["todo", "in_progress", "done"],
    },
];

/// Creates the default families of a new tenant inside its creation transaction.
pub async fn create_default_families(tx: &mut Tx, tenant_id: &str) -> anyhow::Result<()> {
    let created_at = time::now();
    for family in DEFAULT_FAMILIES {
        let id = uuid::Uuid::new_v4().to_string();
        let statuses = serde_json::to_string(family.statuses).context("encoding statuses")?;
        let row = FamilyInsert {
            id: &id,
            tenant_id,
            code: family.code,
            label: family.label,
            statuses: &statuses,
            created_at: &created_at,
        };
        store::insert_default(tx, &row).await?;
    }
    Ok(())
}

/// A family as the API shows it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Family {
    pub id: String,
    pub code: String,
    pub label: String,
    /// The status pipeline; the first is the default of new entities.
    pub statuses: Vec<String>,
    pub created_at: String,
}

/// An item of `GET /core/api/v1/families`.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct FamilyItem {
    pub id: String,
    pub code: String,
    pub label: String,
}

/// One page of a tenant's families, and the total.
pub async fn list(
    database: &Database,
    tenant_id: &str,
    sort: FamilySort,
    descending: bool,
    page: &OffsetPage,
) -> anyhow::Result<(Vec<FamilyItem>, u64)> {
    let total = store::count(database, tenant_id).await?;
    let items = store::page(database, tenant_id, sort, descending, page)
        .await?
        .into_iter()
        .map(|(id, code, label)| FamilyItem { id, code, label })
        .collect();
    Ok((items, u64::try_from(total).unwrap_or(0)))
}

fn family_of(row: FamilyRow) -> anyhow::Result<Family> {
    let (id, code, label, statuses, created_at) = row;
    Ok(Family {
        id,
        code,
        label,
        statuses: serde_json::from_str(&statuses).context("decoding a family's statuses")?,
        created_at,
    })
}

/// A tenant's family by code.
pub async fn find(
    database: &Database,
    tenant_id: &str,
    code: &str,
) -> anyhow::Result<Option<Family>> {
    let row = store::find(database, tenant_id, code).await?;
    row.map(family_of).transpose()
}

/// A tenant's family by code, inside a transaction.
pub async fn find_in(tx: &mut Tx, tenant_id: &str, code: &str) -> anyhow::Result<Option<Family>> {
    let row = store::find_in(tx, tenant_id, code).await?;
    row.map(family_of).transpose()
}

/// Families by tenant and code, kept in memory: a family is never changed or deleted once
/// created, so a cached one is never stale (absent ones are not cached).
#[derive(Clone)]
pub struct FamilyCache {
    families: moka::future::Cache<(String, String), Family>,
}

impl Default for FamilyCache {
    fn default() -> Self {
        Self {
            families: moka::future::Cache::builder()
                .max_capacity(10_000)
                .time_to_idle(std::time::Duration::from_secs(600))
                .build(),
        }
    }
}

impl FamilyCache {
    /// A tenant's family by code, from memory or the database.
    pub async fn find(
        &self,
        database: &Database,
        tenant_id: &str,
        code: &str,
    ) -> anyhow::Result<Option<Family>> {
        let key = (tenant_id.to_owned(), code.to_owned());
        if let Some(family) = self.families.get(&key).await {
            return Ok(Some(family));
        }
        let found = find(database, tenant_id, code).await?;
        if let Some(family) = &found {
            self.families.insert(key, family.clone()).await;
        }
        Ok(found)
    }
}

/// Creates a family; `None` when the tenant already has one with that code.
pub async fn create(
    database: &Database,
    tenant_id: &str,
    code: &str,
    label: &str,
    statuses: &[String],
) -> anyhow::Result<Option<Family>> {
    let family = Family {
        id: uuid::Uuid::new_v4().to_string(),
        code: code.to_owned(),
        label: label.to_owned(),
        statuses: statuses.to_vec(),
        created_at: time::now(),
    };
    let statuses = serde_json::to_string(&family.statuses)?;
    let row = FamilyInsert {
        id: &family.id,
        tenant_id,
        code: &family.code,
        label: &family.label,
        statuses: &statuses,
        created_at: &family.created_at,
    };
    let inserted = store::insert(database, &row).await?;
    Ok(inserted.then_some(family))
}
