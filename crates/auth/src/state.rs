//! What the authentication service needs from the app, built once at start: its settings, the
//! database, the password hasher, the service secret (sealing of TOTP secrets and signing
//! seeds), tokens and sessions. The app gives it to the auth routes and to the [`Caller`]
//! extractor of every service by `FromRef`.
//!
//! [`Caller`]: crate::caller::Caller

use std::sync::Arc;

use tessera_http::config::Secret;
use tessera_storage::Database;

use crate::config::AuthConfig;
use crate::passkeys::RelyingParty;
use crate::password::PasswordHasher;
use crate::sessions::Sessions;
use crate::sign_in_mail::SignInMailer;
use crate::tokens::AccessTokens;

/// The authentication service's state: one `Arc`, cheap to clone per request.
#[derive(Clone)]
pub struct AuthState(Arc<AuthServices>);

impl AuthState {
    pub fn new(services: AuthServices) -> Self {
        Self(Arc::new(services))
    }
}

impl std::ops::Deref for AuthState {
    type Target = AuthServices;

    fn deref(&self) -> &AuthServices {
        &self.0
    }
}

/// The engines the host serves at this moment, for the service map of token answers
/// (`meta.services`). The auth crate cannot see the engine runtime: the app implements this
/// over the engine registry.
pub trait EngineDirectory: Send + Sync {
    /// The codes of the engines loaded now, in any order.
    fn engine_codes(&self) -> Vec<String>;
}

/// The services behind [`AuthState`].
pub struct AuthServices {
    pub config: AuthConfig,
    /// The host's public base URL (the service map of token answers names it).
    pub public_url: String,
    pub database: Database,
    pub password_hasher: PasswordHasher,
    pub service_secret: Secret,
    pub access_tokens: AccessTokens,
    pub sessions: Sessions,
    /// The engines loaded now: each is in `meta.services` beside the spec's services.
    pub engines: Arc<dyn EngineDirectory>,
    /// Checked when a login names no account, so unknown logins cost the same time.
    pub dummy_password_hash: Arc<str>,
    /// Sign-in mails through the operator's relay; `None` without one (`TESSERA_SMTP_URL`).
    pub sign_in_mailer: Option<Arc<SignInMailer>>,
    /// The WebAuthn relying party of passkeys; `None` when the public URL cannot name one (a
    /// bare IP address other than loopback, and no `TESSERA_WEBAUTHN_RP_ID`).
    pub relying_party: Option<Arc<RelyingParty>>,
}

impl AuthServices {
    /// The sign-in methods this host offers (the config's `mfa_methods`): TOTP always,
    /// passkeys with a relying party, and the e-mail methods with a relay.
    pub fn offered_methods(&self) -> Vec<&'static str> {
        let mut methods = vec!["totp"];
        if self.relying_party.is_some() {
            methods.push("webauthn");
        }
        if self.sign_in_mailer.is_some() {
            methods.extend(["otp", "magic_link"]);
        }
        methods
    }

    /// The relying party of passkeys, or their 503 when this host offers none.
    pub fn relying_party(&self) -> Result<&RelyingParty, tessera_http::ApiError> {
        self.relying_party.as_deref().ok_or_else(|| {
            tessera_http::ApiError::ServiceUnavailable(
                "Passkeys are not available: this host's public URL is a bare IP address; the \
                 operator sets TESSERA_WEBAUTHN_RP_ID to offer them."
                    .into(),
            )
        })
    }

    /// The mailer of the e-mail methods, or their 503 when no relay is configured.
    pub fn sign_in_mailer(&self) -> Result<&Arc<SignInMailer>, tessera_http::ApiError> {
        self.sign_in_mailer.as_ref().ok_or_else(|| {
            tessera_http::ApiError::ServiceUnavailable(
                "Sign-in by mail is not available: this host has no mail relay (TESSERA_SMTP_URL)."
                    .into(),
            )
        })
    }
}
