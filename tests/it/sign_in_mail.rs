//! Sign-in by mail through the real host and a real SMTP server on loopback (`smtp_sink`):
//! password recovery (`password/forgot`, `password/reset`), e-mail one-time codes
//! (`mfa/otp/…`), magic links (`magic-link`), their single-use tokens and codes, the limits per
//! login and per address, the same answer for known and unknown logins, and the 503 of a host
//! without a relay.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tessera_host::config::{Config, Secret};

use crate::auth::{ME, PASSWORD, REFRESH, access, bearer, login, tenant_with_user};
use crate::database_test;
use crate::helpers::{AppOptions, Backend, TestApp, eventually, json_with_status, spawn_app_with};
use crate::smtp_sink::{SmtpMail, SmtpSink};

const FORGOT: &str = "/auth/api/v1/auth/password/forgot";
const RESET: &str = "/auth/api/v1/auth/password/reset";
const OTP_ENABLE: &str = "/auth/api/v1/auth/mfa/otp/enable";
const OTP_CONFIRM: &str = "/auth/api/v1/auth/mfa/otp/confirm";
const OTP_SEND: &str = "/auth/api/v1/auth/mfa/otp/send";
const OTP: &str = "/auth/api/v1/auth/mfa/otp";
const VERIFY: &str = "/auth/api/v1/auth/mfa/verify";
const MAGIC_LINK: &str = "/auth/api/v1/auth/magic-link";
const MAGIC_LINK_VERIFY: &str = "/auth/api/v1/auth/magic-link/verify";
const CONFIG: &str = "/auth/api/v1/auth/config";

/// A host whose relay is `sink`, configured further by `configure`.
async fn spawn_with_relay(
    backend: Backend,
    sink: &SmtpSink,
    configure: impl FnOnce(&mut Config) + Send + 'static,
) -> TestApp {
    let relay = sink.url();
    spawn_app_with(
        backend,
        AppOptions {
            configure: Some(Box::new(move |config: &mut Config| {
                config.smtp.url = Some(Secret::new(relay));
                config.sign_in_mail.from = "Tessera <no-reply@tessera.test>".into();
                configure(config);
            })),
            ..AppOptions::default()
        },
    )
    .await
}

/// The token a sign-in mail carries in its link (`…?token=<token>`), found in its text part;
/// the HTML part carries the same.
fn mailed_token(mail: &SmtpMail) -> String {
    let text = mail.part("text/plain").expect("a text part");
    let html = mail.part("text/html").expect("an HTML part");
    let token: String = text
        .split_once("?token=")
        .expect("a link with a token")
        .1
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    assert_eq!(token.len(), 43, "{text}");
    assert!(html.contains(&token), "{html}");
    token
}

/// The code of an e-mail code mail: the six digits its subject ends with, also in both parts.
fn mailed_code(mail: &SmtpMail) -> String {
    let subject = mail.header("Subject").expect("a subject");
    let code = subject.rsplit(' ').next().unwrap().to_owned();
    assert!(
        code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()),
        "{subject}"
    );
    assert!(mail.part("text/plain").unwrap().contains(&code));
    assert!(mail.part("text/html").unwrap().contains(&code));
    code
}

/// Waits for the `count`th mail to `address` and returns it.
async fn nth_mail_to(sink: &SmtpSink, address: &str, count: usize) -> SmtpMail {
    eventually(10, "a mail", || async {
        let mails = mails_to(sink, address);
        (mails.len() >= count).then(|| mails[count - 1].clone())
    })
    .await
}

/// Turns e-mail codes on for the user of `token` (whose address is `address`, with `mails`
/// mails before): enable, read the code, confirm.
async fn enrol_email_codes(app: &TestApp, sink: &SmtpSink, token: &str, address: &str) {
    let before = mails_to(sink, address).len();
    json_with_status(app.post_as(OTP_ENABLE, token, &json!({})).await, 202).await;
    let code = mailed_code(&nth_mail_to(sink, address, before + 1).await);
    let enabled = json_with_status(
        app.post_as(OTP_CONFIRM, token, &json!({ "code": code }))
            .await,
        200,
    )
    .await;
    assert_eq!(enabled["data"]["enabled"], true);
}

/// The `mfa_token` of a login answered 202, after checking its methods.
async fn challenged(app: &TestApp, email: &str, password: &str, methods: Value) -> String {
    let body = json_with_status(login(app, email, password).await, 202).await;
    assert_eq!(body["data"]["methods"], methods, "{body}");
    body["data"]["mfa_token"].as_str().unwrap().to_owned()
}

async fn verify_code(app: &TestApp, mfa_token: &str, code: &str) -> reqwest::Response {
    app.post_json(
        VERIFY,
        &json!({ "mfa_token": mfa_token, "method": "otp", "code": code }),
    )
    .await
}

/// The mails the sink got for `address`.
fn mails_to(sink: &SmtpSink, address: &str) -> Vec<SmtpMail> {
    sink.mails()
        .into_iter()
        .filter(|mail| mail.recipients.iter().any(|to| to == address))
        .collect()
}

async fn forgot(app: &TestApp, login: &str) -> reqwest::Response {
    app.post_json(FORGOT, &json!({ "login": login })).await
}

async fn reset(app: &TestApp, token: &str, password: &str) -> reqwest::Response {
    app.post_json(RESET, &json!({ "token": token, "password": password }))
        .await
}

database_test!(
    a_reset_mail_sets_a_new_password_once_and_ends_every_session,
    |backend| async move {
        let sink = SmtpSink::start(false).await;
        let app = spawn_with_relay(backend, &sink, |_| {}).await;
        let (_, user_id) = tenant_with_user(&app, "acme", "ada@example.com");
        let phone = json_with_status(login(&app, "ada@example.com", PASSWORD).await, 200).await;
        let laptop = json_with_status(login(&app, "ada@example.com", PASSWORD).await, 200).await;

        json_with_status(app.post_json(FORGOT, &json!({})).await, 422).await;
        // An unknown login is answered as a known one, and gets no mail.
        let unknown = json_with_status(forgot(&app, "nobody@example.com").await, 202).await;
        let known = json_with_status(forgot(&app, " Ada@Example.com ").await, 202).await;
        assert_eq!(unknown, known);
        let mail = eventually(10, "the reset mail", || async {
            mails_to(&sink, "ada@example.com").pop()
        })
        .await;
        assert_eq!(mail.header("Subject"), Some("Reset your password"));
        assert_eq!(mail.sender, "no-reply@tessera.test");
        let token = mailed_token(&mail);
        assert_eq!(sink.mails().len(), 1, "the unknown login got no mail");

        // A bad password or a wrong token changes nothing; the token stays usable.
        let weak = json_with_status(reset(&app, &token, "short").await, 422).await;
        assert!(weak["errors"]["password"].is_array(), "{weak}");
        json_with_status(reset(&app, "not-a-token", "Newer1horse").await, 401).await;
        json_with_status(app.get_as(ME, &access(&phone)).await, 200).await;

        // The reset: every session ends, only the new password signs in.
        let response = reset(&app, &token, "Newer1horse").await;
        assert_eq!(response.status(), 204);
        for session in [&phone, &laptop] {
            json_with_status(app.get_as(ME, &access(session)).await, 401).await;
            let refresh_token = session["data"]["refresh_token"].as_str().unwrap();
            json_with_status(
                app.post_json(REFRESH, &json!({ "refresh_token": refresh_token }))
                    .await,
                401,
            )
            .await;
        }
        json_with_status(login(&app, "ada@example.com", PASSWORD).await, 401).await;
        let fresh =
            json_with_status(login(&app, "ada@example.com", "Newer1horse").await, 200).await;

        // Used once: refused the second time.
        json_with_status(reset(&app, &token, "Newest1horse").await, 401).await;

        // The trail has the requests (found and unknown), the reset and the failures, and no
        // token.
        let trail = json_with_status(
            app.get_as("/auth/api/v1/audit?event=password.reset", &access(&fresh))
                .await,
            200,
        )
        .await;
        assert_eq!(trail["data"][0]["user_id"], user_id.as_str(), "{trail}");
        assert_eq!(trail["data"][0]["details"]["sessions_ended"], 2, "{trail}");
        let requested = json_with_status(
            app.get_as(
                "/auth/api/v1/audit?event=password.reset_requested",
                &access(&fresh),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(
            requested["data"][0]["details"]["account"], "found",
            "{requested}"
        );
        assert!(!requested.to_string().contains(&token));
        assert!(!trail.to_string().contains(&token));
        let failures = app
            .scalar("SELECT COUNT(*) FROM auth_audit WHERE event = 'password.reset_failed'")
            .await;
        assert_eq!(failures, 2);
        app.stop().await;
    }
);

database_test!(
    expired_tokens_and_a_second_mails_token_after_a_reset_are_refused,
    |backend| async move {
        let sink = SmtpSink::start(false).await;
        let app = spawn_with_relay(backend, &sink, |config| {
            config.sign_in_mail.login_interval = Duration::from_millis(1);
        })
        .await;
        tenant_with_user(&app, "acme", "ada@example.com");
        tenant_with_user(&app, "globex", "bob@example.com");

        // Expired: refused.
        json_with_status(forgot(&app, "ada@example.com").await, 202).await;
        let first = eventually(10, "the first mail", || async {
            mails_to(&sink, "ada@example.com").pop()
        })
        .await;
        let expired = mailed_token(&first);
        assert_eq!(
            app.execute("UPDATE sign_in_tokens SET expires_at = '2000-01-01T00:00:00Z'")
                .await,
            1
        );
        json_with_status(reset(&app, &expired, "Newer1horse").await, 401).await;

        // Two mails: the one used ends the other, and each token resets its own account only.
        tokio::time::sleep(Duration::from_millis(5)).await;
        json_with_status(forgot(&app, "ada@example.com").await, 202).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        json_with_status(forgot(&app, "ada@example.com").await, 202).await;
        json_with_status(forgot(&app, "bob@example.com").await, 202).await;
        let (ada, bob) = eventually(10, "three more mails", || async {
            let ada = mails_to(&sink, "ada@example.com");
            let bob = mails_to(&sink, "bob@example.com");
            (ada.len() == 3 && bob.len() == 1).then_some((ada, bob))
        })
        .await;
        let (second, third) = (mailed_token(&ada[1]), mailed_token(&ada[2]));
        assert_ne!(second, third);
        assert_eq!(reset(&app, &third, "Newer1horse").await.status(), 204);
        json_with_status(reset(&app, &second, "Newest1horse").await, 401).await;
        json_with_status(login(&app, "ada@example.com", "Newer1horse").await, 200).await;
        json_with_status(login(&app, "bob@example.com", PASSWORD).await, 200).await;
        assert_eq!(
            reset(&app, &mailed_token(&bob[0]), "Bobs1newhorse")
                .await
                .status(),
            204
        );
        json_with_status(login(&app, "bob@example.com", "Bobs1newhorse").await, 200).await;
        json_with_status(login(&app, "ada@example.com", "Newer1horse").await, 200).await;
        app.stop().await;
    }
);

database_test!(
    reset_mails_are_limited_per_login_and_per_address_known_or_not,
    |backend| async move {
        let sink = SmtpSink::start(false).await;
        let app = spawn_with_relay(backend, &sink, |config| {
            config.sign_in_mail.per_address_per_hour = 6;
        })
        .await;
        tenant_with_user(&app, "acme", "ada@example.com");
        tenant_with_user(&app, "globex", "carol@example.com");

        // E-mail codes: one a minute, so a login's code right after the enrolment's waits.
        let carol = bearer(&app, "carol@example.com").await;
        json_with_status(app.post_as(OTP_ENABLE, &carol, &json!({})).await, 202).await;
        let code = mailed_code(&nth_mail_to(&sink, "carol@example.com", 1).await);
        json_with_status(
            app.post_as(OTP_CONFIRM, &carol, &json!({ "code": code }))
                .await,
            200,
        )
        .await;
        let mfa_token = challenged(&app, "carol@example.com", PASSWORD, json!(["otp"])).await;
        let waits = app
            .post_json(OTP_SEND, &json!({ "mfa_token": mfa_token }))
            .await;
        assert_eq!(waits.status(), 429);

        // One mail a minute per login, whether an account has it or not.
        for login in ["ada@example.com", "nobody@example.com"] {
            json_with_status(forgot(&app, login).await, 202).await;
            let again = forgot(&app, login).await;
            assert_eq!(again.status(), 429, "{login}");
            let retry_after: u64 = again.headers()["retry-after"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!((1..=60).contains(&retry_after), "{retry_after}");
        }
        // Six an hour from one address (carol's enrolment was one): three more logins, then
        // refused.
        json_with_status(forgot(&app, "a@example.com").await, 202).await;
        json_with_status(forgot(&app, "b@example.com").await, 202).await;
        json_with_status(forgot(&app, "d@example.com").await, 202).await;
        let refused = forgot(&app, "c@example.com").await;
        assert_eq!(refused.status(), 429);
        assert!(
            refused.headers()["retry-after"]
                .to_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
                > 60
        );
        eventually(10, "ada's mail", || async {
            (!mails_to(&sink, "ada@example.com").is_empty()).then_some(())
        })
        .await;
        assert_eq!(sink.mails().len(), 2, "ada's reset and carol's enrolment");
        app.stop().await;
    }
);

database_test!(
    without_a_relay_there_is_no_reset_mail,
    |backend| async move {
        let app = spawn_app_with(backend, AppOptions::default()).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let unavailable = json_with_status(forgot(&app, "ada@example.com").await, 503).await;
        assert!(
            unavailable["message"]
                .as_str()
                .unwrap()
                .contains("TESSERA_SMTP_URL"),
            "{unavailable}"
        );
        json_with_status(reset(&app, "not-a-token", "Newer1horse").await, 401).await;
        json_with_status(
            app.post_json(MAGIC_LINK, &json!({ "login": "ada@example.com" }))
                .await,
            503,
        )
        .await;
        let session = json_with_status(login(&app, "ada@example.com", PASSWORD).await, 200).await;
        json_with_status(
            app.post_as(OTP_ENABLE, &access(&session), &json!({})).await,
            503,
        )
        .await;
        let config = json_with_status(app.get(CONFIG).await, 200).await;
        assert_eq!(config["data"]["mfa_methods"], json!(["totp", "webauthn"]));
        app.stop().await;
    }
);

database_test!(
    e_mail_codes_enrol_and_sign_in_once_and_wrong_expired_and_other_users_codes_are_refused,
    |backend| async move {
        let sink = SmtpSink::start(false).await;
        let app = spawn_with_relay(backend, &sink, |config| {
            config.sign_in_mail.login_interval = Duration::from_millis(1);
        })
        .await;
        let config = json_with_status(app.get(CONFIG).await, 200).await;
        assert_eq!(
            config["data"]["mfa_methods"],
            json!(["totp", "webauthn", "otp", "magic_link"])
        );
        tenant_with_user(&app, "acme", "ada@example.com");
        tenant_with_user(&app, "globex", "bob@example.com");
        let ada = bearer(&app, "ada@example.com").await;
        let bob = bearer(&app, "bob@example.com").await;

        // Enrolment: a wrong code is refused, the mailed one turns it on, once.
        json_with_status(app.post_as(OTP_ENABLE, &ada, &json!({})).await, 202).await;
        let first = nth_mail_to(&sink, "ada@example.com", 1).await;
        assert_eq!(first.sender, "no-reply@tessera.test");
        let code = mailed_code(&first);
        let wrong = if code == "000000" { "111111" } else { "000000" };
        let refused = json_with_status(
            app.post_as(OTP_CONFIRM, &ada, &json!({ "code": wrong }))
                .await,
            422,
        )
        .await;
        assert!(refused["errors"]["code"].is_array(), "{refused}");
        json_with_status(
            app.post_as(
                OTP_CONFIRM,
                &ada,
                &json!({ "code": format!(" {} {} ", &code[..3], &code[3..]) }),
            )
            .await,
            200,
        )
        .await;
        json_with_status(
            app.post_as(OTP_CONFIRM, &ada, &json!({ "code": code }))
                .await,
            422,
        )
        .await;
        json_with_status(app.post_as(OTP_ENABLE, &ada, &json!({})).await, 409).await;
        enrol_email_codes(&app, &sink, &bob, "bob@example.com").await;

        // A login: 202 with `otp`; a code on request, used once.
        let mfa_token = challenged(&app, "ada@example.com", PASSWORD, json!(["otp"])).await;
        json_with_status(
            app.post_json(OTP_SEND, &json!({ "mfa_token": "unknown" }))
                .await,
            401,
        )
        .await;
        json_with_status(
            app.post_json(OTP_SEND, &json!({ "mfa_token": mfa_token }))
                .await,
            202,
        )
        .await;
        let code = mailed_code(&nth_mail_to(&sink, "ada@example.com", 2).await);
        json_with_status(verify_code(&app, &mfa_token, wrong).await, 401).await;
        let signed_in = json_with_status(verify_code(&app, &mfa_token, &code).await, 200).await;
        json_with_status(app.get_as(ME, &access(&signed_in)).await, 200).await;
        let again = challenged(&app, "ada@example.com", PASSWORD, json!(["otp"])).await;
        json_with_status(verify_code(&app, &again, &code).await, 401).await;

        // Another user's code does not sign ada in.
        let bobs_challenge = challenged(&app, "bob@example.com", PASSWORD, json!(["otp"])).await;
        json_with_status(
            app.post_json(OTP_SEND, &json!({ "mfa_token": bobs_challenge }))
                .await,
            202,
        )
        .await;
        let bobs_code = mailed_code(&nth_mail_to(&sink, "bob@example.com", 2).await);
        json_with_status(
            app.post_json(OTP_SEND, &json!({ "mfa_token": again }))
                .await,
            202,
        )
        .await;
        let adas_code = mailed_code(&nth_mail_to(&sink, "ada@example.com", 3).await);
        if bobs_code != adas_code {
            json_with_status(verify_code(&app, &again, &bobs_code).await, 401).await;
        }

        // Expired: refused.
        assert_eq!(
            app.execute(
                "UPDATE email_codes SET expires_at = '2000-01-01T00:00:00Z' WHERE purpose = 'login'"
            )
            .await,
            2
        );
        json_with_status(verify_code(&app, &again, &adas_code).await, 401).await;
        json_with_status(verify_code(&app, &bobs_challenge, &bobs_code).await, 401).await;

        // Off: the next login needs no second factor; off twice is 404.
        assert_eq!(app.delete_as(OTP, &ada).await.status(), 204);
        json_with_status(app.delete_as(OTP, &ada).await, 404).await;
        let fresh = json_with_status(login(&app, "ada@example.com", PASSWORD).await, 200).await;

        // The trail: enabled, used, failed and disabled, with the method and no code.
        let trail = json_with_status(
            app.get_as("/auth/api/v1/audit?limit=100", &access(&fresh))
                .await,
            200,
        )
        .await;
        let events: Vec<(String, Value)> = trail["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                (
                    item["event"].as_str().unwrap().to_owned(),
                    item["details"]["method"].clone(),
                )
            })
            .collect();
        for event in ["mfa.enabled", "mfa.succeeded", "mfa.failed", "mfa.disabled"] {
            assert!(
                events.contains(&(event.to_owned(), json!("otp"))),
                "{event}: {events:?}"
            );
        }
        assert!(!trail.to_string().contains(&code));
        app.stop().await;
    }
);

database_test!(
    magic_links_sign_in_once_point_only_at_allowed_origins_and_keep_the_second_factor,
    |backend| async move {
        let sink = SmtpSink::start(false).await;
        let app = spawn_with_relay(backend, &sink, |config| {
            config.sign_in_mail.login_interval = Duration::from_millis(1);
            config.sign_in_mail.redirect_origins = vec!["https://app.example.com".into()];
            config.public_url = "https://tessera.example.com".into();
        })
        .await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let ask = |login: &'static str, redirect_url: Option<&'static str>| {
            let app = &app;
            async move {
                let mut body = json!({ "login": login });
                if let Some(url) = redirect_url {
                    body["redirect_url"] = json!(url);
                }
                app.post_json(MAGIC_LINK, &body).await
            }
        };
        let verify = |token: String| {
            let app = &app;
            async move {
                app.post_json(MAGIC_LINK_VERIFY, &json!({ "token": token }))
                    .await
            }
        };

        // Off the allow-list: 422, nothing sent. Unknown logins: 202, nothing sent.
        let refused = json_with_status(
            ask(
                "ada@example.com",
                Some("https://app.example.com.evil.test/in"),
            )
            .await,
            422,
        )
        .await;
        assert!(refused["errors"]["redirect_url"].is_array(), "{refused}");
        let unknown = json_with_status(ask("nobody@example.com", None).await, 202).await;
        let known = json_with_status(
            ask(
                "ada@example.com",
                Some("https://app.example.com/in?from=mail"),
            )
            .await,
            202,
        )
        .await;
        assert_eq!(unknown, known);
        let mail = nth_mail_to(&sink, "ada@example.com", 1).await;
        assert_eq!(mail.header("Subject"), Some("Your sign-in link"));
        let text = mail.part("text/plain").unwrap();
        assert!(
            text.contains("https://app.example.com/in?from=mail&token="),
            "{text}"
        );
        assert_eq!(sink.mails().len(), 1);
        let token = text
            .split_once("&token=")
            .unwrap()
            .1
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect::<String>();

        // Used once: a token set, then 401.
        json_with_status(verify("unknown".into()).await, 401).await;
        let signed_in = json_with_status(verify(token.clone()).await, 200).await;
        json_with_status(app.get_as(ME, &access(&signed_in)).await, 200).await;
        json_with_status(verify(token).await, 401).await;

        // Expired: refused. The default link points at the public URL.
        json_with_status(ask("ada@example.com", None).await, 202).await;
        let second = nth_mail_to(&sink, "ada@example.com", 2).await;
        let expired = mailed_token(&second);
        assert!(
            second
                .part("text/plain")
                .unwrap()
                .contains(&format!("https://tessera.example.com?token={expired}")),
            "{:?}",
            second.part("text/plain")
        );
        app.execute("UPDATE sign_in_tokens SET expires_at = '2000-01-01T00:00:00Z' WHERE purpose = 'magic_link'")
            .await;
        json_with_status(verify(expired).await, 401).await;

        // With a second factor, the link stands for the password only.
        enrol_email_codes(&app, &sink, &access(&signed_in), "ada@example.com").await;
        json_with_status(ask("ada@example.com", None).await, 202).await;
        let link = mailed_token(&nth_mail_to(&sink, "ada@example.com", 4).await);
        let challenge = json_with_status(verify(link).await, 202).await;
        assert_eq!(challenge["data"]["methods"], json!(["otp"]), "{challenge}");
        assert!(challenge["data"].get("access_token").is_none());

        let trail = json_with_status(
            app.get_as(
                "/auth/api/v1/audit?event=magic_link.used",
                &access(&signed_in),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(trail["data"].as_array().unwrap().len(), 1, "{trail}");
        let failed = app
            .scalar("SELECT COUNT(*) FROM auth_audit WHERE event = 'magic_link.failed'")
            .await;
        assert_eq!(failed, 3);
        app.stop().await;
    }
);

/// Known and unknown logins are answered after the same work: the mail goes out after the
/// answer, through a relay that takes 50 ms per message here, so a known login answered late
/// would show. Measured alternately, 25 each; the medians stay within the noise of each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_and_unknown_logins_are_answered_alike_and_as_fast() {
    let sink = SmtpSink::start_with(false, Duration::from_millis(50)).await;
    let app = spawn_with_relay(Backend::Sqlite, &sink, |config| {
        config.rate_limits.auth_per_minute = 0;
        config.sign_in_mail.login_interval = Duration::from_millis(1);
        config.sign_in_mail.per_address_per_hour = 10_000;
    })
    .await;
    tenant_with_user(&app, "acme", "ada@example.com");
    let time = |login: &'static str| {
        let app = &app;
        async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            let started = Instant::now();
            let response = forgot(app, login).await;
            let took = started.elapsed();
            let status = response.status();
            (status, response.text().await.unwrap(), took)
        }
    };
    // Warm both paths.
    time("ada@example.com").await;
    time("nobody@example.com").await;
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for _ in 0..25 {
        let (status, known_body, took) = time("ada@example.com").await;
        assert_eq!(status, 202);
        known.push(took);
        let (status, unknown_body, took) = time("nobody@example.com").await;
        assert_eq!(status, 202);
        assert_eq!(known_body, unknown_body);
        unknown.push(took);
    }
    known.sort();
    unknown.sort();
    let (known, unknown) = (known[12], unknown[12]);
    let (slower, faster) = (known.max(unknown), known.min(unknown));
    // A known login answered only once the relay took its mail would be 50 ms slower.
    assert!(
        slower - faster < Duration::from_millis(5) || slower < faster * 2,
        "medians: known {known:?}, unknown {unknown:?}"
    );
    eventually(20, "the known login's mails", || async {
        (mails_to(&sink, "ada@example.com").len() >= 26).then_some(())
    })
    .await;
    app.stop().await;
}
