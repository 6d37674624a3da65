//! The [`Caller`] and [`OptionalCaller`] extractors: the verified caller of a request, from its
//! bearer token, its session (still active) and the member's current role in its tenant, as
//! `caller.rs` describes; every service's routes take them by `FromRef` of [`AuthState`].

use axum::extract::{FromRef, FromRequestParts, MatchedPath};
use axum::http::header;
use axum::http::request::Parts;

use crate::caller::{Caller, OptionalCaller};
use crate::state::AuthState;
use tessera_http::ApiError;

impl<S> FromRequestParts<S> for Caller
where
    S: Send + Sync,
    AuthState: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let state = AuthState::from_ref(state);
        let token =
            tessera_http::extract::bearer_token(&parts.headers).ok_or(ApiError::Unauthenticated)?;
        let route = parts
            .extensions
            .get::<MatchedPath>()
            .map_or_else(|| parts.uri.path(), MatchedPath::as_str);
        let (caller, _) =
            Caller::authenticate(&state.access_tokens, &state.sessions, token, route).await?;
        Ok(caller)
    }
}

impl<S> FromRequestParts<S> for OptionalCaller
where
    S: Send + Sync,
    AuthState: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        if !parts.headers.contains_key(header::AUTHORIZATION) {
            return Ok(Self(None));
        }
        Caller::from_request_parts(parts, state)
            .await
            .map(|caller| Self(Some(caller)))
    }
}
