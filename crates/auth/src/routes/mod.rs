//! The authentication service's HTTP layer: the handlers of each area, the [`Caller`]
//! extractor and the router. These modules (with `state.rs` and `lib.rs`) alone name
//! [`AuthState`]: a handler takes out of it what a service needs (the database, the sessions,
//! the mailer, the relying party, the service secret) and hands it on.
//!
//! [`Caller`]: crate::caller::Caller

mod answers;
mod audit;
mod caller;
mod email_code;
mod magic_link;
mod mfa;
mod own_sessions;
mod passkeys;
mod password_change;
mod password_reset;
mod sign_in;

use utoipa_axum::router::OpenApiRouter;

use crate::state::AuthState;

/// Every route of the authentication service but its health.
pub(crate) fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .merge(audit::router())
        .merge(sign_in::router())
        .merge(mfa::router())
        .merge(password_change::router())
        .merge(password_reset::router())
        .merge(magic_link::router())
        .merge(email_code::router())
        .merge(passkeys::router())
        .merge(own_sessions::router())
}
