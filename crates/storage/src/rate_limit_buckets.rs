//! Rate-limit buckets shared by the hosts of a cluster (PostgreSQL): GCRA cells in
//! `rate_limit_buckets`, drawn from in batches. One statement takes, for every key of a batch,
//! as many of the requests wanted as its bucket holds, under the row's lock and on the
//! database's clock, so concurrent batches of several hosts never grant more than the limit
//! between them.
//!
//! GCRA with burst `b` and interval `I` (the window is `b·I`): a bucket's theoretical arrival
//! time `tat` is when it is full again; at `now`, `k` requests fit while
//! `max(tat, now) + k·I ≤ now + b·I`, and granting them moves `tat` to `max(tat, now) + k·I`.

use anyhow::Context as _;

use crate::{Database, Pool};

/// Requests wanted from one bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draw {
    /// The bucket's key (never a secret: tokens are hashed before they name a bucket).
    pub key: String,
    /// How many requests of the batch count against it (at least 1).
    pub wanted: u32,
    /// The bucket's size: requests per window (at least 1).
    pub burst: u32,
    /// One request's share of the window, in microseconds (at least 1).
    pub interval_us: i64,
}

/// What one bucket granted.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Grant {
    pub key: String,
    /// How many of the requests wanted fit (the first ones, in the batch's order).
    pub granted: i32,
    /// Requests the bucket still holds after this draw.
    pub remaining: i64,
    /// Microseconds until one more request would fit (0 when one fits now).
    pub retry_after_us: i64,
}

/// Draws every `draws` entry (distinct keys) from its bucket, in one statement. PostgreSQL only:
/// a host on SQLite keeps its buckets in memory.
pub async fn draw(database: &Database, mut draws: Vec<Draw>) -> anyhow::Result<Vec<Grant>> {
    let Pool::Postgres(pool) = database.pool() else {
        anyhow::bail!("rate-limit buckets are shared through PostgreSQL only");
    };
    if draws.is_empty() {
        return Ok(Vec::new());
    }
    // Rows are locked in the order given: every batch in key order, so two hosts' batches
    // never wait for each other in a cycle.
    draws.sort_by(|a, b| a.key.cmp(&b.key));
    let keys: Vec<&str> = draws.iter().map(|draw| draw.key.as_str()).collect();
    let wanted: Vec<i32> = draws
        .iter()
        .map(|draw| i32::try_from(draw.wanted.min(draw.burst)).unwrap_or(i32::MAX))
        .collect();
    let bursts: Vec<i32> = draws
        .iter()
        .map(|draw| i32::try_from(draw.burst).unwrap_or(i32::MAX))
        .collect();
    let intervals: Vec<i64> = draws.iter().map(|draw| draw.interval_us.max(1)).collect();
    // A new bucket starts full: `tat` = now, then the draw. The proposed row carries the draw
    // (`granted` = wanted, capped at the burst, and `tat_us` = now + wanted·I), so an existing
    // row reads `now` back from it as `excluded.tat_us - excluded.granted·I`.
    sqlx::query_as::<_, Grant>(
        "WITH clock AS (SELECT (EXTRACT(EPOCH FROM statement_timestamp()) * 1000000)::BIGINT AS now_us),
         drawn AS (
             INSERT INTO rate_limit_buckets AS bucket (key, tat_us, granted, interval_us, burst)
             SELECT wanted.key, clock.now_us + wanted.count * wanted.interval_us, wanted.count,
                    wanted.interval_us, wanted.burst
             FROM unnest($1::TEXT[], $2::INTEGER[], $3::INTEGER[], $4::BIGINT[])
                      AS wanted (key, count, burst, interval_us),
                  clock
             ON CONFLICT (key) DO UPDATE SET
                 granted = LEAST(excluded.granted, GREATEST(0,
                     (excluded.tat_us - excluded.granted * excluded.interval_us
                      + excluded.burst * excluded.interval_us
                      - GREATEST(bucket.tat_us, excluded.tat_us - excluded.granted * excluded.interval_us))
                     / excluded.interval_us)),
                 tat_us = GREATEST(bucket.tat_us, excluded.tat_us - excluded.granted * excluded.interval_us)
                     + LEAST(excluded.granted, GREATEST(0,
                         (excluded.tat_us - excluded.granted * excluded.interval_us
                          + excluded.burst * excluded.interval_us
                          - GREATEST(bucket.tat_us, excluded.tat_us - excluded.granted * excluded.interval_us))
                         / excluded.interval_us)) * excluded.interval_us,
                 interval_us = excluded.interval_us,
                 burst = excluded.burst
             RETURNING key, granted, tat_us, interval_us, burst
         )
         SELECT drawn.key, drawn.granted,
                GREATEST(0, (clock.now_us + drawn.burst * drawn.interval_us - drawn.tat_us) / drawn.interval_us)
                    AS remaining,
                GREATEST(0, drawn.tat_us + drawn.interval_us - drawn.burst * drawn.interval_us - clock.now_us)
                    AS retry_after_us
         FROM drawn, clock",
    )
    .bind(&keys)
    .bind(&wanted)
    .bind(&bursts)
    .bind(&intervals)
    .fetch_all(pool)
    .await
    .context("drawing from the shared rate-limit buckets")
}

/// Deletes the buckets full again (nothing drawn for a whole window): memory stays bounded by
/// the keys active within about a minute.
pub async fn delete_full(database: &Database) -> anyhow::Result<u64> {
    let Pool::Postgres(pool) = database.pool() else {
        return Ok(0);
    };
    sqlx::query(
        "DELETE FROM rate_limit_buckets
         WHERE tat_us < (EXTRACT(EPOCH FROM statement_timestamp()) * 1000000)::BIGINT",
    )
    .execute(pool)
    .await
    .map(|done| done.rows_affected())
    .context("deleting full rate-limit buckets")
}
