//! The admin CLI, run as the real binary: JSON on success, a message and a non-zero exit on
//! failure, and nothing half-written.

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{
    TestApp, TestDatabase, json_with_status, on_database, run_admin, spawn_app, tessera_binary,
};
use tessera_host::on_pool;

async fn count(database: &TestDatabase, table: &str) -> i64 {
    let handle = database.connect().await;
    let sql = format!("SELECT COUNT(*) FROM {table}");
    let total: i64 =
        on_pool!(handle, pool => sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone())).fetch_one(pool).await).unwrap();
    handle.close().await;
    total
}

database_test!(
    create_tenant_prints_the_tenant_with_workspace_and_families,
    |backend| async move {
        let database = TestDatabase::new(backend).await;
        let output = run_admin(
            &database,
            &["create-tenant", "--slug", "acme", "--name", "Acme Corp"],
        )
        .json();
        assert_eq!(output["slug"], "acme");
        assert_eq!(output["name"], "Acme Corp");
        assert!(uuid::Uuid::parse_str(output["tenant_id"].as_str().unwrap()).is_ok());
        assert!(uuid::Uuid::parse_str(output["workspace_id"].as_str().unwrap()).is_ok());
        assert_eq!(
            output["provisioning"],
            json!({ "status": "completed", "engines": {} })
        );

        let handle = database.connect().await;
        let tenant_id = output["tenant_id"].as_str().unwrap().to_owned();
        let mut families: Vec<(String, String)> = on_pool!(handle, pool => sqlx::query_as(
        "SELECT code, statuses FROM families WHERE tenant_id = $1 ORDER BY code",
    )
    .bind(&tenant_id)
    .fetch_all(pool)
    .await)
        .unwrap();
        families.sort();
        assert_eq!(
            families,
            vec![
                ("company".into(), r#"["active","archived"]"#.into()),
                ("contact".into(), r#"["active","archived"]"#.into()),
                (
                    "deal".into(),
                    r#"["lead","qualified","proposal","won","lost"]"#.into()
                ),
                ("task".into(), r#"["todo","in_progress","done"]"#.into()),
            ]
        );
        let default_workspace: (String, bool) = on_pool!(handle, pool => sqlx::query_as(
        "SELECT id, is_default FROM workspaces WHERE tenant_id = $1",
    )
    .bind(&tenant_id)
    .fetch_one(pool)
    .await)
        .unwrap();
        assert_eq!(
            default_workspace,
            (output["workspace_id"].as_str().unwrap().to_owned(), true)
        );
        handle.close().await;
    }
);

database_test!(
    a_duplicate_slug_fails_naming_the_slug_and_writes_nothing,
    |backend| async move {
        let database = TestDatabase::new(backend).await;
        run_admin(
            &database,
            &["create-tenant", "--slug", "acme", "--name", "Acme"],
        )
        .json();
        let duplicate = run_admin(
            &database,
            &["create-tenant", "--slug", "acme", "--name", "Other"],
        );
        assert!(!duplicate.success);
        assert!(
            duplicate.stdout.is_empty(),
            "nothing on stdout: {}",
            duplicate.stdout
        );
        assert!(
            duplicate.stderr.contains("\"acme\""),
            "the message names the slug: {}",
            duplicate.stderr
        );
        assert_eq!(count(&database, "tenants").await, 1);
        assert_eq!(count(&database, "workspaces").await, 1);
        assert_eq!(count(&database, "families").await, 4);

        let invalid = run_admin(
            &database,
            &["create-tenant", "--slug", "Not A Slug", "--name", "X"],
        );
        assert!(!invalid.success);
        assert!(invalid.stderr.contains("slug"), "{}", invalid.stderr);
        assert_eq!(count(&database, "tenants").await, 1);
    }
);

database_test!(
    create_user_enforces_the_password_policy_and_hashes_with_argon2id,
    |backend| async move {
        let database = TestDatabase::new(backend).await;
        let tenant = run_admin(
            &database,
            &["create-tenant", "--slug", "acme", "--name", "Acme"],
        )
        .json();

        let weak = run_admin(
            &database,
            &[
                "create-user",
                "--tenant",
                "acme",
                "--email",
                "ada@example.com",
                "--password",
                "password",
            ],
        );
        assert!(!weak.success);
        assert!(
            weak.stderr.contains("uppercase") && weak.stderr.contains("number"),
            "{}",
            weak.stderr
        );
        assert_eq!(count(&database, "users").await, 0);

        let created = run_admin(
            &database,
            &[
                "create-user",
                "--tenant",
                "acme",
                "--email",
                "Ada@Example.com",
                "--password",
                "Correct1horse",
                "--role",
                "owner",
                "--first-name",
                "Ada",
                "--last-name",
                "Lovelace",
            ],
        )
        .json();
        assert_eq!(created["tenant_id"], tenant["tenant_id"]);
        assert_eq!(
            created["email"], "ada@example.com",
            "e-mail addresses are normalized"
        );
        let user_id = created["user_id"].as_str().unwrap().to_owned();

        let handle = database.connect().await;
        let (hash, role): (String, String) = on_pool!(handle, pool => sqlx::query_as(
        "SELECT u.password_hash, m.role FROM users u JOIN memberships m ON m.user_id = u.id WHERE u.id = $1",
    )
    .bind(&user_id)
    .fetch_one(pool)
    .await)
    .unwrap();
        handle.close().await;
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        assert!(!hash.contains("Correct1horse"));
        assert_eq!(role, "owner");

        let again = run_admin(
            &database,
            &[
                "create-user",
                "--tenant",
                "acme",
                "--email",
                "ada@example.com",
                "--password",
                "Correct1horse",
            ],
        );
        assert!(!again.success);
        assert!(again.stderr.contains("ada@example.com"), "{}", again.stderr);
        assert_eq!(count(&database, "users").await, 1);
    }
);

database_test!(
    unknown_tenants_and_users_fail_cleanly,
    |backend| async move {
        let database = TestDatabase::new(backend).await;
        let output = run_admin(
            &database,
            &[
                "create-user",
                "--tenant",
                "nowhere",
                "--email",
                "a@example.com",
                "--password",
                "Correct1horse",
            ],
        );
        assert!(!output.success);
        assert!(output.stderr.contains("nowhere"), "{}", output.stderr);
        assert_eq!(count(&database, "users").await, 0);

        let output = run_admin(
            &database,
            &["create-workspace", "--tenant", "nowhere", "--name", "Sales"],
        );
        assert!(!output.success);
        assert!(output.stderr.contains("nowhere"), "{}", output.stderr);

        run_admin(
            &database,
            &["create-tenant", "--slug", "acme", "--name", "Acme"],
        )
        .json();
        let output = run_admin(
            &database,
            &[
                "add-member",
                "--tenant",
                "acme",
                "--email",
                "ghost@example.com",
            ],
        );
        assert!(!output.success);
        assert!(
            output.stderr.contains("ghost@example.com"),
            "{}",
            output.stderr
        );
        assert_eq!(count(&database, "memberships").await, 0);
    }
);

database_test!(
    add_member_and_create_workspace_print_their_records,
    |backend| async move {
        let database = TestDatabase::new(backend).await;
        run_admin(
            &database,
            &["create-tenant", "--slug", "acme", "--name", "Acme"],
        )
        .json();
        let globex = run_admin(
            &database,
            &["create-tenant", "--slug", "globex", "--name", "Globex"],
        )
        .json();
        let user = run_admin(
            &database,
            &[
                "create-user",
                "--tenant",
                "acme",
                "--email",
                "ada@example.com",
                "--password",
                "Correct1horse",
            ],
        )
        .json();

        let member = run_admin(
            &database,
            &[
                "add-member",
                "--tenant",
                "globex",
                "--email",
                "ada@example.com",
                "--role",
                "viewer",
            ],
        )
        .json();
        assert_eq!(
            member,
            json!({ "user_id": user["user_id"], "tenant_id": globex["tenant_id"], "role": "viewer" })
        );
        let twice = run_admin(
            &database,
            &[
                "add-member",
                "--tenant",
                "globex",
                "--email",
                "ada@example.com",
            ],
        );
        assert!(!twice.success);
        assert!(
            twice.stderr.contains("already a member"),
            "{}",
            twice.stderr
        );

        let workspace = run_admin(
            &database,
            &["create-workspace", "--tenant", "globex", "--name", "Sales"],
        )
        .json();
        assert_eq!(workspace["tenant_id"], globex["tenant_id"]);
        assert_eq!(workspace["name"], "Sales");
        let duplicate = run_admin(
            &database,
            &["create-workspace", "--tenant", "globex", "--name", "Sales"],
        );
        assert!(!duplicate.success);
        assert!(duplicate.stderr.contains("Sales"), "{}", duplicate.stderr);
        assert_eq!(count(&database, "workspaces").await, 3);
    }
);

/// `tessera admin …` with `input` on standard input.
fn admin_with_input(app: &TestApp, arguments: &[&str], input: &str) -> (bool, Value, String) {
    use std::io::Write as _;
    let mut command = std::process::Command::new(tessera_binary());
    command.arg("admin").args(arguments);
    let mut child = on_database(&mut command, &app.database)
        .env_remove("TESSERA_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    (
        output.status.success(),
        serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

database_test!(
    operators_list_tenants_and_members_change_roles_and_reset_passwords,
    |backend| async move {
        let app = spawn_app(backend).await;
        app.admin(&["create-tenant", "--slug", "acme", "--name", "Acme"])
            .json();
        app.admin(&["create-tenant", "--slug", "beta", "--name", "Beta"])
            .json();
        for (email, role) in [("ada@example.com", "owner"), ("bob@example.com", "editor")] {
            app.admin(&[
                "create-user",
                "--tenant",
                "acme",
                "--email",
                email,
                "--password",
                "Correct horse battery 1",
                "--role",
                role,
            ])
            .json();
        }
        let tenants = app.admin(&["list-tenants"]).json();
        let summary: Vec<(&str, i64)> = tenants
            .as_array()
            .unwrap()
            .iter()
            .map(|tenant| {
                (
                    tenant["slug"].as_str().unwrap(),
                    tenant["members"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(summary, [("acme", 2), ("beta", 0)]);
        let members = app.admin(&["list-users", "--tenant", "acme"]).json();
        let roles: Vec<(&str, &str)> = members
            .as_array()
            .unwrap()
            .iter()
            .map(|member| {
                (
                    member["email"].as_str().unwrap(),
                    member["role"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            roles,
            [("ada@example.com", "owner"), ("bob@example.com", "editor")]
        );
        assert!(!app.admin(&["list-users", "--tenant", "nope"]).success);

        // The last owner keeps the role until another member has it.
        let refused = app.admin(&[
            "set-role",
            "--tenant",
            "acme",
            "--email",
            "ada@example.com",
            "--role",
            "viewer",
        ]);
        assert!(!refused.success);
        assert!(refused.stderr.contains("last owner"), "{}", refused.stderr);
        for (email, role) in [("bob@example.com", "owner"), ("ada@example.com", "viewer")] {
            let changed = app
                .admin(&[
                    "set-role", "--tenant", "acme", "--email", email, "--role", role,
                ])
                .json();
            assert_eq!(changed["role"], role);
        }
        let not_member = app.admin(&[
            "set-role",
            "--tenant",
            "beta",
            "--email",
            "ada@example.com",
            "--role",
            "owner",
        ]);
        assert!(!not_member.success);
        assert!(
            not_member.stderr.contains("not a member"),
            "{}",
            not_member.stderr
        );

        // A password reset reads the password from stdin and ends the user's sessions.
        let login = |password: &'static str| {
            let app = &app;
            async move {
                app.post_json(
                    "/auth/api/v1/auth/login",
                    &json!({ "login": "bob@example.com", "password": password }),
                )
                .await
            }
        };
        let session = json_with_status(login("Correct horse battery 1").await, 200).await;
        let refresh = session["data"]["refresh_token"]
            .as_str()
            .unwrap()
            .to_owned();
        let reset_args = [
            "reset-password",
            "--tenant",
            "acme",
            "--email",
            "bob@example.com",
        ];
        let (success, _, stderr) = admin_with_input(&app, &reset_args, "short\n");
        assert!(!success, "the password policy applies");
        assert!(stderr.contains("password"), "{stderr}");
        let (success, reset, stderr) =
            admin_with_input(&app, &reset_args, "A new staple battery 2\n");
        assert!(success, "{stderr}");
        assert_eq!(reset["sessions_revoked"], 1);
        json_with_status(login("Correct horse battery 1").await, 401).await;
        json_with_status(login("A new staple battery 2").await, 200).await;
        let refreshed = app
            .post_json(
                "/auth/api/v1/auth/refresh",
                &json!({ "refresh_token": refresh }),
            )
            .await;
        assert_eq!(
            refreshed.status(),
            401,
            "the old session's refresh token is dead"
        );
    }
);
