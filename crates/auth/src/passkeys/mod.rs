//! Passkeys (CONTRACT §4a, `webauthn`): WebAuthn credentials registered by their owner
//! (`…/mfa/webauthn/register/start|finish`, listed and deleted under `…/credentials`), used as
//! a second factor (`…/mfa/webauthn/challenge`, then `…/mfa/verify` with `method: "webauthn"`)
//! and without a password (`…/passkey/start|finish`, discoverable credentials).
//!
//! The relying party is `webauthn-rs`: its id and origins come from the public URL (a loopback
//! address becomes `localhost`, which browsers accept; another bare IP address has no passkeys
//! unless the operator names the id), overridable by settings. User verification is required
//! in every ceremony. Each ceremony's state waits in the database between start and finish,
//! sealed (XChaCha20-Poly1305 under a key derived from the service secret) and found by the
//! SHA-256 of its challenge (or of the passwordless `challenge_id`): the challenge itself is
//! never stored in the clear. Finishing takes the row with one `DELETE … RETURNING`, so a
//! ceremony finishes at most once, and only for the user (and `mfa_token`) it was started for;
//! it expires after [`CEREMONY_LIFETIME`].
//!
//! The signature counter is checked twice: the library refuses a counter that is not above the
//! one in its record, and the record is written back only by an update conditional on the
//! stored counter being lower, so of two uses with the same counter (a cloned authenticator, or
//! a race) one fails. Counterless authenticators (always 0) are accepted as the spec allows.
//!
//! The endpoints are `routes/passkeys.rs`.

mod ceremony;
mod relying_party;

pub use ceremony::CEREMONY_LIFETIME;
pub(crate) use ceremony::{
    credential_challenge_key, options_challenge_key, store_ceremony, take_ceremony,
};
pub use relying_party::{RelyingParty, RelyingPartyConfig};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;
use webauthn_rs::prelude::{
    AuthenticationResult, Credential, Passkey, PasskeyAuthentication, PublicKeyCredential,
    WebauthnError,
};

use crate::store;
use tessera_http::config::Secret;
use tessera_storage::{Database, time};

/// The longest credential name, in characters.
pub const MAX_NAME_CHARS: usize = 100;

/// The kind of a registration's ceremony.
pub(crate) const REGISTER: &str = "register";
/// The kind of a second factor's ceremony.
pub(crate) const SECOND_FACTOR: &str = "mfa";
/// The kind of a passwordless sign-in's ceremony.
pub(crate) const PASSWORDLESS: &str = "passkey";

/// Whether the user has a passkey.
pub async fn enabled(database: &Database, user_id: &str) -> anyhow::Result<bool> {
    Ok(store::webauthn::count_credentials(database, user_id).await? > 0)
}

/// The user's passkeys as the relying party reads them.
pub(crate) async fn passkeys_of(
    database: &Database,
    user_id: &str,
) -> anyhow::Result<Vec<Passkey>> {
    store::webauthn::passkeys_of(database, user_id)
        .await?
        .iter()
        .map(|json| serde_json::from_str(json).map_err(anyhow::Error::from))
        .collect()
}

/// A credential id as stored (base64url, unpadded).
pub(crate) fn credential_id_text(credential_id: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(credential_id)
}

/// A passkey's signature counter.
pub(crate) fn counter_of(passkey: &Passkey) -> i64 {
    i64::from(Credential::from(passkey.clone()).counter)
}

/// Why a use of a passkey was refused (logged, and a detail of the audit entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No ceremony, a malformed or wrongly signed answer, or an unknown credential.
    Invalid,
    /// The signature counter did not advance: a cloned authenticator, or a replay in a race.
    Counter,
}

impl Refusal {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Refusal::Invalid => "invalid",
            Refusal::Counter => "counter",
        }
    }

    fn from_error(error: &WebauthnError) -> Self {
        if matches!(error, WebauthnError::CredentialPossibleCompromise) {
            Refusal::Counter
        } else {
            Refusal::Invalid
        }
    }
}

/// Logs a refused use of a passkey.
pub(crate) fn log_refusal(refusal: Refusal, error: Option<&WebauthnError>) {
    match refusal {
        Refusal::Counter => tracing::warn!(
            "a passkey's signature counter did not advance: refused (a cloned authenticator, or \
             a replay)"
        ),
        Refusal::Invalid => tracing::info!(
            error = error.map(ToString::to_string),
            "a passkey sign-in was refused"
        ),
    }
}

/// Writes back the user's credential after a successful ceremony `result`, only if its
/// counter advanced past the stored one (or the authenticator keeps none).
async fn record_use(
    database: &Database,
    user_id: &str,
    result: &AuthenticationResult,
) -> anyhow::Result<Result<(), Refusal>> {
    let credential_id = credential_id_text(result.cred_id());
    let Some(stored) = store::webauthn::passkey_by_credential_id(database, &credential_id).await?
    else {
        return Ok(Err(Refusal::Invalid));
    };
    if stored.user_id != user_id {
        return Ok(Err(Refusal::Invalid));
    }
    let mut passkey: Passkey = serde_json::from_str(&stored.passkey)?;
    passkey.update_credential(result);
    let recorded = store::webauthn::record_use(
        database,
        &stored.id,
        &serde_json::to_string(&passkey)?,
        i64::from(result.counter()),
        &time::now(),
    )
    .await?;
    Ok(if recorded {
        Ok(())
    } else {
        Err(Refusal::Counter)
    })
}

/// The outcome of a finished ceremony for `user_id`: its credential's use recorded, or why it
/// was refused (logged once, here).
pub(crate) async fn accept_result(
    database: &Database,
    user_id: &str,
    result: Result<AuthenticationResult, WebauthnError>,
) -> anyhow::Result<Result<(), Refusal>> {
    let refusal = match result {
        Ok(result) => match record_use(database, user_id, &result).await? {
            Ok(()) => return Ok(Ok(())),
            Err(refusal) => {
                log_refusal(refusal, None);
                refusal
            }
        },
        Err(error) => {
            let refusal = Refusal::from_error(&error);
            log_refusal(refusal, Some(&error));
            refusal
        }
    };
    Ok(Err(refusal))
}

/// The second step of a login with a passkey: whether `credential` answers the challenge
/// started for `mfa_token_hash` and the user (the ceremony is spent either way). The caller
/// reserved the guess.
pub(crate) async fn accept_second_factor(
    database: &Database,
    service_secret: &Secret,
    relying_party: Option<&RelyingParty>,
    user_id: &str,
    mfa_token_hash: &str,
    credential: &Value,
) -> anyhow::Result<bool> {
    let Some(relying_party) = relying_party else {
        return Ok(false);
    };
    let Some(key_hash) = credential_challenge_key(credential) else {
        return Ok(false);
    };
    let Ok(answer) = serde_json::from_value::<PublicKeyCredential>(credential.clone()) else {
        return Ok(false);
    };
    let Some(ceremony) = take_ceremony::<PasskeyAuthentication>(
        database,
        service_secret,
        &key_hash,
        SECOND_FACTOR,
        Some(user_id),
        Some(mfa_token_hash),
    )
    .await?
    else {
        return Ok(false);
    };
    let result = relying_party
        .webauthn
        .finish_passkey_authentication(&answer, &ceremony);
    Ok(accept_result(database, user_id, result).await?.is_ok())
}
