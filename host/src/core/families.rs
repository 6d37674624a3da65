//! Entity families: the default families every tenant starts with, and their storage. Every
//! function takes the tenant it acts for; no query here reads across tenants.

use anyhow::Context as _;

use crate::on_tx;
use crate::storage::{Tx, time};

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
