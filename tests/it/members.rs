//! A tenant's members over HTTP (issue 31): owners list them, create accounts (provisioned like
//! `tessera admin create-user`, refused in the API's shapes) and change roles (the tenant keeps
//! an owner); nobody else may; every change is in the audit trail, and another tenant's member
//! is out of reach.

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
