//! E-mail one-time codes (CONTRACT §4a, `otp`): a second factor mailed through the relay.
//! `POST …/mfa/otp/enable` (bearer) mails a first code and `POST …/mfa/otp/confirm` `{code}`
//! turns the method on; at a login's 202, `POST …/mfa/otp/send` `{mfa_token}` mails a code and
//! `POST …/mfa/verify` `{mfa_token, method: "otp", code}` finishes the login;
//! `DELETE …/mfa/otp` turns it off.
//!
//! Codes are 6 digits, work once for 10 minutes, and are stored as an HMAC-SHA-256 under a key
//! derived from the service secret (six digits are too few for a plain hash). A new code
//! replaces the one before. Sending counts against the sign-in mail limits (one mail a minute
//! per login); a wrong code counts toward the login's lockout, reserved before it is checked.
//! The endpoints are `routes/email_code.rs`.

use chrono::Utc;
use hkdf::Hkdf;
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

use crate::request_origin::RequestOrigin;
use crate::sign_in_mail::{MailKind, MailValues, SignInMailer};
use crate::store;
use tessera_http::config::Secret;
use tessera_http::{ApiError, ApiResult};
use tessera_storage::{Database, time};

/// How long a mailed code works.
pub const CODE_LIFETIME: chrono::Duration = chrono::Duration::minutes(10);

/// The purpose of the code that confirms an enrolment.
const ENROL: &str = "enrol";
/// The purpose of a login's code.
const LOGIN: &str = "login";

/// The code's digits.
pub const DIGITS: usize = 6;

/// What a mailed code is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CodePurpose {
    /// Confirms an enrolment (its mail starts the enrolment).
    Enrol,
    /// A login's second step.
    Login,
}

impl CodePurpose {
    /// Its `purpose` in the stored code.
    fn as_str(self) -> &'static str {
        match self {
            CodePurpose::Enrol => ENROL,
            CodePurpose::Login => LOGIN,
        }
    }
}

/// The six digits of `code`, or `None` when it is not a code.
fn normalize_code(code: &str) -> Option<String> {
    if code.len() > 4 * DIGITS {
        return None;
    }
    let digits: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    (digits.len() == DIGITS && digits.bytes().all(|b| b.is_ascii_digit())).then_some(digits)
}

/// The stored form of `code` for `user_id` and `purpose`: HMAC-SHA-256 (hex) under a key
/// derived from the service secret.
fn hash_code(service_secret: &str, user_id: &str, purpose: &str, code: &str) -> String {
    let mut key = [0; 32];
    Hkdf::<Sha256>::new(None, service_secret.as_bytes())
        .expand(b"tessera/auth/email-code/v1", &mut key)
        .expect("32 bytes is a valid HKDF-SHA-256 output length");
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length");
    for part in [user_id, purpose, code] {
        mac.update(part.as_bytes());
        mac.update(&[0]);
    }
    hex::encode(mac.finalize().into_bytes())
}

/// Whether the user has e-mail codes on.
pub async fn enabled(database: &Database, user_id: &str) -> anyhow::Result<bool> {
    Ok(matches!(
        store::email_code::enrolment(database, user_id).await?,
        Some(Some(_))
    ))
}

/// Mails a new code of `purpose` to `login` through `mailer`, counted against the sign-in mail
/// limits in the transaction that stores it (and starts the enrolment, for
/// [`CodePurpose::Enrol`]), and waits for the relay: 502 when it refuses.
pub(crate) async fn mail_code(
    database: &Database,
    mailer: &SignInMailer,
    service_secret: &Secret,
    origin: &RequestOrigin,
    user_id: &str,
    login: &str,
    purpose: CodePurpose,
) -> ApiResult<()> {
    let code = format!("{:06}", rand::random_range(0..1_000_000u32));
    let now = Utc::now();
    let mut tx = database.begin().await?;
    mailer.count(&mut tx, login, origin).await?;
    let purpose_name = purpose.as_str();
    if purpose == CodePurpose::Enrol {
        store::email_code::start_enrolment(&mut tx, user_id, &time::format(now)).await?;
    }
    store::email_code::store_code(
        &mut tx,
        user_id,
        purpose_name,
        &hash_code(service_secret.expose(), user_id, purpose_name, &code),
        &time::format(now + CODE_LIFETIME),
    )
    .await?;
    tx.commit().await?;
    let values = MailValues {
        login: login.to_owned(),
        code: Some(code),
        minutes: CODE_LIFETIME.num_minutes(),
        ..MailValues::default()
    };
    mailer
        .send(login, MailKind::EmailCode, &values)
        .await
        .map_err(|error| {
            tracing::warn!(error = format!("{error:#}"), "an e-mail code was not sent");
            ApiError::BadGateway("The mail relay did not take the mail; try again later.".into())
        })
}

/// Spends the user's current code of `purpose` if `code` is it (a malformed code never is).
pub(crate) async fn spend(
    database: &Database,
    service_secret: &Secret,
    user_id: &str,
    purpose: CodePurpose,
    code: &str,
) -> anyhow::Result<bool> {
    let Some(code) = normalize_code(code) else {
        return Ok(false);
    };
    let purpose = purpose.as_str();
    let code_hash = hash_code(service_secret.expose(), user_id, purpose, &code);
    store::email_code::spend_code(database, user_id, purpose, &code_hash, &time::now()).await
}

/// The second step of a login with an e-mail code: whether `code` is the user's current login
/// code (spent if so). The caller reserved the guess.
pub(crate) async fn accept_login_code(
    database: &Database,
    service_secret: &Secret,
    user_id: &str,
    code: &str,
) -> anyhow::Result<bool> {
    Ok(enabled(database, user_id).await?
        && spend(database, service_secret, user_id, CodePurpose::Login, code).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_six_digits_with_spaces_allowed() {
        assert_eq!(normalize_code("012345").as_deref(), Some("012345"));
        assert_eq!(normalize_code(" 012 345 ").as_deref(), Some("012345"));
        assert_eq!(normalize_code("01234"), None);
        assert_eq!(normalize_code("0123456"), None);
        assert_eq!(normalize_code("01234a"), None);
        assert_eq!(normalize_code("０１２３４５"), None);
        assert_eq!(normalize_code(&format!("012345{}", " ".repeat(30))), None);
    }

    #[test]
    fn a_codes_hash_is_keyed_and_bound_to_its_user_and_purpose() {
        let hash = hash_code("secret", "user-1", LOGIN, "012345");
        assert_eq!(hash, hash_code("secret", "user-1", LOGIN, "012345"));
        assert_ne!(hash, hash_code("other secret", "user-1", LOGIN, "012345"));
        assert_ne!(hash, hash_code("secret", "user-2", LOGIN, "012345"));
        assert_ne!(hash, hash_code("secret", "user-1", ENROL, "012345"));
        assert_ne!(hash, hash_code("secret", "user-1", LOGIN, "012346"));
        assert_eq!(hash.len(), 64);
    }
}
