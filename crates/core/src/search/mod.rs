//! Full-text search over each tenant's entities: the search projection and the query side.
//!
//! The index is the database's own full-text index behind one trait, [`FullTextIndex`]:
//! FTS5 on SQLite (`sqlite.rs`), a `tsvector` with a GIN index on PostgreSQL (`postgres.rs`),
//! each backend's SQL in `store/`. It is a plain projection of the event log with no state
//! outside the database, so it works embedded and with several hosts sharing one PostgreSQL.
//! Both backends store the same tokens (but for the padding of the tenant key), made in Rust
//! (`query.rs`): every token starts with the tenant's key, so a term of the index belongs to
//! exactly one tenant, and every query is also filtered by tenant id.
//!
//! - **Write side**: [`SearchProjection`] groups a batch's `entity.*` events per entity, loads
//!   the touched documents once, applies the events in memory and writes each final state
//!   once (upsert, or delete for `entity.deleted`).
//! - **Read side**: [`search`] turns the parsed `q` into prefix terms on those tokens (never
//!   user text) and takes a **candidate window**: the first [`SearchLimits::max_candidates`]
//!   matching documents in the index's own order (SQLite: the order documents were first
//!   indexed; PostgreSQL: storage order, whether the planner scans the table or takes GIN's
//!   bitmap). Only those are ranked
//!   (`search_rank` on SQLite, `ts_rank` on PostgreSQL), paged and counted (`meta.total` is
//!   the window's size), so a word found in a million documents costs what a word found in a
//!   thousand does. Highlights (`highlight.rs`) are computed for the page's documents only.
//!   `GET /core/api/v1/search` is in `routes.rs`.

pub mod highlight;
mod postgres;
pub mod query;
pub(crate) mod routes;
mod sqlite;
mod store;

/// The SQLite index's page statement (its plan is checked by a test).
pub use store::sqlite::PAGE as SQLITE_PAGE_STATEMENT;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;

use anyhow::Context as _;
use serde_json::{Map, Value};

use crate::events::{DomainEvent, StoredEvent};
use crate::projections::projection::Projection;
use query::{TenantKey, Term};
use tessera_storage::{Database, Pool, Tx, TxInner};

pub use postgres::PostgresIndex;
pub use sqlite::SqliteIndex;

/// The search index as a projection of the event log.
#[derive(Debug, Clone, Default)]
pub struct SearchProjection;

impl Projection for SearchProjection {
    fn name(&self) -> &'static str {
        "search"
    }

    async fn apply(&self, tx: &mut Tx, events: &[StoredEvent]) -> anyhow::Result<()> {
        match &mut tx.inner {
            TxInner::Sqlite(conn) => apply_with::<SqliteIndex>(conn, events).await,
            TxInner::Postgres(conn) => apply_with::<PostgresIndex>(conn, events).await,
        }
    }

    async fn reset(&self, tx: &mut Tx) -> anyhow::Result<bool> {
        match &mut tx.inner {
            TxInner::Sqlite(conn) => SqliteIndex::clear(conn).await?,
            TxInner::Postgres(conn) => PostgresIndex::clear(conn).await?,
        }
        Ok(true)
    }
}

/// Deletes everything the search index holds for the tenant, inside `tx`; returns how many
/// documents (`tessera admin delete-tenant`).
pub async fn erase_tenant(tx: &mut Tx, tenant_id: &str) -> anyhow::Result<u64> {
    match &mut tx.inner {
        TxInner::Sqlite(conn) => SqliteIndex::erase_tenant(conn, tenant_id).await,
        TxInner::Postgres(conn) => PostgresIndex::erase_tenant(conn, tenant_id).await,
    }
}

/// An entity as the index holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub entity_id: String,
    pub family_code: String,
    /// Field → value as last set.
    pub fields: Map<String, Value>,
}

impl Document {
    /// A document from its stored row (`fields`: JSON object text).
    pub fn from_row(entity_id: String, family_code: String, fields: &str) -> anyhow::Result<Self> {
        let fields = match serde_json::from_str(fields)
            .with_context(|| format!("decoding the search document of {entity_id}"))?
        {
            Value::Object(fields) => fields,
            _ => anyhow::bail!("the search document of {entity_id} is not an object"),
        };
        Ok(Self {
            entity_id,
            family_code,
            fields,
        })
    }
}

/// What an operator bounds about search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    /// Matching documents a search ranks at most (`TESSERA_SEARCH_MAX_CANDIDATES`): a query
    /// matching more ranks the first this many in the index's order, and `meta.total` says
    /// this many. It bounds the cost of a search whatever the number of matches.
    pub max_candidates: u32,
}

impl Default for SearchLimits {
    fn default() -> Self {
        Self {
            max_candidates: 500,
        }
    }
}

/// One search, as the index runs it.
#[derive(Debug, Clone)]
pub struct IndexQuery<'a> {
    pub tenant_id: &'a str,
    /// ANDed; never empty.
    pub terms: &'a [Term],
    pub family: Option<&'a str>,
    pub limit: i64,
    pub offset: i64,
    /// The candidate window: matches ranked and counted at most.
    pub window: i64,
}

/// A document of a result page, with its backend score (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub entity_id: String,
    pub family_code: String,
    /// JSON object text.
    pub fields: String,
    pub score: f64,
}

/// The connection type of an index's database.
pub type Connection<I> = <<I as FullTextIndex>::Db as sqlx::Database>::Connection;

/// A database's full-text index of search documents. Every method is bounded by one tenant
/// except [`FullTextIndex::clear`]; writes go through the caller's transaction.
pub trait FullTextIndex {
    type Db: sqlx::Database;

    /// The tenant's key, assigned on first use.
    fn tenant_key(
        conn: &mut Connection<Self>,
        tenant_id: &str,
    ) -> impl Future<Output = anyhow::Result<TenantKey>> + Send;

    /// The tenant's key if it has ever had a document.
    fn find_tenant_key(
        pool: &sqlx::Pool<Self::Db>,
        tenant_id: &str,
    ) -> impl Future<Output = anyhow::Result<Option<TenantKey>>> + Send;

    /// The stored documents of these entities of the tenant (those that exist).
    fn load(
        conn: &mut Connection<Self>,
        tenant_id: &str,
        entity_ids: &[&str],
    ) -> impl Future<Output = anyhow::Result<Vec<Document>>> + Send;

    /// Inserts or replaces these documents of the tenant; `replaced` are the stored documents
    /// some of them replace, as [`FullTextIndex::load`] gave them.
    fn store(
        conn: &mut Connection<Self>,
        tenant_id: &str,
        key: TenantKey,
        documents: &[Document],
        replaced: &[Document],
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Deletes these stored documents of the tenant (as [`FullTextIndex::load`] gave them).
    fn remove(
        conn: &mut Connection<Self>,
        tenant_id: &str,
        key: TenantKey,
        removed: &[Document],
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Deletes every document of every tenant (tenant keys stay).
    fn clear(conn: &mut Connection<Self>) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// Deletes everything the index holds for the tenant (documents, index entries, words of
    /// its dictionary, its key); returns how many documents.
    fn erase_tenant(
        conn: &mut Connection<Self>,
        tenant_id: &str,
    ) -> impl Future<Output = anyhow::Result<u64>> + Send;

    /// One page of the window of the tenant's matching documents, best first, and the
    /// window's size when the backend learns it on the way.
    fn page(
        pool: &sqlx::Pool<Self::Db>,
        key: TenantKey,
        query: &IndexQuery<'_>,
    ) -> impl Future<Output = anyhow::Result<(Vec<Hit>, Option<u64>)>> + Send;

    /// The number of the tenant's matching documents, up to the window.
    fn count(
        pool: &sqlx::Pool<Self::Db>,
        key: TenantKey,
        query: &IndexQuery<'_>,
    ) -> impl Future<Output = anyhow::Result<u64>> + Send;
}

/// Runs `query`: a page of hits and the number of matches in the window.
pub async fn search(
    database: &Database,
    query: &IndexQuery<'_>,
) -> anyhow::Result<(Vec<Hit>, u64)> {
    match database.pool() {
        Pool::Sqlite(pool) => search_with::<SqliteIndex>(pool, query).await,
        Pool::Postgres(pool) => search_with::<PostgresIndex>(pool, query).await,
    }
}

async fn search_with<I: FullTextIndex>(
    pool: &sqlx::Pool<I::Db>,
    query: &IndexQuery<'_>,
) -> anyhow::Result<(Vec<Hit>, u64)> {
    if query.terms.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let Some(key) = I::find_tenant_key(pool, query.tenant_id).await? else {
        return Ok((Vec::new(), 0));
    };
    let (hits, total) = I::page(pool, key, query).await?;
    let total = match total {
        Some(total) => total,
        // A short page that is not past the end: the total is known without counting.
        None if (hits.len() as i64) < query.limit && (!hits.is_empty() || query.offset == 0) => {
            query.offset as u64 + hits.len() as u64
        }
        None => I::count(pool, key, query).await?,
    };
    Ok((hits, total))
}

/// Applies a batch: per tenant, loads the touched documents once, folds the events into them
/// in log order, and writes each final state once.
async fn apply_with<I: FullTextIndex>(
    conn: &mut Connection<I>,
    events: &[StoredEvent],
) -> anyhow::Result<()> {
    // tenant → entity → its events, in log order.
    let mut batches: BTreeMap<&str, BTreeMap<String, Vec<DomainEvent>>> = BTreeMap::new();
    for event in events {
        let domain_event = match event.domain_event() {
            Ok(Some(domain_event)) => domain_event,
            Ok(None) => continue,
            Err(error) => {
                // A malformed event would otherwise stop the index for good.
                tracing::warn!(
                    event_id = %event.id,
                    error = format!("{error:#}"),
                    "search skips an undecodable event"
                );
                continue;
            }
        };
        batches
            .entry(&event.tenant_id)
            .or_default()
            .entry(domain_event.entity_id().to_owned())
            .or_default()
            .push(domain_event);
    }
    for (tenant_id, entities) in batches {
        let entity_ids: Vec<&str> = entities.keys().map(String::as_str).collect();
        let mut current: HashMap<String, Document> = I::load(conn, tenant_id, &entity_ids)
            .await
            .context("loading search documents")?
            .into_iter()
            .map(|document| (document.entity_id.clone(), document))
            .collect();
        let (mut stored, mut replaced, mut removed) = (Vec::new(), Vec::new(), Vec::new());
        for (entity_id, events) in &entities {
            let before = current.remove(entity_id);
            match fold(before.clone(), events) {
                Some(document) => {
                    stored.push(document);
                    replaced.extend(before);
                }
                None => removed.extend(before),
            }
        }
        if removed.is_empty() && stored.is_empty() {
            continue;
        }
        let key = I::tenant_key(conn, tenant_id)
            .await
            .context("reading the tenant's search key")?;
        if !removed.is_empty() {
            I::remove(conn, tenant_id, key, &removed)
                .await
                .context("deleting search documents")?;
        }
        if !stored.is_empty() {
            I::store(conn, tenant_id, key, &stored, &replaced)
                .await
                .context("writing search documents")?;
        }
    }
    Ok(())
}

/// An entity's document after `events` (all about it, in log order).
fn fold(mut document: Option<Document>, events: &[DomainEvent]) -> Option<Document> {
    for event in events {
        match event {
            DomainEvent::Created {
                entity_id, family, ..
            } => {
                document = Some(Document {
                    entity_id: entity_id.clone(),
                    family_code: family.clone(),
                    fields: Map::new(),
                });
            }
            DomainEvent::FieldSet { field, value, .. }
            | DomainEvent::FieldUpdated {
                field,
                new_value: value,
                ..
            } => {
                if let Some(document) = &mut document {
                    document.fields.insert(field.clone(), value.clone());
                }
            }
            DomainEvent::StatusChanged { .. } => {}
            DomainEvent::Deleted { .. } => document = None,
        }
    }
    document
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn created(id: &str) -> DomainEvent {
        DomainEvent::Created {
            entity_id: id.into(),
            family: "contact".into(),
            timestamp: String::new(),
        }
    }

    fn set(id: &str, field: &str, value: Value) -> DomainEvent {
        DomainEvent::FieldSet {
            entity_id: id.into(),
            field: field.into(),
            value,
            timestamp: String::new(),
        }
    }

    #[test]
    fn events_fold_into_the_last_state() {
        let document = fold(
            None,
            &[
                created("e"),
                set("e", "name", json!("Ada")),
                set("e", "tags", json!(["x"])),
                DomainEvent::FieldUpdated {
                    entity_id: "e".into(),
                    field: "name".into(),
                    old_value: json!("Ada"),
                    new_value: json!("Grace"),
                    timestamp: String::new(),
                },
                DomainEvent::StatusChanged {
                    entity_id: "e".into(),
                    old_status: "a".into(),
                    new_status: "b".into(),
                    timestamp: String::new(),
                },
            ],
        )
        .unwrap();
        assert_eq!(document.family_code, "contact");
        assert_eq!(
            Value::Object(document.fields.clone()),
            json!({"name": "Grace", "tags": ["x"]})
        );
        let deleted = fold(
            Some(document.clone()),
            &[DomainEvent::Deleted {
                entity_id: "e".into(),
                family: "contact".into(),
                timestamp: String::new(),
            }],
        );
        assert_eq!(deleted, None);
        // Field events without a document (never created) change nothing.
        assert_eq!(fold(None, &[set("e", "name", json!("Ada"))]), None);
        let updated = fold(Some(document), &[set("e", "email", json!("g@x.io"))]).unwrap();
        assert_eq!(updated.fields.len(), 3);
    }
}
