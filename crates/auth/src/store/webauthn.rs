//! SQL of passkeys: each user's WebAuthn user handle (`webauthn_user_handles`), the registered
//! credentials (`webauthn_credentials`) and the ceremonies between start and finish
//! (`webauthn_ceremonies`, by the hash of their challenge, taken by one `DELETE … RETURNING`).

use anyhow::Context as _;

use tessera_storage::{Database, Tx};
use tessera_storage::{on_pool, on_tx};

/// A registered credential as its owner sees it.
#[derive(sqlx::FromRow)]
pub struct CredentialRow {
    pub id: String,
    pub name: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

/// A credential with the relying party's record of it.
#[derive(sqlx::FromRow)]
pub struct StoredPasskey {
    pub id: String,
    pub user_id: String,
    /// The relying party's record (JSON).
    pub passkey: String,
}

/// A new ceremony's row.
pub struct NewCeremony<'a> {
    pub key_hash: &'a str,
    pub kind: &'a str,
    pub user_id: Option<&'a str>,
    pub binding: Option<&'a str>,
    pub sealed_state: &'a str,
    pub expires_at: &'a str,
}

/// The user's WebAuthn user handle, if one was made.
pub async fn user_handle(database: &Database, user_id: &str) -> anyhow::Result<Option<String>> {
    on_pool!(database, pool => sqlx::query_scalar(
        "SELECT user_handle FROM webauthn_user_handles WHERE user_id = $1",
    )
    .bind(user_id)
    .fetch_optional(pool)
    .await)
    .context("reading a user's WebAuthn handle")
}

/// Stores `user_handle` as the user's handle unless the user has one already (a parallel
/// registration made it first); the handle the user has afterwards.
pub async fn keep_user_handle(
    database: &Database,
    user_id: &str,
    user_handle: &str,
) -> anyhow::Result<String> {
    on_pool!(database, pool => sqlx::query(
        "INSERT INTO webauthn_user_handles (user_id, user_handle) VALUES ($1, $2)
         ON CONFLICT (user_id) DO NOTHING",
    )
    .bind(user_id)
    .bind(user_handle)
    .execute(pool)
    .await
    .map(drop))
    .context("storing a user's WebAuthn handle")?;
    user_handle_of(database, user_id).await
}

async fn user_handle_of(database: &Database, user_id: &str) -> anyhow::Result<String> {
    user_handle(database, user_id)
        .await?
        .context("a user's WebAuthn handle vanished as it was stored")
}

/// The user whose handle is `user_handle`, if that user may sign in (not disabled).
pub async fn user_of_handle(
    database: &Database,
    user_handle: &str,
) -> anyhow::Result<Option<(String, String)>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT users.id, users.email FROM webauthn_user_handles
         JOIN users ON users.id = webauthn_user_handles.user_id
         WHERE webauthn_user_handles.user_handle = $1 AND users.disabled_at IS NULL",
    )
    .bind(user_handle)
    .fetch_optional(pool)
    .await)
    .context("reading the user of a WebAuthn handle")
}

/// How many credentials the user has.
pub async fn count_credentials(database: &Database, user_id: &str) -> anyhow::Result<i64> {
    on_pool!(database, pool => sqlx::query_scalar(
        "SELECT COUNT(*) FROM webauthn_credentials WHERE user_id = $1",
    )
    .bind(user_id)
    .fetch_one(pool)
    .await)
    .context("counting a user's passkeys")
}

/// How many credentials the user has, inside `tx`.
pub async fn count_credentials_in(tx: &mut Tx, user_id: &str) -> anyhow::Result<i64> {
    on_tx!(tx, conn => sqlx::query_scalar(
        "SELECT COUNT(*) FROM webauthn_credentials WHERE user_id = $1",
    )
    .bind(user_id)
    .fetch_one(&mut **conn)
    .await)
    .context("counting a user's passkeys")
}

/// Locks the user's handle row until `tx` ends (a no-op update takes the row lock on
/// PostgreSQL and the write lock on SQLite): registrations of one user finish one at a time.
pub async fn lock_user(tx: &mut Tx, user_id: &str) -> anyhow::Result<()> {
    on_tx!(tx, conn => sqlx::query(
        "UPDATE webauthn_user_handles SET user_handle = user_handle WHERE user_id = $1",
    )
    .bind(user_id)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("locking a user's passkeys")
}

/// The user's credentials, oldest first.
pub async fn credentials(database: &Database, user_id: &str) -> anyhow::Result<Vec<CredentialRow>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT id, name, created_at, last_used_at FROM webauthn_credentials
         WHERE user_id = $1 ORDER BY created_at, id",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await)
    .context("listing a user's passkeys")
}

/// The relying party's records of the user's credentials (JSON), oldest first.
pub async fn passkeys_of(database: &Database, user_id: &str) -> anyhow::Result<Vec<String>> {
    on_pool!(database, pool => sqlx::query_scalar(
        "SELECT passkey FROM webauthn_credentials WHERE user_id = $1 ORDER BY created_at, id",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await)
    .context("reading a user's passkeys")
}

/// The credential whose authenticator id is `credential_id`.
pub async fn passkey_by_credential_id(
    database: &Database,
    credential_id: &str,
) -> anyhow::Result<Option<StoredPasskey>> {
    on_pool!(database, pool => sqlx::query_as(
        "SELECT id, user_id, passkey FROM webauthn_credentials WHERE credential_id = $1",
    )
    .bind(credential_id)
    .fetch_optional(pool)
    .await)
    .context("reading a passkey")
}

/// A new credential's row.
pub struct NewCredential<'a> {
    pub id: &'a str,
    pub user_id: &'a str,
    pub credential_id: &'a str,
    pub name: &'a str,
    pub passkey: &'a str,
    pub sign_count: i64,
    pub created_at: &'a str,
}

/// Stores a new credential; `false` when its authenticator id is registered already (to anyone).
pub async fn insert_credential(
    tx: &mut Tx,
    credential: &NewCredential<'_>,
) -> anyhow::Result<bool> {
    let inserted: u64 = on_tx!(tx, conn => sqlx::query(
        "INSERT INTO webauthn_credentials
             (id, user_id, credential_id, name, passkey, sign_count, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (credential_id) DO NOTHING",
    )
    .bind(credential.id)
    .bind(credential.user_id)
    .bind(credential.credential_id)
    .bind(credential.name)
    .bind(credential.passkey)
    .bind(credential.sign_count)
    .bind(credential.created_at)
    .execute(&mut **conn)
    .await
    .map(|done| done.rows_affected()))
    .context("storing a passkey")?;
    Ok(inserted == 1)
}

/// Records a use of the credential: its new record and counter, only if `sign_count` is above
/// the stored one (or both are 0: an authenticator without a counter). `false` when the stored
/// counter is already at or above it: another use got there first, or the credential was cloned.
pub async fn record_use(
    database: &Database,
    id: &str,
    passkey: &str,
    sign_count: i64,
    now: &str,
) -> anyhow::Result<bool> {
    let updated: u64 = on_pool!(database, pool => sqlx::query(
        "UPDATE webauthn_credentials SET passkey = $2, sign_count = $3, last_used_at = $4
         WHERE id = $1 AND (sign_count < $3 OR (sign_count = 0 AND $3 = 0))",
    )
    .bind(id)
    .bind(passkey)
    .bind(sign_count)
    .bind(now)
    .execute(pool)
    .await
    .map(|done| done.rows_affected()))
    .context("recording a passkey's use")?;
    Ok(updated == 1)
}

/// Deletes every credential (passkey) of the user; how many there were.
pub async fn delete_credentials(tx: &mut Tx, user_id: &str) -> anyhow::Result<u64> {
    on_tx!(tx, conn => sqlx::query("DELETE FROM webauthn_credentials WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut **conn)
        .await
        .map(|done| done.rows_affected()))
    .context("deleting a user's passkeys")
}

/// Deletes the user's credential `id`; whether there was one.
pub async fn delete_credential(tx: &mut Tx, user_id: &str, id: &str) -> anyhow::Result<bool> {
    let deleted: u64 = on_tx!(tx, conn => sqlx::query(
        "DELETE FROM webauthn_credentials WHERE id = $1 AND user_id = $2",
    )
    .bind(id)
    .bind(user_id)
    .execute(&mut **conn)
    .await
    .map(|done| done.rows_affected()))
    .context("deleting a passkey")?;
    Ok(deleted == 1)
}

/// Stores a ceremony, pruning the ones expired at `now` first.
pub async fn insert_ceremony(
    database: &Database,
    ceremony: &NewCeremony<'_>,
    now: &str,
) -> anyhow::Result<()> {
    let mut tx = database.begin().await?;
    on_tx!(tx, conn => sqlx::query("DELETE FROM webauthn_ceremonies WHERE expires_at <= $1")
        .bind(now)
        .execute(&mut **conn)
        .await
        .map(drop))
    .context("pruning expired WebAuthn ceremonies")?;
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO webauthn_ceremonies (key_hash, kind, user_id, binding, sealed_state, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(ceremony.key_hash)
    .bind(ceremony.kind)
    .bind(ceremony.user_id)
    .bind(ceremony.binding)
    .bind(ceremony.sealed_state)
    .bind(ceremony.expires_at)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("storing a WebAuthn ceremony")?;
    tx.commit().await?;
    Ok(())
}

/// Takes (deletes and returns the sealed state of) the unexpired ceremony of `key_hash` and
/// `kind`, if it is bound to `user_id` and `binding` where those are given: a ceremony
/// finishes at most once.
pub async fn take_ceremony(
    database: &Database,
    key_hash: &str,
    kind: &str,
    user_id: Option<&str>,
    binding: Option<&str>,
    now: &str,
) -> anyhow::Result<Option<String>> {
    on_pool!(database, pool => sqlx::query_scalar(
        "DELETE FROM webauthn_ceremonies
         WHERE key_hash = $1 AND kind = $2 AND expires_at > $5
           AND ($3 IS NULL OR user_id = $3) AND ($4 IS NULL OR binding = $4)
         RETURNING sealed_state",
    )
    .bind(key_hash)
    .bind(kind)
    .bind(user_id)
    .bind(binding)
    .bind(now)
    .fetch_optional(pool)
    .await)
    .context("taking a WebAuthn ceremony")
}
