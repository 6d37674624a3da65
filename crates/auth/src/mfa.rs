//! MFA (CONTRACT §4): which second factors a user has (TOTP, passkeys, e-mailed codes), the
//! login's challenge that asks for one and the check of its answer, and TOTP itself. The TOTP
//! secret is stored sealed with a key derived from the service secret; the last accepted time
//! step is stored with a conditional update, so no code is ever accepted twice, not even by two
//! parallel requests. A wrong answer at verify counts toward the login's lockout like a wrong
//! password: the route reserves its guess before it is evaluated (`lockout::reserve`), and a
//! right one gives it back. The endpoints are `routes/mfa.rs`.

use chrono::Utc;
use serde::Serialize;
use utoipa::ToSchema;

use crate::audit::{self, AuditEvent};
use crate::passkeys::RelyingParty;
use crate::request_origin::RequestOrigin;
use crate::sessions::hash_token;
use crate::store;
use crate::totp::{self, TotpSecret};
use tessera_http::config::Secret;
use tessera_storage::{Database, Tx, time};

/// How long an `mfa_token` may be used.
pub const CHALLENGE_LIFETIME: chrono::Duration = chrono::Duration::minutes(5);

/// The key TOTP secrets are sealed with, derived from the service secret.
pub(crate) fn sealing_key(service_secret: &Secret) -> [u8; 32] {
    totp::derive_key(service_secret.expose())
}

/// The second factors the user has on, in the order a login's 202 lists them.
pub async fn enrolled_methods(
    database: &Database,
    user_id: &str,
) -> anyhow::Result<Vec<&'static str>> {
    let mut methods = Vec::new();
    if totp_enabled(database, user_id).await? {
        methods.push("totp");
    }
    if crate::passkeys::enabled(database, user_id).await? {
        methods.push("webauthn");
    }
    if crate::email_code::enabled(database, user_id).await? {
        methods.push("otp");
    }
    Ok(methods)
}

/// Removes every second factor of the user in `tx` (TOTP with its recovery codes, e-mailed
/// codes, passkeys): an owner's reset for a member who lost their device. Their sessions are
/// the caller's to end, in the same transaction.
pub async fn remove_every_second_factor_in(tx: &mut Tx, user_id: &str) -> anyhow::Result<()> {
    store::mfa::delete_mfa(tx, user_id).await?;
    store::email_code::remove(tx, user_id).await?;
    store::webauthn::delete_credentials(tx, user_id).await?;
    Ok(())
}

/// Whether the user has TOTP on.
pub(crate) async fn totp_enabled(database: &Database, user_id: &str) -> anyhow::Result<bool> {
    Ok(store::mfa::enabled_at(database, user_id).await?.is_some())
}

/// Whether the user logs in with a second factor (any of them).
pub async fn enabled(database: &Database, user_id: &str) -> anyhow::Result<bool> {
    Ok(!enrolled_methods(database, user_id).await?.is_empty())
}

// `data` of a login's 202: the `mfa_token` for the verify step and the methods it may use.
#[derive(Debug, Serialize, ToSchema)]
pub struct MfaChallenge {
    pub mfa_token: String,
    pub methods: Vec<&'static str>,
}

/// The challenge of a login whose password (or magic link) was right: a new `mfa_token` for
/// the verify step, stored hashed, and `mfa.challenged` recorded.
pub(crate) async fn start_challenge(
    database: &Database,
    user_id: &str,
    login: &str,
    origin: &RequestOrigin,
) -> anyhow::Result<MfaChallenge> {
    let mfa_token = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        rand::random::<[u8; 32]>(),
    );
    let methods = enrolled_methods(database, user_id).await?;
    let now = Utc::now();
    store::mfa::insert_challenge(
        database,
        &hash_token(&mfa_token),
        user_id,
        login,
        &time::format(now + CHALLENGE_LIFETIME),
        &time::format(now),
    )
    .await?;
    let entry = audit::entry_for_user(database, AuditEvent::MfaChallenged, user_id)
        .await?
        .login(login)
        .origin(origin);
    audit::record(database, &entry).await?;
    Ok(MfaChallenge { mfa_token, methods })
}

/// The user's sealed secret, opened, and its last step; `pending` selects an unconfirmed one.
pub(crate) async fn secret_of(
    database: &Database,
    service_secret: &Secret,
    user_id: &str,
    pending: bool,
) -> anyhow::Result<Option<(TotpSecret, Option<i64>)>> {
    let Some(row) = store::mfa::secret(database, user_id).await? else {
        return Ok(None);
    };
    if row.enabled_at.is_none() != pending {
        return Ok(None);
    }
    let secret = totp::open(&row.sealed_secret, &sealing_key(service_secret))
        .map_err(|error| anyhow::anyhow!("opening a TOTP secret: {error}"))?;
    Ok(Some((secret, row.last_step)))
}

/// Accepts `code` for the user's secret at most once: the matched step is stored only if it is
/// newer than the last one, in one conditional update.
pub(crate) async fn accept_code(
    database: &Database,
    user_id: &str,
    secret: &TotpSecret,
    last_step: Option<i64>,
    code: &str,
) -> anyhow::Result<bool> {
    let Some(step) = totp::verify(secret, code, Utc::now().timestamp(), last_step) else {
        return Ok(false);
    };
    store::mfa::advance_last_step(database, user_id, step).await
}

/// What a verify request answers its challenge with, by method.
pub(crate) enum Answer {
    /// `totp`: a TOTP code.
    Totp(String),
    /// `recovery_code`: one of the recovery codes.
    RecoveryCode(String),
    /// `otp`: the mailed code.
    EmailCode(String),
    /// `webauthn`: a passkey's assertion.
    Passkey(serde_json::Value),
}

/// Whether `answer` is right for the user's challenge of `mfa_token_hash` (a code is spent, or
/// its step used up, if so). The caller reserved the guess.
pub(crate) async fn accept_answer(
    database: &Database,
    service_secret: &Secret,
    relying_party: Option<&RelyingParty>,
    user_id: &str,
    mfa_token_hash: &str,
    answer: &Answer,
) -> anyhow::Result<bool> {
    match answer {
        Answer::Passkey(credential) => {
            crate::passkeys::accept_second_factor(
                database,
                service_secret,
                relying_party,
                user_id,
                mfa_token_hash,
                credential,
            )
            .await
        }
        Answer::Totp(code) => match secret_of(database, service_secret, user_id, false).await? {
            Some((secret, last_step)) => {
                accept_code(database, user_id, &secret, last_step, code).await
            }
            None => Ok(false),
        },
        Answer::EmailCode(code) => {
            crate::email_code::accept_login_code(database, service_secret, user_id, code).await
        }
        Answer::RecoveryCode(code) => {
            store::mfa::use_recovery_code(
                database,
                user_id,
                &totp::hash_recovery_code(code),
                &time::now(),
            )
            .await
        }
    }
}
