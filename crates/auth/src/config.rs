//! The authentication service's settings: password policy, token and refresh lifetimes, the
//! session cap and the lockout. The binary reads them from its flags and environment.

use std::time::Duration;

use crate::password::PasswordPolicy;

#[derive(Debug, Clone)]
pub struct AuthConfig {
    pub password_policy: PasswordPolicy,
    /// Access token lifetime (`expires_in`, `session.token_lifetime`).
    pub token_lifetime: Duration,
    /// Refresh token lifetime (`session.refresh_token_lifetime`).
    pub refresh_token_lifetime: Duration,
    /// Sessions a user may hold; a new login ends the oldest beyond it.
    pub max_active_sessions: u32,
    /// Failed logins (per normalized login) before the lockout.
    pub lockout_max_attempts: u32,
    /// How long a lockout lasts.
    pub lockout_duration: Duration,
    /// How often a server rereads the token signing keys (`TESSERA_SIGNING_KEYS_REFRESH`): a
    /// rotation made elsewhere (`tessera admin rotate-keys`, another host) signs its new tokens
    /// within this time.
    pub signing_keys_refresh: Duration,
}

impl Default for AuthConfig {
    /// The spec's sample configuration.
    fn default() -> Self {
        Self {
            password_policy: PasswordPolicy::default(),
            token_lifetime: Duration::from_secs(3600),
            refresh_token_lifetime: Duration::from_secs(604_800),
            max_active_sessions: 10,
            lockout_max_attempts: 5,
            lockout_duration: Duration::from_secs(900),
            signing_keys_refresh: Duration::from_secs(30),
        }
    }
}
