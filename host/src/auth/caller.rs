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
