//! The SQL of the core's write model and its feeds: one module per service file of the crate
//! root (`entities.rs`, `erasure.rs`, `events.rs`, `families.rs`, `feeds.rs`), which keep their logic and
//! call these. Every function takes the pool (`&Database`) or the caller's transaction
//! (`&mut Tx`) and plain arguments, runs its statements through `on_pool!` / `on_tx!` and
//! returns plain rows; every query is bounded by the tenant. The projections' SQL is in
//! `projections/store/`, the search index's in `search/store/`, the workflows' in
//! `workflows/store.rs`.

pub(crate) mod entities;
pub(crate) mod erasure;
pub(crate) mod events;
pub(crate) mod families;
pub(crate) mod feeds;
