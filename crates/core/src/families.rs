//! Entity families: the default families every tenant starts with, and their storage. Every
//! function takes the tenant it acts for; no query here reads across tenants.

use anyhow::Context as _;

use tessera_storage::on_tx;
use tessera_storage::{Tx, time};

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
        on_tx!(tx, conn => sqlx::query(
            "INSERT INTO families (id, tenant_id, code, label, statuses, created_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&id)
        .bind(tenant_id)
        .bind(family.code)
        .bind(family.label)
        .bind(&statuses)
        .bind(&created_at)
        .execute(&mut **conn)
        .await
        .map(drop))
        .with_context(|| format!("creating the default family {}", family.code))?;
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
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct FamilyItem {
    pub id: String,
    pub code: String,
    pub label: String,
}

/// What families can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FamilySort {
    Code,
    Label,
    CreatedAt,
}

impl FamilySort {
    fn column(self) -> &'static str {
        match self {
            Self::Code => "code",
            Self::Label => "label",
            Self::CreatedAt => "created_at",
        }
    }
}

/// One page of a tenant's families, and the total.
pub async fn list(
    database: &tessera_storage::Database,
    tenant_id: &str,
    sort: FamilySort,
    descending: bool,
    page: &tessera_http::paging::OffsetPage,
) -> anyhow::Result<(Vec<FamilyItem>, u64)> {
    let total: i64 = tessera_storage::on_pool!(database, pool => sqlx::query_scalar(
        "SELECT COUNT(*) FROM families WHERE tenant_id = $1",
    )
    .bind(tenant_id)
    .fetch_one(pool)
    .await)
    .context("counting families")?;
    let order = if descending { "DESC" } else { "ASC" };
    // The column and direction come from enums, never from the request text.
    let sql = format!(
        "SELECT id, code, label FROM families WHERE tenant_id = $1
         ORDER BY {} {order}, id {order} LIMIT $2 OFFSET $3",
        sort.column()
    );
    let items = tessera_storage::on_pool!(database, pool => sqlx::query_as::<_, FamilyItem>(sqlx::AssertSqlSafe(sql.clone()))
        .bind(tenant_id)
        .bind(page.limit())
        .bind(page.offset())
        .fetch_all(pool)
        .await)
    .context("listing families")?;
    Ok((items, u64::try_from(total).unwrap_or(0)))
}

type FamilyRow = (String, String, String, String, String);

const FAMILY_BY_CODE: &str =
    "SELECT id, code, label, statuses, created_at FROM families WHERE tenant_id = $1 AND code = $2";

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
    database: &tessera_storage::Database,
    tenant_id: &str,
    code: &str,
) -> anyhow::Result<Option<Family>> {
    let row: Option<FamilyRow> =
        tessera_storage::on_pool!(database, pool => sqlx::query_as(FAMILY_BY_CODE)
        .bind(tenant_id)
        .bind(code)
        .fetch_optional(pool)
        .await)
        .context("reading a family")?;
    row.map(family_of).transpose()
}

/// A tenant's family by code, inside a transaction.
pub async fn find_in(tx: &mut Tx, tenant_id: &str, code: &str) -> anyhow::Result<Option<Family>> {
    let row: Option<FamilyRow> = on_tx!(tx, conn => sqlx::query_as(FAMILY_BY_CODE)
        .bind(tenant_id)
        .bind(code)
        .fetch_optional(&mut **conn)
        .await)
    .context("reading a family")?;
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
        database: &tessera_storage::Database,
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
    database: &tessera_storage::Database,
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
    let inserted = tessera_storage::on_pool!(database, pool => sqlx::query(
        "INSERT INTO families (id, tenant_id, code, label, statuses, created_at)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, code) DO NOTHING",
    )
    .bind(&family.id)
    .bind(tenant_id)
    .bind(&family.code)
    .bind(&family.label)
    .bind(serde_json::to_string(&family.statuses)?)
    .bind(&family.created_at)
    .execute(pool)
    .await
    .map(|result| result.rows_affected()))
    .context("creating a family")?;
    Ok((inserted == 1).then_some(family))
}
