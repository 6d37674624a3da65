//! The SQL of the PostgreSQL index (`search/postgres.rs`): tenant keys, documents upserted
//! and deleted by arrays (`UNNEST`, `= ANY`), and the ranked page and count of a `tsquery`.
//! Vectors and queries arrive as literals of alphanumeric tokens and are cast here.

use anyhow::Context as _;
use sqlx::{PgConnection, PgPool};

/// A stored document: entity id, family code and fields (JSON object text).
pub(crate) type DocumentRow = (String, String, String);

/// A hit of a page: entity id, family code, fields, score and the number of all matches.
pub(crate) type HitRow = (String, String, String, f64, i64);

/// The tenant's key, assigned on first use.
pub(crate) async fn assign_tenant_key(
    conn: &mut PgConnection,
    tenant_id: &str,
) -> anyhow::Result<i64> {
    let select = "SELECT key FROM search_tenants WHERE tenant_id = $1";
    let key: Option<i64> = sqlx::query_scalar(select)
        .bind(tenant_id)
        .fetch_optional(&mut *conn)
        .await?;
    if let Some(key) = key {
        return Ok(key);
    }
    sqlx::query(
        "INSERT INTO search_tenants (tenant_id) VALUES ($1) ON CONFLICT (tenant_id) DO NOTHING",
    )
    .bind(tenant_id)
    .execute(&mut *conn)
    .await?;
    let key: i64 = sqlx::query_scalar(select)
        .bind(tenant_id)
        .fetch_one(&mut *conn)
        .await?;
    Ok(key)
}

/// The tenant's key if it has ever had a document.
pub(crate) async fn find_tenant_key(pool: &PgPool, tenant_id: &str) -> anyhow::Result<Option<i64>> {
    sqlx::query_scalar("SELECT key FROM search_tenants WHERE tenant_id = $1")
        .bind(tenant_id)
        .fetch_optional(pool)
        .await
        .context("reading the tenant's search key")
}

/// The stored documents of these entities of the tenant.
pub(crate) async fn load(
    conn: &mut PgConnection,
    tenant_id: &str,
    entity_ids: &[&str],
) -> anyhow::Result<Vec<DocumentRow>> {
    let rows = sqlx::query_as(
        "SELECT entity_id, family_code, fields FROM search_documents
         WHERE tenant_id = $1 AND entity_id = ANY($2)",
    )
    .bind(tenant_id)
    .bind(entity_ids)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows)
}

/// Inserts or replaces the tenant's documents given as parallel arrays (`vectors`: `tsvector`
/// literals), in one statement.
pub(crate) async fn upsert(
    conn: &mut PgConnection,
    tenant_id: &str,
    entity_ids: &[&str],
    families: &[&str],
    fields: &[String],
    vectors: &[String],
) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO search_documents (entity_id, tenant_id, family_code, fields, tokens)
         SELECT u.entity_id, $1, u.family_code, u.fields, u.tokens::tsvector
         FROM UNNEST($2::text[], $3::text[], $4::text[], $5::text[])
           AS u (entity_id, family_code, fields, tokens)
         ON CONFLICT (entity_id, tenant_id) DO UPDATE SET
           family_code = excluded.family_code, fields = excluded.fields,
           tokens = excluded.tokens",
    )
    .bind(tenant_id)
    .bind(entity_ids)
    .bind(families)
    .bind(fields)
    .bind(vectors)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Deletes these entities' documents of the tenant.
pub(crate) async fn remove(
    conn: &mut PgConnection,
    tenant_id: &str,
    entity_ids: &[&str],
) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM search_documents WHERE tenant_id = $1 AND entity_id = ANY($2)")
        .bind(tenant_id)
        .bind(entity_ids)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Deletes every document of the tenant (their vectors with them) and its key; returns how
/// many documents.
pub(crate) async fn erase_tenant(conn: &mut PgConnection, tenant_id: &str) -> anyhow::Result<u64> {
    let documents = sqlx::query("DELETE FROM search_documents WHERE tenant_id = $1")
        .bind(tenant_id)
        .execute(&mut *conn)
        .await
        .context("erasing the tenant's search documents")?
        .rows_affected();
    sqlx::query("DELETE FROM search_tenants WHERE tenant_id = $1")
        .bind(tenant_id)
        .execute(&mut *conn)
        .await
        .context("erasing the tenant's search key")?;
    Ok(documents)
}

/// Deletes every document of every tenant.
pub(crate) async fn clear(conn: &mut PgConnection) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM search_documents")
        .execute(&mut *conn)
        .await
        .context("emptying search_documents")?;
    Ok(())
}

/// One page of the candidate window of the tenant's documents matching `tsquery` (its first
/// `window` matches in storage order, which both plans give: a scan of the table stopping at
/// the window for a common word, GIN's bitmap for a rare one), best first, each row with the
/// window's size: the window is ranked, counted and cut once.
pub(crate) async fn page(
    pool: &PgPool,
    tenant_id: &str,
    tsquery: String,
    family: Option<&str>,
    window: i64,
    limit: i64,
    offset: i64,
) -> anyhow::Result<Vec<HitRow>> {
    let family_filter = if family.is_some() {
        "AND family_code = $6"
    } else {
        ""
    };
    let sql = format!(
        "WITH candidates AS MATERIALIZED (
           SELECT entity_id, ts_rank(tokens, $2::tsquery, 1) AS score
           FROM search_documents
           WHERE tenant_id = $1 AND tokens @@ $2::tsquery {family_filter}
           LIMIT $5)
         SELECT d.entity_id, d.family_code, d.fields, page.score::float8,
                (SELECT count(*) FROM candidates) AS total
         FROM (SELECT entity_id, score FROM candidates
               ORDER BY score DESC, entity_id LIMIT $3 OFFSET $4) AS page
         JOIN search_documents AS d ON d.entity_id = page.entity_id AND d.tenant_id = $1
         ORDER BY page.score DESC, page.entity_id"
    );
    // Planned for its own query each time (not a cached generic plan): only the query's
    // words tell the planner whether a scan that stops at the window (a common word) or the
    // GIN bitmap of every match (a rare one) is cheaper.
    let mut select = sqlx::query_as::<_, HitRow>(sqlx::AssertSqlSafe(sql))
        .persistent(false)
        .bind(tenant_id)
        .bind(tsquery)
        .bind(limit)
        .bind(offset)
        .bind(window);
    if let Some(family) = family {
        select = select.bind(family);
    }
    select.fetch_all(pool).await.context("searching")
}

/// The number of the tenant's documents matching `tsquery` (a literal), up to `window`.
pub(crate) async fn count(
    pool: &PgPool,
    tenant_id: &str,
    tsquery: String,
    family: Option<&str>,
    window: i64,
) -> anyhow::Result<i64> {
    let family_filter = if family.is_some() {
        "AND family_code = $4"
    } else {
        ""
    };
    let sql = format!(
        "SELECT count(*) FROM (SELECT 1 FROM search_documents
         WHERE tenant_id = $1 AND tokens @@ $2::tsquery {family_filter} LIMIT $3) AS candidates"
    );
    let mut select = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql))
        .persistent(false)
        .bind(tenant_id)
        .bind(tsquery)
        .bind(window);
    if let Some(family) = family {
        select = select.bind(family);
    }
    select
        .fetch_one(pool)
        .await
        .context("counting search matches")
}
