//! The SQL of engines published to the cluster: `engine_versions` (the components, by code and
//! version) and `engine_releases` (each code's active and previous version), and the
//! PostgreSQL notification that tells every host to reconcile.

use anyhow::Context as _;
use tessera_storage::{Database, Tx, TxInner, on_pool, on_tx, time};

/// The channel hosts LISTEN on for changes of the published engines.
pub const CHANNEL: &str = "tessera_engine_releases";

/// A published version, without its bytes.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionRow {
    pub code: String,
    pub version: i64,
    pub sha256: String,
    pub engine_version: String,
    pub size_bytes: i64,
    pub published_at: String,
}

/// A code's release state, as a change reads it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ReleaseRow {
    pub active_version: Option<i64>,
    pub previous_version: Option<i64>,
}

/// What a host should run of one code: its active version and digest.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Desired {
    pub code: String,
    pub version: i64,
    pub sha256: String,
}

/// The digest a manifest is stored under: its text's SHA-256, or empty without one.
fn manifest_digest(manifest: Option<&str>) -> String {
    manifest.map_or_else(String::new, |text| {
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(text.as_bytes()))
    })
}

/// The version of `code` whose bytes have `sha256`, published with `manifest` (a `wasi:http`
/// component's text, else none), if published already.
pub async fn version_by_digest(
    tx: &mut Tx,
    code: &str,
    sha256: &str,
    manifest: Option<&str>,
) -> anyhow::Result<Option<VersionRow>> {
    let manifest_sha256 = manifest_digest(manifest);
    on_tx!(tx, conn => sqlx::query_as::<_, VersionRow>(
        "SELECT code, version, sha256, engine_version, size_bytes, published_at
         FROM engine_versions WHERE code = $1 AND sha256 = $2 AND manifest_sha256 = $3",
    )
    .bind(code)
    .bind(sha256)
    .bind(&manifest_sha256)
    .fetch_optional(&mut **conn)
    .await)
    .context("looking up a published component by digest")
}

/// A component to store as a new version.
pub struct NewVersion<'a> {
    pub code: &'a str,
    pub sha256: &'a str,
    pub engine_version: &'a str,
    pub component: &'a [u8],
    /// A `wasi:http` component's manifest text.
    pub manifest: Option<&'a str>,
}

/// Stores a component as the next version of its code; the new row.
pub async fn insert_version(tx: &mut Tx, new: NewVersion<'_>) -> anyhow::Result<VersionRow> {
    let now = time::now();
    let size = i64::try_from(new.component.len()).context("a component's size")?;
    let manifest_sha256 = manifest_digest(new.manifest);
    on_tx!(tx, conn => sqlx::query_as::<_, VersionRow>(
        "INSERT INTO engine_versions (code, version, sha256, engine_version, component, size_bytes, published_at, manifest, manifest_sha256)
         SELECT $1, COALESCE(MAX(version), 0) + 1, $2, $3, $4, $5, $6, $7, $8 FROM engine_versions WHERE code = $1
         RETURNING code, version, sha256, engine_version, size_bytes, published_at",
    )
    .bind(new.code)
    .bind(new.sha256)
    .bind(new.engine_version)
    .bind(new.component)
    .bind(size)
    .bind(&now)
    .bind(new.manifest)
    .bind(&manifest_sha256)
    .fetch_one(&mut **conn)
    .await)
    .context("storing a published component")
}

/// The release state of `code`, locked for the transaction on PostgreSQL (SQLite's write
/// transaction holds the whole database).
pub async fn release_for_update(tx: &mut Tx, code: &str) -> anyhow::Result<Option<ReleaseRow>> {
    match &mut tx.inner {
        TxInner::Sqlite(conn) => sqlx::query_as::<_, ReleaseRow>(
            "SELECT active_version, previous_version FROM engine_releases WHERE code = $1",
        )
        .bind(code)
        .fetch_optional(&mut **conn)
        .await,
        TxInner::Postgres(conn) => sqlx::query_as::<_, ReleaseRow>(
            "SELECT active_version, previous_version FROM engine_releases WHERE code = $1 FOR UPDATE",
        )
        .bind(code)
        .fetch_optional(&mut **conn)
        .await,
    }
    .context("reading an engine's release state")
}

/// Sets the release state of `code` (inserted or replaced) and tells the hosts.
pub async fn set_release(
    tx: &mut Tx,
    code: &str,
    active_version: Option<i64>,
    previous_version: Option<i64>,
) -> anyhow::Result<()> {
    let now = time::now();
    on_tx!(tx, conn => sqlx::query(
        "INSERT INTO engine_releases (code, active_version, previous_version, changed_at)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (code) DO UPDATE SET active_version = excluded.active_version,
             previous_version = excluded.previous_version, changed_at = excluded.changed_at",
    )
    .bind(code)
    .bind(active_version)
    .bind(previous_version)
    .bind(&now)
    .execute(&mut **conn)
    .await
    .map(drop))
    .context("changing an engine's release state")?;
    if let TxInner::Postgres(conn) = &mut tx.inner {
        // Delivered at commit, to every host listening.
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(code)
            .execute(&mut **conn)
            .await
            .context("notifying the hosts of a release")?;
    }
    Ok(())
}

/// Whether version `version` of `code` exists.
pub async fn version_exists(tx: &mut Tx, code: &str, version: i64) -> anyhow::Result<bool> {
    on_tx!(tx, conn => sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM engine_versions WHERE code = $1 AND version = $2",
    )
    .bind(code)
    .bind(version)
    .fetch_one(&mut **conn)
    .await
    .map(|count| count > 0))
    .context("looking up a published version")
}

/// A code's release state with its active version's digest.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ReleaseWithDigest {
    pub code: String,
    pub active_version: Option<i64>,
    pub active_sha256: Option<String>,
    pub previous_version: Option<i64>,
    pub changed_at: String,
}

/// Every code's release state (or `code`'s alone), by code, with the active version's digest.
pub async fn releases(
    database: &Database,
    code: Option<&str>,
) -> anyhow::Result<Vec<ReleaseWithDigest>> {
    on_pool!(database, pool => sqlx::query_as::<_, ReleaseWithDigest>(
        "SELECT release.code, release.active_version, version.sha256 AS active_sha256,
                release.previous_version, release.changed_at
         FROM engine_releases release
         LEFT JOIN engine_versions version
           ON version.code = release.code AND version.version = release.active_version
         WHERE $1 IS NULL OR release.code = $1
         ORDER BY release.code",
    )
    .bind(code)
    .fetch_all(pool)
    .await)
    .context("listing engine releases")
}

/// Every published version of `code`, newest first.
pub async fn versions(database: &Database, code: &str) -> anyhow::Result<Vec<VersionRow>> {
    on_pool!(database, pool => sqlx::query_as::<_, VersionRow>(
        "SELECT code, version, sha256, engine_version, size_bytes, published_at
         FROM engine_versions WHERE code = $1 ORDER BY version DESC",
    )
    .bind(code)
    .fetch_all(pool)
    .await)
    .context("listing an engine's published versions")
}

/// The active version of every code that has one: what every host should run.
pub async fn desired(database: &Database) -> anyhow::Result<Vec<Desired>> {
    on_pool!(database, pool => sqlx::query_as::<_, Desired>(
        "SELECT release.code, version.version, version.sha256
         FROM engine_releases release
         JOIN engine_versions version
           ON version.code = release.code AND version.version = release.active_version
         ORDER BY release.code",
    )
    .fetch_all(pool)
    .await)
    .context("reading the published engines' desired state")
}

/// The bytes of version `version` of `code`, and the manifest it was published with.
pub async fn component(
    database: &Database,
    code: &str,
    version: i64,
) -> anyhow::Result<(Vec<u8>, Option<String>)> {
    on_pool!(database, pool => sqlx::query_as::<_, (Vec<u8>, Option<String>)>(
        "SELECT component, manifest FROM engine_versions WHERE code = $1 AND version = $2",
    )
    .bind(code)
    .bind(version)
    .fetch_one(pool)
    .await)
    .with_context(|| format!("reading version {version} of {code:?}"))
}
