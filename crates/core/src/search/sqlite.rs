//! The SQLite index: documents in `search_documents`, their tokens in the contentless FTS5
//! table `search_index` under the document's rowid, ranked by `bm25` (the table's `rank`,
//! configured with weight 0 for the family column).
//!
//! A search is one FTS5 query: `ORDER BY rank LIMIT … OFFSET …` over a MATCH of prefix terms
//! on the tenant's tokens (and the family token when filtered), so FTS5 ranks and cuts the
//! page itself; only the page's rows are then joined to their documents, which are filtered by
//! tenant id once more. The MATCH text is made of quoted alphanumeric tokens only.

use anyhow::Context as _;
use serde_json::Value;
use sqlx::{QueryBuilder, Sqlite, SqliteConnection, SqlitePool};

use super::query::{TenantKey, Term};
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
        let key: Option<i64> =
            sqlx::query_scalar("SELECT key FROM search_tenants WHERE tenant_id = $1")
                .bind(tenant_id)
                .fetch_optional(&mut *conn)
                .await?;
        if let Some(key) = key {
            return Ok(TenantKey::new(key, KEY_WIDTH));
        }
        let key: i64 =
            sqlx::query_scalar("INSERT INTO search_tenants (tenant_id) VALUES ($1) RETURNING key")
                .bind(tenant_id)
                .fetch_one(&mut *conn)
                .await?;
        Ok(TenantKey::new(key, KEY_WIDTH))
    }

    async fn find_tenant_key(
        pool: &SqlitePool,
        tenant_id: &str,
    ) -> anyhow::Result<Option<TenantKey>> {
        let key: Option<i64> =
            sqlx::query_scalar("SELECT key FROM search_tenants WHERE tenant_id = $1")
                .bind(tenant_id)
                .fetch_optional(pool)
                .await
                .context("reading the tenant's search key")?;
        Ok(key.map(|key| TenantKey::new(key, KEY_WIDTH)))
    }

    async fn load(
        conn: &mut SqliteConnection,
        tenant_id: &str,
        entity_ids: &[&str],
    ) -> anyhow::Result<Vec<Document>> {
        let mut documents = Vec::with_capacity(entity_ids.len());
        for chunk in entity_ids.chunks(CHUNK) {
            let mut select = QueryBuilder::<Sqlite>::new(
                "SELECT entity_id, family_code, fields FROM search_documents WHERE tenant_id = ",
            );
            select.push_bind(tenant_id).push(" AND entity_id IN (");
            let mut list = select.separated(", ");
            for entity_id in chunk {
                list.push_bind(*entity_id);
            }
            select.push(")");
            let rows: Vec<(String, String, String)> =
                select.build_query_as().fetch_all(&mut *conn).await?;
            for (entity_id, family_code, fields) in rows {
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
            let mut upsert = QueryBuilder::<Sqlite>::new(
                "INSERT INTO search_documents (tenant_id, entity_id, family_code, fields) ",
            );
            upsert.push_values(&rows, |mut row, (document, fields)| {
                row.push_bind(tenant_id)
                    .push_bind(&document.entity_id)
                    .push_bind(&document.family_code)
                    .push_bind(fields);
            });
            upsert.push(
                " ON CONFLICT (tenant_id, entity_id) DO UPDATE SET
                   family_code = excluded.family_code, fields = excluded.fields
                 RETURNING id, entity_id",
            );
            let ids: Vec<(i64, String)> = upsert.build_query_as().fetch_all(&mut *conn).await?;
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
            // A contentless table with `contentless_delete` replaces a rowid's tokens.
            let mut index = QueryBuilder::<Sqlite>::new(
                "INSERT OR REPLACE INTO search_index (rowid, tokens, family) ",
            );
            index.push_values(&index_rows, |mut row, (id, tokens, family)| {
                row.push_bind(*id).push_bind(tokens).push_bind(family);
            });
            index.build().execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn remove(
        conn: &mut SqliteConnection,
        tenant_id: &str,
        entity_ids: &[&str],
    ) -> anyhow::Result<()> {
        for chunk in entity_ids.chunks(CHUNK) {
            let mut delete =
                QueryBuilder::<Sqlite>::new("DELETE FROM search_documents WHERE tenant_id = ");
            delete.push_bind(tenant_id).push(" AND entity_id IN (");
            let mut list = delete.separated(", ");
            for entity_id in chunk {
                list.push_bind(*entity_id);
            }
            delete.push(") RETURNING id");
            let ids: Vec<i64> = delete.build_query_scalar().fetch_all(&mut *conn).await?;
            // One rowid at a time: the lookup FTS5 plans for `rowid = ?`.
            for id in ids {
                sqlx::query("DELETE FROM search_index WHERE rowid = $1")
                    .bind(id)
                    .execute(&mut *conn)
                    .await?;
            }
        }
        Ok(())
    }

    async fn clear(conn: &mut SqliteConnection) -> anyhow::Result<()> {
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

    async fn page(
        pool: &SqlitePool,
        key: TenantKey,
        query: &IndexQuery<'_>,
    ) -> anyhow::Result<(Vec<Hit>, Option<u64>)> {
        let expression = match_expression(key, query.terms, query.family);
        let rows: Vec<(String, String, String, f64)> = sqlx::query_as(
            "SELECT d.entity_id, d.family_code, d.fields, -r.rank
             FROM (SELECT rowid AS id, rank FROM search_index WHERE search_index MATCH $1
                   ORDER BY rank LIMIT $2 OFFSET $3) AS r
             JOIN search_documents AS d ON d.id = r.id
             WHERE d.tenant_id = $4
             ORDER BY r.rank",
        )
        .bind(&expression)
        .bind(query.limit)
        .bind(query.offset)
        .bind(query.tenant_id)
        .fetch_all(pool)
        .await
        .context("searching")?;
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
        let count: i64 =
            sqlx::query_scalar("SELECT count(*) FROM search_index WHERE search_index MATCH $1")
                .bind(&expression)
                .fetch_one(pool)
                .await
                .context("counting search matches")?;
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
