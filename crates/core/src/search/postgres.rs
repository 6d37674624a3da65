//! The PostgreSQL index: one `search_documents` row per document, its tokens in a `tsvector`
//! column with a GIN index. A search takes its candidate window (the first matches the scan
//! finds, `LIMIT window`), ranks them by `ts_rank` (normalized by document length), and cuts
//! the page and counts the window from the same materialized rows. (A prefix term is answered
//! by GIN's partial match over the words it begins, which needs no dictionary.)
//!
//! Vectors and queries are written as `tsvector`/`tsquery` literals made of alphanumeric
//! tokens only (`'token':1,2`, `'token':* & …`) and cast, so no text-search parser or
//! dictionary is involved: both databases index exactly the tokens of `query.rs`. The SQL is
//! in `store/postgres.rs`.

use std::collections::BTreeMap;

use serde_json::Value;
use sqlx::{PgConnection, PgPool, Postgres};

use super::query::{TenantKey, Term};
use super::store::postgres as store;
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
        let key = store::assign_tenant_key(conn, tenant_id).await?;
        Ok(TenantKey::new(key, KEY_WIDTH))
    }

    async fn find_tenant_key(pool: &PgPool, tenant_id: &str) -> anyhow::Result<Option<TenantKey>> {
        let key = store::find_tenant_key(pool, tenant_id).await?;
        Ok(key.map(|key| TenantKey::new(key, KEY_WIDTH)))
    }

    async fn load(
        conn: &mut PgConnection,
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
        conn: &mut PgConnection,
        tenant_id: &str,
        key: TenantKey,
        documents: &[Document],
        _replaced: &[Document],
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
            store::upsert(conn, tenant_id, &entity_ids, &families, &fields, &vectors).await?;
        }
        Ok(())
    }

    async fn remove(
        conn: &mut PgConnection,
        tenant_id: &str,
        _key: TenantKey,
        removed: &[Document],
    ) -> anyhow::Result<()> {
        let entity_ids: Vec<&str> = removed.iter().map(|d| d.entity_id.as_str()).collect();
        for chunk in entity_ids.chunks(CHUNK) {
            store::remove(conn, tenant_id, chunk).await?;
        }
        Ok(())
    }

    async fn clear(conn: &mut PgConnection) -> anyhow::Result<()> {
        store::clear(conn).await
    }

    async fn erase_tenant(conn: &mut PgConnection, tenant_id: &str) -> anyhow::Result<u64> {
        store::erase_tenant(conn, tenant_id).await
    }

    async fn page(
        pool: &PgPool,
        key: TenantKey,
        query: &IndexQuery<'_>,
    ) -> anyhow::Result<(Vec<Hit>, Option<u64>)> {
        let rows = store::page(
            pool,
            query.tenant_id,
            tsquery(key, query.terms),
            query.family,
            query.window,
            query.limit,
            query.offset,
        )
        .await?;
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
        let count = store::count(
            pool,
            query.tenant_id,
            tsquery(key, query.terms),
            query.family,
            query.window,
        )
        .await?;
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
