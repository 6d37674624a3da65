//! The relay behind the `mail-transport` import (whose host side, on the call's store, is in
//! `imports.rs`): e-mail out of the platform through the operator's SMTP relay (`TESSERA_SMTP_URL`, lettre over rustls), for the engines that ask for
//! it (`send-mail` permission), or only those the operator names (`TESSERA_SMTP_ENGINES`).
//! Without a relay every send is refused and the engine keeps the mail queued.

use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::{Mailbox, Message};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use super::bindings::v0_3::tessera::engine as world;
use crate::config::SmtpConfig;

/// How long one SMTP exchange may take.
const SMTP_TIMEOUT: Duration = Duration::from_secs(30);
/// Most recipients of one mail.
const MAX_RECIPIENTS: usize = 100;

/// The relay (when configured) and who may use it.
pub struct MailTransport {
    relay: Option<AsyncSmtpTransport<Tokio1Executor>>,
    /// `TESSERA_SMTP_ENGINES`; `None`: the engines that ask.
    engines: Option<Vec<String>>,
}

impl MailTransport {
    pub fn new(config: &SmtpConfig) -> anyhow::Result<Self> {
        let relay = match &config.url {
            None => None,
            Some(url) => Some(
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url.expose())
                    // The URL may carry credentials: never echo it.
                    .map_err(|error| anyhow::anyhow!("TESSERA_SMTP_URL is not usable: {error}"))?
                    .timeout(Some(SMTP_TIMEOUT))
                    .build(),
            ),
        };
        Ok(Self {
            relay,
            engines: config.engines.clone(),
        })
    }

    pub fn is_configured(&self) -> bool {
        self.relay.is_some()
    }

    /// Whether engine `engine_code`, which `asks` (or not) for the `send-mail` permission, may
    /// send: the operator's list decides when there is one, else the engine's asking.
    pub fn grants(&self, engine_code: &str, asks: bool) -> bool {
        match &self.engines {
            Some(engines) => engines.iter().any(|code| code == engine_code),
            None => asks,
        }
    }

    /// Sends `mail` for `engine_code`, which may send when `granted` ([`Self::grants`]); `Err`
    /// says why it was not accepted.
    pub async fn send(
        &self,
        engine_code: &str,
        granted: bool,
        mail: world::mail_transport::OutgoingMail,
    ) -> Result<(), String> {
        if !granted {
            return Err(format!(
                "the engine {engine_code:?} may not send mail: it does not ask for the send-mail permission, or TESSERA_SMTP_ENGINES does not name it"
            ));
        }
        let Some(relay) = &self.relay else {
            return Err("no SMTP relay is configured (TESSERA_SMTP_URL)".to_owned());
        };
        let message = build_message(mail)?;
        relay
            .send(message)
            .await
            .map(drop)
            .map_err(|error| format!("the SMTP relay did not accept the mail: {error}"))
    }
}

fn build_message(mail: world::mail_transport::OutgoingMail) -> Result<Message, String> {
    if mail.recipients.is_empty() || mail.recipients.len() > MAX_RECIPIENTS {
        return Err(format!("a mail has 1 to {MAX_RECIPIENTS} recipients"));
    }
    let mailbox = |address: &str| {
        address
            .parse::<Mailbox>()
            .map_err(|error| format!("{address:?} is not an e-mail address: {error}"))
    };
    let mut builder = Message::builder()
        .from(mailbox(&mail.sender)?)
        .subject(mail.subject)
        .message_id(Some(mail.message_id))
        .header(ContentType::TEXT_PLAIN);
    for recipient in &mail.recipients {
        builder = builder.to(mailbox(recipient)?);
    }
    builder
        .body(mail.text)
        .map_err(|error| format!("the mail cannot be built: {error}"))
}
