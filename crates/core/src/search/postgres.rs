//! The PostgreSQL index: one `search_documents` row per document, its tokens in a `tsvector`
//! column with a GIN index, ranked by `ts_rank` (normalized by document length) inside the
//! page's `ORDER BY … LIMIT`, the total counted over the same materialized matches.
//!
//! Vectors and queries are written as `tsvector`/`tsquery` literals made of alphanumeric
//! tokens only (`'token':1,2`, `'token':* & …`) and cast, so no text-search parser or
//! dictionary is involved: both databases index exactly the tokens of `query.rs`.

use std::collections::BTreeMap;

use anyhow::Context as _;
use serde_json::Value;
use sqlx::{PgConnection, PgPool, Postgres};

use super::query::{TenantKey, Term};
use super::{Document, FullTextIndex, Hit, IndexQuery};

/// Least digits of tenant keys in tokens: none padded, as every lexeme is stored whole.
const KEY_WIDTH: usize = 1;

/// Documents per statement.
const CHUNK: usize = 500;

/// PostgreSQL keeps positions up to this and at most this many per lexeme.
const MAX_POSITION: usize = 16_383;
const MAX_POSITIONS_PER_LEXEME: usize = 256;

/// The GIN-indexed text search of PostgreSQL.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostgresIndex;

/// The `tsvector` literal of a document's tokens (in document order), with their positions.
pub fn tsvector(tokens: &[String]) -> String {
    let mut lexemes: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, token) in tokens.iter().enumerate() {
        let positions = lexemes.entry(token).or_default();
        let position = (index + 1).min(MAX_POSITION);
        if positions.len() < MAX_POSITIONS_PER_LEXEME && positions.last() != Some(&position) {
            positions.push(position);
        }
    }
    let mut literal = String::new();
    for (lexeme, positions) in lexemes {
        if !literal.is_empty() {
            literal.push(' ');
        }
        literal.push('\'');
        literal.push_str(lexeme);
        literal.push_str("':");
        let positions: Vec<String> = positions.iter().map(usize::to_string).collect();
        literal.push_str(&positions.join(","));
    }
    literal
}

/// The `tsquery` literal of a query: every term as a prefix match on its token, ANDed.
pub fn tsquery(key: TenantKey, terms: &[Term]) -> String {
    terms
        .iter()
        .map(|term| format!("'{}':*", term.token(key)))
        .collect::<Vec<_>>()
        .join(" & ")
}

impl FullTextIndex for PostgresIndex {
    type Db = Postgres;

    async fn tenant_key(conn: &mut PgConnection, tenant_id: &str) -> anyhow::Result<TenantKey> {
        let select = "SELECT key FROM search_tenants WHERE tenant_id = $1";
        let key: Option<i64> = sqlx::query_scalar(select)
            .bind(tenant_id)
            .fetch_optional(&mut *conn)
            .await?;
        if let Some(key) = key {
            return Ok(TenantKey::new(key, KEY_WIDTH));
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
        Ok(TenantKey::new(key, KEY_WIDTH))
    }

    async fn find_tenant_key(pool: &PgPool, tenant_id: &str) -> anyhow::Result<Option<TenantKey>> {
        let key: Option<i64> =
            sqlx::query_scalar("SELECT key FROM search_tenants WHERE tenant_id = $1")
                .bind(tenant_id)
                .fetch_optional(pool)
                .await
                .context("reading the tenant's search key")?;
        Ok(key.map(|key| TenantKey::new(key, KEY_WIDTH)))
    }

    async fn load(
        conn: &mut PgConnection,
        tenant_id: &str,
        entity_ids: &[&str],
    ) -> anyhow::Result<Vec<Document>> {
        let mut documents = Vec::with_capacity(entity_ids.len());
        for chunk in entity_ids.chunks(CHUNK) {
            let rows: Vec<(String, String, String)> = sqlx::query_as(
                "SELECT entity_id, family_code, fields FROM search_documents
                 WHERE tenant_id = $1 AND entity_id = ANY($2)",
            )
            .bind(tenant_id)
            .bind(chunk)
            .fetch_all(&mut *conn)
            .await?;
            for (entity_id, family_code, fields) in rows {
                documents.push(Document::from_row(entity_id, family_code, &fields)?);
            }
        }
        Ok(documents)
    }

    async fn store(
        conn: &mut PgConnection,
        tenant_id: &str,
        key: TenantKey,
        documents: &[Document],
    ) -> anyhow::Result<()> {
        for chunk in documents.chunks(CHUNK) {
            let entity_ids: Vec<&str> = chunk.iter().map(|d| d.entity_id.as_str()).collect();
            let families: Vec<&str> = chunk.iter().map(|d| d.family_code.as_str()).collect();
            let fields: Vec<String> = chunk
                .iter()
                .map(|d| Value::Object(d.fields.clone()).to_string())
                .collect();
            let vectors: Vec<String> = chunk
                .iter()
                .map(|d| tsvector(&key.document_tokens(&d.fields)))
                .collect();
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
            .bind(&entity_ids)
            .bind(&families)
            .bind(&fields)
            .bind(&vectors)
            .execute(&mut *conn)
            .await?;
        }
        Ok(())
    }

    async fn remove(
        conn: &mut PgConnection,
        tenant_id: &str,
        entity_ids: &[&str],
    ) -> anyhow::Result<()> {
        for chunk in entity_ids.chunks(CHUNK) {
            sqlx::query(
                "DELETE FROM search_documents WHERE tenant_id = $1 AND entity_id = ANY($2)",
            )
            .bind(tenant_id)
            .bind(chunk)
            .execute(&mut *conn)
            .await?;
        }
        Ok(())
    }

    async fn clear(conn: &mut PgConnection) -> anyhow::Result<()> {
        sqlx::query("DELETE FROM search_documents")
            .execute(&mut *conn)
            .await
            .context("emptying search_documents")?;
        Ok(())
    }

    async fn page(
        pool: &PgPool,
        key: TenantKey,
        query: &IndexQuery<'_>,
    ) -> anyhow::Result<(Vec<Hit>, Option<u64>)> {
        let family_filter = if query.family.is_some() {
            "AND family_code = $5"
        } else {
            ""
        };
        // Scores narrow rows (id and score) of every match once, counts them and cuts the page
        // from the same materialized set (cheaper than a `count(*) OVER ()` window), then reads
        // only the page's documents.
        let sql = format!(
            "WITH matches AS MATERIALIZED (
               SELECT entity_id, ts_rank(tokens, $2::tsquery, 1) AS score
               FROM search_documents
               WHERE tenant_id = $1 AND tokens @@ $2::tsquery {family_filter})
             SELECT d.entity_id, d.family_code, d.fields, page.score::float8,
                    (SELECT count(*) FROM matches) AS total
             FROM (SELECT entity_id, score FROM matches
                   ORDER BY score DESC, entity_id LIMIT $3 OFFSET $4) AS page
             JOIN search_documents AS d ON d.entity_id = page.entity_id AND d.tenant_id = $1
             ORDER BY page.score DESC, page.entity_id"
        );
        let mut select =
            sqlx::query_as::<_, (String, String, String, f64, i64)>(sqlx::AssertSqlSafe(sql))
                .bind(query.tenant_id)
                .bind(tsquery(key, query.terms))
                .bind(query.limit)
                .bind(query.offset);
        if let Some(family) = query.family {
            select = select.bind(family);
        }
        let rows = select.fetch_all(pool).await.context("searching")?;
        let total = rows
            .first()
            .map(|row| u64::try_from(row.4).unwrap_or_default());
        let hits = rows
            .into_iter()
            .map(|(entity_id, family_code, fields, score, _)| Hit {
                entity_id,
                family_code,
                fields,
                score,
            })
            .collect();
        Ok((hits, total))
    }

    async fn count(pool: &PgPool, key: TenantKey, query: &IndexQuery<'_>) -> anyhow::Result<u64> {
        let family_filter = if query.family.is_some() {
            "AND family_code = $3"
        } else {
            ""
        };
        let sql = format!(
            "SELECT count(*) FROM search_documents
             WHERE tenant_id = $1 AND tokens @@ $2::tsquery {family_filter}"
        );
        let mut select = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql))
            .bind(query.tenant_id)
            .bind(tsquery(key, query.terms));
        if let Some(family) = query.family {
            select = select.bind(family);
        }
        let count = select
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
    fn vectors_list_each_token_once_with_its_positions() {
        let tokens: Vec<String> = ["b", "a", "b", "c"].map(String::from).to_vec();
        assert_eq!(tsvector(&tokens), "'a':2 'b':1,3 'c':4");
        assert_eq!(tsvector(&[]), "");
        let many: Vec<String> = (0..20_000).map(|_| "a".to_owned()).collect();
        let literal = tsvector(&many);
        assert_eq!(literal.matches(',').count(), MAX_POSITIONS_PER_LEXEME - 1);
        let late: Vec<String> = (0..20_000).map(|index| format!("t{index}")).collect();
        assert!(tsvector(&late).ends_with("'t9999':10000"));
        assert!(tsvector(&late).contains("'t19999':16383"));
    }

    #[test]
    fn queries_are_anded_prefix_tokens() {
        assert_eq!(
            tsquery(
                TenantKey::new(12, KEY_WIDTH),
                &parse("lov name:ada ' & | ! :*")
            ),
            "'12wlov':* & '12fnamexada':*"
        );
    }
}
