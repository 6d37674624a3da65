//! The SQLite index: documents in `search_documents`, their tokens in the contentless FTS5
//! table `search_index` under the document's rowid, ranked by `bm25` (the table's `rank`,
//! configured with weight 0 for the family column).
//!
//! A search is one FTS5 query: `ORDER BY rank LIMIT … OFFSET …` over a MATCH of prefix terms
//! on the tenant's tokens (and the family token when filtered), so FTS5 ranks and cuts the
//! page itself; only the page's rows are then joined to their documents, which are filtered by
//! tenant id once more. The MATCH text is made of quoted alphanumeric tokens only. The SQL is
//! in `store/sqlite.rs`.

use serde_json::Value;
use sqlx::{Sqlite, SqliteConnection, SqlitePool};

use super::query::{TenantKey, Term};
use super::store::sqlite as store;
use super::{Document, FullTextIndex, Hit, IndexQuery};

/// Digits of tenant keys in tokens: the prefix indexes of `search_index` (10, 11 and 12
/// characters) are one to three characters of a word after the key and the kind letter.
const KEY_WIDTH: usize = 8;

/// Rows per multi-row statement (a few parameters each, far below SQLite's limit).
const CHUNK: usize = 500;

/// FTS5 and plain tables of SQLite.
#[derive(Debug, Clone, Copy, Default)]
pub struct SqliteIndex;

/// The FTS5 MATCH expression of a query: every term as a prefix query on its token, ANDed,
/// and the family token on the family column.
pub fn match_expression(key: TenantKey, terms: &[Term], family: Option<&str>) -> String {
    let mut parts: Vec<String> = terms
        .iter()
        .map(|term| format!("\"{}\"*", term.token(key)))
        .collect();
    if let Some(family) = family {
        parts.push(format!("family : \"{}\"", key.family_token(family)));
    }
    parts.join(" AND ")
}

impl FullTextIndex for SqliteIndex {
    type Db = Sqlite;

    async fn tenant_key(conn: &mut SqliteConnection, tenant_id: &str) -> anyhow::Result<TenantKey> {
        let key = store::assign_tenant_key(conn, tenant_id).await?;
        Ok(TenantKey::new(key, KEY_WIDTH))
    }

    async fn find_tenant_key(
        pool: &SqlitePool,
        tenant_id: &str,
    ) -> anyhow::Result<Option<TenantKey>> {
        let key = store::find_tenant_key(pool, tenant_id).await?;
        Ok(key.map(|key| TenantKey::new(key, KEY_WIDTH)))
    }

    async fn load(
        conn: &mut SqliteConnection,
        tenant_id: &str,
        entity_ids: &[&str],
    ) -> anyhow::Result<Vec<Document>> {
        let mut documents = Vec::with_capacity(entity_ids.len());
        for chunk in entity_ids.chunks(CHUNK) {
            for (entity_id, family_code, fields) in store::load(conn, tenant_id, chunk).await? {
                documents.push(Document::from_row(entity_id, family_code, &fields)?);
            }
        }
        Ok(documents)
    }

    async fn store(
        conn: &mut SqliteConnection,
        tenant_id: &str,
        key: TenantKey,
        documents: &[Document],
    ) -> anyhow::Result<()> {
        for chunk in documents.chunks(CHUNK) {
            let rows: Vec<(&Document, String)> = chunk
                .iter()
                .map(|document| (document, Value::Object(document.fields.clone()).to_string()))
                .collect();
            let ids = store::upsert_documents(conn, tenant_id, &rows).await?;
            let by_entity: std::collections::HashMap<&str, &Document> = chunk
                .iter()
                .map(|document| (document.entity_id.as_str(), document))
                .collect();
            let index_rows: Vec<(i64, String, String)> = ids
                .iter()
                .filter_map(|(id, entity_id)| {
                    let document = by_entity.get(entity_id.as_str())?;
                    Some((
                        *id,
                        key.document_tokens(&document.fields).join(" "),
                        key.family_token(&document.family_code),
                    ))
                })
                .collect();
            store::index(conn, &index_rows).await?;
        }
        Ok(())
    }

    async fn remove(
        conn: &mut SqliteConnection,
        tenant_id: &str,
        entity_ids: &[&str],
    ) -> anyhow::Result<()> {
        for chunk in entity_ids.chunks(CHUNK) {
            store::remove(conn, tenant_id, chunk).await?;
        }
        Ok(())
    }

    async fn clear(conn: &mut SqliteConnection) -> anyhow::Result<()> {
        store::clear(conn).await
    }

    async fn page(
        pool: &SqlitePool,
        key: TenantKey,
        query: &IndexQuery<'_>,
    ) -> anyhow::Result<(Vec<Hit>, Option<u64>)> {
        let expression = match_expression(key, query.terms, query.family);
        let rows = store::page(
            pool,
            query.tenant_id,
            &expression,
            query.limit,
            query.offset,
        )
        .await?;
        let hits = rows
            .into_iter()
            .map(|(entity_id, family_code, fields, score)| Hit {
                entity_id,
                family_code,
                fields,
                score,
            })
            .collect();
        Ok((hits, None))
    }

    async fn count(
        pool: &SqlitePool,
        key: TenantKey,
        query: &IndexQuery<'_>,
    ) -> anyhow::Result<u64> {
        let expression = match_expression(key, query.terms, query.family);
        let count = store::count(pool, &expression).await?;
        Ok(u64::try_from(count).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::query::parse;

    #[test]
    fn match_expressions_are_quoted_prefix_tokens() {
        let key = TenantKey::new(3, KEY_WIDTH);
        assert_eq!(
            match_expression(key, &parse("Lov name:ada OR *"), None),
            "\"00000003wlov\"* AND \"00000003fnamexada\"* AND \"00000003wor\"*"
        );
        assert_eq!(
            match_expression(key, &parse("ada"), Some("deal")),
            "\"00000003wada\"* AND family : \"00000003gdeal\""
        );
    }
}
