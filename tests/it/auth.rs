//! The authentication service: login, tokens, sessions, lockout, context switching.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{AppOptions, Backend, TestApp, json_with_status, spawn_app_with};

pub(crate) const PASSWORD: &str = "Correct1horse";
const LOGIN: &str = "/auth/api/v1/auth/login";
pub(crate) const REFRESH: &str = "/auth/api/v1/auth/refresh";
pub(crate) const ME: &str = "/auth/api/v1/auth/me";

async fn spawn(
    backend: Backend,
    configure: impl FnOnce(&mut tessera_host::config::Config) + Send + 'static,
) -> TestApp {
    spawn_app_with(
        backend,
        AppOptions {
            configure: Some(Box::new(configure)),
            ..AppOptions::default()
        },
    )
    .await
}

/// A tenant with an owner whose password is [`PASSWORD`]; returns (tenant_id, user_id).
pub(crate) fn tenant_with_user(app: &TestApp, slug: &str, email: &str) -> (String, String) {
    let tenant = app
        .admin(&["create-tenant", "--slug", slug, "--name", slug])
        .json();
    let user = app
        .admin(&[
            "create-user",
            "--tenant",
            slug,
            "--email",
            email,
            "--password",
            PASSWORD,
            "--role",
            "owner",
        ])
        .json();
    (
        tenant["tenant_id"].as_str().unwrap().to_owned(),
        user["user_id"].as_str().unwrap().to_owned(),
    )
}

pub(crate) async fn login(app: &TestApp, email: &str, password: &str) -> reqwest::Response {
    app.post_json(LOGIN, &json!({ "login": email, "password": password }))
        .await
}

async fn logged_in(app: &TestApp, email: &str) -> Value {
    json_with_status(login(app, email, PASSWORD).await, 200).await
}

/// The access token of a password login of `email` (with [`PASSWORD`]).
pub(crate) async fn bearer(app: &TestApp, email: &str) -> String {
    access(&json_with_status(login(app, email, PASSWORD).await, 200).await)
}

pub(crate) fn access(body: &Value) -> String {
    body["data"]["access_token"].as_str().unwrap().to_owned()
}

fn refresh_token(body: &Value) -> String {
    body["data"]["refresh_token"].as_str().unwrap().to_owned()
}

database_test!(
    login_gives_a_token_set_that_refreshes_once_and_reuse_kills_the_session,
    |backend| async move {
        let app = spawn(backend, |_| {}).await;
        let (tenant_id, user_id) = tenant_with_user(&app, "acme", "ada@example.com");

        let wrong =
            json_with_status(login(&app, "ada@example.com", "Wrong1horse").await, 401).await;
        let unknown =
            json_with_status(login(&app, "nobody@example.com", PASSWORD).await, 401).await;
        assert_eq!(
            wrong, unknown,
            "the same answer whether or not the account exists"
        );
        let invalid = json_with_status(
            app.post_json(LOGIN, &json!({ "login": "not-an-email" }))
                .await,
            422,
        )
        .await;
        assert_eq!(invalid["errors"]["login"], json!(["email"]));
        assert_eq!(invalid["errors"]["password"], json!(["required"]));

        let body = logged_in(&app, "Ada@Example.com").await;
        assert_eq!(body["data"]["token_type"], "Bearer");
        let trail =
            json_with_status(app.get_as("/auth/api/v1/audit", &access(&body)).await, 200).await;
        let events: Vec<&str> = trail["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["event"].as_str().unwrap())
            .collect();
        assert_eq!(
            events,
            ["login.succeeded", "login.failed"],
            "the owner sees its tenant's logins; the unknown account's failure is in no tenant"
        );
        assert_eq!(body["data"]["expires_in"], 3600);
        let services = body["meta"]["services"].as_object().unwrap();
        assert_eq!(services.len(), 9);
        assert_eq!(services["chat"], format!("http://{}/chat", app.address));

        let me = json_with_status(app.get_as(ME, &access(&body)).await, 200).await;
        assert_eq!(me["data"]["user_id"], user_id);
        assert_eq!(me["data"]["tenant_id"], tenant_id);
        assert_eq!(me["data"]["email"], "ada@example.com");
        assert_eq!(me["data"]["role"], "owner");
        assert_eq!(me["data"]["type"], "user");
        assert!(me["data"]["workspace_id"].is_string());

        let first_refresh = refresh_token(&body);
        let refreshed = json_with_status(
            app.post_json(REFRESH, &json!({ "refresh_token": first_refresh }))
                .await,
            200,
        )
        .await;
        assert_ne!(refresh_token(&refreshed), first_refresh);
        json_with_status(app.get_as(ME, &access(&refreshed)).await, 200).await;

        // The spent token again: theft. The whole session ends, new tokens included.
        json_with_status(
            app.post_json(REFRESH, &json!({ "refresh_token": first_refresh }))
                .await,
            401,
        )
        .await;
        json_with_status(app.get_as(ME, &access(&refreshed)).await, 401).await;
        json_with_status(
            app.post_json(
                REFRESH,
                &json!({ "refresh_token": refresh_token(&refreshed) }),
            )
            .await,
            401,
        )
        .await;
        app.stop().await;
    }
);

database_test!(
    logout_ends_one_session_and_logout_all_every_one,
    |backend| async move {
        let app = spawn(backend, |_| {}).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let phone = logged_in(&app, "ada@example.com").await;
        let laptop = logged_in(&app, "ada@example.com").await;
        let tablet = logged_in(&app, "ada@example.com").await;

        let response = app
            .post_as("/auth/api/v1/auth/logout", &access(&phone), &json!({}))
            .await;
        assert_eq!(response.status(), 204);
        assert!(response.text().await.unwrap().is_empty());
        json_with_status(app.get_as(ME, &access(&phone)).await, 401).await;
        json_with_status(
            app.post_json(REFRESH, &json!({ "refresh_token": refresh_token(&phone) }))
                .await,
            401,
        )
        .await;
        json_with_status(app.get_as(ME, &access(&laptop)).await, 200).await;

        let response = app
            .post_as("/auth/api/v1/auth/logout/all", &access(&laptop), &json!({}))
            .await;
        assert_eq!(response.status(), 204);
        for device in [&laptop, &tablet] {
            json_with_status(app.get_as(ME, &access(device)).await, 401).await;
        }
        json_with_status(
            app.post_as("/auth/api/v1/auth/logout", "not-a-token", &json!({}))
                .await,
            401,
        )
        .await;
        app.stop().await;
    }
);

database_test!(
    the_eleventh_login_ends_the_oldest_session,
    |backend| async move {
        let app = spawn(backend, |_| {}).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let mut sessions = Vec::new();
        for _ in 0..11 {
            sessions.push(logged_in(&app, "ada@example.com").await);
        }
        json_with_status(app.get_as(ME, &access(&sessions[0])).await, 401).await;
        json_with_status(
            app.post_json(
                REFRESH,
                &json!({ "refresh_token": refresh_token(&sessions[0]) }),
            )
            .await,
            401,
        )
        .await;
        for session in &sessions[1..] {
            json_with_status(app.get_as(ME, &access(session)).await, 200).await;
        }
        let trail = json_with_status(
            app.get_as(
                "/auth/api/v1/audit?event=session.evicted",
                &access(&sessions[10]),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(trail["data"].as_array().unwrap().len(), 1, "{trail}");
        app.stop().await;
    }
);

database_test!(
    a_password_hashed_with_older_parameters_is_rehashed_at_login,
    |backend| async move {
        use argon2::password_hash::{PasswordHasher as _, SaltString, rand_core::OsRng};
        let app = spawn(backend, |_| {}).await;
        let (_, user_id) = tenant_with_user(&app, "acme", "ada@example.com");
        let weaker = argon2::Argon2::new(
            argon2::Algorithm::Argon2id,
            argon2::Version::V0x13,
            argon2::Params::new(8 * 1024, 1, 1, None).unwrap(),
        )
        .hash_password(PASSWORD.as_bytes(), &SaltString::generate(&mut OsRng))
        .unwrap()
        .to_string();
        let database = &app.state().database;
        tessera_host::on_pool!(database, pool => sqlx::query("UPDATE users SET password_hash = $2 WHERE id = $1")
            .bind(&user_id)
            .bind(&weaker)
            .execute(pool)
            .await
            .map(drop))
        .unwrap();
        logged_in(&app, "ada@example.com").await;
        let stored: String = tessera_host::on_pool!(database, pool => sqlx::query_scalar(
            "SELECT password_hash FROM users WHERE id = $1",
        )
        .bind(&user_id)
        .fetch_one(pool)
        .await)
        .unwrap();
        assert!(
            stored.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{stored}"
        );
        logged_in(&app, "ada@example.com").await;
        app.stop().await;
    }
);

database_test!(
    tampered_unsigned_foreign_and_expired_tokens_are_refused,
    |backend| async move {
        let app = spawn(backend, |_| {}).await;
        let other = spawn(backend, |_| {}).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let token = access(&logged_in(&app, "ada@example.com").await);
        json_with_status(app.get_as(ME, &token).await, 200).await;

        let parts: Vec<&str> = token.split('.').collect();
        let mut claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        claims["role"] = json!("owner");
        claims["tid"] = json!(uuid::Uuid::new_v4().to_string());
        let tampered = format!(
            "{}.{}.{}",
            parts[0],
            URL_SAFE_NO_PAD.encode(claims.to_string()),
            parts[2]
        );
        json_with_status(app.get_as(ME, &tampered).await, 401).await;

        let none_header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
        let unsigned = format!("{none_header}.{}.", parts[1]);
        json_with_status(app.get_as(ME, &unsigned).await, 401).await;

        // A real token of another host with its own keys, for a user and session of this one.
        let foreign = other
            .token(claims["tid"].as_str().unwrap(), "u", "owner")
            .await;
        json_with_status(app.get_as(ME, &foreign).await, 401).await;

        // Signed by this host, but expired.
        let now = chrono::Utc::now().timestamp();
        let decoded: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        let expired = app
            .state()
            .auth
            .access_tokens
            .issue(&tessera_host::auth::tokens::AccessClaims {
                sub: decoded["sub"].as_str().unwrap().into(),
                tid: decoded["tid"].as_str().unwrap().into(),
                wid: None,
                role: "owner".into(),
                typ: "user".into(),
                sid: decoded["sid"].as_str().unwrap().into(),
                jti: "expired".into(),
                iat: now - 7200,
                exp: now - 3600,
            })
            .unwrap();
        json_with_status(app.get_as(ME, &expired).await, 401).await;
        json_with_status(app.get(ME).await, 401).await;

        // The JWKS names the key the token was signed with.
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "EdDSA");
        let jwks = json_with_status(app.get("/auth/.well-known/jwks.json").await, 200).await;
        let key = jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|key| key["kid"] == header["kid"])
            .expect("the signing key is published");
        assert_eq!(key["kty"], "OKP");
        assert_eq!(key["crv"], "Ed25519");
        other.stop().await;
        app.stop().await;
    }
);

database_test!(
    lockout_counts_known_and_unknown_logins_alike_and_lifts,
    |backend| async move {
        let app = spawn(backend, |config| {
            config.auth.lockout_max_attempts = 3;
            config.auth.lockout_duration = Duration::from_secs(2);
        })
        .await;
        tenant_with_user(&app, "acme", "ada@example.com");
        for email in ["ada@example.com", "ghost@example.com"] {
            for _ in 0..3 {
                json_with_status(login(&app, email, "Wrong1horse").await, 401).await;
            }
            let locked = login(&app, email, PASSWORD).await;
            assert_eq!(locked.status(), 429, "{email}");
            let retry_after: u64 = locked.headers()["retry-after"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!((1..=2).contains(&retry_after), "{retry_after}");
            let body: Value = locked.json().await.unwrap();
            assert!(body["message"].is_string());
        }
        tokio::time::sleep(Duration::from_millis(2100)).await;
        logged_in(&app, "ada@example.com").await;
        app.stop().await;
    }
);

database_test!(
    twenty_parallel_wrong_passwords_count_exactly_up_to_the_limit,
    |backend| async move {
        let app = spawn(backend, |config| config.auth.lockout_max_attempts = 5).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let mut attempts = tokio::task::JoinSet::new();
        for _ in 0..20 {
            let (client, url) = (app.client.clone(), app.url(LOGIN));
            attempts.spawn(async move {
                client
                    .post(url)
                    .json(&json!({ "login": "ada@example.com", "password": "Wrong1horse" }))
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16()
            });
        }
        let statuses: Vec<u16> = attempts.join_all().await;
        assert_eq!(
            statuses.iter().filter(|&&status| status == 401).count(),
            5,
            "{statuses:?}"
        );
        assert_eq!(
            statuses.iter().filter(|&&status| status == 429).count(),
            15,
            "{statuses:?}"
        );
        assert_eq!(login(&app, "ada@example.com", PASSWORD).await.status(), 429);
        app.stop().await;
    }
);

database_test!(
    switch_context_scopes_a_new_token_set_and_keeps_the_old_one,
    |backend| async move {
        let app = spawn(backend, |_| {}).await;
        let (first_tenant, _) = tenant_with_user(&app, "acme", "ada@example.com");
        let second = app
            .admin(&["create-tenant", "--slug", "globex", "--name", "Globex"])
            .json();
        let second_tenant = second["tenant_id"].as_str().unwrap().to_owned();
        let third = app
            .admin(&["create-tenant", "--slug", "initech", "--name", "Initech"])
            .json();
        app.admin(&[
            "add-member",
            "--tenant",
            "globex",
            "--email",
            "ada@example.com",
            "--role",
            "viewer",
        ])
        .json();
        let sales = app
            .admin(&["create-workspace", "--tenant", "globex", "--name", "Sales"])
            .json();

        let original = access(&logged_in(&app, "ada@example.com").await);
        let switch = "/auth/api/v1/auth/switch-context";
        let switched = json_with_status(
            app.post_as(
                switch,
                &original,
                &json!({ "tenant_id": second_tenant, "workspace_id": sales["workspace_id"] }),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(switched["meta"]["services"].as_object().unwrap().len(), 9);
        let me = json_with_status(app.get_as(ME, &access(&switched)).await, 200).await;
        assert_eq!(me["data"]["tenant_id"], second_tenant);
        assert_eq!(me["data"]["workspace_id"], sales["workspace_id"]);
        assert_eq!(me["data"]["role"], "viewer");
        let still = json_with_status(app.get_as(ME, &original).await, 200).await;
        assert_eq!(
            still["data"]["tenant_id"], first_tenant,
            "the previous token stays valid"
        );

        json_with_status(
            app.post_as(
                switch,
                &original,
                &json!({ "tenant_id": third["tenant_id"] }),
            )
            .await,
            403,
        )
        .await;
        json_with_status(
            app.post_as(
                switch,
                &original,
                &json!({ "workspace_id": sales["workspace_id"] }),
            )
            .await,
            404,
        )
        .await;
        let invalid = json_with_status(
            app.post_as(switch, &original, &json!({ "tenant_id": "nope" }))
                .await,
            422,
        )
        .await;
        assert_eq!(invalid["errors"]["tenant_id"], json!(["uuid"]));
        app.stop().await;
    }
);

database_test!(the_config_reports_the_real_settings, |backend| async move {
    let app = spawn(backend, |config| config.auth.max_active_sessions = 4).await;
    let config = json_with_status(app.get("/auth/api/v1/auth/config").await, 200).await;
    assert_eq!(
        config["data"],
        json!({
            "mfa_methods": ["totp", "webauthn"],
            "password_policy": {
                "min_length": 8, "require_uppercase": true, "require_lowercase": true,
                "require_number": true, "require_special": false,
            },
            "session": { "token_lifetime": 3600, "refresh_token_lifetime": 604800, "max_active_sessions": 4 },
            "lockout": { "max_attempts": 5, "lockout_duration": 900 },
        })
    );
    app.stop().await;
});

/// Logs in as Ada, whose MFA is on: the `mfa_token` of the 202.
async fn challenge(app: &TestApp) -> String {
    let body = json_with_status(login(app, "ada@example.com", PASSWORD).await, 202).await;
    assert_eq!(body["data"]["methods"], json!(["totp"]));
    assert!(body["message"].is_string());
    assert!(body["data"].get("access_token").is_none());
    body["data"]["mfa_token"].as_str().unwrap().to_owned()
}

async fn verify_mfa(app: &TestApp, mfa_token: &str, method: &str, code: &str) -> reqwest::Response {
    app.post_json(
        "/auth/api/v1/auth/mfa/verify",
        &json!({ "mfa_token": mfa_token, "method": method, "code": code }),
    )
    .await
}

/// The current TOTP step, after waiting out the end of a step that has under 8 s left, so a
/// test's codes all belong to one step window.
async fn fresh_step() -> i64 {
    let now = chrono::Utc::now().timestamp();
    if now % 30 >= 22 {
        tokio::time::sleep(Duration::from_secs(u64::try_from(30 - now % 30).unwrap())).await;
    }
    tessera_host::auth::totp::step_at(chrono::Utc::now().timestamp())
}

database_test!(
    totp_setup_confirm_challenge_verify_recovery_and_disable,
    |backend| async move {
        use tessera_host::auth::totp::{TotpSecret, code_at};
        let app = spawn(backend, |_| {}).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let token = access(&logged_in(&app, "ada@example.com").await);

        let setup = json_with_status(
            app.post_as("/auth/api/v1/auth/mfa/totp/setup", &token, &json!({}))
                .await,
            200,
        )
        .await;
        let otpauth = setup["data"]["otpauth_url"].as_str().unwrap();
        assert!(
            otpauth.starts_with("otpauth://totp/Tessera:ada%40example.com?"),
            "{otpauth}"
        );
        let secret = TotpSecret::from_base32(setup["data"]["secret"].as_str().unwrap()).unwrap();
        let step = fresh_step().await;
        let confirm = "/auth/api/v1/auth/mfa/totp/confirm";

        let wrong = json_with_status(
            app.post_as(
                confirm,
                &token,
                &json!({ "code": code_at(&secret, step - 5) }),
            )
            .await,
            422,
        )
        .await;
        assert_eq!(wrong["errors"]["code"], json!(["invalid"]));
        let enabled = json_with_status(
            app.post_as(
                confirm,
                &token,
                &json!({ "code": code_at(&secret, step - 1) }),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(enabled["data"]["enabled"], true);
        let recovery: Vec<String> = enabled["data"]["recovery_codes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|code| code.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(recovery.len(), 10);
        json_with_status(
            app.post_as("/auth/api/v1/auth/mfa/totp/setup", &token, &json!({}))
                .await,
            409,
        )
        .await;

        // Login now stops at the second factor.
        let first = challenge(&app).await;
        // The confirming code, and an older one, are spent; two steps ahead is out of range.
        for code in [
            code_at(&secret, step - 1),
            code_at(&secret, step - 2),
            code_at(&secret, step + 2),
        ] {
            json_with_status(verify_mfa(&app, &first, "totp", &code).await, 401).await;
        }
        let verified = json_with_status(
            verify_mfa(&app, &first, "totp", &code_at(&secret, step)).await,
            200,
        )
        .await;
        assert_eq!(verified["meta"]["services"].as_object().unwrap().len(), 9);
        json_with_status(app.get_as(ME, &access(&verified)).await, 200).await;
        // The challenge served its one verify, and the code its one use.
        json_with_status(
            verify_mfa(&app, &first, "totp", &code_at(&secret, step + 1)).await,
            401,
        )
        .await;
        let second = challenge(&app).await;
        json_with_status(
            verify_mfa(&app, &second, "totp", &code_at(&secret, step)).await,
            401,
        )
        .await;

        // A recovery code works once.
        json_with_status(
            verify_mfa(&app, &second, "recovery_code", &recovery[0]).await,
            200,
        )
        .await;
        let third = challenge(&app).await;
        json_with_status(
            verify_mfa(&app, &third, "recovery_code", &recovery[0]).await,
            401,
        )
        .await;
        let invalid = json_with_status(verify_mfa(&app, &third, "sms", "1").await, 422).await;
        assert_eq!(invalid["errors"]["method"], json!(["in"]));

        // Disabling takes a fresh code; then login is one step again.
        let disable = |code: String| {
            app.client
                .delete(app.url("/auth/api/v1/auth/mfa/totp"))
                .bearer_auth(&token)
                .json(&json!({ "code": code }))
                .send()
        };
        json_with_status(disable(code_at(&secret, step)).await.unwrap(), 422).await;
        let response = disable(code_at(&secret, step + 1)).await.unwrap();
        assert_eq!(response.status(), 204);
        logged_in(&app, "ada@example.com").await;
        app.stop().await;
    }
);

database_test!(
    wrong_second_factors_count_toward_the_lockout,
    |backend| async move {
        let app = spawn(backend, |config| config.auth.lockout_max_attempts = 3).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let token = access(&logged_in(&app, "ada@example.com").await);
        let setup = json_with_status(
            app.post_as("/auth/api/v1/auth/mfa/totp/setup", &token, &json!({}))
                .await,
            200,
        )
        .await;
        let secret = tessera_host::auth::totp::TotpSecret::from_base32(
            setup["data"]["secret"].as_str().unwrap(),
        )
        .unwrap();
        let step = fresh_step().await;
        json_with_status(
            app.post_as(
                "/auth/api/v1/auth/mfa/totp/confirm",
                &token,
                &json!({ "code": tessera_host::auth::totp::code_at(&secret, step) }),
            )
            .await,
            200,
        )
        .await;
        let mfa_token = challenge(&app).await;
        for _ in 0..3 {
            json_with_status(
                verify_mfa(
                    &app,
                    &mfa_token,
                    "totp",
                    &tessera_host::auth::totp::code_at(&secret, step - 9),
                )
                .await,
                401,
            )
            .await;
        }
        let locked = verify_mfa(
            &app,
            &mfa_token,
            "totp",
            &tessera_host::auth::totp::code_at(&secret, step + 1),
        )
        .await;
        assert_eq!(locked.status(), 429, "even the right code");
        assert_eq!(login(&app, "ada@example.com", PASSWORD).await.status(), 429);
        // The refused second factor is in the account's trail (the refused login that follows
        // names no account: it is refused before the account is looked up).
        let trail = json_with_status(
            app.get_as("/auth/api/v1/audit?event=account.locked_out", &token)
                .await,
            200,
        )
        .await;
        let methods: Vec<&Value> = trail["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| &entry["details"]["method"])
            .collect();
        assert_eq!(methods, [&json!("totp")], "{trail}");
        app.stop().await;
    }
);

database_test!(
    rotated_keys_keep_verifying_their_tokens_and_a_restart_keeps_the_keys,
    |backend| async move {
        let app = spawn(backend, |_| {}).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let before = access(&logged_in(&app, "ada@example.com").await);
        app.state()
            .auth
            .access_tokens
            .keys()
            .rotate()
            .await
            .unwrap();
        let after = access(&logged_in(&app, "ada@example.com").await);
        let kid = |token: &str| -> Value {
            let header = token.split('.').next().unwrap();
            serde_json::from_slice::<Value>(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap()["kid"].clone()
        };
        assert_ne!(kid(&before), kid(&after), "the new key signs");
        let jwks = json_with_status(app.get("/auth/.well-known/jwks.json").await, 200).await;
        assert_eq!(jwks["keys"].as_array().unwrap().len(), 2, "{jwks}");
        json_with_status(app.get_as(ME, &before).await, 200).await;
        json_with_status(app.get_as(ME, &after).await, 200).await;

        // Keys live in the database: another host (here, the next start) verifies both.
        let database = app.stop_keeping_database().await;
        let restarted = spawn_app_with(
            backend,
            AppOptions {
                database: Some(database),
                ..AppOptions::default()
            },
        )
        .await;
        json_with_status(restarted.get_as(ME, &before).await, 200).await;
        json_with_status(restarted.get_as(ME, &after).await, 200).await;
        restarted.stop().await;
    }
);

database_test!(
    the_role_guards_refuse_viewers_editors_and_guest_tokens_where_an_owner_is_needed,
    |backend| async move {
        let app = spawn(backend, |_| {}).await;
        let tenant_id = uuid::Uuid::new_v4().to_string();
        let token_as = |role: &'static str, user_type: &'static str| {
            let user_id = uuid::Uuid::new_v4().to_string();
            let (app, tenant_id) = (&app, tenant_id.clone());
            async move { app.token_of(&tenant_id, &user_id, role, user_type).await }
        };
        for (role, user_type, status) in [
            ("owner", "user", 200),
            ("owner", "agent", 200),
            ("owner", "guest", 403),
            ("editor", "user", 403),
            ("viewer", "user", 403),
        ] {
            let token = token_as(role, user_type).await;
            let response = app.get_as("/auth/api/v1/audit", &token).await;
            assert_eq!(response.status(), status, "{role} {user_type}");
        }
        app.stop().await;
    }
);

database_test!(
    the_service_map_names_the_loaded_engines_beside_the_specs_services,
    |backend| async move {
        let app = spawn_app_with(
            backend,
            AppOptions {
                plugins: vec!["echo"],
                ..AppOptions::default()
            },
        )
        .await;
        tenant_with_user(&app, "mapped", "map@example.com");
        let body = logged_in(&app, "map@example.com").await;
        let services = body["meta"]["services"].as_object().unwrap();
        let names: Vec<&str> = services.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "activity",
                "auth",
                "chat",
                "core",
                "drive",
                "echo",
                "mail",
                "notes",
                "usermanager",
                "voip"
            ],
            "the spec's nine services, loaded or not, and the loaded engine"
        );
        assert_eq!(services["echo"], format!("http://{}/echo", app.address));

        // Removed from the plugins dir: unloaded, and gone from the next answer's map.
        let plugins = app.database.data_dir.join("plugins");
        std::fs::remove_file(plugins.join("echo.wasm")).unwrap();
        crate::engines::wait_for_engine(&app, "echo", false).await;
        let body = logged_in(&app, "map@example.com").await;
        let services = body["meta"]["services"].as_object().unwrap();
        assert!(!services.contains_key("echo"), "{services:?}");
        assert_eq!(services.len(), 9);
        app.stop().await;
    }
);

const PASSWORD_CHANGE: &str = "/auth/api/v1/auth/password/change";

database_test!(
    a_password_change_checks_the_current_password_keeps_the_caller_and_ends_the_other_sessions,
    |backend| async move {
        let app = spawn(backend, |config| config.auth.lockout_max_attempts = 3).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let phone = logged_in(&app, "ada@example.com").await;
        let laptop = logged_in(&app, "ada@example.com").await;
        let change = |current: &str, password: &str| json!({ "current_password": current, "password": password });

        // Bad input and a wrong current password change nothing.
        let missing = json_with_status(
            app.post_as(PASSWORD_CHANGE, &access(&laptop), &json!({}))
                .await,
            422,
        )
        .await;
        assert!(
            missing["errors"]["current_password"].is_array(),
            "{missing}"
        );
        assert!(missing["errors"]["password"].is_array(), "{missing}");
        let weak = json_with_status(
            app.post_as(
                PASSWORD_CHANGE,
                &access(&laptop),
                &change(PASSWORD, "short"),
            )
            .await,
            422,
        )
        .await;
        assert!(weak["errors"]["password"].is_array(), "{weak}");
        json_with_status(
            app.post_as(
                PASSWORD_CHANGE,
                &access(&laptop),
                &change("Wrong1horse", "Newer1horse"),
            )
            .await,
            401,
        )
        .await;
        json_with_status(
            app.post_json(PASSWORD_CHANGE, &change(PASSWORD, "Newer1horse"))
                .await,
            401,
        )
        .await;
        json_with_status(app.get_as(ME, &access(&phone)).await, 200).await;

        // The change: the caller's session goes on, the other ends, only the new password
        // signs in.
        let response = app
            .post_as(
                PASSWORD_CHANGE,
                &access(&laptop),
                &change(PASSWORD, "Newer1horse"),
            )
            .await;
        assert_eq!(response.status(), 204);
        json_with_status(app.get_as(ME, &access(&laptop)).await, 200).await;
        json_with_status(
            app.post_json(REFRESH, &json!({ "refresh_token": refresh_token(&laptop) }))
                .await,
            200,
        )
        .await;
        json_with_status(app.get_as(ME, &access(&phone)).await, 401).await;
        json_with_status(
            app.post_json(REFRESH, &json!({ "refresh_token": refresh_token(&phone) }))
                .await,
            401,
        )
        .await;
        json_with_status(login(&app, "ada@example.com", PASSWORD).await, 401).await;
        let fresh =
            json_with_status(login(&app, "ada@example.com", "Newer1horse").await, 200).await;

        // Both outcomes are in the owner's trail, without either password.
        let trail = json_with_status(
            app.get_as("/auth/api/v1/audit?event=password.changed", &access(&fresh))
                .await,
            200,
        )
        .await;
        let changed = &trail["data"][0];
        assert_eq!(changed["details"]["sessions_ended"], 1, "{trail}");
        let trail = json_with_status(
            app.get_as(
                "/auth/api/v1/audit?event=password.change_failed",
                &access(&fresh),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(trail["data"].as_array().unwrap().len(), 1, "{trail}");
        assert!(!trail.to_string().contains("Wrong1horse"), "{trail}");

        // Wrong current passwords count toward the account's lockout, as failed logins do.
        for _ in 0..3 {
            json_with_status(
                app.post_as(
                    PASSWORD_CHANGE,
                    &access(&fresh),
                    &change("Wrong1horse", "Newest1horse"),
                )
                .await,
                401,
            )
            .await;
        }
        let locked = login(&app, "ada@example.com", "Newer1horse").await;
        assert_eq!(locked.status(), 429);
        app.stop().await;
    }
);
