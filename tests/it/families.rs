//! Entity families: the defaults of every tenant, list conventions, read, create (owners).

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{TestApp, json_with_status, spawn_app};

const FAMILIES: &str = "/core/api/v1/families";

/// A tenant made by the CLI (with its default families) and a token for it with `role`.
async fn tenant_token(app: &TestApp, slug: &str, role: &str) -> String {
    let tenant = app
        .admin(&["create-tenant", "--slug", slug, "--name", slug])
        .json();
    let tenant_id = tenant["tenant_id"].as_str().unwrap();
    app.token(tenant_id, &uuid::Uuid::new_v4().to_string(), role)
        .await
}

fn codes(body: &Value) -> Vec<&str> {
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|family| family["code"].as_str().unwrap())
        .collect()
}

database_test!(
    every_tenant_lists_its_default_families_with_the_paging_conventions,
    |backend| async move {
        let app = spawn_app(backend).await;
        let token = tenant_token(&app, "acme", "viewer").await;

        let body = json_with_status(app.get_as(FAMILIES, &token).await, 200).await;
        assert_eq!(
            codes(&body),
            ["company", "contact", "deal", "task"],
            "by label, ascending"
        );
        assert_eq!(
            body["meta"],
            json!({ "current_page": 1, "last_page": 1, "per_page": 50, "total": 4 })
        );
        let item = &body["data"][0];
        assert_eq!(item.as_object().unwrap().len(), 3, "{item}");
        assert!(item["id"].is_string() && item["label"] == "Company");

        let page = json_with_status(
            app.get_as(
                &format!("{FAMILIES}?per_page=3&page=2&sort=code&direction=desc"),
                &token,
            )
            .await,
            200,
        )
        .await;
        assert_eq!(codes(&page), ["company"]);
        assert_eq!(
            page["meta"],
            json!({ "current_page": 2, "last_page": 2, "per_page": 3, "total": 4 })
        );
        let past_the_end =
            json_with_status(app.get_as(&format!("{FAMILIES}?page=9"), &token).await, 200).await;
        assert_eq!(past_the_end["data"], json!([]));
        let clamped = json_with_status(
            app.get_as(&format!("{FAMILIES}?per_page=1000"), &token)
                .await,
            200,
        )
        .await;
        assert_eq!(clamped["meta"]["per_page"], 100);
        json_with_status(
            app.get_as(&format!("{FAMILIES}?colour=red"), &token).await,
            400,
        )
        .await;
        let invalid = json_with_status(
            app.get_as(&format!("{FAMILIES}?sort=colour&direction=up"), &token)
                .await,
            422,
        )
        .await;
        assert_eq!(invalid["errors"]["sort"], json!(["in"]));
        assert_eq!(invalid["errors"]["direction"], json!(["in"]));
        json_with_status(app.get(FAMILIES).await, 401).await;

        let deal =
            json_with_status(app.get_as(&format!("{FAMILIES}/deal"), &token).await, 200).await;
        assert_eq!(
            deal["data"]["statuses"],
            json!(["lead", "qualified", "proposal", "won", "lost"])
        );
        json_with_status(app.get_as(&format!("{FAMILIES}/nope"), &token).await, 404).await;
        app.stop().await;
    }
);

database_test!(
    owners_create_families_and_tenants_never_see_each_others,
    |backend| async move {
        let app = spawn_app(backend).await;
        let owner = tenant_token(&app, "acme", "owner").await;
        let other = tenant_token(&app, "globex", "owner").await;
        let post = |token: &str, body: Value| {
            app.client
                .post(app.url(FAMILIES))
                .bearer_auth(token.to_owned())
                .json(&body)
                .send()
        };

        let created = json_with_status(
            post(
                &owner,
                json!({ "code": "ticket", "label": "Ticket", "statuses": ["open", "closed"] }),
            )
            .await
            .unwrap(),
            201,
        )
        .await;
        assert_eq!(created["data"]["code"], "ticket");
        assert_eq!(created["data"]["statuses"], json!(["open", "closed"]));
        let read =
            json_with_status(app.get_as(&format!("{FAMILIES}/ticket"), &owner).await, 200).await;
        assert_eq!(read["data"], created["data"]);
        json_with_status(app.get_as(&format!("{FAMILIES}/ticket"), &other).await, 404).await;

        let duplicate = json_with_status(
            post(
                &owner,
                json!({ "code": "ticket", "label": "Again", "statuses": ["open"] }),
            )
            .await
            .unwrap(),
            422,
        )
        .await;
        assert_eq!(duplicate["errors"]["code"], json!(["unique"]));
        let invalid = json_with_status(
            post(
                &owner,
                json!({ "code": "Bad Code", "statuses": ["a", "a", ""] }),
            )
            .await
            .unwrap(),
            422,
        )
        .await;
        assert_eq!(invalid["errors"]["code"], json!(["regex"]));
        assert_eq!(invalid["errors"]["label"], json!(["required"]));
        assert_eq!(invalid["errors"]["statuses.1"], json!(["distinct"]));
        assert_eq!(invalid["errors"]["statuses.2"], json!(["regex"]));

        for role in ["editor", "viewer"] {
            let token = tenant_token(&app, &format!("t-{role}"), role).await;
            json_with_status(
                post(
                    &token,
                    json!({ "code": "lead", "label": "Lead", "statuses": ["new"] }),
                )
                .await
                .unwrap(),
                403,
            )
            .await;
        }
        let listed = json_with_status(app.get_as(FAMILIES, &owner).await, 200).await;
        assert_eq!(listed["meta"]["total"], 5);
        let others = json_with_status(app.get_as(FAMILIES, &other).await, 200).await;
        assert_eq!(others["meta"]["total"], 4);
        app.stop().await;
    }
);
