//! The one authorization extractor used by core and engines alike: the verified caller of a
//! request, from its bearer token. A missing, expired, malformed, tampered or foreign-signed
//! token is a 401.

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;

use crate::http::ApiError;
use crate::state::AppState;

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

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| {
                value
                    .strip_prefix("Bearer ")
                    .or_else(|| value.strip_prefix("bearer "))
            })
            .map(str::trim)
            .filter(|token| !token.is_empty())
            .ok_or(ApiError::Unauthenticated)?;
        let claims = state
            .access_tokens
            .verify(token)
            .await
            .ok_or(ApiError::Unauthenticated)?;
        // A logged-out or revoked session's tokens are refused before they expire.
        if !state.sessions.is_active(&claims.sid).await? {
            return Err(ApiError::Unauthenticated);
        }
        Ok(Caller {
            user_id: claims.sub,
            tenant_id: claims.tid,
            workspace_id: claims.wid,
            role: claims.role,
            token_type: claims.typ,
            session_id: claims.sid,
        })
    }
}

/// For public endpoints that scope what they show by the caller: `None` without an
/// `Authorization` header; with one, it must hold a valid token (401 otherwise).
#[derive(Debug, Clone)]
pub struct OptionalCaller(pub Option<Caller>);

impl FromRequestParts<AppState> for OptionalCaller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if !parts.headers.contains_key(header::AUTHORIZATION) {
            return Ok(Self(None));
        }
        Caller::from_request_parts(parts, state)
            .await
            .map(|caller| Self(Some(caller)))
    }
}

impl Caller {
    /// Guests read only what is shared with them and write nothing in core.
    pub fn is_guest(&self) -> bool {
        self.token_type == "guest"
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
}
