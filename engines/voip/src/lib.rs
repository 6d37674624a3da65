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

mod api;
mod call;
mod calls;

use tessera_sdk::serde_json::json;
use tessera_sdk::tenancy::RemovalJob;
use tessera_sdk::{
    Descriptor, Engine, Job, Operation, Router, TenantInfo, UserInfo, storage, tenancy, time,
};

use crate::api::{CallsQuery, NewCall};
use crate::call::{Action, Call};

/// The engine code, also its path prefix.
const CODE: &str = "voip";

/// The key of the tenant's settings.
const SETTINGS_KEY: &str = "settings";

/// The description of the `{id}` path parameter.
const CALL_ID: &str = "The call id";
/// The 404 of a call route.
const NOT_IN_CALL: &str = "No such call, or the caller is not in it";

struct Voip;

impl Engine for Voip {
    fn describe() -> Descriptor {
        Descriptor::new(CODE, "VoIP", env!("CARGO_PKG_VERSION"))
            .tenant_provision(true)
            .user_provision(true)
    }

    fn router() -> Router {
        Router::new()
            .get("/api/v1/status", |ctx, req| tenancy::status(CODE, ctx, req))
            .doc(tenancy::status_operation())
            .get("/api/v1/calls", calls::list)
            .doc(
                Operation::new("List the caller's call history, newest first")
                    .description(
                        "Calls the caller initiated or was invited to. A page may hold fewer \
                         calls than `limit` (even none) while `meta.has_more` is true: page on \
                         until it is false.",
                    )
                    .query::<CallsQuery>()
                    .page::<Call>()
                    .invalid("Invalid `status`, `cursor` or `limit`"),
            )
            .post("/api/v1/calls", calls::create)
            .doc(
                Operation::new("Start a call")
                    .description(
                        "The call rings: the caller is joined, the participants invited. \
                         Unanswered after `ring_timeout_seconds`, it becomes `missed`. Emits \
                         `call.started`.",
                    )
                    .body::<NewCall>()
                    .answers::<Call>(201, "The ringing call")
                    .error(403, "Viewers and guests cannot start calls")
                    .invalid(
                        "Invalid `participant_ids`, `kind` or `ring_timeout_seconds`, or a \
                         body that is not an object (`body`: `object`)",
                    ),
            )
            .get("/api/v1/calls/{id}", calls::show)
            .doc(
                Operation::new("Show a call (its participants only)")
                    .path_parameter("id", CALL_ID)
                    .answers::<Call>(200, "The call")
                    .error(404, NOT_IN_CALL),
            )
            .post("/api/v1/calls/{id}/join", calls::act(Action::Join))
            .doc(
                Operation::new("Join a call")
                    .description(
                        "An invited participant (or one who left a call still going) joins; \
                         the first to join answers a ringing call: it becomes `active` and \
                         `call.answered` is emitted.",
                    )
                    .path_parameter("id", CALL_ID)
                    .answers::<Call>(200, "The call after the join")
                    .error(403, "Viewers and guests cannot join calls")
                    .error(404, NOT_IN_CALL)
                    .error(409, "The call is over, or the caller already joined"),
            )
            .post("/api/v1/calls/{id}/leave", calls::act(Action::Leave))
            .doc(
                Operation::new("Leave a call")
                    .description(
                        "A joined participant leaves; when fewer than two remain joined the \
                         call ends: `ended` (`call.ended`, with its duration) if it was \
                         answered, `missed` (`call.missed`) if it was still ringing.",
                    )
                    .path_parameter("id", CALL_ID)
                    .answers::<Call>(200, "The call after the leave")
                    .error(403, "Viewers and guests cannot leave calls")
                    .error(404, NOT_IN_CALL)
                    .error(409, "The call is over, or the caller has not joined it"),
            )
            .post("/api/v1/calls/{id}/end", calls::act(Action::End))
            .doc(
                Operation::new("End a call for everyone")
                    .description(
                        "Any joined participant ends it: `ended` (`call.ended`) if it was \
                         answered, `missed` (`call.missed`) if it was still ringing.",
                    )
                    .path_parameter("id", CALL_ID)
                    .answers::<Call>(200, "The ended or missed call")
                    .error(403, "Viewers and guests cannot end calls")
                    .error(404, NOT_IN_CALL)
                    .error(409, "The call is over, or the caller has not joined it"),
            )
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

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_sdk::serde_json::Value;

    const ROUTES: [(&str, &str); 7] = [
        ("get", "/api/v1/status"),
        ("get", "/api/v1/calls"),
        ("post", "/api/v1/calls"),
        ("get", "/api/v1/calls/{id}"),
        ("post", "/api/v1/calls/{id}/join"),
        ("post", "/api/v1/calls/{id}/leave"),
        ("post", "/api/v1/calls/{id}/end"),
    ];

    #[test]
    fn every_route_is_documented() {
        let document = Voip::router().openapi();
        let paths = document["paths"].as_object().unwrap();
        let documented: usize = paths
            .values()
            .map(|item| item.as_object().unwrap().len())
            .sum();
        assert_eq!(documented, ROUTES.len());
        for (method, path) in ROUTES {
            let operation = &document["paths"][path][method];
            let summary = operation["summary"].as_str().unwrap();
            assert!(
                !summary.is_empty() && !summary.starts_with(&method.to_ascii_uppercase()),
                "{method} {path}: {summary}"
            );
            let responses = operation["responses"].as_object().unwrap();
            assert!(
                responses.keys().any(|status| status.starts_with('2')),
                "{method} {path}"
            );
        }
    }

    #[test]
    fn schemas_carry_the_rules() {
        let document = Voip::router().openapi();
        let schemas = &document["components"]["schemas"];
        let create = &document["paths"]["/api/v1/calls"]["post"];
        assert_eq!(create["requestBody"]["required"], true);
        assert!(create["responses"]["201"].is_object());
        assert_eq!(
            create["responses"]["403"]["description"],
            "Viewers and guests cannot start calls"
        );
        let join = &document["paths"]["/api/v1/calls/{id}/join"]["post"];
        assert!(join["responses"]["409"].is_object());

        let new_call = &schemas["NewCall"];
        assert_eq!(new_call["required"], Value::from(vec!["participant_ids"]));
        let participant_ids = &new_call["properties"]["participant_ids"];
        assert_eq!(
            (&participant_ids["minItems"], &participant_ids["maxItems"]),
            (&1.into(), &50.into())
        );
        assert_eq!(participant_ids["uniqueItems"], true);
        let timeout = &new_call["properties"]["ring_timeout_seconds"];
        assert_eq!(
            (&timeout["minimum"], &timeout["maximum"]),
            (&1.into(), &300.into())
        );

        assert_eq!(
            schemas["CallKind"]["enum"],
            Value::from(vec!["audio", "video"])
        );
        assert_eq!(
            schemas["CallStatus"]["enum"],
            Value::from(vec!["ringing", "active", "ended", "missed"])
        );
        let call = &schemas["Call"];
        let required = call["required"].as_array().unwrap();
        for field in [
            "id",
            "answered_at",
            "ended_at",
            "duration_seconds",
            "participants",
        ] {
            assert!(required.contains(&field.into()), "{field}");
        }
        assert_eq!(call["properties"]["id"]["format"], "uuid");
        assert!(
            schemas["Participant"]["required"]
                .as_array()
                .unwrap()
                .contains(&"joined_at".into())
        );

        let list = &document["paths"]["/api/v1/calls"]["get"];
        let parameters = list["parameters"].as_array().unwrap();
        let names: Vec<&str> = parameters
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 3);
        for name in ["status", "cursor", "limit"] {
            assert!(names.contains(&name), "{name}");
        }
        assert!(parameters.iter().all(|p| p["required"] == false));
        assert!(
            list["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["meta"]
                .is_object()
        );
    }
}
