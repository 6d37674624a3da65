//! The SQLite index: documents in `search_documents`, their tokens (the family's among them)
//! in the one column of the contentless FTS5 table `search_index` under the document's rowid,
//! without positions (`detail = none`: an index entry is a rowid), and every word token in
//! the dictionary `search_terms` (field tokens are not listed: a field term is expanded
//! through the words).
//!
//! A search is one FTS5 query for its candidate window: the first matches in rowid order
//! (`LIMIT window`, which FTS5 stops early), ranked by `search_rank` (a per-row BM25 without
//! inverse document frequencies, each term found once, registered by `tessera-storage`), paged and counted in the
//! same statement; only the page's rows are then joined to their documents, which are
//! filtered by tenant key once more. FTS5 answers a prefix query lazily only from a prefix
//! index (`prefix = '10 11 12'`: the tenant key, the kind letter and one to three characters
//! of a word); a longer prefix it answers by merging every matching word's whole list, whose
//! cost grows with the matches. So a term longer than that is first expanded through
//! `search_terms` into the words it is a prefix of, and queried as `("w1" OR "w2" …)`, which
//! FTS5 walks lazily; a prefix of more than [`MAX_EXPANSIONS`] words, or past the query's
//! budget of [`MAX_EXPANSIONS_PER_QUERY`], falls back to FTS5's prefix query. A word leaves
//! the dictionary when the last document holding it is deleted or changed. The MATCH text is
//! made of quoted alphanumeric tokens only. The SQL is in `store/sqlite.rs`.

use std::collections::BTreeSet;

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

/// The longest token prefix FTS5 answers from a prefix index (`prefix = '10 11 12'` in the
/// migration): the tenant key, the kind letter and up to three characters.
const LONGEST_INDEXED_PREFIX: usize = KEY_WIDTH + 1 + 3;

/// Words a prefix term is expanded into at most; beyond, FTS5 merges the prefix itself.
const MAX_EXPANSIONS: usize = 32;

/// Words all the terms of one query are expanded into at most (a query of hundreds of terms
/// would otherwise ask FTS5 for thousands of phrases); the terms past it are asked as
/// prefixes.
const MAX_EXPANSIONS_PER_QUERY: usize = 64;

/// How one term is asked of FTS5.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TermQuery {
    /// `"token"*`: from a prefix index, or merged by FTS5 when the prefix has many words.
    Prefix(String),
    /// `("w1" OR "w2" …)`: the indexed words the term is a prefix of.
    Words(Vec<String>),
}

/// Each term as FTS5 should be asked for it, or `None` when a term is the prefix of no
/// indexed word (nothing can match).
async fn term_queries(
    pool: &SqlitePool,
    key: TenantKey,
    terms: &[Term],
) -> anyhow::Result<Option<Vec<TermQuery>>> {
    let mut queries = Vec::with_capacity(terms.len());
    let mut expanded = 0;
    for term in terms {
        let token = term.token(key);
        if token.len() <= LONGEST_INDEXED_PREFIX {
            queries.push(TermQuery::Prefix(token));
            continue;
        }
        // The dictionary lists words: a field term asks for the field tokens of the words
        // its word begins (a word found in other fields only is a token no document holds,
        // which matches nothing).
        let words =
            store::words_with_prefix(pool, &key.word_token(term.word()), MAX_EXPANSIONS + 1)
                .await?;
        let tokens = match term {
            Term::Any(_) => words,
            Term::Field { field, .. } => words
                .iter()
                .filter_map(|word_token| key.word_of(word_token))
                .map(|word| key.field_token(field, word))
                .collect(),
        };
        match expansion(token, tokens, &mut expanded) {
            Some(query) => queries.push(query),
            None => return Ok(None),
        }
    }
    Ok(Some(queries))
}

/// How a term longer than the prefix indexes is asked, from the tokens of the dictionary's
/// words its word begins (at most [`MAX_EXPANSIONS`] + 1 of them) and the words the query's
/// earlier terms were expanded into (`expanded`, counted on); `None` when no word starts with
/// it.
fn expansion(token: String, words: Vec<String>, expanded: &mut usize) -> Option<TermQuery> {
    if words.is_empty() {
        return None;
    }
    if words.len() > MAX_EXPANSIONS || *expanded + words.len() > MAX_EXPANSIONS_PER_QUERY {
        return Some(TermQuery::Prefix(token));
    }
    *expanded += words.len();
    Some(TermQuery::Words(words))
}

/// The word tokens of these documents, each once: what `search_terms` lists (every word,
/// short ones too, which a field term may need; never a field token).
fn dictionary_words(key: TenantKey, documents: &[&Document]) -> Vec<String> {
    let mut words = BTreeSet::new();
    for document in documents {
        words.extend(key.document_word_tokens(&document.fields));
    }
    words.into_iter().collect()
}

/// FTS5 and plain tables of SQLite.
#[derive(Debug, Clone, Copy, Default)]
pub struct SqliteIndex;

/// Removes from the dictionary each of `words` that no indexed document holds any more (a
/// document that lost it was deleted or changed), so the dictionary stays as large as the
/// words of the live documents however many come and go.
async fn forget_unheld_words(
    conn: &mut SqliteConnection,
    words: impl Iterator<Item = String>,
) -> anyhow::Result<()> {
    for word in words {
        if !store::word_is_indexed(conn, &word).await? {
            store::forget_word(conn, &word).await?;
        }
    }
    Ok(())
}

/// The FTS5 MATCH expression of a query: every term ANDed, and the family token (a token of
/// its own kind, `g`, which no word token equals: the index has one column).
pub fn match_expression(key: TenantKey, terms: &[TermQuery], family: Option<&str>) -> String {
    let mut parts: Vec<String> = terms
        .iter()
        .map(|term| match term {
            TermQuery::Prefix(token) => format!("\"{token}\"*"),
            TermQuery::Words(words) => {
                let quoted: Vec<String> = words.iter().map(|word| format!("\"{word}\"")).collect();
                format!("({})", quoted.join(" OR "))
            }
        })
        .collect();
    if let Some(family) = family {
        parts.push(format!("\"{}\"", key.family_token(family)));
    }
    parts.join(" AND ")
}

/// The MATCH expression of `query`, or `None` when nothing can match.
async fn query_expression(
    pool: &SqlitePool,
    key: TenantKey,
    query: &IndexQuery<'_>,
) -> anyhow::Result<Option<String>> {
    Ok(term_queries(pool, key, query.terms)
        .await?
        .map(|terms| match_expression(key, &terms, query.family)))
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
                documents.push(Document::from_row(entity_id.0, family_code, &fields)?);
            }
        }
        Ok(documents)
    }

    async fn store(
        conn: &mut SqliteConnection,
        // The documents are stored under the tenant's key.
        _tenant_id: &str,
        key: TenantKey,
        documents: &[Document],
        replaced: &[Document],
    ) -> anyhow::Result<()> {
        let all: Vec<&Document> = documents.iter().collect();
        let words = dictionary_words(key, &all);
        for chunk in words.chunks(CHUNK) {
            store::add_words(conn, chunk).await?;
        }
        for chunk in documents.chunks(CHUNK) {
            let rows: Vec<store::DocumentWrite<'_>> = chunk
                .iter()
                .map(|document| store::DocumentWrite {
                    entity_id: &document.entity_id,
                    family_code: &document.family_code,
                    fields: Value::Object(document.fields.clone()).to_string(),
                })
                .collect();
            let ids = store::upsert_documents(conn, key.number, &rows).await?;
            let by_entity: std::collections::HashMap<&str, &Document> = chunk
                .iter()
                .map(|document| (document.entity_id.as_str(), document))
                .collect();
            let index_rows: Vec<(i64, String)> = ids
                .iter()
                .filter_map(|(id, entity_id)| {
                    let document = by_entity.get(entity_id.0.as_str())?;
                    let mut tokens = key.document_tokens(&document.fields);
                    tokens.push(key.family_token(&document.family_code));
                    Some((*id, tokens.join(" ")))
                })
                .collect();
            store::index(conn, &index_rows).await?;
        }
        let before: Vec<&Document> = replaced.iter().collect();
        let words: BTreeSet<String> = words.into_iter().collect();
        let dropped = dictionary_words(key, &before)
            .into_iter()
            .filter(|word| !words.contains(word));
        forget_unheld_words(conn, dropped).await
    }

    async fn remove(
        conn: &mut SqliteConnection,
        // The documents are stored under the tenant's key.
        _tenant_id: &str,
        key: TenantKey,
        removed: &[Document],
    ) -> anyhow::Result<()> {
        let entity_ids: Vec<&str> = removed.iter().map(|d| d.entity_id.as_str()).collect();
        for chunk in entity_ids.chunks(CHUNK) {
            store::remove(conn, key.number, chunk).await?;
        }
        let before: Vec<&Document> = removed.iter().collect();
        forget_unheld_words(conn, dictionary_words(key, &before).into_iter()).await
    }

    async fn clear(conn: &mut SqliteConnection) -> anyhow::Result<()> {
        store::clear(conn).await
    }

    async fn erase_tenant(conn: &mut SqliteConnection, tenant_id: &str) -> anyhow::Result<u64> {
        let documents = store::erase_documents(conn, tenant_id).await?;
        if let Some(key) = store::tenant_key_in(conn, tenant_id).await? {
            // Every dictionary word of the tenant starts with its key (of a fixed width).
            let prefix = TenantKey::new(key, KEY_WIDTH).prefix();
            store::forget_words_with_prefix(conn, &prefix).await?;
            store::forget_tenant_key(conn, tenant_id).await?;
        }
        Ok(documents)
    }

    async fn page(
        pool: &SqlitePool,
        key: TenantKey,
        query: &IndexQuery<'_>,
    ) -> anyhow::Result<(Vec<Hit>, Option<u64>)> {
        let Some(expression) = query_expression(pool, key, query).await? else {
            return Ok((Vec::new(), Some(0)));
        };
        let rows = store::page(
            pool,
            key.number,
            &expression,
            query.terms.len(),
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
                entity_id: entity_id.0,
                family_code,
                fields,
                score,
            })
            .collect();
        Ok((hits, total))
    }

    async fn count(
        pool: &SqlitePool,
        key: TenantKey,
        query: &IndexQuery<'_>,
    ) -> anyhow::Result<u64> {
        let Some(expression) = query_expression(pool, key, query).await? else {
            return Ok(0);
        };
        let count = store::count(pool, &expression, query.window).await?;
        Ok(u64::try_from(count).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::query::parse;

    #[test]
    fn match_expressions_are_quoted_tokens() {
        let key = TenantKey::new(3, KEY_WIDTH);
        let terms = parse("Lov name:ada OR *");
        let prefixes: Vec<TermQuery> = terms
            .iter()
            .map(|term| TermQuery::Prefix(term.token(key)))
            .collect();
        assert_eq!(
            match_expression(key, &prefixes, None),
            "\"00000003wlov\"* AND \"00000003fnamexada\"* AND \"00000003wor\"*"
        );
        assert_eq!(
            match_expression(
                key,
                &[TermQuery::Words(vec![
                    "00000003wlovelace".into(),
                    "00000003wloveless".into()
                ])],
                Some("deal")
            ),
            "(\"00000003wlovelace\" OR \"00000003wloveless\") AND \"00000003gdeal\""
        );
    }

    #[test]
    fn expansions_are_bounded_per_term_and_per_query() {
        let words = |count: usize| -> Vec<String> { (0..count).map(|n| format!("w{n}")).collect() };
        let mut expanded = 0;
        assert_eq!(expansion("t".into(), Vec::new(), &mut expanded), None);
        assert_eq!(
            expansion("t".into(), words(MAX_EXPANSIONS + 1), &mut expanded),
            Some(TermQuery::Prefix("t".into()))
        );
        assert_eq!(expanded, 0);
        assert_eq!(
            expansion("t".into(), words(MAX_EXPANSIONS), &mut expanded),
            Some(TermQuery::Words(words(MAX_EXPANSIONS)))
        );
        assert_eq!(
            expansion("u".into(), words(MAX_EXPANSIONS), &mut expanded),
            Some(TermQuery::Words(words(MAX_EXPANSIONS)))
        );
        assert_eq!(expanded, MAX_EXPANSIONS_PER_QUERY);
        // The query's budget is spent: later terms are asked as prefixes.
        assert_eq!(
            expansion("v".into(), words(1), &mut expanded),
            Some(TermQuery::Prefix("v".into()))
        );
    }

    #[test]
    fn the_dictionary_lists_each_word_once_and_no_field_token() {
        let key = TenantKey::new(3, KEY_WIDTH);
        let document = |name: &str| Document {
            entity_id: "e".into(),
            family_code: "contact".into(),
            fields: serde_json::json!({"name": name})
                .as_object()
                .unwrap()
                .clone(),
        };
        let (first, second) = (document("Ada Lovelace"), document("Ada Byron"));
        let words = dictionary_words(key, &[&first, &second]);
        // "ada" fits a prefix index (12 characters) and is listed all the same: a field term
        // (`name:ad`) is expanded through the words.
        assert_eq!(
            words,
            ["00000003wada", "00000003wbyron", "00000003wlovelace"]
        );
        assert_eq!(LONGEST_INDEXED_PREFIX, "00000003wada".len());
        assert_eq!(key.word_of("00000003wlovelace"), Some("lovelace"));
        assert_eq!(key.word_of("00000003fnamexada"), None);
        assert_eq!(key.word_of("00000004wada"), None);
    }
}
