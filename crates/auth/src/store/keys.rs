//! SQL of the token signing keys (`signing_keys`): reading them, sealing seeds that older
//! versions stored in plaintext, and the two statements of a rotation.

use anyhow::Context as _;

use tessera_storage::{Database, Tx};
use tessera_storage::{on_pool, on_tx, on_writer};

/// A stored key.
#[derive(sqlx::FromRow)]
pub struct KeyRow {
    pub kid: String,
    /// The seed as stored: sealed (`v1:…`), or plaintext base64 from an older version.
    pub private_seed: String,
    pub created_at: String,
    /// When it stopped signing; `None` for the signing key.
    pub retired_at: Option<String>,
}

/// A seed still stored in plaintext.
#[derive(sqlx::FromRow)]
pub struct PlaintextSeed {
    pub kid: String,
    pub private_seed: String,
}

/// Every key whose seed is not sealed yet.
pub async fn plaintext_seeds(database: &Database) -> anyhow::Result<Vec<PlaintextSeed>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT kid, private_seed FROM signing_keys WHERE private_seed NOT LIKE 'v1:%'",
    )
    .fetch_all(pool)
    .await)
    .context("reading plaintext signing keys")
}

/// Replaces the seed of `kid` with `sealed`, only while it still holds `plaintext` (so hosts
/// starting at once do not overwrite each other).
pub async fn seal_seed(
    database: &Database,
    kid: &str,
    plaintext: &str,
    sealed: &str,
) -> anyhow::Result<()> {
    on_writer!(database, pool => sqlx::query(
        "UPDATE signing_keys SET private_seed = $1 WHERE kid = $2 AND private_seed = $3",
    )
    .bind(sealed)
    .bind(kid)
    .bind(plaintext)
    .execute(pool)
    .await
    .map(drop))
    .with_context(|| format!("sealing the signing key {kid}"))
}

/// Retires the signing key (the one not retired yet) at `now`.
pub async fn retire_signing_key(tx: &mut Tx, now: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE signing_keys SET retired_at = $1 WHERE retired_at IS NULL",
    )
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("retiring the signing key")
}

/// Stores a new EdDSA key with its sealed seed.
pub async fn insert_key(
    tx: &mut Tx,
    kid: &str,
    sealed_seed: &str,
    now: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO signing_keys (kid, algorithm, private_seed, created_at) VALUES ($1, 'EdDSA', $2, $3)",
    )
    .bind(kid)
    .bind(sealed_seed)
    .bind(now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("storing a signing key")
}

/// The signing key and the keys retired after `retired_after`, newest first.
pub async fn useful_keys(database: &Database, retired_after: &str) -> anyhow::Result<Vec<KeyRow>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT kid, private_seed, created_at, retired_at FROM signing_keys
         WHERE retired_at IS NULL OR retired_at > $1 ORDER BY created_at DESC",
    )
    .bind(retired_after)
    .fetch_all(pool)
    .await)
    .context("reading signing keys")
}

/// Marks every retired key as retired at the epoch, older than any token's lifetime, so no host
/// loads it to verify again (the rows stay, for the record). Returns how many changed.
pub async fn revoke_retired_keys(database: &Database) -> anyhow::Result<u64> {
    on_writer!(database, pool => sqlx::query(
        "UPDATE signing_keys SET retired_at = $1 WHERE retired_at IS NOT NULL AND retired_at > $1",
    )
    .bind(REVOKED_AT)
    .execute(pool)
    .await
    .map(|done| done.rows_affected()))
    .context("revoking the retired signing keys")
}

/// The retirement time of a revoked key.
const REVOKED_AT: &str = "1970-01-01T00:00:00.000000Z";
