//! The operator's admin commands beyond creating things, run as the real
//! binary against a serving host's database: disabling and enabling a user, rotating the token
//! signing keys (and revoking the old ones), and `--format table`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{
    AppOptions, TestApp, create_owner, eventually, json_with_status, spawn_app_with,
};

const LOGIN: &str = "/auth/api/v1/auth/login";
const REFRESH: &str = "/auth/api/v1/auth/refresh";
const ME: &str = "/auth/api/v1/auth/me";
const PASSWORD: &str = "Correct1horse";

/// A host that rereads its signing keys every 200 ms, without the sign-in rate limit, with
/// `acme` and its owner Ada.
async fn host_with_ada(backend: crate::helpers::Backend) -> TestApp {
    let app = spawn_app_with(
        backend,
        AppOptions {
            configure: Some(Box::new(|config| {
                config.auth.signing_keys_refresh = Duration::from_millis(200);
                // The tests poll `/auth/…/me` until a change shows: no per-address limit.
                config.rate_limits.auth_per_minute = 0;
            })),
            ..AppOptions::default()
        },
    )
    .await;
    app.admin(&["create-tenant", "--slug", "acme", "--name", "Acme"])
        .json();
    create_owner(&app.database, "acme", "ada@example.com", PASSWORD);
    app
}

async fn login(app: &TestApp) -> reqwest::Response {
    app.post_json(
        LOGIN,
        &json!({ "login": "ada@example.com", "password": PASSWORD }),
    )
    .await
}

/// A fresh token set for Ada.
async fn signed_in(app: &TestApp) -> Value {
    json_with_status(login(app).await, 200).await
}

fn access(body: &Value) -> String {
    body["data"]["access_token"].as_str().unwrap().to_owned()
}

fn kid(token: &str) -> String {
    jsonwebtoken::decode_header(token)
        .unwrap()
        .kid
        .expect("a kid in the token's header")
}

database_test!(
    a_disabled_tenant_issues_no_token_and_refuses_those_issued_until_enabled,
    |backend| async move {
        let app = host_with_ada(backend).await;
        let before = signed_in(&app).await;
        json_with_status(app.get_as(ME, &access(&before)).await, 200).await;

        let disabled = app.admin(&["disable-tenant", "--tenant", "acme"]).json();
        assert_eq!(disabled["slug"], "acme");
        assert_eq!(disabled["disabled"], true);
        assert_eq!(disabled["changed"], true);
        assert_eq!(
            app.admin(&["disable-tenant", "--tenant", "acme"]).json()["changed"],
            false
        );
        // No new token for it, no refresh, and the token issued before is refused within the
        // membership cache's few seconds.
        json_with_status(login(&app).await, 401).await;
        json_with_status(
            app.post_json(
                REFRESH,
                &json!({ "refresh_token": before["data"]["refresh_token"] }),
            )
            .await,
            401,
        )
        .await;
        eventually(10, "the earlier token refused", || async {
            (app.get_as(ME, &access(&before)).await.status() == 401).then_some(())
        })
        .await;
        assert!(
            !app.admin(&["disable-tenant", "--tenant", "nowhere"])
                .success
        );

        let enabled = app.admin(&["enable-tenant", "--tenant", "acme"]).json();
        assert_eq!(
            (&enabled["disabled"], &enabled["changed"]),
            (&json!(false), &json!(true))
        );
        let after = signed_in(&app).await;
        eventually(10, "the new token served", || async {
            (app.get_as(ME, &access(&after)).await.status() == 200).then_some(())
        })
        .await;
        app.stop().await;
    }
);

database_test!(
    a_deleted_user_is_gone_with_their_sessions_while_what_they_made_stays,
    |backend| async move {
        let app = host_with_ada(backend).await;
        let signed = signed_in(&app).await;
        let token = access(&signed);
        let created = app
            .create_entity(&token, "contact", json!({ "name": "Grace" }))
            .await;

        let deleted = app
            .admin(&["delete-user", "--email", "ada@example.com"])
            .json();
        assert_eq!(deleted["email"], "ada@example.com");
        let tenants = deleted["tenants"].as_object().unwrap();
        assert_eq!(tenants.len(), 1, "{deleted}");
        assert!(
            !app.admin(&["show-user", "--email", "ada@example.com"])
                .success
        );
        assert_eq!(
            app.scalar("SELECT COUNT(*) FROM sessions").await,
            0,
            "the sessions went with the account"
        );
        assert_eq!(app.scalar("SELECT COUNT(*) FROM refresh_tokens").await, 0);
        assert_eq!(app.scalar("SELECT COUNT(*) FROM memberships").await, 0);
        json_with_status(login(&app).await, 401).await;
        eventually(10, "the earlier token refused", || async {
            (app.get_as(ME, &token).await.status() == 401).then_some(())
        })
        .await;
        // The tenant keeps what Ada made, and the e-mail address can be used again.
        let tenant = app.admin(&["show-tenant", "--tenant", "acme"]).json();
        assert_eq!(tenant["entities"], 1, "{tenant} {created}");
        assert_eq!(tenant["members"], 0, "{tenant}");
        create_owner(&app.database, "acme", "ada@example.com", PASSWORD);
        signed_in(&app).await;
        assert!(
            !app.admin(&["delete-user", "--email", "nobody@example.com"])
                .success
        );
        app.stop().await;
    }
);

database_test!(
    a_disabled_user_cannot_sign_in_and_loses_every_token_until_enabled,
    |backend| async move {
        let app = host_with_ada(backend).await;
        let before = signed_in(&app).await;
        json_with_status(app.get_as(ME, &access(&before)).await, 200).await;

        let disabled = app
            .admin(&["disable-user", "--email", "Ada@Example.com"])
            .json();
        assert_eq!(disabled["email"], "ada@example.com");
        assert_eq!(disabled["disabled"], true);
        assert_eq!(disabled["changed"], true);
        assert_eq!(disabled["sessions_revoked"], 1);
        let again = app
            .admin(&["disable-user", "--email", "ada@example.com"])
            .json();
        assert_eq!(again["changed"], false);
        let members = app.admin(&["list-users", "--tenant", "acme"]).json();
        assert!(members[0]["disabled_at"].is_string(), "{members}");

        // Signing in answers exactly as for an unknown account; refreshing fails; the token
        // issued before is refused within the session cache's few seconds.
        let refused = json_with_status(login(&app).await, 401).await;
        let unknown = json_with_status(
            app.post_json(
                LOGIN,
                &json!({ "login": "nobody@example.com", "password": PASSWORD }),
            )
            .await,
            401,
        )
        .await;
        assert_eq!(refused, unknown);
        json_with_status(
            app.post_json(
                REFRESH,
                &json!({ "refresh_token": before["data"]["refresh_token"] }),
            )
            .await,
            401,
        )
        .await;
        eventually(10, "the earlier token refused", || async {
            (app.get_as(ME, &access(&before)).await.status() == 401).then_some(())
        })
        .await;
        assert!(
            !app.admin(&["disable-user", "--email", "nobody@example.com"])
                .success
        );

        let enabled = app
            .admin(&["enable-user", "--email", "ada@example.com"])
            .json();
        assert_eq!(enabled["disabled"], false);
        assert_eq!(enabled["changed"], true);
        // Signing in works at once; the new token is served once this host's membership cache
        // (a few seconds) has let go of the refusal.
        let after = signed_in(&app).await;
        eventually(10, "the new token served", || async {
            (app.get_as(ME, &access(&after)).await.status() == 200).then_some(())
        })
        .await;
        // The revoked session stays revoked.
        assert_eq!(app.get_as(ME, &access(&before)).await.status(), 401);
        let members = app.admin(&["list-users", "--tenant", "acme"]).json();
        assert!(members[0]["disabled_at"].is_null(), "{members}");
        app.stop().await;
    }
);

database_test!(
    a_rotation_signs_new_tokens_with_the_new_key_and_a_revocation_ends_the_old_ones,
    |backend| async move {
        let app = host_with_ada(backend).await;
        let old = access(&signed_in(&app).await);
        let old_kid = kid(&old);

        let rotated = app.admin(&["rotate-keys"]).json();
        let new_kid = rotated["kid"].as_str().unwrap().to_owned();
        assert_ne!(new_kid, old_kid);
        assert_eq!(rotated["revoked_keys"], 0);
        // The server rereads the keys: its new tokens carry the new key; the old token still
        // works until it expires, and the key set lists both.
        let newer = eventually(10, "a token signed with the new key", || async {
            let token = access(&signed_in(&app).await);
            (kid(&token) == new_kid).then_some(token)
        })
        .await;
        json_with_status(app.get_as(ME, &newer).await, 200).await;
        json_with_status(app.get_as(ME, &old).await, 200).await;
        let jwks = json_with_status(app.get("/auth/.well-known/jwks.json").await, 200).await;
        let kids: Vec<&str> = jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|key| key["kid"].as_str().unwrap())
            .collect();
        assert!(
            kids.contains(&new_kid.as_str()) && kids.contains(&old_kid.as_str()),
            "{jwks}"
        );

        // After a leak: a new key, and every older one stops verifying.
        let revoked = app.admin(&["rotate-keys", "--revoke-previous"]).json();
        let newest_kid = revoked["kid"].as_str().unwrap().to_owned();
        assert_eq!(revoked["revoked_keys"], 2, "{revoked}");
        eventually(10, "the tokens of the revoked keys refused", || async {
            let old_refused = app.get_as(ME, &old).await.status() == 401;
            let newer_refused = app.get_as(ME, &newer).await.status() == 401;
            (old_refused && newer_refused).then_some(())
        })
        .await;
        let newest = access(&signed_in(&app).await);
        assert_eq!(kid(&newest), newest_kid);
        json_with_status(app.get_as(ME, &newest).await, 200).await;
        let jwks = json_with_status(app.get("/auth/.well-known/jwks.json").await, 200).await;
        assert_eq!(
            jwks["keys"]
                .as_array()
                .unwrap()
                .iter()
                .map(|key| key["kid"].as_str().unwrap())
                .collect::<Vec<_>>(),
            [newest_kid.as_str()]
        );
        app.stop().await;
    }
);

database_test!(
    table_output_lines_up_what_json_output_lists,
    |backend| async move {
        let app = host_with_ada(backend).await;
        app.admin(&["create-tenant", "--slug", "beta-corp", "--name", "Beta"])
            .json();
        let output = app.admin(&["list-tenants", "--format", "table"]);
        assert!(output.success, "{}", output.stderr);
        let lines: Vec<&str> = output.stdout.lines().collect();
        assert_eq!(lines.len(), 3, "{}", output.stdout);
        let header: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(
            header[..3],
            ["TENANT_ID", "SLUG", "NAME"],
            "{}",
            output.stdout
        );
        let slug_at = lines[0].find("SLUG").unwrap();
        let slugs: Vec<&str> = lines[1..]
            .iter()
            .map(|line| line[slug_at..].split_whitespace().next().unwrap())
            .collect();
        assert_eq!(slugs, ["acme", "beta-corp"]);
        // An object: one line per field.
        let output = app.admin(&["list-users", "--tenant", "acme", "--format", "table"]);
        assert!(
            output.stdout.contains("ada@example.com"),
            "{}",
            output.stdout
        );
        assert!(output.stdout.lines().next().unwrap().contains("EMAIL"));
        // JSON stays the default.
        let json_output = app.admin(&["list-tenants"]);
        assert!(serde_json::from_str::<Value>(json_output.stdout.trim()).is_ok());
        app.stop().await;
    }
);

database_test!(
    deleting_a_tenant_removes_its_data_everywhere_and_leaves_the_others_alone,
    |backend| async move {
        let database = crate::helpers::TestDatabase::new(backend).await;
        crate::components::install_engines(&database.data_dir.join("plugins"), &["notes"]);
        let app = spawn_app_with(
            backend,
            AppOptions {
                database: Some(database),
                configure: Some(Box::new(crate::helpers::without_rate_limits)),
                ..AppOptions::default()
            },
        )
        .await;
        // Two tenants, each with an owner, three contacts and a note.
        let mut tenants = Vec::new();
        for slug in ["acme", "globex"] {
            let tenant = app
                .admin(&["create-tenant", "--slug", slug, "--name", slug])
                .json();
            let email = format!("owner@{slug}.example.com");
            create_owner(&app.database, slug, &email, PASSWORD);
            let token = access(
                &json_with_status(
                    app.post_json(LOGIN, &json!({ "login": email, "password": PASSWORD }))
                        .await,
                    200,
                )
                .await,
            );
            for index in 0..3 {
                app.create_entity(
                    &token,
                    "contact",
                    json!({ "name": format!("zanzibar {index}") }),
                )
                .await;
            }
            json_with_status(
                app.post_as("/notes/api/v1/notes", &token, &json!({ "title": "Plans" }))
                    .await,
                201,
            )
            .await;
            let tenant_id = tenant["tenant_id"].as_str().unwrap().to_owned();
            tenants.push((slug, tenant_id, token));
        }
        let search = |token: String| {
            let app = &app;
            async move {
                let found = json_with_status(
                    app.get_as("/core/api/v1/search?q=zanzibar", &token).await,
                    200,
                )
                .await;
                found["data"].as_array().unwrap().len()
            }
        };
        for (_, _, token) in &tenants {
            eventually(30, "the contacts indexed", || async {
                (search(token.clone()).await == 3).then_some(())
            })
            .await;
        }
        let (_, acme_id, acme_token) = tenants[0].clone();
        let (_, globex_id, globex_token) = tenants[1].clone();
        let rows = |table: &'static str, tenant_id: String| {
            let app = &app;
            async move {
                let database = &app.state().database;
                let sql = match (table, database.kind()) {
                    // SQLite keeps search documents under the tenant's search key.
                    ("search_documents", tessera_host::storage::DatabaseKind::Sqlite) => {
                        "SELECT COUNT(*) FROM search_documents AS d
                         JOIN search_tenants AS t ON t.key = d.tenant_key WHERE t.tenant_id = $1"
                            .to_owned()
                    }
                    // Entities name their tenant by its number in the log.
                    ("entities", _) => "SELECT COUNT(*) FROM entities WHERE tenant_number =
                         (SELECT tenant_number FROM event_sequences WHERE tenant_id = $1)"
                        .to_owned(),
                    _ => format!("SELECT COUNT(*) FROM {table} WHERE tenant_id = $1"),
                };
                tessera_host::on_pool!(database, pool => sqlx::query_scalar::<_, i64>(
                    sqlx::AssertSqlSafe(sql.clone()),
                )
                .bind(&tenant_id)
                .fetch_one(pool)
                .await)
                .unwrap()
            }
        };
        let tables = [
            "entities",
            "event_log",
            "search_documents",
            "memberships",
            "workspaces",
            "engine_kv",
            "tenant_provisioning",
        ];
        for table in tables {
            assert!(
                rows(table, acme_id.clone()).await > 0,
                "{table} holds nothing of acme"
            );
        }

        let acme_number_of_id: i64 = {
            let database = &app.state().database;
            tessera_host::on_pool!(database, pool => sqlx::query_scalar(
                "SELECT tenant_number FROM event_sequences WHERE tenant_id = $1",
            )
            .bind(&acme_id)
            .fetch_one(pool)
            .await)
            .unwrap()
        };
        let deleted = app.admin(&["delete-tenant", "--tenant", "acme"]).json();
        assert_eq!(deleted["tenant_id"], acme_id.as_str());
        assert_eq!(deleted["entities"], 3, "{deleted}");
        assert_eq!(deleted["members"], 1, "{deleted}");
        assert_eq!(deleted["search_documents"], 3, "{deleted}");
        assert_eq!(deleted["engines_deprovisioning"], "completed", "{deleted}");
        assert!(deleted["events"].as_u64().unwrap() >= 6, "{deleted}");
        for table in tables {
            assert_eq!(
                rows(table, acme_id.clone()).await,
                0,
                "{table} still holds acme's rows"
            );
            assert!(
                rows(table, globex_id.clone()).await > 0,
                "{table} lost globex's rows"
            );
        }

        // Nothing is left under acme's number in the log (entities name their tenant by it,
        // and a number may be handed out again).
        let left_under_number = {
            let database = &app.state().database;
            tessera_host::on_pool!(database, pool => sqlx::query_scalar::<_, i64>(
                "SELECT (SELECT COUNT(*) FROM entities WHERE tenant_number = $1)
                      + (SELECT COUNT(*) FROM events WHERE tenant_number = $1)
                      + (SELECT COUNT(*) FROM event_groups WHERE tenant_number = $1)",
            )
            .bind(acme_number_of_id)
            .fetch_one(pool)
            .await)
            .unwrap()
        };
        assert_eq!(left_under_number, 0);

        // The other tenant goes on: its search, its entities, its note.
        assert_eq!(search(globex_token.clone()).await, 3);
        let notes =
            json_with_status(app.get_as("/notes/api/v1/notes", &globex_token).await, 200).await;
        assert_eq!(notes["data"].as_array().unwrap().len(), 1, "{notes}");
        // The deleted tenant's token is refused, and its slug is gone.
        eventually(10, "the deleted tenant's token refused", || async {
            (app.get_as(ME, &acme_token).await.status() == 401).then_some(())
        })
        .await;
        let listed = app.admin(&["list-tenants"]).json();
        assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
        let again = app.admin(&["delete-tenant", "--tenant", "acme"]);
        assert!(!again.success);
        assert!(again.stderr.contains("acme"), "{}", again.stderr);
        // A new tenant with the same slug starts empty.
        app.admin(&["create-tenant", "--slug", "acme", "--name", "Acme again"])
            .json();
        app.stop().await;
    }
);

/// The operator's authentication policy, as `TESSERA_AUTH_*` and `TESSERA_PASSWORD_*` give it.
const POLICY: &[(&str, &str)] = &[
    ("TESSERA_AUTH_TOKEN_LIFETIME", "15m"),
    ("TESSERA_AUTH_REFRESH_TOKEN_LIFETIME", "1day"),
    ("TESSERA_AUTH_MAX_SESSIONS", "3"),
    ("TESSERA_AUTH_LOCKOUT_MAX_ATTEMPTS", "2"),
    ("TESSERA_AUTH_LOCKOUT_DURATION", "10m"),
    ("TESSERA_PASSWORD_MIN_LENGTH", "12"),
    ("TESSERA_PASSWORD_REQUIRE_SPECIAL", "true"),
];

#[tokio::test]
async fn the_auth_policy_is_the_operators_and_the_config_endpoint_reports_it() {
    let database = crate::helpers::TestDatabase::new(crate::helpers::Backend::Sqlite).await;
    let admin = |arguments: &[&str]| {
        let mut command = std::process::Command::new(crate::helpers::tessera_binary());
        command
            .arg("admin")
            .args(arguments)
            .envs(POLICY.iter().copied());
        crate::helpers::on_database(&mut command, &database)
            .output()
            .unwrap()
    };
    assert!(
        admin(&["create-tenant", "--slug", "acme", "--name", "Acme"])
            .status
            .success()
    );
    // The CLI applies the same password policy: 12 characters and a special one.
    let create = |password: &str| {
        admin(&[
            "create-user",
            "--tenant",
            "acme",
            "--email",
            "ada@example.com",
            "--password",
            password,
            "--role",
            "owner",
        ])
    };
    let refused = create("Short1horse");
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains("min:12") && message.contains("special"),
        "{message}"
    );
    let password = "Correct1horse!battery";
    assert!(create(password).status.success());

    let served = crate::helpers::ServeProcess::start(|command| {
        command.envs(POLICY.iter().copied());
        crate::helpers::on_database(command, &database)
    });
    let client = reqwest::Client::new();
    let config: Value = client
        .get(served.url("/auth/api/v1/auth/config"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        config["data"],
        json!({
            "mfa_methods": ["totp", "webauthn"],
            "password_policy": {
                "min_length": 12, "require_uppercase": true, "require_lowercase": true,
                "require_number": true, "require_special": true,
            },
            "session": { "token_lifetime": 900, "refresh_token_lifetime": 86400, "max_active_sessions": 3 },
            "lockout": { "max_attempts": 2, "lockout_duration": 600 },
        })
    );
    let login = |password: &'static str| {
        let client = client.clone();
        let url = served.url(LOGIN);
        async move {
            client
                .post(url)
                .json(&json!({ "login": "ada@example.com", "password": password }))
                .send()
                .await
                .unwrap()
        }
    };
    let signed_in: Value = login("Correct1horse!battery").await.json().await.unwrap();
    assert_eq!(signed_in["data"]["expires_in"], 900, "{signed_in}");
    // Two wrong guesses lock the login, for 10 minutes.
    for _ in 0..2 {
        assert_eq!(login("wrong").await.status(), 401);
    }
    let locked = login("Correct1horse!battery").await;
    assert_eq!(locked.status(), 429);
    let retry_after: u64 = locked.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (590..=600).contains(&retry_after),
        "Retry-After {retry_after}"
    );
    assert_eq!(served.terminate().code(), Some(0));

    // A bad value stops the start with a message naming the setting.
    for (name, value) in [
        ("TESSERA_AUTH_MAX_SESSIONS", "0"),
        ("TESSERA_AUTH_TOKEN_LIFETIME", "soon"),
        ("TESSERA_PASSWORD_MIN_LENGTH", "0"),
        ("TESSERA_AUTH_REFRESH_TOKEN_LIFETIME", "1m"),
    ] {
        let mut command = std::process::Command::new(crate::helpers::tessera_binary());
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env(name, value);
        let output = crate::helpers::on_database(&mut command, &database)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{name}={value} started");
        let message = String::from_utf8_lossy(&output.stderr);
        assert!(message.contains(name), "{name}={value}: {message}");
    }
}

database_test!(
    operators_see_a_tenant_and_a_user_in_full_without_secrets,
    |backend| async move {
        let app = host_with_ada(backend).await;
        let token = access(&signed_in(&app).await);
        app.create_entity(&token, "contact", json!({ "name": "Grace" }))
            .await;

        let tenant = app.admin(&["show-tenant", "--tenant", "acme"]).json();
        assert_eq!(tenant["slug"], "acme");
        assert_eq!(tenant["members"], 1, "{tenant}");
        assert_eq!(tenant["workspaces"], 1, "{tenant}");
        assert_eq!(tenant["entities"], 1, "{tenant}");
        assert_eq!(tenant["provisioning"]["status"], "completed", "{tenant}");

        let user = app
            .admin(&["show-user", "--email", "Ada@Example.com"])
            .json();
        assert_eq!(user["email"], "ada@example.com");
        assert_eq!(user["type"], "user");
        assert_eq!(user["active_sessions"], 1, "{user}");
        assert!(
            user["disabled_at"].is_null() && user["mfa_enabled_at"].is_null(),
            "{user}"
        );
        assert_eq!(user["memberships"][0]["slug"], "acme", "{user}");
        assert_eq!(user["memberships"][0]["role"], "owner", "{user}");
        let text = user.to_string();
        assert!(
            !text.contains("argon2") && !text.contains("password"),
            "{text}"
        );

        // Disabled users show it; unknown ones are an error.
        app.admin(&["disable-user", "--email", "ada@example.com"])
            .json();
        let user = app
            .admin(&["show-user", "--email", "ada@example.com"])
            .json();
        assert!(user["disabled_at"].is_string(), "{user}");
        assert_eq!(user["active_sessions"], 0, "{user}");
        assert!(
            !app.admin(&["show-user", "--email", "nobody@example.com"])
                .success
        );
        assert!(!app.admin(&["show-tenant", "--tenant", "nope"]).success);
        app.stop().await;
    }
);
