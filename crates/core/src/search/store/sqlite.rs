//! The SQL of the SQLite index (`search/sqlite.rs`): tenant keys, documents in
//! `search_documents` (each under its tenant's key, not its 36-character id) and their tokens in the contentless FTS5 table `search_index` under the
//! document's rowid, the word dictionary `search_terms`, multi-row upserts and deletes, and
//! the ranked page and count of a MATCH expression's candidate window (built from tokens
//! only, never from user text).

use anyhow::Context as _;
use sqlx::{QueryBuilder, Sqlite, SqliteConnection, SqlitePool};
use tessera_storage::compact::{IdText, StoredId};

/// A stored document: entity id, family code and fields (JSON object text). Entity ids are
/// stored compact (`tessera_storage::compact`) and read back as text.
pub(crate) type DocumentRow = (IdText, String, String);

/// A hit of a page: entity id, family code, fields, score and the window's size.
pub(crate) type HitRow = (IdText, String, String, f64, i64);

/// The tenant's key, assigned on first use.
pub(crate) async fn assign_tenant_key(
    conn: &mut SqliteConnection,
    tenant_id: &str,
) -> anyhow::Result<i64> {
    let key: Option<i64> =
        sqlx::query_scalar("SELECT key FROM search_tenants WHERE tenant_id = $1")
            .bind(tenant_id)
            .fetch_optional(&mut *conn)
            .await?;
    if let Some(key) = key {
        return Ok(key);
    }
    let key: i64 =
        sqlx::query_scalar("INSERT INTO search_tenants (tenant_id) VALUES ($1) RETURNING key")
            .bind(tenant_id)
            .fetch_one(&mut *conn)
            .await?;
    Ok(key)
}

/// The tenant's key if it has ever had a document.
pub(crate) async fn find_tenant_key(
    pool: &SqlitePool,
    tenant_id: &str,
) -> anyhow::Result<Option<i64>> {
    sqlx::query_scalar("SELECT key FROM search_tenants WHERE tenant_id = $1")
        .bind(tenant_id)
        .fetch_optional(pool)
        .await
        .context("reading the tenant's search key")
}

/// The stored documents of these entities of the tenant, in one statement.
pub(crate) async fn load(
    conn: &mut SqliteConnection,
    tenant_id: &str,
    entity_ids: &[&str],
) -> anyhow::Result<Vec<DocumentRow>> {
    let mut select = QueryBuilder::<Sqlite>::new(
        "SELECT entity_id, family_code, fields FROM search_documents
         WHERE tenant_key = (SELECT key FROM search_tenants WHERE tenant_id = ",
    );
    select.push_bind(tenant_id).push(") AND entity_id IN (");
    let mut list = select.separated(", ");
    for entity_id in entity_ids {
        list.push_bind(StoredId(entity_id));
    }
    select.push(")");
    let rows = select.build_query_as().fetch_all(&mut *conn).await?;
    Ok(rows)
}

/// A document to insert or replace; `fields` is JSON object text.
pub(crate) struct DocumentWrite<'a> {
    pub entity_id: &'a str,
    pub family_code: &'a str,
    pub fields: String,
}

/// Inserts or replaces the documents of the tenant with key `tenant_key` in one statement;
/// returns each stored document's rowid and entity id.
pub(crate) async fn upsert_documents(
    conn: &mut SqliteConnection,
    tenant_key: i64,
    rows: &[DocumentWrite<'_>],
) -> anyhow::Result<Vec<(i64, IdText)>> {
    let mut upsert = QueryBuilder::<Sqlite>::new(
        "INSERT INTO search_documents (tenant_key, entity_id, family_code, fields) ",
    );
    upsert.push_values(rows, |mut row, document| {
        row.push_bind(tenant_key)
            .push_bind(StoredId(document.entity_id))
            .push_bind(document.family_code)
            .push_bind(&document.fields);
    });
    upsert.push(
        " ON CONFLICT (tenant_key, entity_id) DO UPDATE SET
           family_code = excluded.family_code, fields = excluded.fields
         RETURNING id, entity_id",
    );
    let ids = upsert.build_query_as().fetch_all(&mut *conn).await?;
    Ok(ids)
}

/// Indexes documents by rowid: `(rowid, tokens)`, the tokens (the family's among them)
/// space-separated, replacing what the rowid had, in one statement.
pub(crate) async fn index(
    conn: &mut SqliteConnection,
    rows: &[(i64, String)],
) -> anyhow::Result<()> {
    // A contentless table with `contentless_delete` replaces a rowid's tokens.
    let mut index =
        QueryBuilder::<Sqlite>::new("INSERT OR REPLACE INTO search_index (rowid, tokens) ");
    index.push_values(rows, |mut row, (id, tokens)| {
        row.push_bind(*id).push_bind(tokens);
    });
    index.build().execute(&mut *conn).await?;
    Ok(())
}

/// Adds words to the dictionary (those already listed stay), in one statement.
pub(crate) async fn add_words(conn: &mut SqliteConnection, words: &[String]) -> anyhow::Result<()> {
    if words.is_empty() {
        return Ok(());
    }
    let mut insert = QueryBuilder::<Sqlite>::new("INSERT OR IGNORE INTO search_terms (term) ");
    insert.push_values(words, |mut row, word| {
        row.push_bind(word);
    });
    insert.build().execute(&mut *conn).await?;
    Ok(())
}

/// Whether any indexed document holds `word` (an alphanumeric token).
pub(crate) async fn word_is_indexed(
    conn: &mut SqliteConnection,
    word: &str,
) -> anyhow::Result<bool> {
    let found: Option<i64> =
        sqlx::query_scalar("SELECT rowid FROM search_index WHERE search_index MATCH $1 LIMIT 1")
            .bind(format!("\"{word}\""))
            .fetch_optional(&mut *conn)
            .await
            .context("looking a word up in the search index")?;
    Ok(found.is_some())
}

/// Removes a word from the dictionary.
pub(crate) async fn forget_word(conn: &mut SqliteConnection, word: &str) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM search_terms WHERE term = $1")
        .bind(word)
        .execute(&mut *conn)
        .await
        .context("removing a word from the search dictionary")?;
    Ok(())
}

/// The dictionary's words starting with `prefix` (an alphanumeric token), in order, at most
/// `limit`.
pub(crate) async fn words_with_prefix(
    pool: &SqlitePool,
    prefix: &str,
    limit: usize,
) -> anyhow::Result<Vec<String>> {
    // Tokens are ASCII letters and digits: every word with the prefix sorts below prefix + DEL.
    let end = format!("{prefix}\u{7f}");
    sqlx::query_scalar(
        "SELECT term FROM search_terms WHERE term >= $1 AND term < $2 ORDER BY term LIMIT $3",
    )
    .bind(prefix)
    .bind(end)
    .bind(i64::try_from(limit).unwrap_or(i64::MAX))
    .fetch_all(pool)
    .await
    .context("expanding a search prefix")
}

/// Deletes these entities' documents of the tenant with key `tenant_key` and their tokens.
pub(crate) async fn remove(
    conn: &mut SqliteConnection,
    tenant_key: i64,
    entity_ids: &[&str],
) -> anyhow::Result<()> {
    let mut delete =
        QueryBuilder::<Sqlite>::new("DELETE FROM search_documents WHERE tenant_key = ");
    delete.push_bind(tenant_key).push(" AND entity_id IN (");
    let mut list = delete.separated(", ");
    for entity_id in entity_ids {
        list.push_bind(StoredId(entity_id));
    }
    delete.push(") RETURNING id");
    let ids: Vec<i64> = delete.build_query_scalar().fetch_all(&mut *conn).await?;
    unindex(conn, &ids).await
}

/// Deletes the index entries (tokens) of the documents `ids`, one rowid at a time: the lookup
/// FTS5 plans for `rowid = ?`.
async fn unindex(conn: &mut SqliteConnection, ids: &[i64]) -> anyhow::Result<()> {
    for id in ids {
        sqlx::query("DELETE FROM search_index WHERE rowid = $1")
            .bind(id)
            .execute(&mut *conn)
            .await
            .context("deleting a document's search index entries")?;
    }
    Ok(())
}

/// Deletes every document of the tenant and their tokens; returns how many.
pub(crate) async fn erase_documents(
    conn: &mut SqliteConnection,
    tenant_id: &str,
) -> anyhow::Result<u64> {
    let ids: Vec<i64> = sqlx::query_scalar(
        "DELETE FROM search_documents
             WHERE tenant_key = (SELECT key FROM search_tenants WHERE tenant_id = $1)
             RETURNING id",
    )
    .bind(tenant_id)
    .fetch_all(&mut *conn)
    .await
    .context("erasing the tenant's search documents")?;
    unindex(conn, &ids).await?;
    Ok(ids.len() as u64)
}

/// The tenant's key, read inside the caller's transaction.
pub(crate) async fn tenant_key_in(
    conn: &mut SqliteConnection,
    tenant_id: &str,
) -> anyhow::Result<Option<i64>> {
    sqlx::query_scalar("SELECT key FROM search_tenants WHERE tenant_id = $1")
        .bind(tenant_id)
        .fetch_optional(&mut *conn)
        .await
        .context("reading the tenant's search key")
}

/// Removes every dictionary word starting with `prefix` (a tenant's key and word marker).
pub(crate) async fn forget_words_with_prefix(
    conn: &mut SqliteConnection,
    prefix: &str,
) -> anyhow::Result<()> {
    // Tokens are ASCII letters and digits: every word with the prefix sorts below prefix + DEL.
    sqlx::query("DELETE FROM search_terms WHERE term >= $1 AND term < $2")
        .bind(prefix)
        .bind(format!("{prefix}\u{7f}"))
        .execute(&mut *conn)
        .await
        .context("erasing the tenant's search dictionary")?;
    Ok(())
}

/// Forgets the tenant's key.
pub(crate) async fn forget_tenant_key(
    conn: &mut SqliteConnection,
    tenant_id: &str,
) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM search_tenants WHERE tenant_id = $1")
        .bind(tenant_id)
        .execute(&mut *conn)
        .await
        .context("erasing the tenant's search key")?;
    Ok(())
}

/// Deletes every document of every tenant, every token and the dictionary.
pub(crate) async fn clear(conn: &mut SqliteConnection) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM search_terms")
        .execute(&mut *conn)
        .await
        .context("emptying search_terms")?;
    sqlx::query("INSERT INTO search_index (search_index) VALUES ('delete-all')")
        .execute(&mut *conn)
        .await
        .context("emptying search_index")?;
    sqlx::query("DELETE FROM search_documents")
        .execute(&mut *conn)
        .await
        .context("emptying search_documents")?;
    Ok(())
}

/// The ranked page of the MATCH `expression` (its tokens belong to the tenant with key
/// `tenant_key`; `terms` terms, for the score): see [`PAGE`].
pub(crate) async fn page(
    pool: &SqlitePool,
    tenant_key: i64,
    expression: &str,
    terms: usize,
    window: i64,
    limit: i64,
    offset: i64,
) -> anyhow::Result<Vec<HitRow>> {
    sqlx::query_as(PAGE)
        .bind(expression)
        .bind(window)
        .bind(limit)
        .bind(offset)
        .bind(tenant_key)
        .bind(i64::try_from(terms).unwrap_or(i64::MAX))
        .fetch_all(pool)
        .await
        .context("searching")
}

/// The ranked page of a MATCH expression (`$1`) over its candidate window (`$2`: the first
/// matches in rowid order), `$3` rows from `$4`, best first by `search_rank` (`$6` terms),
/// each row with the window's size: FTS5 stops after the window, ranks only its rows, and only
/// the page's rows are looked up in `search_documents` by rowid (filtered by the tenant's key
/// `$5` once more). `CROSS JOIN` keeps that order: left to choose, SQLite's planner may walk
/// the tenant's documents by `(tenant_key, entity_id)` and probe the page for each (every
/// document of the tenant read per search: 43 ms at a million contacts, where the page costs
/// 0.3 ms, measured by the `throughput` benchmark). Public for the test that checks the plan.
pub const PAGE: &str = "WITH candidates AS MATERIALIZED (
       SELECT rowid AS id, search_rank(search_index, $6) AS score
       FROM search_index WHERE search_index MATCH $1 LIMIT $2)
     SELECT d.entity_id, d.family_code, d.fields, page.score,
            (SELECT count(*) FROM candidates)
     FROM (SELECT id, score FROM candidates ORDER BY score DESC, id LIMIT $3 OFFSET $4)
          AS page
     CROSS JOIN search_documents AS d ON d.id = page.id
     WHERE d.tenant_key = $5
     ORDER BY page.score DESC, page.id";

/// The number of documents matching `expression` (whose tokens belong to one tenant), up to
/// `window`.
pub(crate) async fn count(pool: &SqlitePool, expression: &str, window: i64) -> anyhow::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT rowid FROM search_index WHERE search_index MATCH $1 LIMIT $2)",
    )
    .bind(expression)
    .bind(window)
    .fetch_one(pool)
    .await
    .context("counting search matches")
}
