//! Passkeys (WebAuthn) through the real host, with a software authenticator and WebAuthn client
//! (`passkey-authenticator`, `passkey-client`) playing the browser on `http://localhost:<port>`:
//! registration, listing and deletion, the second factor after a password, passwordless
//! sign-in with a discoverable credential, a cloned authenticator whose counter falls behind,
//! and ceremonies that are reused, expired, or another user's.

use serde_json::{Value, json};
use tessera_host::auth::totp::{TotpSecret, code_at, step_at};

use crate::auth::{ME, PASSWORD, access, bearer, login, tenant_with_user};
use crate::database_test;
use crate::helpers::{Backend, TestApp, json_with_status, spawn_app};
use crate::soft_passkey::SoftPasskey;

pub(crate) const REGISTER_START: &str = "/auth/api/v1/auth/mfa/webauthn/register/start";
pub(crate) const REGISTER_FINISH: &str = "/auth/api/v1/auth/mfa/webauthn/register/finish";
const CREDENTIALS: &str = "/auth/api/v1/auth/mfa/webauthn/credentials";
const MFA_CHALLENGE: &str = "/auth/api/v1/auth/mfa/webauthn/challenge";
const VERIFY: &str = "/auth/api/v1/auth/mfa/verify";
pub(crate) const PASSKEY_START: &str = "/auth/api/v1/auth/passkey/start";
pub(crate) const PASSKEY_FINISH: &str = "/auth/api/v1/auth/passkey/finish";

/// Registers `authenticator`'s passkey for the bearer of `token`, named `name`.
pub(crate) async fn register(
    app: &TestApp,
    token: &str,
    authenticator: &mut SoftPasskey,
    name: &str,
) -> Value {
    let started = json_with_status(app.post_as(REGISTER_START, token, &json!({})).await, 200).await;
    let options = &started["data"]["options"];
    assert_eq!(options["publicKey"]["rp"]["id"], "localhost");
    assert_eq!(
        options["publicKey"]["authenticatorSelection"]["userVerification"],
        "required"
    );
    assert_eq!(
        options["publicKey"]["authenticatorSelection"]["residentKey"],
        "preferred"
    );
    let credential = authenticator.create(options).await;
    let body = json_with_status(
        app.post_as(
            REGISTER_FINISH,
            token,
            &json!({ "credential": credential, "name": name }),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(body["data"]["name"], name);
    body["data"].clone()
}

/// Signs in without a password with `authenticator`.
pub(crate) async fn passwordless(
    app: &TestApp,
    authenticator: &mut SoftPasskey,
) -> reqwest::Response {
    let started = json_with_status(app.post_json(PASSKEY_START, &json!({})).await, 200).await;
    let options = &started["data"]["options"];
    assert!(options.get("mediation").is_none(), "{options}");
    assert_eq!(
        options["publicKey"]["allowCredentials"]
            .as_array()
            .map_or(0, Vec::len),
        0
    );
    let credential = authenticator.get(options).await;
    app.post_json(
        PASSKEY_FINISH,
        &json!({ "challenge_id": started["data"]["challenge_id"], "credential": credential }),
    )
    .await
}

/// A login of `email` answered 202: its `mfa_token`, after checking the methods listed.
async fn challenged(app: &TestApp, email: &str, methods: Value) -> String {
    let body = json_with_status(login(app, email, PASSWORD).await, 202).await;
    assert_eq!(body["data"]["methods"], methods);
    body["data"]["mfa_token"].as_str().unwrap().to_owned()
}

/// The request options of the second-factor challenge of `mfa_token`.
async fn second_factor_options(app: &TestApp, mfa_token: &str) -> Value {
    let body = json_with_status(
        app.post_json(MFA_CHALLENGE, &json!({ "mfa_token": mfa_token }))
            .await,
        200,
    )
    .await;
    body["data"]["options"].clone()
}

async fn verify(app: &TestApp, mfa_token: &str, credential: &Value) -> reqwest::Response {
    app.post_json(
        VERIFY,
        &json!({ "mfa_token": mfa_token, "method": "webauthn", "credential": credential }),
    )
    .await
}

async fn audit_count(app: &TestApp, token: &str, event: &str) -> usize {
    let body = json_with_status(
        app.get_as(
            &format!("/auth/api/v1/audit?event={event}&limit=100"),
            token,
        )
        .await,
        200,
    )
    .await;
    body["data"].as_array().unwrap().len()
}

database_test!(
    a_passkey_registers_lists_and_signs_in_as_second_factor_and_passwordless,
    |backend| async move {
        let app = spawn_app(backend).await;
        let config = json_with_status(app.get("/auth/api/v1/auth/config").await, 200).await;
        assert_eq!(config["data"]["mfa_methods"], json!(["totp", "webauthn"]));
        tenant_with_user(&app, "acme", "ada@example.com");
        let ada = bearer(&app, "ada@example.com").await;
        let mut laptop = SoftPasskey::new(app.address.port());
        let registered = register(&app, &ada, &mut laptop, "Laptop").await;
        let listed = json_with_status(app.get_as(CREDENTIALS, &ada).await, 200).await;
        assert_eq!(
            listed["data"],
            json!([{
                "id": registered["id"], "name": "Laptop",
                "created_at": registered["created_at"], "last_used_at": null,
            }])
        );

        // A password login now asks for the passkey.
        let mfa_token = challenged(&app, "ada@example.com", json!(["webauthn"])).await;
        let options = second_factor_options(&app, &mfa_token).await;
        assert_eq!(options["publicKey"]["userVerification"], "required");
        assert_eq!(
            options["publicKey"]["allowCredentials"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        let answer = laptop.get(&options).await;
        let session = json_with_status(verify(&app, &mfa_token, &answer).await, 200).await;
        let me = json_with_status(app.get_as(ME, &access(&session)).await, 200).await;
        assert_eq!(me["data"]["email"], "ada@example.com");
        // The same answer again: the ceremony and the mfa_token are spent.
        json_with_status(verify(&app, &mfa_token, &answer).await, 401).await;

        // Without a password: the discoverable credential names Ada.
        let signed_in = json_with_status(passwordless(&app, &mut laptop).await, 200).await;
        let me = json_with_status(app.get_as(ME, &access(&signed_in)).await, 200).await;
        assert_eq!(me["data"]["email"], "ada@example.com");
        assert!(signed_in["meta"]["services"]["core"].is_string());
        let listed = json_with_status(app.get_as(CREDENTIALS, &ada).await, 200).await;
        assert!(listed["data"][0]["last_used_at"].is_string());
        assert_eq!(audit_count(&app, &ada, "passkey.used").await, 1);
        assert_eq!(audit_count(&app, &ada, "mfa.enabled").await, 1);

        // Deleted, it neither challenges a login nor signs in.
        let path = format!("{CREDENTIALS}/{}", registered["id"].as_str().unwrap());
        assert_eq!(app.delete_as(&path, &ada).await.status(), 204);
        assert_eq!(app.delete_as(&path, &ada).await.status(), 404);
        json_with_status(login(&app, "ada@example.com", PASSWORD).await, 200).await;
        json_with_status(passwordless(&app, &mut laptop).await, 401).await;
        assert_eq!(audit_count(&app, &ada, "mfa.disabled").await, 1);
        app.stop().await;
    }
);

database_test!(
    a_cloned_authenticator_whose_counter_falls_behind_is_refused,
    |backend| async move {
        let app = spawn_app(backend).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let ada = bearer(&app, "ada@example.com").await;
        let mut original = SoftPasskey::new(app.address.port());
        register(&app, &ada, &mut original, "Key").await;
        let mut clone = original.cloned();
        // The original is used twice; the clone's counter is now below the stored one.
        json_with_status(passwordless(&app, &mut original).await, 200).await;
        json_with_status(passwordless(&app, &mut original).await, 200).await;
        json_with_status(passwordless(&app, &mut clone).await, 401).await;
        // As a second factor too.
        let mfa_token = challenged(&app, "ada@example.com", json!(["webauthn"])).await;
        let options = second_factor_options(&app, &mfa_token).await;
        let answer = clone.get(&options).await;
        json_with_status(verify(&app, &mfa_token, &answer).await, 401).await;
        let refused = json_with_status(
            app.get_as("/auth/api/v1/audit?event=passkey.failed", &ada)
                .await,
            200,
        )
        .await;
        assert_eq!(refused["data"][0]["details"]["reason"], "counter");
        // The original still works.
        json_with_status(passwordless(&app, &mut original).await, 200).await;

        // A twin taken now signs with the same counter as the original's next answer. Two
        // challenges started before either is answered hold the same stored counter, so the
        // library passes both answers; the conditional update lets only the first through.
        let mut twin = original.cloned();
        let first = challenged(&app, "ada@example.com", json!(["webauthn"])).await;
        let second = challenged(&app, "ada@example.com", json!(["webauthn"])).await;
        let first_options = second_factor_options(&app, &first).await;
        let second_options = second_factor_options(&app, &second).await;
        let answer = original.get(&first_options).await;
        json_with_status(verify(&app, &first, &answer).await, 200).await;
        let twin_answer = twin.get(&second_options).await;
        json_with_status(verify(&app, &second, &twin_answer).await, 401).await;
        app.stop().await;
    }
);

database_test!(
    ceremonies_are_single_use_and_bound_to_their_user_and_mfa_token,
    |backend| async move {
        let app = spawn_app(backend).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        tenant_with_user(&app, "globex", "bob@example.com");
        let ada = bearer(&app, "ada@example.com").await;
        let bob = bearer(&app, "bob@example.com").await;

        // Ada's registration cannot be finished by Bob, and finishes once.
        let started =
            json_with_status(app.post_as(REGISTER_START, &ada, &json!({})).await, 200).await;
        let mut key = SoftPasskey::new(app.address.port());
        let credential = key.create(&started["data"]["options"]).await;
        let body = json!({ "credential": credential });
        let refused = json_with_status(app.post_as(REGISTER_FINISH, &bob, &body).await, 422).await;
        assert_eq!(refused["errors"]["credential"], json!(["invalid"]));
        json_with_status(app.post_as(REGISTER_FINISH, &ada, &body).await, 201).await;
        json_with_status(app.post_as(REGISTER_FINISH, &ada, &body).await, 422).await;
        let mut bobs_key = SoftPasskey::new(app.address.port());
        register(&app, &bob, &mut bobs_key, "Bob's").await;

        // A challenge of Ada's mfa_token is not answered under another mfa_token of hers.
        let first = challenged(&app, "ada@example.com", json!(["webauthn"])).await;
        let second = challenged(&app, "ada@example.com", json!(["webauthn"])).await;
        let options = second_factor_options(&app, &first).await;
        let answer = key.get(&options).await;
        json_with_status(verify(&app, &second, &answer).await, 401).await;
        json_with_status(verify(&app, &first, &answer).await, 200).await;
        // Bob's answer to his own challenge does not pass for Ada's.
        let adas = challenged(&app, "ada@example.com", json!(["webauthn"])).await;
        second_factor_options(&app, &adas).await;
        let bobs = challenged(&app, "bob@example.com", json!(["webauthn"])).await;
        let bobs_answer = bobs_key
            .get(&second_factor_options(&app, &bobs).await)
            .await;
        json_with_status(verify(&app, &adas, &bobs_answer).await, 401).await;
        json_with_status(verify(&app, &bobs, &bobs_answer).await, 200).await;

        // A passwordless ceremony finishes once; an expired one not at all.
        let started = json_with_status(app.post_json(PASSKEY_START, &json!({})).await, 200).await;
        let answer = key.get(&started["data"]["options"]).await;
        let finish =
            json!({ "challenge_id": started["data"]["challenge_id"], "credential": answer });
        json_with_status(app.post_json(PASSKEY_FINISH, &finish).await, 200).await;
        json_with_status(app.post_json(PASSKEY_FINISH, &finish).await, 401).await;
        let started = json_with_status(app.post_json(PASSKEY_START, &json!({})).await, 200).await;
        let answer = key.get(&started["data"]["options"]).await;
        app.execute("UPDATE webauthn_ceremonies SET expires_at = '2000-01-01T00:00:00.000000Z'")
            .await;
        let finish =
            json!({ "challenge_id": started["data"]["challenge_id"], "credential": answer });
        json_with_status(app.post_json(PASSKEY_FINISH, &finish).await, 401).await;

        // Bad input changes nothing.
        let missing = json_with_status(app.post_json(PASSKEY_FINISH, &json!({})).await, 422).await;
        assert_eq!(missing["errors"]["challenge_id"], json!(["required"]));
        assert_eq!(missing["errors"]["credential"], json!(["required"]));
        let garbage = json!({ "challenge_id": "x", "credential": { "id": 1 } });
        json_with_status(app.post_json(PASSKEY_FINISH, &garbage).await, 422).await;
        let bad_name = json!({ "credential": {}, "name": " " });
        let refused =
            json_with_status(app.post_as(REGISTER_FINISH, &ada, &bad_name).await, 422).await;
        assert_eq!(refused["errors"]["name"], json!(["required"]));
        // Bob cannot delete Ada's passkey.
        let listed = json_with_status(app.get_as(CREDENTIALS, &ada).await, 200).await;
        let path = format!(
            "{CREDENTIALS}/{}",
            listed["data"][0]["id"].as_str().unwrap()
        );
        assert_eq!(app.delete_as(&path, &bob).await.status(), 404);
        assert_eq!(
            json_with_status(app.get_as(CREDENTIALS, &ada).await, 200).await["data"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        app.stop().await;
    }
);

database_test!(
    registrations_stop_at_the_limit_and_the_challenge_needs_a_passkey,
    |backend| async move {
        let app = crate::helpers::spawn_app_with(
            backend,
            crate::helpers::AppOptions {
                configure: Some(Box::new(|config| {
                    config.webauthn.max_credentials_per_user = 2;
                })),
                ..Default::default()
            },
        )
        .await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let ada = bearer(&app, "ada@example.com").await;
        // Three registrations started at once; two may finish.
        let mut started = Vec::new();
        for _ in 0..3 {
            let body =
                json_with_status(app.post_as(REGISTER_START, &ada, &json!({})).await, 200).await;
            started.push(body["data"]["options"].clone());
        }
        let mut finishes = Vec::new();
        for options in &started {
            let mut key = SoftPasskey::new(app.address.port());
            let credential = key.create(options).await;
            finishes.push(json!({ "credential": credential }));
        }
        let statuses = futures_util::future::join_all(
            finishes
                .iter()
                .map(|body| app.post_as(REGISTER_FINISH, &ada, body)),
        )
        .await
        .into_iter()
        .map(|response| response.status().as_u16())
        .collect::<Vec<_>>();
        let mut sorted = statuses.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [201, 201, 409], "{statuses:?}");
        json_with_status(app.post_as(REGISTER_START, &ada, &json!({})).await, 409).await;

        // An account without a passkey gets no passkey challenge.
        tenant_with_user(&app, "globex", "bob@example.com");
        let bob = bearer(&app, "bob@example.com").await;
        let setup = json_with_status(
            app.post_as("/auth/api/v1/auth/mfa/totp/setup", &bob, &json!({}))
                .await,
            200,
        )
        .await;
        let secret = TotpSecret::from_base32(setup["data"]["secret"].as_str().unwrap()).unwrap();
        let code = code_at(&secret, step_at(chrono::Utc::now().timestamp()));
        json_with_status(
            app.post_as(
                "/auth/api/v1/auth/mfa/totp/confirm",
                &bob,
                &json!({ "code": code }),
            )
            .await,
            200,
        )
        .await;
        let mfa_token = challenged(&app, "bob@example.com", json!(["totp"])).await;
        json_with_status(
            app.post_json(MFA_CHALLENGE, &json!({ "mfa_token": mfa_token }))
                .await,
            409,
        )
        .await;
        json_with_status(
            app.post_json(MFA_CHALLENGE, &json!({ "mfa_token": "unknown" }))
                .await,
            401,
        )
        .await;
        app.stop().await;
    }
);

/// A host whose public URL is a bare IP address other than loopback offers no passkeys.
#[tokio::test]
async fn a_host_on_a_bare_ip_address_offers_no_passkeys() {
    let app = crate::helpers::spawn_app_with(
        Backend::Sqlite,
        crate::helpers::AppOptions {
            configure: Some(Box::new(|config| {
                config.public_url = "http://192.0.2.10:8080".into();
            })),
            ..Default::default()
        },
    )
    .await;
    let config = json_with_status(app.get("/auth/api/v1/auth/config").await, 200).await;
    assert_eq!(config["data"]["mfa_methods"], json!(["totp"]));
    let refused = json_with_status(app.post_json(PASSKEY_START, &json!({})).await, 503).await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("TESSERA_WEBAUTHN_RP_ID")
    );
    app.stop().await;
}
