//! The one authorization extractor used by core and engines alike: the verified caller of a
//! request, from its bearer token. A missing, expired, malformed, tampered or foreign-signed
//! token is a 401, and so is the token of a user who is no longer a member of its tenant.
//! The role is the lower of the token's and the member's current one (read at most
//! `sessions::ACTIVE_CACHE_TTL` ago, on every host), so a demotion applies within seconds.
//! Guests are scoped here too, deny by default: in core a guest token reaches only the routes
//! of [`GUEST_CORE_ROUTES`] (its own inbox, and realtime for its inbox's topic) and every other
//! core route is a 403.
//!
//! The extractors (`FromRequestParts` for [`Caller`] and [`OptionalCaller`]) are the routes'
//! part: `routes/caller.rs`; both, and realtime's own bearer check, go through
//! [`Caller::authenticate`].

use crate::sessions::Sessions;
use crate::tokens::{AccessClaims, AccessTokens};
use tessera_http::ApiError;

/// Who is calling, as established from a verified access token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub user_id: String,
    pub tenant_id: String,
    pub workspace_id: Option<String>,
    pub role: String,
    pub token_type: String,
    pub session_id: String,
}

/// The core routes a guest token may use: its own inbox, reading it and marking its items read
/// (the projection only ever shows a caller the items addressed to them), and realtime, where
/// the topic rules keep a guest to its inbox's topic (`core.inbox`). Every other route under
/// `/core/` is a 403 for guests, including routes added later.
pub const GUEST_CORE_ROUTES: [&str; 5] = [
    "/core/api/v1/inbox",
    "/core/api/v1/inbox/{id}/read",
    "/core/api/v1/realtime",
    "/core/api/v1/realtime/tickets",
    "/core/api/v1/realtime/events",
];

/// Roles from least to most allowed.
const ROLES: [&str; 3] = ["viewer", "editor", "owner"];

/// The less allowed of two roles (an unknown role counts as the least allowed of all).
fn lower_role(token_role: String, current_role: String) -> String {
    let rank = |role: &str| ROLES.iter().position(|known| *known == role);
    if rank(&current_role) < rank(&token_role) {
        current_role
    } else {
        token_role
    }
}

/// For public endpoints that scope what they show by the caller: `None` without an
/// `Authorization` header; with one, it must hold a valid token (401 otherwise).
#[derive(Debug, Clone)]
pub struct OptionalCaller(pub Option<Caller>);

impl Caller {
    /// The caller a verified token speaks for, given the member's current role and user type
    /// in the token's tenant: the lower of the token's role and the current one, and a guest
    /// token whenever the member is a guest now.
    pub fn from_verified(claims: AccessClaims, current_role: String, user_type: String) -> Self {
        Caller {
            role: claims.role,
            token_type: claims.typ,
            user_id: claims.sub,
            tenant_id: claims.tid,
            workspace_id: claims.wid,
            session_id: claims.sid,
        }
        .narrowed(current_role, user_type)
    }

    /// This caller as the member's current role and user type allow: the lower of its role and
    /// `current_role`, and a guest whenever `user_type` is `guest`. For a connection that
    /// outlives its request (realtime), checked again as the membership changes.
    pub fn narrowed(self, current_role: String, user_type: String) -> Self {
        Caller {
            role: lower_role(self.role, current_role),
            token_type: if user_type == "guest" {
                user_type
            } else {
                self.token_type
            },
            ..self
        }
    }

    /// The caller of a bearer token on `route` (the matched route), with the token's claims:
    /// 401 unless the token verifies, its session is active and its user is still a member of
    /// its tenant (a tenant or user that is not disabled); 403 for a guest on a core route
    /// other than [`GUEST_CORE_ROUTES`]. What the [`Caller`] extractor does with the request's
    /// `Authorization` header.
    pub async fn authenticate(
        tokens: &AccessTokens,
        sessions: &Sessions,
        token: &str,
        route: &str,
    ) -> Result<(Self, AccessClaims), ApiError> {
        let claims = tokens
            .verify(token)
            .await
            .ok_or(ApiError::Unauthenticated)?;
        // A logged-out or revoked session's tokens are refused before they expire, and so are
        // those of a membership that has ended.
        let (active, membership) = tokio::try_join!(
            sessions.is_active(&claims.sid),
            sessions.current_membership(&claims.sub, &claims.tid),
        )?;
        let (Some((current_role, user_type)), true) = (membership, active) else {
            return Err(ApiError::Unauthenticated);
        };
        let caller = Self::from_verified(claims.clone(), current_role, user_type);
        caller.require_route(route)?;
        Ok((caller, claims))
    }

    /// Guests read only what is shared with them and write nothing in core.
    pub fn is_guest(&self) -> bool {
        self.token_type == "guest"
    }

    /// 403 when a guest token calls a core route other than its own inbox (`route` is the
    /// matched route, e.g. `/core/api/v1/inbox/{id}/read`).
    pub fn require_route(&self, route: &str) -> Result<(), ApiError> {
        if self.is_guest() && route.starts_with("/core/") && !GUEST_CORE_ROUTES.contains(&route) {
            Err(ApiError::Forbidden)
        } else {
            Ok(())
        }
    }

    /// 403 unless the caller may write: an `editor` or `owner` with a non-guest token
    /// (a `viewer` reads only).
    pub fn require_writer(&self) -> Result<(), ApiError> {
        if !self.is_guest() && matches!(self.role.as_str(), "editor" | "owner") {
            Ok(())
        } else {
            Err(ApiError::Forbidden)
        }
    }

    /// 403 unless the caller is an `owner` (workflows, webhooks, families, the audit trail).
    pub fn require_owner(&self) -> Result<(), ApiError> {
        if !self.is_guest() && self.role == "owner" {
            Ok(())
        } else {
            Err(ApiError::Forbidden)
        }
    }

    /// 403 unless the caller may change a resource created by `owner_user_id`: its author (if
    /// a writer), or a tenant owner.
    pub fn require_may_modify(&self, owner_user_id: &str) -> Result<(), ApiError> {
        self.require_writer()?;
        if self.user_id == owner_user_id || self.role == "owner" {
            Ok(())
        } else {
            Err(ApiError::Forbidden)
        }
    }
}

impl crate::audit::AuditEntry {
    /// The tenant and user of an authenticated caller (logout, MFA changes, context switch).
    pub fn caller(self, caller: &Caller) -> Self {
        self.tenant(caller.tenant_id.clone())
            .user(caller.user_id.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(role: &str, token_type: &str) -> Caller {
        Caller {
            user_id: "u1".into(),
            tenant_id: "t".into(),
            workspace_id: None,
            role: role.into(),
            token_type: token_type.into(),
            session_id: "s".into(),
        }
    }

    #[test]
    fn roles_and_token_types_decide_writes() {
        assert!(caller("viewer", "user").require_writer().is_err());
        assert!(caller("editor", "user").require_writer().is_ok());
        assert!(caller("owner", "agent").require_writer().is_ok());
        assert!(caller("owner", "guest").require_writer().is_err());
        assert!(caller("editor", "user").require_owner().is_err());
        assert!(caller("owner", "user").require_owner().is_ok());
        assert!(caller("editor", "user").require_may_modify("u1").is_ok());
        assert!(caller("editor", "user").require_may_modify("u2").is_err());
        assert!(caller("owner", "user").require_may_modify("u2").is_ok());
        assert!(caller("viewer", "user").require_may_modify("u1").is_err());
    }

    #[test]
    fn guests_reach_only_their_inbox_in_core() {
        let guest = caller("viewer", "guest");
        assert!(guest.require_route("/core/api/v1/inbox").is_ok());
        assert!(guest.require_route("/core/api/v1/inbox/{id}/read").is_ok());
        assert!(guest.require_route("/core/api/v1/realtime").is_ok());
        assert!(guest.require_route("/core/api/v1/realtime/tickets").is_ok());
        assert!(guest.require_route("/core/api/v1/realtime/events").is_ok());
        assert!(guest.require_route("/core/api/v1/entities").is_err());
        assert!(guest.require_route("/core/api/metrics").is_err());
        assert!(guest.require_route("/notes/api/v1/{*path}").is_ok());
        assert!(
            caller("viewer", "user")
                .require_route("/core/api/v1/entities")
                .is_ok()
        );
    }

    #[test]
    fn narrowing_takes_the_lower_role_and_a_guest_type() {
        let narrowed = caller("owner", "user").narrowed("editor".into(), "user".into());
        assert_eq!(
            (narrowed.role.as_str(), narrowed.is_guest()),
            ("editor", false)
        );
        let narrowed = caller("viewer", "user").narrowed("owner".into(), "guest".into());
        assert_eq!(
            (narrowed.role.as_str(), narrowed.is_guest()),
            ("viewer", true)
        );
    }

    #[test]
    fn the_lower_role_wins() {
        let lower = |a: &str, b: &str| lower_role(a.to_owned(), b.to_owned());
        assert_eq!(lower("owner", "viewer"), "viewer");
        assert_eq!(lower("viewer", "owner"), "viewer");
        assert_eq!(lower("editor", "editor"), "editor");
        assert_eq!(lower("owner", "nobody"), "nobody");
    }
}
