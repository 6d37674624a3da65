//! Sign-in mails (CONTRACT §4a): password resets, magic links and e-mail codes, sent through
//! the operator's SMTP relay (`TESSERA_SMTP_URL`, lettre over rustls) with a subject, a text
//! part and an HTML part rendered from templates the operator may replace
//! (`TESSERA_MAIL_TEMPLATES`: `<kind>.subject`, `<kind>.txt`, `<kind>.html`, HTML escaped), and
//! the limits on how many go out per login and per client address. Without a relay there is no
//! [`SignInMailer`], the e-mail methods are not offered, and their endpoints answer 503.
//!
//! Codes and tokens are in the mails only: never logged (a failed send logs the kind of mail
//! and the relay's answer), and stored only as hashes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use chrono::Utc;
use lettre::message::{Mailbox, Message, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use crate::request_origin::RequestOrigin;
use crate::store;
use tessera_http::ApiError;
use tessera_http::config::Secret;
use tessera_storage::{Tx, time};

/// How long one SMTP exchange may take.
const SMTP_TIMEOUT: Duration = Duration::from_secs(30);

/// The window of the per-address limit ([`SignInMailConfig::per_address_per_hour`]).
const ADDRESS_WINDOW: Duration = Duration::from_secs(3600);

/// The operator's settings for sign-in mail (the relay is the engines' too:
/// `TESSERA_SMTP_URL`, given to [`SignInMailer::new`]).
#[derive(Debug, Clone)]
pub struct SignInMailConfig {
    /// `TESSERA_MAIL_FROM`: the sender of sign-in mails (`Name <address>` or an address).
    pub from: String,
    /// `TESSERA_MAIL_TEMPLATES`: a directory of templates replacing the built-in ones.
    pub templates: Option<PathBuf>,
    /// `TESSERA_SIGN_IN_MAIL_INTERVAL`: at most one sign-in mail per login in this time.
    pub login_interval: Duration,
    /// `TESSERA_SIGN_IN_MAILS_PER_ADDRESS`: at most this many sign-in mails asked for from one
    /// client address in an hour.
    pub per_address_per_hour: u32,
    /// `TESSERA_MAGIC_LINK_REDIRECT_ORIGINS`: the origins (`https://app.example.com`) a magic
    /// link may point at besides the public URL's.
    pub redirect_origins: Vec<String>,
}

impl SignInMailConfig {
    /// The built-in templates and the default limits: one mail a minute per login, 20 an hour
    /// per address.
    pub fn new(from: String) -> Self {
        Self {
            from,
            templates: None,
            login_interval: Duration::from_secs(60),
            per_address_per_hour: 20,
            redirect_origins: Vec::new(),
        }
    }
}

/// The kinds of sign-in mail, each with its templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailKind {
    /// A password reset token (`password/forgot`).
    PasswordReset,
    /// A magic link (`magic-link`).
    MagicLink,
    /// An e-mail one-time code (`mfa/otp/…`).
    EmailCode,
}

impl MailKind {
    pub const ALL: [MailKind; 3] = [
        MailKind::PasswordReset,
        MailKind::MagicLink,
        MailKind::EmailCode,
    ];

    /// The templates' file stem (`password_reset.subject`, `.txt`, `.html`).
    pub fn name(self) -> &'static str {
        match self {
            MailKind::PasswordReset => "password_reset",
            MailKind::MagicLink => "magic_link",
            MailKind::EmailCode => "email_code",
        }
    }

    /// The built-in subject, text and HTML templates.
    fn built_in(self) -> [&'static str; 3] {
        match self {
            MailKind::PasswordReset => [
                "Reset your password",
                "Someone asked to reset the password of {{ login }}.\n\n\
                 To choose a new one, open {{ link }}\n\
                 or give this token to your client: {{ token }}\n\n\
                 It works once, for {{ minutes }} minutes. If you did not ask, ignore this mail: \
                 your password stays as it is.\n",
                "<p>Someone asked to reset the password of {{ login }}.</p>\n\
                 <p><a href=\"{{ link }}\">Choose a new password</a>, or give this token to your \
                 client: <code>{{ token }}</code></p>\n\
                 <p>It works once, for {{ minutes }} minutes. If you did not ask, ignore this \
                 mail: your password stays as it is.</p>\n",
            ],
            MailKind::MagicLink => [
                "Your sign-in link",
                "Open this link to sign in as {{ login }}:\n\n{{ link }}\n\n\
                 It works once, for {{ minutes }} minutes. If you did not ask, ignore this mail.\n",
                "<p><a href=\"{{ link }}\">Sign in as {{ login }}</a></p>\n\
                 <p>It works once, for {{ minutes }} minutes. If you did not ask, ignore this \
                 mail.</p>\n",
            ],
            MailKind::EmailCode => [
                "Your sign-in code: {{ code }}",
                "Your sign-in code for {{ login }} is {{ code }}.\n\n\
                 It works once, for {{ minutes }} minutes. Never give it to anyone who asks.\n",
                "<p>Your sign-in code for {{ login }} is <strong>{{ code }}</strong>.</p>\n\
                 <p>It works once, for {{ minutes }} minutes. Never give it to anyone who \
                 asks.</p>\n",
            ],
        }
    }
}

/// What a template may show. `link` and `token` are set for resets and magic links, `code`
/// for e-mail codes; `minutes` is how long the mail's secret works.
#[derive(Debug, Clone, Default)]
pub struct MailValues {
    pub login: String,
    pub link: Option<String>,
    pub token: Option<String>,
    pub code: Option<String>,
    pub minutes: i64,
}

/// The relay, the sender, the templates and the limits; made once at start.
pub struct SignInMailer {
    relay: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    templates: minijinja::Environment<'static>,
    login_interval: Duration,
    per_address_per_hour: u32,
    /// The allowed origins of magic links, as `url` serializes them.
    redirect_origins: Vec<String>,
}

/// The three parts of a rendered mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedMail {
    pub subject: String,
    pub text: String,
    pub html: String,
}

impl SignInMailer {
    /// The mailer sending through `relay` (`TESSERA_SMTP_URL`, which may hold credentials) as
    /// `config` describes; `None` without a relay. A bad relay URL, sender or template stops
    /// the start with a message naming the setting or file.
    pub fn new(relay: Option<&Secret>, config: &SignInMailConfig) -> anyhow::Result<Option<Self>> {
        let Some(url) = relay else {
            return Ok(None);
        };
        let relay = AsyncSmtpTransport::<Tokio1Executor>::from_url(url.expose())
            // The URL may carry credentials: never echo it.
            .map_err(|error| anyhow::anyhow!("TESSERA_SMTP_URL is not usable: {error}"))?
            .timeout(Some(SMTP_TIMEOUT))
            .build();
        let from = config
            .from
            .parse::<Mailbox>()
            .map_err(|error| anyhow::anyhow!("TESSERA_MAIL_FROM is not a mailbox: {error}"))?;
        let mailer = Self {
            relay,
            from,
            templates: templates(config.templates.as_deref())?,
            login_interval: config.login_interval,
            per_address_per_hour: config.per_address_per_hour,
            redirect_origins: config
                .redirect_origins
                .iter()
                .map(|origin| {
                    web_origin(origin).with_context(|| {
                        format!("TESSERA_MAGIC_LINK_REDIRECT_ORIGINS: {origin:?} is not an http(s) origin")
                    })
                })
                .collect::<anyhow::Result<_>>()?,
        };
        // Every template renders, or the host does not start.
        let sample = MailValues {
            login: "someone@example.com".into(),
            link: Some("https://example.com/?token=sample".into()),
            token: Some("sample".into()),
            code: Some("123456".into()),
            minutes: 10,
        };
        for kind in MailKind::ALL {
            mailer
                .render(kind, &sample)
                .with_context(|| format!("TESSERA_MAIL_TEMPLATES: the {} mail", kind.name()))?;
        }
        Ok(Some(mailer))
    }

    /// The subject (its first line), text and HTML of a mail of `kind`.
    pub fn render(&self, kind: MailKind, values: &MailValues) -> anyhow::Result<RenderedMail> {
        let context = minijinja::context! {
            login => values.login.clone(),
            link => values.link.clone(),
            token => values.token.clone(),
            code => values.code.clone(),
            minutes => values.minutes,
        };
        let part = |extension: &str| -> anyhow::Result<String> {
            let name = format!("{}.{extension}", kind.name());
            self.templates
                .get_template(&name)
                .and_then(|template| template.render(&context))
                .with_context(|| format!("rendering {name}"))
        };
        let subject = part("subject")?;
        Ok(RenderedMail {
            // One header line, whatever the template holds.
            subject: subject.lines().next().unwrap_or_default().trim().to_owned(),
            text: part("txt")?,
            html: part("html")?,
        })
    }

    /// Sends a mail of `kind` to `to` and waits for the relay's answer.
    pub async fn send(&self, to: &str, kind: MailKind, values: &MailValues) -> anyhow::Result<()> {
        let RenderedMail {
            subject,
            text,
            html,
        } = self.render(kind, values)?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to
                .parse::<Mailbox>()
                .context("the account's address is not a mailbox")?)
            .subject(subject)
            .multipart(MultiPart::alternative_plain_html(text, html))
            .context("building a sign-in mail")?;
        self.relay
            .send(message)
            .await
            .map(drop)
            .with_context(|| format!("the SMTP relay did not accept a {} mail", kind.name()))
    }

    /// Whether a magic link may point at `url`: an absolute http(s) URL whose origin is
    /// `public_url`'s or on the allow-list.
    pub fn redirect_allowed(&self, url: &str, public_url: &str) -> bool {
        let Ok(origin) = web_origin(url) else {
            return false;
        };
        web_origin(public_url).is_ok_and(|public| public == origin)
            || self.redirect_origins.contains(&origin)
    }

    /// Sends in the background: the request answers without waiting for the relay (so its
    /// timing says nothing about the account), and a failure is logged without the mail.
    pub fn send_later(self: &std::sync::Arc<Self>, to: String, kind: MailKind, values: MailValues) {
        let mailer = self.clone();
        tokio::spawn(async move {
            if let Err(error) = mailer.send(&to, kind, &values).await {
                tracing::warn!(
                    mail = kind.name(),
                    error = format!("{error:#}"),
                    "a sign-in mail was not sent"
                );
            }
        });
    }

    /// Counts one sign-in mail asked for `login` from `origin`'s address, in `tx`: 429 (with
    /// `Retry-After`) when the login had one within the interval or the address its hourly
    /// number. Counted whether or not an account has the login, so the answer reveals nothing.
    /// Expired tokens and windows are pruned on the way, so neither table grows without bound.
    pub async fn count(
        &self,
        tx: &mut Tx,
        login: &str,
        origin: &RequestOrigin,
    ) -> Result<(), ApiError> {
        let now = Utc::now();
        let longest = self.login_interval.max(ADDRESS_WINDOW);
        store::sign_in::prune(tx, &time::format(now), &time::format(now - longest)).await?;
        let login_key = format!("login:{login}");
        self.count_in_window(tx, &login_key, self.login_interval, 1)
            .await?;
        if let Some(address) = origin.client_ip {
            let address_key = format!("address:{address}");
            self.count_in_window(
                tx,
                &address_key,
                ADDRESS_WINDOW,
                self.per_address_per_hour.max(1),
            )
            .await?;
        }
        Ok(())
    }

    async fn count_in_window(
        &self,
        tx: &mut Tx,
        key: &str,
        window: Duration,
        max: u32,
    ) -> Result<(), ApiError> {
        let now = Utc::now();
        let counted = store::sign_in::count_mail(
            tx,
            key,
            &time::format(now),
            &time::format(now - window),
            i64::from(max),
        )
        .await?;
        if counted {
            return Ok(());
        }
        let started = store::sign_in::window_start(tx, key).await?;
        let left = started
            .and_then(|started| time::parse(&started).ok())
            .map_or(window.as_secs(), |started| {
                let ends = started + window;
                u64::try_from((ends - now).num_seconds()).unwrap_or(0)
            });
        Err(ApiError::TooManyRequests {
            retry_after_seconds: left.max(1),
        })
    }
}

/// The origin of an absolute http(s) URL, as `url` serializes it (`https://a.example:8443`).
fn web_origin(url: &str) -> anyhow::Result<String> {
    let parsed = url::Url::parse(url.trim())?;
    anyhow::ensure!(
        matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some(),
        "not an http(s) URL"
    );
    Ok(parsed.origin().ascii_serialization())
}

/// The built-in templates, each replaced by the file of the same name in `directory` when it
/// has one. HTML parts are escaped; an unknown variable is an error, not an empty string.
fn templates(directory: Option<&Path>) -> anyhow::Result<minijinja::Environment<'static>> {
    let mut environment = minijinja::Environment::new();
    environment.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    for kind in MailKind::ALL {
        for (extension, built_in) in ["subject", "txt", "html"].into_iter().zip(kind.built_in()) {
            let name = format!("{}.{extension}", kind.name());
            let source = match directory.map(|directory| directory.join(&name)) {
                Some(path) if path.exists() => {
                    std::fs::read_to_string(&path).with_context(|| {
                        format!("TESSERA_MAIL_TEMPLATES: reading {}", path.display())
                    })?
                }
                _ => built_in.to_owned(),
            };
            environment
                .add_template_owned(name.clone(), source)
                .with_context(|| format!("TESSERA_MAIL_TEMPLATES: the template {name}"))?;
        }
    }
    Ok(environment)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relay() -> Secret {
        Secret::new("smtp://127.0.0.1:2525".into())
    }

    fn mailer(templates: Option<PathBuf>) -> anyhow::Result<Option<SignInMailer>> {
        SignInMailer::new(
            Some(&relay()),
            &SignInMailConfig {
                templates,
                ..SignInMailConfig::new("Tessera <no-reply@example.com>".into())
            },
        )
    }

    #[tokio::test]
    async fn without_a_relay_there_is_no_mailer() {
        let config = SignInMailConfig::new("no-reply@example.com".into());
        assert!(SignInMailer::new(None, &config).unwrap().is_none());
        assert!(
            SignInMailer::new(Some(&relay()), &config)
                .unwrap()
                .is_some()
        );
    }

    #[tokio::test]
    async fn the_html_part_escapes_what_it_shows_and_the_subject_is_one_line() {
        let directory = tempfile::tempdir().unwrap();
        std::fs::write(
            directory.path().join("magic_link.subject"),
            "Sign in\nBcc: someone@example.com",
        )
        .unwrap();
        let mailer = mailer(Some(directory.path().to_owned())).unwrap().unwrap();
        let mail = mailer
            .render(
                MailKind::MagicLink,
                &MailValues {
                    login: "<b>x</b>@example.com".into(),
                    link: Some("https://example.com/?token=a&b".into()),
                    minutes: 15,
                    ..MailValues::default()
                },
            )
            .unwrap();
        assert_eq!(mail.subject, "Sign in");
        assert!(
            mail.text.contains("https://example.com/?token=a&b"),
            "{}",
            mail.text
        );
        assert!(
            mail.html.contains("&lt;b&gt;x&lt;&#x2f;b&gt;@example.com"),
            "{}",
            mail.html
        );
        assert!(mail.html.contains("token=a&amp;b"), "{}", mail.html);
        assert!(mail.text.contains("15 minutes"));
    }

    #[tokio::test]
    async fn a_template_naming_an_unknown_value_stops_the_start() {
        let directory = tempfile::tempdir().unwrap();
        std::fs::write(directory.path().join("email_code.txt"), "{{ cod }}").unwrap();
        let error = mailer(Some(directory.path().to_owned())).err().unwrap();
        let message = format!("{error:#}");
        assert!(message.contains("TESSERA_MAIL_TEMPLATES"), "{message}");
        assert!(message.contains("email_code"), "{message}");
        let directory = tempfile::tempdir().unwrap();
        std::fs::write(directory.path().join("email_code.html"), "{% if %}").unwrap();
        assert!(mailer(Some(directory.path().to_owned())).is_err());
    }

    #[tokio::test]
    async fn magic_links_point_only_at_the_public_url_or_allowed_origins() {
        let mailer = SignInMailer::new(
            Some(&relay()),
            &SignInMailConfig {
                redirect_origins: vec!["https://app.example.com".into()],
                ..SignInMailConfig::new("no-reply@example.com".into())
            },
        )
        .unwrap()
        .unwrap();
        let public = "http://127.0.0.1:8080";
        for allowed in [
            "https://app.example.com/signed-in?from=mail",
            "https://APP.example.com:443/x",
            "http://127.0.0.1:8080/welcome",
        ] {
            assert!(mailer.redirect_allowed(allowed, public), "{allowed}");
        }
        for refused in [
            "https://app.example.com.evil.test/",
            "http://app.example.com/",
            "https://app.example.com:8443/",
            "https://evil.test/?https://app.example.com",
            "//app.example.com/",
            "javascript:alert(1)",
            "/relative",
        ] {
            assert!(!mailer.redirect_allowed(refused, public), "{refused}");
        }
        let bad = SignInMailer::new(
            Some(&relay()),
            &SignInMailConfig {
                redirect_origins: vec!["app.example.com".into()],
                ..SignInMailConfig::new("no-reply@example.com".into())
            },
        );
        assert!(
            format!("{:#}", bad.err().unwrap()).contains("TESSERA_MAGIC_LINK_REDIRECT_ORIGINS")
        );
    }

    #[tokio::test]
    async fn a_bad_sender_names_its_setting() {
        let config = SignInMailConfig::new("not a mailbox".into());
        let error = SignInMailer::new(Some(&relay()), &config).err().unwrap();
        assert!(format!("{error:#}").contains("TESSERA_MAIL_FROM"));
    }
}
