//! Workflows: CRUD and state with the role guards, validation keyed at the item, every
//! trigger, operator, action and template, failing runs, the depth limit, run history kept
//! after a delete, and exactly-once runs across a worker killed mid-batch.

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{
    AppOptions, TestApp, eventually, json_with_status, serve, spawn_app, spawn_app_with,
    spawn_http_only,
};

const WORKFLOWS: &str = "/core/api/v1/workflows";

/// A tenant with an owner, an editor and a viewer.
pub(crate) struct Team {
    pub(crate) tenant_id: String,
    pub(crate) owner_id: String,
    pub(crate) owner: String,
    pub(crate) editor_id: String,
    pub(crate) editor: String,
    pub(crate) viewer: String,
}

pub(crate) async fn team(app: &TestApp, slug: &str) -> Team {
    let tenant_id = app.create_tenant(slug);
    let owner_id = uuid::Uuid::new_v4().to_string();
    let editor_id = uuid::Uuid::new_v4().to_string();
    let owner = app.token(&tenant_id, &owner_id, "owner").await;
    let editor = app.token(&tenant_id, &editor_id, "editor").await;
    let viewer = app
        .token(&tenant_id, &uuid::Uuid::new_v4().to_string(), "viewer")
        .await;
    Team {
        tenant_id,
        owner_id,
        owner,
        editor_id,
        editor,
        viewer,
    }
}

/// Creates a workflow (201) and returns its `data`.
pub(crate) async fn create_workflow(app: &TestApp, token: &str, body: Value) -> Value {
    json_with_status(app.post_as(WORKFLOWS, token, &body).await, 201).await["data"].clone()
}

/// Creates and activates a workflow; returns its id.
pub(crate) async fn active_workflow(app: &TestApp, token: &str, body: Value) -> String {
    let id = create_workflow(app, token, body).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("{WORKFLOWS}/{id}/activate");
    json_with_status(app.post_as(&path, token, &json!({})).await, 200).await;
    id
}

pub(crate) async fn runs(app: &TestApp, token: &str, workflow_id: &str) -> Vec<Value> {
    let path = format!("{WORKFLOWS}/{workflow_id}/runs?per_page=100");
    json_with_status(app.get_as(&path, token).await, 200).await["data"]
        .as_array()
        .unwrap()
        .clone()
}

async fn entity(app: &TestApp, token: &str, id: &str) -> Value {
    let path = format!("/core/api/v1/entities/{id}");
    json_with_status(app.get_as(&path, token).await, 200).await["data"].clone()
}

/// Waits until the workflow worker has consumed the whole log, including the events its own
/// runs appended.
pub(crate) async fn workflows_settled(app: &TestApp) {
    eventually(30, "the workflow worker to reach the end of the log", || async {
        // One statement, one snapshot: the head and the checkpoint of the same moment.
        let behind = app
            .scalar(
                "SELECT (SELECT COALESCE(MAX(position), 0) FROM events)
                      - (SELECT position FROM projection_checkpoints WHERE projection = 'workflow')",
            )
            .await;
        (behind == 0).then_some(())
    })
    .await;
}

fn update_field(field: &str, value: Value) -> Value {
    json!({"type": "update_field", "config": {"field": field, "value": value}})
}

database_test!(
    owners_manage_workflows_and_everyone_else_reads_them,
    |backend| async move {
        let app = spawn_app(backend).await;
        let team = team(&app, "acme").await;
        let body = json!({
            "name": "Close won deals",
            "trigger_event": "entity.status_changed",
            "conditions": [{"field": "status", "operator": "equals", "value": "won"}],
            "actions": [update_field("closed", json!(true))],
        });
        for token in [&team.editor, &team.viewer] {
            let response = app.post_as(WORKFLOWS, token, &body).await;
            assert_eq!(response.status(), 403);
        }
        let created = create_workflow(&app, &team.owner, body.clone()).await;
        assert_eq!(created["is_active"], false);
        assert_eq!(created["description"], Value::Null);
        assert_eq!(created["name"], "Close won deals");
        assert_eq!(created["trigger_event"], "entity.status_changed");
        assert_eq!(created["conditions"], body["conditions"]);
        assert_eq!(created["actions"], body["actions"]);
        assert!(created["created_at"].is_string());
        let id = created["id"].as_str().unwrap().to_owned();
        let path = format!("{WORKFLOWS}/{id}");

        // Readers read; only owners write.
        for token in [&team.editor, &team.viewer] {
            let read = json_with_status(app.get_as(&path, token).await, 200).await;
            assert_eq!(read["data"], created);
            let patch = app.patch_as(&path, token, &json!({"name": "x"})).await;
            assert_eq!(patch.status(), 403);
            assert_eq!(app.delete_as(&path, token).await.status(), 403);
            let activate = app
                .post_as(&format!("{path}/activate"), token, &json!({}))
                .await;
            assert_eq!(activate.status(), 403);
        }

        // PATCH changes only what it carries; conditions and actions are replaced whole.
        let patched = json_with_status(
            app.patch_as(
                &path,
                &team.owner,
                &json!({"description": "When a deal is won"}),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(patched["description"], "When a deal is won");
        assert_eq!(patched["name"], created["name"]);
        assert_eq!(patched["conditions"], created["conditions"]);
        let replaced = json_with_status(
            app.patch_as(
                &path,
                &team.owner,
                &json!({"conditions": [], "actions": [update_field("stage", json!("done"))]}),
            )
            .await,
            200,
        )
        .await["data"]
            .clone();
        assert_eq!(replaced["conditions"], json!([]));
        assert_eq!(
            replaced["actions"],
            json!([update_field("stage", json!("done"))])
        );
        assert_eq!(replaced["description"], "When a deal is won");

        // Activation and deactivation, each once.
        let activated = json_with_status(
            app.post_as(&format!("{path}/activate"), &team.owner, &json!({}))
                .await,
            200,
        )
        .await;
        assert_eq!(
            activated["data"],
            json!({"id": id, "name": "Close won deals", "is_active": true})
        );
        let again = app
            .post_as(&format!("{path}/activate"), &team.owner, &json!({}))
            .await;
        assert_eq!(again.status(), 409);
        let patched_active = json_with_status(
            app.patch_as(&path, &team.owner, &json!({"name": "Won"}))
                .await,
            200,
        )
        .await;
        assert_eq!(
            patched_active["data"]["is_active"], true,
            "PATCH keeps the state"
        );
        let deactivated = json_with_status(
            app.post_as(&format!("{path}/deactivate"), &team.owner, &json!({}))
                .await,
            200,
        )
        .await;
        assert_eq!(
            deactivated["data"],
            json!({"id": id, "name": "Won", "is_active": false})
        );
        let again = app
            .post_as(&format!("{path}/deactivate"), &team.owner, &json!({}))
            .await;
        assert_eq!(again.status(), 409);

        // Another tenant sees none of it; a malformed id names nothing.
        let other = team_of_other_tenant(&app).await;
        assert_eq!(app.get_as(&path, &other).await.status(), 404);
        assert_eq!(app.delete_as(&path, &other).await.status(), 404);
        let listed = json_with_status(app.get_as(WORKFLOWS, &other).await, 200).await;
        assert_eq!(listed["data"], json!([]));
        let malformed = format!("{WORKFLOWS}/not-a-uuid");
        assert_eq!(app.get_as(&malformed, &team.owner).await.status(), 404);

        // Delete: 204, then gone.
        assert_eq!(app.delete_as(&path, &team.owner).await.status(), 204);
        assert_eq!(app.get_as(&path, &team.owner).await.status(), 404);
        assert_eq!(app.delete_as(&path, &team.owner).await.status(), 404);
    }
);

pub(crate) async fn team_of_other_tenant(app: &TestApp) -> String {
    let tenant = app.create_tenant("other");
    app.token(&tenant, &uuid::Uuid::new_v4().to_string(), "owner")
        .await
}

database_test!(
    the_list_is_newest_first_and_offset_paged,
    |backend| async move {
        let app = spawn_app(backend).await;
        let team = team(&app, "acme").await;
        for name in ["first", "second", "third"] {
            create_workflow(
                &app,
                &team.owner,
                json!({"name": name, "trigger_event": "entity.created",
                       "actions": [update_field("seen", json!(true))]}),
            )
            .await;
        }
        let page = json_with_status(
            app.get_as(&format!("{WORKFLOWS}?per_page=2"), &team.viewer)
                .await,
            200,
        )
        .await;
        let names: Vec<&str> = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|workflow| workflow["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["third", "second"]);
        assert_eq!(
            page["meta"],
            json!({"current_page": 1, "last_page": 2, "per_page": 2, "total": 3})
        );
        let last = json_with_status(
            app.get_as(&format!("{WORKFLOWS}?per_page=2&page=2"), &team.viewer)
                .await,
            200,
        )
        .await;
        assert_eq!(last["data"][0]["name"], "first");
        let past = json_with_status(
            app.get_as(&format!("{WORKFLOWS}?page=9"), &team.viewer)
                .await,
            200,
        )
        .await;
        assert_eq!(past["data"], json!([]));
        let clamped = json_with_status(
            app.get_as(&format!("{WORKFLOWS}?per_page=1000"), &team.viewer)
                .await,
            200,
        )
        .await;
        assert_eq!(clamped["meta"]["per_page"], 100);
        let unknown = app
            .get_as(&format!("{WORKFLOWS}?sort=name"), &team.viewer)
            .await;
        assert_eq!(unknown.status(), 400);
    }
);

database_test!(
    invalid_definitions_are_refused_with_keys_pointing_at_the_item,
    |backend| async move {
        let app = spawn_app(backend).await;
        let team = team(&app, "acme").await;
        let cases = [
            (
                json!({"name": "x", "trigger_event": "entity.merged",
                       "actions": [update_field("a", json!(1))]}),
                vec!["trigger_event"],
            ),
            (
                json!({"name": "x", "trigger_event": "entity.created",
                       "conditions": [{"field": "a", "operator": "resembles", "value": 1}],
                       "actions": [update_field("a", json!(1))]}),
                vec!["conditions.0.operator"],
            ),
            (
                json!({"name": "x", "trigger_event": "entity.created",
                       "actions": [update_field("a", json!(1)), {"type": "launch_rocket", "config": {}}]}),
                vec!["actions.1.type"],
            ),
            (
                json!({"name": "x", "trigger_event": "entity.created",
                       "actions": [{"type": "update_field", "config": {"value": 1}}]}),
                vec!["actions.0.config.field"],
            ),
            (
                json!({"name": "x", "trigger_event": "entity.created",
                       "actions": [update_field("a", json!("{{entity.title"))]}),
                vec!["actions.0.config.value"],
            ),
            (
                json!({"name": "x", "trigger_event": "entity.created",
                       "actions": [update_field("a", json!("{{weather}}"))]}),
                vec!["actions.0.config.value"],
            ),
            (
                json!({"trigger_event": "entity.created", "actions": []}),
                vec!["actions", "name"],
            ),
        ];
        for (body, keys) in cases {
            let refused =
                json_with_status(app.post_as(WORKFLOWS, &team.owner, &body).await, 422).await;
            let errors: Vec<&str> = refused["errors"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(errors, keys, "for {body}");
            assert!(refused["message"].is_string());
        }
        let listed = json_with_status(app.get_as(WORKFLOWS, &team.owner).await, 200).await;
        assert_eq!(listed["meta"]["total"], 0, "nothing was stored");

        // A PATCH is validated the same way and changes nothing when refused.
        let created = create_workflow(
            &app,
            &team.owner,
            json!({"name": "keep", "trigger_event": "entity.created",
                   "actions": [update_field("a", json!(1))]}),
        )
        .await;
        let path = format!("{WORKFLOWS}/{}", created["id"].as_str().unwrap());
        let refused = json_with_status(
            app.patch_as(
                &path,
                &team.owner,
                &json!({"name": "changed", "actions": [{"type": "update_field", "config": {}}]}),
            )
            .await,
            422,
        )
        .await;
        assert!(refused["errors"]["actions.0.config.field"].is_array());
        let read = json_with_status(app.get_as(&path, &team.owner).await, 200).await;
        assert_eq!(read["data"], created);
    }
);

database_test!(
    every_operator_decides_with_sensible_types_and_missing_fields_never_match,
    |backend| async move {
        let app = spawn_app_with(backend, AppOptions::unlimited()).await;
        let team = team(&app, "acme").await;
        // (marker, condition, expected to hold) on the entity created below.
        let cases = [
            (
                "equals_number",
                json!({"field": "amount", "operator": "equals", "value": 150}),
                true,
            ),
            (
                "equals_numeric_text",
                json!({"field": "amount_text", "operator": "equals", "value": 150}),
                true,
            ),
            (
                "equals_float",
                json!({"field": "amount", "operator": "equals", "value": 150.0}),
                true,
            ),
            (
                "equals_is_case_sensitive",
                json!({"field": "name", "operator": "equals", "value": "ada lovelace"}),
                false,
            ),
            (
                "equals_instant",
                json!({"field": "due_at", "operator": "equals", "value": "2026-12-01T08:00:00Z"}),
                true,
            ),
            (
                "equals_missing",
                json!({"field": "nothing", "operator": "equals", "value": "x"}),
                false,
            ),
            (
                "not_equals",
                json!({"field": "stage", "operator": "not_equals", "value": "lost"}),
                true,
            ),
            (
                "not_equals_missing",
                json!({"field": "nothing", "operator": "not_equals", "value": "x"}),
                false,
            ),
            (
                "not_equals_bool_number",
                json!({"field": "flag", "operator": "not_equals", "value": 1}),
                true,
            ),
            (
                "contains_text_any_case",
                json!({"field": "name", "operator": "contains", "value": "LOVE"}),
                true,
            ),
            (
                "contains_element",
                json!({"field": "tags", "operator": "contains", "value": "vip"}),
                true,
            ),
            (
                "contains_absent_element",
                json!({"field": "tags", "operator": "contains", "value": "gold"}),
                false,
            ),
            (
                "contains_missing",
                json!({"field": "nothing", "operator": "contains", "value": "a"}),
                false,
            ),
            (
                "greater_than_number",
                json!({"field": "amount", "operator": "greater_than", "value": 99}),
                true,
            ),
            (
                "greater_than_numeric_text",
                json!({"field": "amount_text", "operator": "greater_than", "value": 99}),
                true,
            ),
            (
                "greater_than_date",
                json!({"field": "due", "operator": "greater_than", "value": "2026-11-30"}),
                true,
            ),
            (
                "greater_than_bool",
                json!({"field": "flag", "operator": "greater_than", "value": 0}),
                false,
            ),
            (
                "greater_than_missing",
                json!({"field": "nothing", "operator": "greater_than", "value": 0}),
                false,
            ),
            (
                "less_than_number",
                json!({"field": "amount", "operator": "less_than", "value": 100}),
                false,
            ),
            (
                "less_than_offset_instant",
                json!({"field": "due_at", "operator": "less_than", "value": "2026-12-01T09:00:00Z"}),
                true,
            ),
            (
                "less_than_text",
                json!({"field": "stage", "operator": "less_than", "value": "zeta"}),
                true,
            ),
            (
                "in",
                json!({"field": "stage", "operator": "in", "value": ["won", "lost"]}),
                true,
            ),
            (
                "in_numbers",
                json!({"field": "amount_text", "operator": "in", "value": [1, 150]}),
                true,
            ),
            (
                "in_none",
                json!({"field": "stage", "operator": "in", "value": ["lead"]}),
                false,
            ),
            (
                "not_in",
                json!({"field": "stage", "operator": "not_in", "value": ["lead"]}),
                true,
            ),
            (
                "not_in_missing",
                json!({"field": "nothing", "operator": "not_in", "value": ["x"]}),
                false,
            ),
            (
                "is_empty_text",
                json!({"field": "blank", "operator": "is_empty"}),
                true,
            ),
            (
                "is_empty_missing",
                json!({"field": "nothing", "operator": "is_empty"}),
                true,
            ),
            (
                "is_empty_filled",
                json!({"field": "name", "operator": "is_empty"}),
                false,
            ),
            (
                "is_not_empty",
                json!({"field": "tags", "operator": "is_not_empty"}),
                true,
            ),
            (
                "is_not_empty_blank",
                json!({"field": "blank", "operator": "is_not_empty"}),
                false,
            ),
            (
                "changed",
                json!({"field": "amount", "operator": "changed"}),
                true,
            ),
            (
                "changed_missing",
                json!({"field": "nothing", "operator": "changed"}),
                false,
            ),
            (
                "status",
                json!({"field": "status", "operator": "equals", "value": "todo"}),
                true,
            ),
        ];
        for (marker, condition, _) in &cases {
            active_workflow(
                &app,
                &team.owner,
                json!({"name": marker, "trigger_event": "entity.created", "family": "task",
                       "conditions": [condition],
                       "actions": [update_field(&format!("hit_{marker}"), json!(true))]}),
            )
            .await;
        }
        // All conditions must hold: one of two failing stops the workflow.
        active_workflow(
            &app,
            &team.owner,
            json!({"name": "both", "trigger_event": "entity.created",
                   "conditions": [
                       {"field": "amount", "operator": "greater_than", "value": 1},
                       {"field": "stage", "operator": "equals", "value": "lead"}],
                   "actions": [update_field("hit_both", json!(true))]}),
        )
        .await;
        let created = app
            .create_entity(
                &team.editor,
                "task",
                json!({
                    "amount": 150, "amount_text": "150", "name": "Ada Lovelace",
                    "tags": ["vip", "beta"], "due": "2026-12-01",
                    "due_at": "2026-12-01T10:00:00+02:00", "blank": "", "flag": true,
                    "stage": "won"
                }),
            )
            .await;
        workflows_settled(&app).await;
        let fields =
            entity(&app, &team.editor, created["entity_id"].as_str().unwrap()).await["fields"]
                .clone();
        for (marker, condition, expected) in &cases {
            assert_eq!(
                fields.get(format!("hit_{marker}")).is_some(),
                *expected,
                "{marker}: {condition}"
            );
        }
        assert!(fields.get("hit_both").is_none());
        // Only entities of the workflows' family trigger them (`both` has no family filter).
        let other = app
            .create_entity(&team.editor, "contact", json!({"amount": 150}))
            .await;
        workflows_settled(&app).await;
        let other_fields =
            entity(&app, &team.editor, other["entity_id"].as_str().unwrap()).await["fields"]
                .clone();
        assert_eq!(other_fields, json!({"amount": 150}));
    }
);

database_test!(
    each_trigger_runs_its_active_workflows_with_the_entity_as_the_intention_left_it,
    |backend| async move {
        let app = spawn_app_with(backend, AppOptions::unlimited()).await;
        let team = team(&app, "acme").await;
        let notify = |title: &str| {
            json!({"type": "send_notification",
                   "config": {"recipient": "{{current_user}}", "title": title}})
        };
        let created = active_workflow(
            &app,
            &team.owner,
            json!({"name": "created", "trigger_event": "entity.created", "family": "deal",
                   "actions": [notify("created {{entity.title}}")]}),
        )
        .await;
        let updated = active_workflow(
            &app,
            &team.owner,
            json!({"name": "amount changed", "trigger_event": "entity.updated",
                   "conditions": [{"field": "amount", "operator": "changed"}],
                   "actions": [notify("amount now {{entity.amount}}")]}),
        )
        .await;
        let status = active_workflow(
            &app,
            &team.owner,
            json!({"name": "won", "trigger_event": "entity.status_changed",
                   "conditions": [{"field": "status", "operator": "equals", "value": "won"}],
                   "actions": [notify("won {{entity.title}}")]}),
        )
        .await;
        let deleted = active_workflow(
            &app,
            &team.owner,
            json!({"name": "deleted", "trigger_event": "entity.deleted",
                   "conditions": [{"field": "title", "operator": "contains", "value": "big"}],
                   "actions": [notify("deleted {{entity.title}} worth {{entity.amount}}")]}),
        )
        .await;
        let never_activated = create_workflow(
            &app,
            &team.owner,
            json!({"name": "inactive", "trigger_event": "entity.created",
                   "actions": [notify("never")]}),
        )
        .await["id"]
            .as_str()
            .unwrap()
            .to_owned();

        let deal = app
            .create_entity(
                &team.editor,
                "deal",
                json!({"title": "Big deal", "amount": 10}),
            )
            .await;
        let deal_id = deal["entity_id"].as_str().unwrap().to_owned();
        let change = |kind: &'static str, payload: Value| {
            let app = &app;
            let token = team.editor.clone();
            async move {
                json_with_status(app.intention(&token, kind, payload).await, 200).await;
            }
        };
        change(
            "entity.update",
            json!({"entity_id": deal_id, "fields": {"note": "hi"}}),
        )
        .await;
        change(
            "entity.update",
            json!({"entity_id": deal_id, "fields": {"amount": 25}}),
        )
        .await;
        change(
            "entity.status_change",
            json!({"entity_id": deal_id, "status": "qualified"}),
        )
        .await;
        change(
            "entity.status_change",
            json!({"entity_id": deal_id, "status": "won"}),
        )
        .await;
        // A later change does not leak into the earlier runs: each saw its own intention's state.
        change(
            "entity.update",
            json!({"entity_id": deal_id, "fields": {"amount": 40}}),
        )
        .await;
        change("entity.delete", json!({"entity_id": deal_id})).await;
        workflows_settled(&app).await;

        for (workflow, expected_runs) in [(&created, 1), (&updated, 2), (&status, 1), (&deleted, 1)]
        {
            let runs = runs(&app, &team.viewer, workflow).await;
            assert_eq!(runs.len(), expected_runs, "runs of {workflow}");
            for run in &runs {
                assert_eq!(run["status"], "completed");
                assert_eq!(run["actions_executed"], 1);
                assert_eq!(run["error"], Value::Null);
                assert!(run["started_at"].is_string() && run["completed_at"].is_string());
            }
        }
        assert_eq!(runs(&app, &team.viewer, &never_activated).await.len(), 0);

        // The notifications landed in the inbox of the editor, who made every change.
        let inbox = eventually(10, "the inbox items", || async {
            let inbox = json_with_status(
                app.get_as("/core/api/v1/inbox?limit=100", &team.editor)
                    .await,
                200,
            )
            .await;
            let titles: Vec<String> = inbox["data"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|item| item["type"] == "notification")
                .map(|item| item["title"].as_str().unwrap().to_owned())
                .collect();
            (titles.len() == 5).then_some(titles)
        })
        .await;
        let mut titles = inbox;
        titles.sort();
        assert_eq!(
            titles,
            [
                "amount now 25",
                "amount now 40",
                "created Big deal",
                "deleted Big deal worth 40",
                "won Big deal"
            ]
        );

        // A run names its trigger event.
        let created_runs = runs(&app, &team.viewer, &created).await;
        let trigger_event = &created_runs[0]["trigger_event_id"];
        let created_event = &deal["events"][0];
        assert_eq!(created_event["type"], "entity.created");
        let event_id: i64 = {
            let database = &app.state().database;
            let id = trigger_event.as_str().unwrap().to_owned();
            tessera_host::on_pool!(database, pool => sqlx::query_scalar(
                "SELECT COUNT(*) FROM event_log WHERE id = $1 AND event_type = 'entity.created'")
                .bind(id)
                .fetch_one(pool)
                .await
                .unwrap())
        };
        assert_eq!(event_id, 1);

        // Deactivated: no more runs.
        let path = format!("{WORKFLOWS}/{created}/deactivate");
        json_with_status(app.post_as(&path, &team.owner, &json!({})).await, 200).await;
        app.create_entity(&team.editor, "deal", json!({"title": "Another"}))
            .await;
        workflows_settled(&app).await;
        assert_eq!(runs(&app, &team.viewer, &created).await.len(), 1);
    }
);

database_test!(
    actions_run_in_order_through_intentions_with_every_template,
    |backend| async move {
        let app = spawn_app_with(backend, AppOptions::unlimited()).await;
        let team = team(&app, "acme").await;
        let workflow = active_workflow(
            &app,
            &team.owner,
            json!({
                "name": "follow up",
                "trigger_event": "entity.updated",
                "family": "deal",
                // `changed`: the workflow's own updates (other fields) do not run it again.
                "conditions": [
                    {"field": "amount", "operator": "changed"},
                    {"field": "amount", "operator": "greater_than", "value": 100}],
                "actions": [
                    update_field("reviewed_by", json!("{{current_user}}")),
                    update_field("reviewed_at", json!("{{now}}")),
                    update_field("amount_copy", json!("{{entity.amount}}")),
                    update_field("summary", json!("{{ entity.title }} ({{entity.amount}}) #{{entity.id}}")),
                    {"type": "send_notification", "config": {
                        "recipient": "{{entity.owner}}",
                        "title": "{{entity.title}} needs you",
                        "message": "status {{entity.status}}"}},
                    {"type": "send_notification", "config": {
                        "recipient": team.owner_id, "title": "fyi"}},
                    {"type": "create_entity", "config": {
                        "family": "task",
                        "fields": {"title": "Call about {{entity.title}}", "deal_id": "{{entity.id}}",
                                   "amount": "{{entity.amount}}", "assignee_id": "{{current_user}}"},
                        "status": "in_progress"}},
                ],
            }),
        )
        .await;
        // The editor creates the deal; the owner's change triggers the workflow.
        let deal = app
            .create_entity(&team.editor, "deal", json!({"title": "Acme", "amount": 50}))
            .await;
        let deal_id = deal["entity_id"].as_str().unwrap().to_owned();
        json_with_status(
            app.intention(
                &team.owner,
                "entity.update",
                json!({"entity_id": deal_id, "fields": {"amount": 500}}),
            )
            .await,
            200,
        )
        .await;
        workflows_settled(&app).await;

        let runs = runs(&app, &team.viewer, &workflow).await;
        assert_eq!(runs.len(), 1, "only the update above 100 ran it");
        assert_eq!(runs[0]["status"], "completed");
        assert_eq!(runs[0]["actions_executed"], 7);

        let fields = entity(&app, &team.viewer, &deal_id).await["fields"].clone();
        assert_eq!(fields["reviewed_by"], team.owner_id.as_str());
        let reviewed_at = fields["reviewed_at"].as_str().unwrap();
        assert!(chrono::DateTime::parse_from_rfc3339(reviewed_at).is_ok());
        assert_eq!(
            fields["amount_copy"], 500,
            "a whole-value template keeps the number"
        );
        assert_eq!(fields["summary"], format!("Acme (500) #{deal_id}"));

        // The entity's owner (its creator) and the named user got their notifications.
        let inbox_titles = |token: String| {
            let app = &app;
            async move {
                let inbox =
                    json_with_status(app.get_as("/core/api/v1/inbox", &token).await, 200).await;
                inbox["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|item| item["type"] == "notification")
                    .map(|item| (item["title"].clone(), item["entity_id"].clone()))
                    .collect::<Vec<_>>()
            }
        };
        eventually(10, "the notifications", || async {
            let editor = inbox_titles(team.editor.clone()).await;
            let owner = inbox_titles(team.owner.clone()).await;
            (editor == [(json!("Acme needs you"), json!(deal_id))]
                && owner == [(json!("fyi"), json!(deal_id))])
            .then_some(())
        })
        .await;

        // The notification events carry the rendered message (`{{entity.status}}`).
        let messages: Vec<String> = {
            let database = &app.state().database;
            tessera_host::on_pool!(database, pool => sqlx::query_scalar(
                "SELECT data FROM event_log WHERE event_type = 'notification.created' ORDER BY position")
                .fetch_all(pool)
                .await
                .unwrap())
        };
        let messages: Vec<Value> = messages
            .iter()
            .map(|data| serde_json::from_str::<Value>(data).unwrap()["message"].clone())
            .collect();
        assert_eq!(messages, [json!("status lead"), Value::Null]);

        // The new task, created through an intention like any other write.
        let tasks = json_with_status(
            app.get_as("/core/api/v1/entities?family=task", &team.viewer)
                .await,
            200,
        )
        .await;
        assert_eq!(tasks["data"].as_array().unwrap().len(), 1);
        let task = &tasks["data"][0];
        assert_eq!(task["status"], "in_progress");
        assert_eq!(
            task["fields"],
            json!({"title": "Call about Acme", "deal_id": deal_id, "amount": 500,
                   "assignee_id": team.owner_id})
        );
        // The workflow's writes are one hop deeper than the owner's intention, in the log.
        let depths: Vec<i64> = {
            let database = &app.state().database;
            tessera_host::on_pool!(database, pool => sqlx::query_scalar(
                "SELECT DISTINCT depth FROM event_log ORDER BY depth")
                .fetch_all(pool)
                .await
                .unwrap())
        };
        assert_eq!(depths, [0, 1]);
        let _ = (&team.tenant_id, &team.editor_id);
    }
);

database_test!(
    a_failing_action_fails_the_run_with_its_error_and_metrics_count_runs,
    |backend| async move {
        let app = spawn_app_with(backend, AppOptions::unlimited()).await;
        let team = team(&app, "acme").await;
        let workflow = active_workflow(
            &app,
            &team.owner,
            json!({
                "name": "broken",
                "trigger_event": "entity.created",
                "family": "task",
                "actions": [
                    update_field("step", json!("one")),
                    {"type": "create_entity", "config": {"family": "spaceship", "fields": {}}},
                    update_field("step", json!("three")),
                ],
            }),
        )
        .await;
        let fine = active_workflow(
            &app,
            &team.owner,
            json!({"name": "fine", "trigger_event": "entity.created", "family": "task",
                   "actions": [update_field("fine", json!(true))]}),
        )
        .await;
        let task = app
            .create_entity(&team.editor, "task", json!({"title": "x"}))
            .await;
        workflows_settled(&app).await;
        let runs = runs(&app, &team.viewer, &workflow).await;
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0]["status"], "failed");
        assert_eq!(runs[0]["actions_executed"], 1);
        let error = runs[0]["error"].as_str().unwrap();
        assert!(
            error.contains("create_entity") && error.contains("family"),
            "{error}"
        );
        let fields =
            entity(&app, &team.viewer, task["entity_id"].as_str().unwrap()).await["fields"].clone();
        assert_eq!(
            fields["step"], "one",
            "the actions before the failure took effect"
        );
        assert_eq!(fields["fine"], true, "the other workflow ran");

        let metrics =
            json_with_status(app.get_as("/core/api/metrics", &team.viewer).await, 200).await;
        assert_eq!(metrics["data"]["workflows_executed"], 1);
        assert_eq!(metrics["data"]["workflows_failed"], 1);
        let other = team_of_other_tenant(&app).await;
        let metrics = json_with_status(app.get_as("/core/api/metrics", &other).await, 200).await;
        assert_eq!(metrics["data"]["workflows_executed"], 0);
        let platform = json_with_status(app.get("/core/api/metrics").await, 200).await;
        assert_eq!(platform["data"]["workflows_failed"], 1);
        let _ = fine;
    }
);

database_test!(
    a_self_triggering_workflow_stops_at_depth_three,
    |backend| async move {
        let app = spawn_app_with(backend, AppOptions::unlimited()).await;
        let team = team(&app, "acme").await;
        let echo = active_workflow(
            &app,
            &team.owner,
            json!({"name": "echo", "trigger_event": "entity.updated",
                   "actions": [update_field("touched_at", json!("{{now}}"))]}),
        )
        .await;
        let task = app
            .create_entity(&team.editor, "task", json!({"title": "loop"}))
            .await;
        json_with_status(
            app.intention(
                &team.editor,
                "entity.update",
                json!({"entity_id": task["entity_id"], "fields": {"title": "go"}}),
            )
            .await,
            200,
        )
        .await;
        workflows_settled(&app).await;
        // Depth 0 (the person) → runs at depths 0, 1 and 2 write depths 1, 2 and 3; depth 3
        // triggers nothing.
        assert_eq!(runs(&app, &team.viewer, &echo).await.len(), 3);
        let deepest = app.scalar("SELECT MAX(depth) FROM event_log").await;
        assert_eq!(deepest, 3);
        // Settled means settled: nothing more runs later.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        workflows_settled(&app).await;
        assert_eq!(runs(&app, &team.viewer, &echo).await.len(), 3);
    }
);

database_test!(
    runs_stay_readable_after_their_workflow_is_deleted,
    |backend| async move {
        let app = spawn_app(backend).await;
        let team = team(&app, "acme").await;
        let workflow = active_workflow(
            &app,
            &team.owner,
            json!({"name": "note", "trigger_event": "entity.created",
                   "actions": [update_field("noted", json!(true))]}),
        )
        .await;
        app.create_entity(&team.editor, "task", json!({"title": "x"}))
            .await;
        workflows_settled(&app).await;
        let before = runs(&app, &team.viewer, &workflow).await;
        assert_eq!(before.len(), 1);
        let path = format!("{WORKFLOWS}/{workflow}");
        assert_eq!(app.delete_as(&path, &team.owner).await.status(), 204);
        assert_eq!(runs(&app, &team.viewer, &workflow).await, before);
        let other = team_of_other_tenant(&app).await;
        let foreign = app.get_as(&format!("{path}/runs"), &other).await;
        assert_eq!(foreign.status(), 404, "another tenant sees no history");
        let unknown = format!("{WORKFLOWS}/{}/runs", uuid::Uuid::new_v4());
        assert_eq!(app.get_as(&unknown, &team.viewer).await.status(), 404);
    }
);

database_test!(
    a_worker_killed_mid_batch_runs_each_trigger_exactly_once,
    |backend| async move {
        // This host serves HTTP only: the triggers pile up in the log.
        let app = spawn_http_only(backend).await;
        let team = team(&app, "acme").await;
        let workflow = active_workflow(
            &app,
            &team.owner,
            json!({"name": "stamp", "trigger_event": "entity.created",
            "actions": [
                update_field("stamped", json!(true)),
                {"type": "send_notification",
                 "config": {"recipient": "{{current_user}}", "title": "{{entity.n}}"}},
            ]}),
        )
        .await;
        let total = 150;
        for n in 0..total {
            app.create_entity(&team.editor, "task", json!({"n": n}))
                .await;
        }
        let runs_recorded = || app.scalar("SELECT COUNT(*) FROM workflow_runs");

        // A host applying one event per transaction, killed while it runs the workflows.
        let mut doomed = serve(&app.database, &[("TESSERA_PROJECTION_BATCH_SIZE", "1")]);
        eventually(60, "the doomed host to start running workflows", || async {
            (runs_recorded().await >= 10).then_some(())
        })
        .await;
        doomed.kill();
        let at_kill = runs_recorded().await;
        assert!(
            at_kill < total,
            "killed mid-stream ({at_kill} of {total} runs)"
        );

        let mut survivor = serve(&app.database, &[]);
        let result = async {
            eventually(60, "the survivor to run every trigger", || async {
                (runs_recorded().await == total).then_some(())
            })
            .await;
            workflows_settled(&app).await;
            assert_eq!(runs_recorded().await, total, "no trigger ran twice");
            let distinct = app
                .scalar("SELECT COUNT(DISTINCT trigger_event_id) FROM workflow_runs")
                .await;
            assert_eq!(distinct, total);
            let notifications = app
                .scalar("SELECT COUNT(*) FROM event_log WHERE event_type = 'notification.created'")
                .await;
            assert_eq!(notifications, total, "each notification sent once");
            let stamps = app
                .scalar(
                    "SELECT COUNT(*) FROM event_log
                     WHERE event_type = 'entity.field_set' AND depth = 1",
                )
                .await;
            assert_eq!(stamps, total, "each field written once");
        };
        let outcome = tokio::time::timeout(std::time::Duration::from_secs(120), result).await;
        survivor.kill();
        outcome.expect("the survivor finished");
        let completed = runs(&app, &team.viewer, &workflow).await;
        assert!(completed.iter().all(|run| run["status"] == "completed"));
    }
);
