//! A tenant's members over HTTP: owners list them, create accounts (provisioned like
//! `tessera admin create-user`, refused in the API's shapes), change roles (the tenant keeps
//! an owner), reset second factors and disable or enable accounts of their tenant alone; they
//! add workspaces, and a member lists their tenants and workspaces to switch between; nobody
//! else may; every change is in the audit trail, and another tenant's member is out of reach.

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{TestApp, create_owner, json_with_status, run_admin, spawn_app_with_engines};

const PASSWORD: &str = "Correct-Horse-42";

async fn sign_in(app: &TestApp, login: &str) -> String {
    let response = app
        .post_json(
            "/auth/api/v1/auth/login",
            &json!({ "login": login, "password": PASSWORD }),
        )
        .await;
    json_with_status(response, 200).await["data"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn member<'a>(members: &'a Value, email: &str) -> Option<&'a Value> {
    members["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|member| member["email"] == email)
}

database_test!(
    owners_create_members_and_change_roles_and_nobody_else_may,
    |backend| async move {
        let app = spawn_app_with_engines(backend, &["usermanager"], |_| {}).await;
        for slug in ["acme", "globex"] {
            run_admin(
                &app.database,
                &["create-tenant", "--slug", slug, "--name", slug],
            )
            .json();
        }
        create_owner(&app.database, "acme", "owner@acme.example", PASSWORD);
        create_owner(&app.database, "globex", "owner@globex.example", PASSWORD);
        let owner = sign_in(&app, "owner@acme.example").await;

        // Refused in the API's shapes, nothing created.
        for (body, field, rule) in [
            (
                json!({ "email": "not an address", "password": PASSWORD, "role": "editor" }),
                "email",
                "email",
            ),
            (
                json!({ "email": "ada@acme.example", "password": "short", "role": "editor" }),
                "password",
                "min:8",
            ),
            (
                json!({ "email": "ada@acme.example", "password": PASSWORD, "role": "admin" }),
                "role",
                "in:owner,editor,viewer",
            ),
            (
                json!({ "email": "owner@globex.example", "password": PASSWORD, "role": "editor" }),
                "email",
                "unique",
            ),
        ] {
            let refused = json_with_status(
                app.post_as("/auth/api/v1/members", &owner, &body).await,
                422,
            )
            .await;
            let rules: Vec<&str> = refused["errors"][field]
                .as_array()
                .unwrap_or_else(|| panic!("{refused}"))
                .iter()
                .map(|rule| rule.as_str().unwrap())
                .collect();
            assert!(rules.contains(&rule), "{field}: {refused}");
        }
        let unknown = json!({ "email": "ada@acme.example", "password": PASSWORD, "role": "editor", "admin": true });
        json_with_status(
            app.post_as("/auth/api/v1/members", &owner, &unknown).await,
            422,
        )
        .await;
        let listed = json_with_status(app.get_as("/auth/api/v1/members", &owner).await, 200).await;
        assert_eq!(listed["data"].as_array().unwrap().len(), 1, "{listed}");

        // Created: listed, provisioned on the engines, able to sign in with its role.
        let created = json_with_status(
            app.post_as(
                "/auth/api/v1/members",
                &owner,
                &json!({ "email": "Ada@Acme.example", "password": PASSWORD, "role": "editor", "first_name": "Ada" }),
            )
            .await,
            201,
        )
        .await;
        let ada_id = created["data"]["user_id"].as_str().unwrap().to_owned();
        assert_eq!(created["data"]["email"], "ada@acme.example");
        assert_eq!(created["data"]["role"], "editor");
        assert_eq!(created["data"]["disabled"], false);
        let ada = sign_in(&app, "ada@acme.example").await;
        let me = json_with_status(app.get_as("/auth/api/v1/auth/me", &ada).await, 200).await;
        assert_eq!(me["data"]["role"], "editor");
        let profile = app.get_as("/usermanager/api/v1/users/me", &ada).await;
        assert_eq!(profile.status(), 200, "provisioned on the user manager");

        // Non-owners may neither list nor change.
        assert_eq!(app.get_as("/auth/api/v1/members", &ada).await.status(), 403);
        let promote = json!({ "role": "owner" });
        let path = format!("/auth/api/v1/members/{ada_id}");
        assert_eq!(app.patch_as(&path, &ada, &promote).await.status(), 403);

        // A role changed; the last owner keeps the role; another tenant's member is not found.
        let changed = json_with_status(
            app.patch_as(&path, &owner, &json!({ "role": "viewer" }))
                .await,
            200,
        )
        .await;
        assert_eq!(changed["data"]["role"], "viewer");
        let listed = json_with_status(app.get_as("/auth/api/v1/members", &owner).await, 200).await;
        assert_eq!(
            member(&listed, "ada@acme.example").unwrap()["role"],
            "viewer"
        );
        let owner_id = member(&listed, "owner@acme.example").unwrap()["user_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let demoted = app
            .patch_as(
                &format!("/auth/api/v1/members/{owner_id}"),
                &owner,
                &json!({ "role": "editor" }),
            )
            .await;
        assert_eq!(demoted.status(), 409);
        let globex = json_with_status(
            app.get_as(
                "/auth/api/v1/members",
                &sign_in(&app, "owner@globex.example").await,
            )
            .await,
            200,
        )
        .await;
        let globex_owner = member(&globex, "owner@globex.example").unwrap()["user_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let foreign = app
            .patch_as(
                &format!("/auth/api/v1/members/{globex_owner}"),
                &owner,
                &json!({ "role": "viewer" }),
            )
            .await;
        assert_eq!(foreign.status(), 404);
        assert!(member(&globex, "ada@acme.example").is_none());

        // The trail: who created whom with which role, and the change, without the password.
        let trail = json_with_status(
            app.get_as("/auth/api/v1/audit?limit=100", &owner).await,
            200,
        )
        .await;
        let entries = trail["data"].as_array().unwrap();
        let created_entry = entries
            .iter()
            .find(|entry| entry["event"] == "member.created")
            .expect("member.created");
        assert_eq!(created_entry["details"]["member_id"], ada_id.as_str());
        assert_eq!(created_entry["details"]["role"], "editor");
        assert_eq!(created_entry["user_id"], owner_id.as_str());
        assert!(!created_entry.to_string().contains(PASSWORD));
        let changed_entry = entries
            .iter()
            .find(|entry| entry["event"] == "member.role_changed")
            .expect("member.role_changed");
        assert_eq!(changed_entry["details"]["previous_role"], "editor");
        assert_eq!(changed_entry["details"]["role"], "viewer");
        assert_eq!(
            entries
                .iter()
                .filter(|entry| entry["event"] == "member.role_changed")
                .count(),
            1,
            "the refused changes left no entry"
        );
    }
);

/// Turns TOTP on for the holder of `token` (setup, then a confirmed code).
async fn enable_totp(app: &TestApp, token: &str) {
    use tessera_host::auth::totp::{TotpSecret, code_at, step_at};
    let setup = json_with_status(
        app.post_as("/auth/api/v1/auth/mfa/totp/setup", token, &json!({}))
            .await,
        200,
    )
    .await;
    let secret = TotpSecret::from_base32(setup["data"]["secret"].as_str().unwrap()).unwrap();
    let step = step_at(chrono::Utc::now().timestamp());
    json_with_status(
        app.post_as(
            "/auth/api/v1/auth/mfa/totp/confirm",
            token,
            &json!({ "code": code_at(&secret, step) }),
        )
        .await,
        200,
    )
    .await;
}

async fn login_status(app: &TestApp, login: &str) -> u16 {
    app.post_json(
        "/auth/api/v1/auth/login",
        &json!({ "login": login, "password": PASSWORD }),
    )
    .await
    .status()
    .as_u16()
}

database_test!(
    owners_reset_second_factors_and_disable_only_accounts_of_their_tenant_alone,
    |backend| async move {
        let app = spawn_app_with_engines(backend, &["usermanager"], |_| {}).await;
        for slug in ["acme", "globex"] {
            run_admin(
                &app.database,
                &["create-tenant", "--slug", slug, "--name", slug],
            )
            .json();
        }
        create_owner(&app.database, "acme", "owner@acme.example", PASSWORD);
        let owner = sign_in(&app, "owner@acme.example").await;
        let mut ids = Vec::new();
        for email in ["ada@acme.example", "bob@acme.example"] {
            let created = json_with_status(
                app.post_as(
                    "/auth/api/v1/members",
                    &owner,
                    &json!({ "email": email, "password": PASSWORD, "role": "editor" }),
                )
                .await,
                201,
            )
            .await;
            ids.push(created["data"]["user_id"].as_str().unwrap().to_owned());
        }
        let (ada_id, bob_id) = (&ids[0], &ids[1]);
        // Bob also belongs to globex: acme's owner may not change his access.
        run_admin(
            &app.database,
            &[
                "add-member",
                "--tenant",
                "globex",
                "--email",
                "bob@acme.example",
            ],
        )
        .json();

        // Ada's TOTP on: her sign-in asks for it; the owner resets it and her session ends.
        let ada = sign_in(&app, "ada@acme.example").await;
        enable_totp(&app, &ada).await;
        assert_eq!(login_status(&app, "ada@acme.example").await, 202);
        let reset_path = format!("/auth/api/v1/members/{ada_id}/mfa/reset");
        assert_eq!(
            app.post_as(&reset_path, &ada, &json!({})).await.status(),
            403
        );
        let reset = json_with_status(app.post_as(&reset_path, &owner, &json!({})).await, 200).await;
        assert_eq!(reset["data"]["changed"], true, "{reset}");
        assert_eq!(reset["data"]["sessions_ended"], 1, "{reset}");
        assert_eq!(login_status(&app, "ada@acme.example").await, 200);
        let again = json_with_status(app.post_as(&reset_path, &owner, &json!({})).await, 200).await;
        assert_eq!(again["data"]["changed"], false, "nothing left to remove");

        // Disabled: no sign-in, sessions ended; enabled: signs in again.
        let ada = sign_in(&app, "ada@acme.example").await;
        let disabled = json_with_status(
            app.post_as(
                &format!("/auth/api/v1/members/{ada_id}/disable"),
                &owner,
                &json!({}),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(disabled["data"]["sessions_ended"], 1, "{disabled}");
        assert_eq!(login_status(&app, "ada@acme.example").await, 401);
        crate::helpers::eventually(10, "the disabled member's token refused", || async {
            (app.get_as("/auth/api/v1/auth/me", &ada).await.status() == 401).then_some(())
        })
        .await;
        let listed = json_with_status(app.get_as("/auth/api/v1/members", &owner).await, 200).await;
        assert_eq!(
            member(&listed, "ada@acme.example").unwrap()["disabled"],
            true
        );
        json_with_status(
            app.post_as(
                &format!("/auth/api/v1/members/{ada_id}/enable"),
                &owner,
                &json!({}),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(login_status(&app, "ada@acme.example").await, 200);

        // Refused: a shared account, the owner's own, another tenant's or an unknown user.
        let owner_id = member(&listed, "owner@acme.example").unwrap()["user_id"]
            .as_str()
            .unwrap()
            .to_owned();
        for (user_id, status) in [
            (bob_id.as_str(), 409),
            (owner_id.as_str(), 409),
            ("00000000-0000-0000-0000-000000000000", 404),
        ] {
            for action in ["disable", "enable", "mfa/reset"] {
                let response = app
                    .post_as(
                        &format!("/auth/api/v1/members/{user_id}/{action}"),
                        &owner,
                        &json!({}),
                    )
                    .await;
                assert_eq!(response.status(), status, "{action} {user_id}");
            }
        }
        assert_eq!(
            login_status(&app, "bob@acme.example").await,
            200,
            "untouched"
        );

        // The trail: each change once, with what it did.
        let trail = json_with_status(
            app.get_as("/auth/api/v1/audit?limit=100", &owner).await,
            200,
        )
        .await;
        let events: Vec<&str> = trail["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|entry| entry["details"]["member_id"] == ada_id.as_str())
            .map(|entry| entry["event"].as_str().unwrap())
            .collect();
        assert_eq!(
            events,
            [
                "member.enabled",
                "member.disabled",
                "member.mfa_reset",
                "member.mfa_reset",
                "member.created"
            ]
        );
    }
);

database_test!(
    owners_add_workspaces_and_members_switch_between_their_tenants_and_workspaces,
    |backend| async move {
        let app = spawn_app_with_engines(backend, &["usermanager"], |_| {}).await;
        for slug in ["acme", "globex"] {
            run_admin(
                &app.database,
                &["create-tenant", "--slug", slug, "--name", slug],
            )
            .json();
        }
        create_owner(&app.database, "acme", "owner@acme.example", PASSWORD);
        run_admin(
            &app.database,
            &[
                "add-member",
                "--tenant",
                "globex",
                "--email",
                "owner@acme.example",
                "--role",
                "viewer",
            ],
        )
        .json();
        let owner = sign_in(&app, "owner@acme.example").await;

        // Workspaces: an owner adds one; a duplicate and an empty name are refused.
        let created = json_with_status(
            app.post_as(
                "/auth/api/v1/workspaces",
                &owner,
                &json!({ "name": "Research" }),
            )
            .await,
            201,
        )
        .await;
        let research = created["data"]["id"].as_str().unwrap().to_owned();
        assert_eq!(created["data"]["is_default"], false);
        let duplicate = app
            .post_as(
                "/auth/api/v1/workspaces",
                &owner,
                &json!({ "name": "Research" }),
            )
            .await;
        assert_eq!(duplicate.status(), 409);
        let empty = json_with_status(
            app.post_as("/auth/api/v1/workspaces", &owner, &json!({ "name": " " }))
                .await,
            422,
        )
        .await;
        assert!(empty["errors"]["name"].is_array(), "{empty}");
        let listed =
            json_with_status(app.get_as("/auth/api/v1/workspaces", &owner).await, 200).await;
        let names: Vec<&str> = listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|workspace| workspace["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{listed}");
        assert_eq!(names[1], "Research", "the default first");

        // Memberships: both tenants, acme current, each with its workspaces.
        let memberships = json_with_status(
            app.get_as("/auth/api/v1/auth/memberships", &owner).await,
            200,
        )
        .await;
        let tenants = memberships["data"].as_array().unwrap();
        assert_eq!(tenants.len(), 2, "{memberships}");
        assert_eq!(tenants[0]["tenant_slug"], "acme");
        assert_eq!(tenants[0]["current"], true);
        assert_eq!(tenants[0]["role"], "owner");
        assert_eq!(tenants[0]["workspaces"].as_array().unwrap().len(), 2);
        assert_eq!(tenants[1]["tenant_slug"], "globex");
        assert_eq!(tenants[1]["role"], "viewer");
        assert_eq!(tenants[1]["current"], false);

        // Switching to the new workspace, then to globex, as the list offers.
        let switched = json_with_status(
            app.post_as(
                "/auth/api/v1/auth/switch-context",
                &owner,
                &json!({ "workspace_id": research }),
            )
            .await,
            200,
        )
        .await;
        let in_research = switched["data"]["access_token"]
            .as_str()
            .unwrap()
            .to_owned();
        let memberships = json_with_status(
            app.get_as("/auth/api/v1/auth/memberships", &in_research)
                .await,
            200,
        )
        .await;
        let current: Vec<&Value> = memberships["data"][0]["workspaces"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|workspace| workspace["current"] == true)
            .collect();
        assert_eq!(current.len(), 1);
        assert_eq!(current[0]["id"], research.as_str());
        let globex_id = tenants[1]["tenant_id"].as_str().unwrap();
        let in_globex = json_with_status(
            app.post_as(
                "/auth/api/v1/auth/switch-context",
                &owner,
                &json!({ "tenant_id": globex_id }),
            )
            .await,
            200,
        )
        .await["data"]["access_token"]
            .as_str()
            .unwrap()
            .to_owned();
        let me = json_with_status(app.get_as("/auth/api/v1/auth/me", &in_globex).await, 200).await;
        assert_eq!(me["data"]["role"], "viewer");
        // A viewer may list the workspaces but not add one.
        json_with_status(app.get_as("/auth/api/v1/workspaces", &in_globex).await, 200).await;
        assert_eq!(
            app.post_as(
                "/auth/api/v1/workspaces",
                &in_globex,
                &json!({ "name": "X" })
            )
            .await
            .status(),
            403
        );
    }
);
