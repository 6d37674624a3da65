//! The VoIP engine: call records of a tenant. A call starts `ringing` with its initiator joined
//! and the other participants invited, becomes `active` when the first of them joins, and ends
//! `ended` (with its duration) or `missed` (nobody answered, within its ring timeout or before
//! it was ended). Media and signaling are out of scope. Every participant has the call in their
//! history, listed newest first with cursor paging.
//!
//! Storage (tenant-scoped by the host):
//!
//! | key | value |
//! |---|---|
//! | `tenant`, `users/<user_id>` | provisioning records (`tenancy`) |
//! | `settings` | the tenant's telephony settings (`ring_timeout_seconds`: the default timeout) |
//! | `calls/<call_id>` | a call with its participants (ids are UUID v7: keys sort by time) |
//! | `by-user/<user_id>/<call_id>` | the call history index of each participant |
//! | `removals/<user_id>` | a pending removal of the user: `{removal_id}` (`tenancy`) |
//!
//! Removing a user takes as many calls as their history needs (at most 100 calls forgotten per
//! engine call): a first chunk in `deprovision-user`, the rest in jobs `{remove_user,
//! removal_id}` while the marker `removals/<user_id>` holds that removal
//! (`tenancy::remove_user_in_chunks`). Provisioning the user again cancels it; the calls it had
//! not reached yet stay in their history.
//!
//! Events (identifiers only): `call.started`, `call.answered`, `call.ended`, `call.missed`.

mod call;
mod calls;

use tessera_sdk::serde_json::json;
use tessera_sdk::tenancy::RemovalJob;
use tessera_sdk::{
    Context, Descriptor, Engine, Job, Request, Response, Router, TenantInfo, UserInfo, storage,
    tenancy, time,
};

use crate::call::Action;

/// The engine code, also its path prefix.
const CODE: &str = "voip";

/// The key of the tenant's settings.
const SETTINGS_KEY: &str = "settings";

struct Voip;

impl Engine for Voip {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "VoIP", env!("CARGO_PKG_VERSION"))
            .tenant_provision(true)
            .user_provision(true)
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .get("/api/v1/calls", calls::list)
            .post("/api/v1/calls", calls::create)
            .get("/api/v1/calls/{id}", calls::show)
            .post("/api/v1/calls/{id}/join", calls::act(Action::Join))
            .post("/api/v1/calls/{id}/leave", calls::act(Action::Leave))
            .post("/api/v1/calls/{id}/end", calls::act(Action::End))
            .handle(ctx, request)
    }

    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        storage::put_json_if_absent(SETTINGS_KEY, || {
            json!({
                "ring_timeout_seconds": 60,
                "voicemail_enabled": true,
                "recording_enabled": false,
                "created_at": time::now_rfc3339(),
            })
        })?;
        tenancy::record_tenant(tenant)?;
        Ok(())
    }

    /// Cancels a pending removal of the user first (the calls it had not reached yet stay in
    /// their history), then records the user.
    fn provision_user(user: &UserInfo) -> Result<(), String> {
        tenancy::cancel_removal(&user.user_id)?;
        tenancy::record_user(user)?;
        Ok(())
    }

    /// Takes the user out of their calls and forgets their history, and the user's record: a
    /// first chunk now, the rest in jobs when there is more than one call may do
    /// (`tenancy::remove_user_in_chunks`).
    fn deprovision_user(_tenant_id: &str, user_id: &str) -> Result<(), String> {
        tenancy::remove_user_in_chunks(user_id, |chunk, _| calls::forget_user(chunk))
            .map_err(|error| error.to_string())
    }

    /// A user's removal (`{remove_user, removal_id}`), else a ring timeout (`{call_id}`).
    fn run_job(job: &Job) -> Result<(), String> {
        match RemovalJob::of(job) {
            Some(removal) => {
                tenancy::continue_removal(&removal, |chunk, _| calls::forget_user(chunk))
                    .map_err(|error| error.to_string())
            }
            None => calls::run_ring_timeout(job),
        }
    }
}

tessera_sdk::export_engine!(Voip);
