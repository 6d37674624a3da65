//! The SQL of the two full-text index backends: `postgres.rs` (`search_documents` with a
//! `tsvector` column) and `sqlite.rs` (`search_documents` and the FTS5 table `search_index`),
//! and of the tenant keys both share (`search_tenants`). The backends (`search/postgres.rs`,
//! `search/sqlite.rs`) make the tokens, literals and batches, and call these with their
//! driver's connection or pool.

pub(super) mod postgres;
pub(super) mod sqlite;
