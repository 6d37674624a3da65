//! The directory's HTTP handlers: list and search, show, edit, deactivate and reactivate.
//!
//! Access: every member of the tenant reads the directory; a guest token reads only its own
//! profile. A profile is edited by its user (whatever the role, while active) or by an owner.
//! Only owners deactivate and reactivate, never themselves.

use tessera_sdk::serde_json::{Map, Value, json};
use tessera_sdk::{
    ApiError, Context, CursorPage, HandlerResult, Request, Response, ValidationErrors, events,
    storage, time,
};

use crate::edits::Edits;
use crate::profile::{Profile, Status};
use crate::store::{self, Change, DIRECTORY_PREFIX};

/// Longest search text, in characters.
const MAX_QUERY_CHARS: usize = 100;
/// Directory entries read per storage call while filtering.
const SCAN_CHUNK: u32 = 200;
/// Longest cursor position (a storage key).
const MAX_CURSOR_BYTES: usize = 1024;

/// Which profiles a list shows.
struct Filter {
    /// Lower-cased search text.
    needle: Option<String>,
    status: Option<Status>,
}

impl Filter {
    /// `q` (1 to 100 characters; empty means none) and `status` (`active`, `deactivated`).
    fn from_query(q: Option<&str>, status: Option<&str>) -> Result<Self, ApiError> {
        let mut errors = ValidationErrors::new();
        let needle = q
            .filter(|q| !q.is_empty())
            .filter(|q| errors.check_length(q, "q", 1, MAX_QUERY_CHARS))
            .map(str::to_lowercase);
        let status = status
            .filter(|status| !status.is_empty())
            .and_then(|status| {
                let parsed = Status::parse(status);
                errors.check(parsed.is_some(), "status", "in");
                parsed
            });
        errors.into_result()?;
        Ok(Self { needle, status })
    }

    fn is_empty(&self) -> bool {
        self.needle.is_none() && self.status.is_none()
    }

    fn matches(&self, profile: &Profile) -> bool {
        self.status.is_none_or(|status| profile.status == status)
            && self
                .needle
                .as_deref()
                .is_none_or(|needle| profile.mentions(needle))
    }
}

/// `GET /api/v1/users`: the directory in display-name order (case-insensitive, then user id),
/// cursor-paged; pages stay full while filtering by reading on.
pub fn list(ctx: &Context, req: &Request) -> HandlerResult {
    let query = req.query(&["q", "status", "cursor", "limit"])?;
    if ctx.is_guest() {
        return Err(ApiError::Forbidden);
    }
    let page = CursorPage::<String>::from_query(query)?;
    if page
        .after
        .as_ref()
        .is_some_and(|after| !after.starts_with(DIRECTORY_PREFIX) || after.len() > MAX_CURSOR_BYTES)
    {
        return Err(ApiError::invalid("cursor", "invalid"));
    }
    let filter = Filter::from_query(query.get("q"), query.get("status"))?;
    let chunk = if filter.is_empty() {
        page.fetch_limit()
    } else {
        SCAN_CHUNK
    };
    // At most a bounded number of profiles per request: then a short page with a cursor.
    let found = storage::find_json::<Profile, _, ApiError>(
        DIRECTORY_PREFIX,
        page.after.as_deref(),
        false,
        page.fetch_limit() as usize,
        storage::LIST_SCAN_BOUND,
        chunk,
        |key, profile| Ok(filter.matches(&profile).then_some((key, profile))),
    )?;
    let (rows, meta) = page.finish_found(found.items, |(key, _)| key.clone(), found.stopped_after);
    let profiles: Vec<Profile> = rows.into_iter().map(|(_, profile)| profile).collect();
    Ok(Response::ok_with_meta(&profiles, &meta))
}

/// `GET /api/v1/users/me`: the caller's own profile.
pub fn me(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    Ok(Response::ok(&store::require(&ctx.user_id)?))
}

/// `GET /api/v1/users/{user_id}`.
pub fn show(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    Ok(Response::ok(&visible(ctx, req.param("user_id"))?))
}

/// `PATCH /api/v1/users/{user_id}`: display name, title, phone and avatar URL. Publishes
/// `user.profile_updated` with the names of the fields that changed; a PATCH that changes
/// nothing writes and publishes nothing.
pub fn update(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    let user_id = req.param("user_id");
    may_edit(ctx, &visible(ctx, user_id)?)?;
    let edits = Edits::parse(&object_body(req)?)?;
    let (profile, changed) = store::change(user_id, |current| {
        let mut profile = current.ok_or_else(|| ApiError::not_found("User"))?;
        may_edit(ctx, &profile)?;
        let changed = edits.clone().apply(&mut profile);
        if changed.is_empty() {
            return Ok((Change::Keep, (profile, changed)));
        }
        profile.updated_at = time::now_rfc3339();
        Ok((Change::Save(profile.clone()), (profile, changed)))
    })?;
    if !changed.is_empty() {
        let payload = profile_updated(user_id, Some(&ctx.user_id), &changed);
        publish("user.profile_updated", &payload)?;
    }
    Ok(Response::ok(&profile))
}

/// `POST /api/v1/users/{user_id}/deactivate` (owners): publishes `user.deactivated`
/// `{user_id, actor_id}`.
pub fn deactivate(ctx: &Context, req: &Request) -> HandlerResult {
    set_status(ctx, req, Status::Deactivated, "user.deactivated")
}

/// `POST /api/v1/users/{user_id}/reactivate` (owners): publishes `user.reactivated`
/// `{user_id, actor_id}`.
pub fn reactivate(ctx: &Context, req: &Request) -> HandlerResult {
    set_status(ctx, req, Status::Active, "user.reactivated")
}

/// Moves a user to `status`: 403 for non-owners, 409 for the caller themself and for a user
/// already in that status, 404 for an unknown user.
fn set_status(ctx: &Context, req: &Request, status: Status, event_type: &str) -> HandlerResult {
    req.query(&[])?;
    ctx.require_owner()?;
    let user_id = req.param("user_id");
    if user_id == ctx.user_id {
        return Err(ApiError::Conflict(
            "You cannot change the status of your own account.".into(),
        ));
    }
    store::require(user_id)?;
    let profile = store::change(user_id, |current| {
        let mut profile = current.ok_or_else(|| ApiError::not_found("User"))?;
        if profile.status == status {
            return Err(ApiError::Conflict(match status {
                Status::Active => "The user is already active.".into(),
                Status::Deactivated => "The user is already deactivated.".into(),
            }));
        }
        profile.status = status;
        profile.updated_at = time::now_rfc3339();
        Ok((Change::Save(profile.clone()), profile))
    })?;
    publish(
        event_type,
        &json!({ "user_id": user_id, "actor_id": ctx.user_id }),
    )?;
    Ok(Response::ok(&profile))
}

/// The profile of `user_id` if the caller may see it: 404 for unknown users, and for other
/// users when the caller has a guest token.
fn visible(ctx: &Context, user_id: &str) -> Result<Profile, ApiError> {
    if ctx.is_guest() && user_id != ctx.user_id {
        return Err(ApiError::not_found("User"));
    }
    store::require(user_id)
}

/// 403 unless the caller is an owner, or the profile's own user while active.
fn may_edit(ctx: &Context, profile: &Profile) -> Result<(), ApiError> {
    let is_self = ctx.user_id == profile.user_id && profile.status == Status::Active;
    if is_self || ctx.require_owner().is_ok() {
        Ok(())
    } else {
        Err(ApiError::Forbidden)
    }
}

/// The payload of `user.profile_updated`: the user, who changed the profile (null for
/// provisioning) and the names of the changed fields; never their values.
pub fn profile_updated(user_id: &str, actor_id: Option<&str>, fields: &[&str]) -> Value {
    json!({ "user_id": user_id, "actor_id": actor_id, "fields": fields })
}

/// Publishes an event in the call's unit of work: it exists if and only if the change it
/// announces commits, and a failure fails the call (nothing of it commits).
pub fn publish(event_type: &str, payload: &Value) -> Result<(), tessera_sdk::HostError> {
    events::publish(event_type, payload)
}

/// The request body as a JSON object: 400 when it is not JSON or not an object.
fn object_body(req: &Request) -> Result<Map<String, Value>, ApiError> {
    match req.json::<Value>()? {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::BadRequest(
            "The request body must be a JSON object.".into(),
        )),
    }
}
