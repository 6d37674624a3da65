//! The single-use tokens mailed to users (password resets, magic links; CONTRACT §4a), and how
//! one is asked for: no account discovery. A request answers the same for known and unknown
//! logins after the same work (the account and membership lookups, then one transaction that
//! counts the mail against the login's and the address's limits, prunes, and writes the audit
//! entry; the token row is the known account's only), and the mail goes out after the answer.
//! Tokens are 256-bit random values, stored as SHA-256 hashes, spent by one conditional
//! statement.

use std::sync::Arc;

use chrono::Utc;

use crate::audit::{self, AuditEntry, AuditEvent};
use crate::request_origin::RequestOrigin;
use crate::sessions::hash_token;
use crate::sign_in_mail::{MailKind, MailValues, SignInMailer};
use crate::store;
use tessera_http::ApiResult;
use tessera_storage::{Database, time};

/// A kind of mailed token.
pub(crate) struct TokenKind {
    /// Its `purpose` in `sign_in_tokens`.
    pub purpose: &'static str,
    /// The mail that carries it.
    pub mail: MailKind,
    /// How long it works.
    pub lifetime: chrono::Duration,
    /// The audit event of a request.
    pub requested: AuditEvent,
}

/// A password reset token: 30 minutes.
pub(crate) const PASSWORD_RESET: TokenKind = TokenKind {
    purpose: "password_reset",
    mail: MailKind::PasswordReset,
    lifetime: chrono::Duration::minutes(30),
    requested: AuditEvent::PasswordResetRequested,
};

/// A magic link's token: 15 minutes.
pub(crate) const MAGIC_LINK: TokenKind = TokenKind {
    purpose: "magic_link",
    mail: MailKind::MagicLink,
    lifetime: chrono::Duration::minutes(15),
    requested: AuditEvent::MagicLinkRequested,
};

/// A new random token (256 bits, URL-safe base64).
pub(crate) fn new_token() -> String {
    base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        rand::random::<[u8; 32]>(),
    )
}

/// `base` with `token=<token>` added to its query.
pub(crate) fn link_with_token(base: &str, token: &str) -> String {
    let separator = if base.contains('?') { '&' } else { '?' };
    format!("{base}{separator}token={token}")
}

/// Asks for a token of `kind` for `login` (normalized), mailed in a link to `link_base`: for a
/// known account, a token is stored and mailed after the answer; for an unknown login nothing
/// is, after the same work, through `mailer` (the relay's: the route answers 503 without one).
/// 429 beyond the limits (nothing counted then).
pub(crate) async fn request(
    database: &Database,
    mailer: &Arc<SignInMailer>,
    origin: &RequestOrigin,
    login: String,
    kind: &TokenKind,
    link_base: &str,
) -> ApiResult<()> {
    let token = new_token();
    let now = Utc::now();
    let account = store::account_by_email(database, &login).await?;
    // A known account's request shows in its (first) tenant's trail. Looked up for unknown
    // logins too (for no user), so both do the same work.
    let user_id = account.as_ref().map_or("", |account| &account.user_id);
    let membership = store::membership(database, user_id, None).await?;
    let mut tx = database.begin().await?;
    mailer.count(&mut tx, &login, origin).await?;
    let mut entry = AuditEntry::new(kind.requested).login(&login).origin(origin);
    if let Some(account) = &account {
        store::sign_in::insert_token(
            &mut tx,
            &hash_token(&token),
            kind.purpose,
            &account.user_id,
            &time::format(now + kind.lifetime),
            &time::format(now),
        )
        .await?;
        entry = entry.user(&account.user_id).detail("account", "found");
        if let Some(membership) = membership {
            entry = entry.tenant(membership.tenant_id);
        }
    } else {
        entry = entry.detail("account", "unknown");
    }
    audit::record_in(&mut tx, &entry).await?;
    tx.commit().await?;
    if account.is_some() {
        mailer.send_later(
            login.clone(),
            kind.mail,
            MailValues {
                login,
                link: Some(link_with_token(link_base, &token)),
                token: Some(token),
                minutes: kind.lifetime.num_minutes(),
                ..MailValues::default()
            },
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::link_with_token;

    #[test]
    fn the_token_joins_the_links_query() {
        assert_eq!(
            link_with_token("https://app.example.com/signed-in", "abc"),
            "https://app.example.com/signed-in?token=abc"
        );
        assert_eq!(
            link_with_token("https://app.example.com/in?from=mail", "abc"),
            "https://app.example.com/in?from=mail&token=abc"
        );
    }
}
