//! The Activity engine: the tenant's activity feed, built from the events it subscribes to on
//! the host's bus (core's entity events, chat's, and those of the notes, drive, voip and
//! usermanager engines), filterable by actor, entity and type, cursor paged, with a per-user
//! "since last seen" count.
//!
//! Routes (every member reads; guest tokens, which see only what is shared with them, get 403):
//! `GET /api/v1/feed`, `GET /api/v1/feed/unseen`, `POST /api/v1/feed/seen`, `GET /api/v1/status`
//! (routed and documented in `api.rs`).
//!
//! Each delivered event becomes exactly one item (`items.rs`), however often the bus delivers
//! it, except that a creation is one item: core's `entity.created` and the `entity.field_set`
//! events of the same intention, its `data.fields` listing the fields set. Events of a tenant the engine has not provisioned (or has deprovisioned) are ignored.
//! Storage layout (tenant-scoped by the host):
//!
//! | key | value |
//! |---|---|
//! | `tenant`, `users/<user_id>` | provisioning records (`tenancy`) |
//! | `feed-settings` | `{retention_days, event_types, created_at}` |
//! | `items/<item_id>` | the feed (ids are UUID v7: the event's id, else one taken on arrival; keys sort by time) |
//! | `by-actor/<actor_id>/<item_id>`, `by-entity/<entity_id>/<item_id>` | indexes (empty: the key names the item; entries written before 2026-11-26 hold a copy of it) |
//! | `by-type/<type>/<item_id>` | type index (likewise; a pattern `prefix.*` merges the indexes of the types under the prefix; items recorded before 2026-11-27 are also under `by-type/<prefix>.*/<item_id>`) |
//! | `seen-events/<event_id>` | the item id of a recorded event whose id is not a UUID v7, and of every event recorded before 2026-11-26 (one item per event, `items.rs`) |
//! | `users/<user_id>/seen` | the user's last-seen mark (`seen.rs`) |
//! | `retention-schedule` | the pending daily pruning run (`retention.rs`) |

mod api;
mod feed;
mod items;
mod retention;
#[cfg(test)]
mod route_tests;
mod seen;

use serde::{Deserialize, Serialize};
use tessera_sdk::storage::{self, Update};
use tessera_sdk::{
    ApiError, Context, Descriptor, Engine, Event, Job, Router, TenantInfo, UserInfo, tenancy, time,
};

/// The engine code, also its path prefix.
const CODE: &str = "activity";

/// The events the feed is built from: core's entity events, chat's, and the other engines'.
const SUBSCRIPTIONS: [&str; 9] = [
    "entity.*",
    "message.*",
    "conversation.*",
    "member.*",
    "note.*",
    "file.*",
    "folder.*",
    "call.*",
    "user.*",
];

/// The key of the tenant's feed settings.
const SETTINGS_KEY: &str = "feed-settings";
/// How long items are kept unless the settings say otherwise.
const RETENTION_DAYS: u64 = 90;

/// The tenant's feed settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct FeedSettings {
    retention_days: u64,
    event_types: Vec<String>,
    created_at: String,
}

/// Guest tokens read only what is shared with them; the tenant's feed is not.
fn require_reader(ctx: &Context) -> Result<(), ApiError> {
    if ctx.is_guest() {
        Err(ApiError::Forbidden)
    } else {
        Ok(())
    }
}

struct Activity;

thread_local! {
    /// Whether the tenant of the events this instance received is provisioned, read at the
    /// first of them: an instance serves one tenant only (a batch of its deliveries, or its
    /// calls while the host keeps the instance warm), and the host retires it when the tenant's
    /// provisioning changes.
    static PROVISIONED: std::cell::RefCell<Option<(String, bool)>> =
        const { std::cell::RefCell::new(None) };
}

/// Whether `tenant_id` (the tenant of the current call) is provisioned here, read once per
/// instance.
fn provisioned(tenant_id: &str) -> Result<bool, String> {
    let known = PROVISIONED.with_borrow(|known| match known {
        Some((known_tenant, provisioned)) if known_tenant == tenant_id => Some(*provisioned),
        _ => None,
    });
    if let Some(provisioned) = known {
        return Ok(provisioned);
    }
    let provisioned = tenancy::tenant_record()?.is_some();
    PROVISIONED.set(Some((tenant_id.to_owned(), provisioned)));
    Ok(provisioned)
}

impl Engine for Activity {
    fn describe() -> Descriptor {
        SUBSCRIPTIONS.into_iter().fold(
            Descriptor::new(CODE, "Activity", env!("CARGO_PKG_VERSION"))
                .tenant_provision(true)
                .user_provision(true),
            Descriptor::subscribe,
        )
    }

    fn router() -> Router {
        api::router()
    }

    /// Creates (or brings up to date) the settings, the tenant record and the pruning job.
    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        let event_types: Vec<String> = SUBSCRIPTIONS.map(str::to_owned).to_vec();
        storage::update_json::<FeedSettings, _>(SETTINGS_KEY, |current| match current {
            Some(settings) if settings.event_types == event_types => Update::Keep,
            Some(settings) => Update::Set(FeedSettings {
                event_types: event_types.clone(),
                ..settings
            }),
            None => Update::Set(FeedSettings {
                retention_days: RETENTION_DAYS,
                event_types: event_types.clone(),
                created_at: time::now_rfc3339(),
            }),
        })?;
        tenancy::record_tenant(tenant)?;
        retention::ensure_scheduled()?;
        Ok(())
    }

    /// Records the user and starts their last-seen mark at now.
    fn provision_user(user: &UserInfo) -> Result<(), String> {
        tenancy::record_user(user)?;
        seen::start_mark(&user.user_id)?;
        Ok(())
    }

    fn on_event(event: &Event) -> Result<(), String> {
        if !provisioned(&event.tenant_id)? {
            return Ok(());
        }
        items::record(event)?;
        Ok(())
    }

    fn run_job(job: &Job) -> Result<(), String> {
        retention::run(job)
    }
}

tessera_sdk::export_engine!(Activity);
