//! Workflow limits: the chain write budget (a fan-out of `create_entity` workflows stops at
//! the budget of writes from one person's intention, across batches and a host killed
//! mid-chain, and the over-budget runs fail with that reason) and the cap on a tenant's
//! active workflows (409 beyond it, also for concurrent activations).

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{
    AppOptions, TestApp, eventually, json_with_status, serve, spawn_app_with, spawn_http_only,
};
use crate::workflows::{
    Team, active_workflow, create_workflow, team, team_of_other_tenant, workflows_settled,
};

const WORKFLOWS: &str = "/core/api/v1/workflows";

/// Entities created by workflow actions (depth 1 and deeper).
async fn workflow_creations(app: &TestApp) -> i64 {
    app.scalar("SELECT COUNT(*) FROM event_log WHERE event_type = 'entity.created' AND depth > 0")
        .await
}

/// One active workflow per family, each creating an entity of its family whenever an entity
/// of any family is created: every creation fans out into one per family. Returns the
/// workflow ids and the fan-out.
async fn fan_out(app: &TestApp, team: &Team, extra_families: &[&str]) -> (Vec<String>, i64) {
    for code in extra_families {
        let family = json!({"code": code, "label": code, "statuses": ["open", "closed"]});
        json_with_status(
            app.post_as("/core/api/v1/families", &team.owner, &family)
                .await,
            201,
        )
        .await;
    }
    let mut families = vec!["contact", "company", "deal", "task"];
    families.extend_from_slice(extra_families);
    let mut ids = Vec::new();
    for family in &families {
        let workflow = json!({
            "name": format!("spawn a {family}"),
            "trigger_event": "entity.created",
            "actions": [{"type": "create_entity",
                         "config": {"family": family, "fields": {"spawned": true}}}],
        });
        ids.push(active_workflow(app, &team.owner, workflow).await);
    }
    (ids, families.len() as i64)
}

/// What the fan-out would create from one intention without a budget: `k + k² + k³`
/// (events at depth 3 trigger nothing).
fn unbounded(fan_out: i64) -> i64 {
    fan_out + fan_out.pow(2) + fan_out.pow(3)
}

/// The runs of all the workflows, from the runs API (every page).
async fn all_runs(app: &TestApp, token: &str, workflows: &[String]) -> Vec<Value> {
    let mut all = Vec::new();
    for workflow in workflows {
        let mut page = 1;
        loop {
            let path = format!("{WORKFLOWS}/{workflow}/runs?per_page=100&page={page}");
            let body = json_with_status(app.get_as(&path, token).await, 200).await;
            let data = body["data"].as_array().unwrap().clone();
            if data.is_empty() {
                break;
            }
            all.extend(data);
            page += 1;
        }
    }
    all
}

database_test!(
    a_fan_out_stops_at_the_chain_write_budget_and_the_runs_beyond_it_fail,
    |backend| async move {
        let app = spawn_app_with(
            backend,
            AppOptions::unlimited_and(|config| {
                // Small batches: the chain spans many of them.
                config.projections.batch_size = 16;
            }),
        )
        .await;
        let budget = i64::from(app.state().config.workflows.chain_write_budget);
        let team = team(&app, "acme").await;
        let (workflows, fan_out) = fan_out(&app, &team, &["project", "ticket"]).await;
        assert!(
            unbounded(fan_out) > budget,
            "the fan-out ({}) outgrows the budget ({budget})",
            unbounded(fan_out)
        );

        app.create_entity(&team.editor, "task", json!({"title": "seed"}))
            .await;
        workflows_settled(&app).await;
        assert_eq!(
            workflow_creations(&app).await,
            budget,
            "one intention leads to exactly the budget of workflow writes"
        );
        let entities = json_with_status(
            app.get_as("/core/api/v1/entities?per_page=1", &team.viewer)
                .await,
            200,
        )
        .await;
        assert_eq!(entities["meta"]["total"], json!(budget + 1));

        // Each run has one action: the completed ones are the budget, the others failed
        // with the reason, visible in the runs API.
        let runs = all_runs(&app, &team.viewer, &workflows).await;
        let completed = runs.iter().filter(|run| run["status"] == "completed");
        assert_eq!(completed.count() as i64, budget);
        let failed: Vec<&Value> = runs
            .iter()
            .filter(|run| run["status"] == "failed")
            .collect();
        assert!(!failed.is_empty(), "runs beyond the budget fail");
        for run in &failed {
            let error = run["error"].as_str().unwrap();
            assert!(
                error.contains("create_entity")
                    && error.contains(&format!("write budget of {budget}")),
                "{error}"
            );
            assert_eq!(run["actions_executed"], 0);
        }

        // Settled means settled: nothing of the chain runs later.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        workflows_settled(&app).await;
        assert_eq!(workflow_creations(&app).await, budget);

        // The budget is per person's intention: the next one has its own.
        app.create_entity(&team.editor, "deal", json!({"title": "second"}))
            .await;
        workflows_settled(&app).await;
        assert_eq!(workflow_creations(&app).await, 2 * budget);
    }
);

database_test!(
    the_chain_budget_holds_across_a_host_killed_mid_chain,
    |backend| async move {
        // This host serves HTTP only; the chain runs on child hosts configured by environment.
        let app = spawn_http_only(backend).await;
        // Large enough that the doomed host cannot finish the chain between two polls.
        let budget = 240;
        let team = team(&app, "acme").await;
        let (_, fan_out) = fan_out(&app, &team, &["project", "ticket", "invoice", "lead"]).await;
        assert!(unbounded(fan_out) > budget);
        app.create_entity(&team.editor, "task", json!({"title": "seed"}))
            .await;

        let environment = [
            ("TESSERA_WORKFLOW_CHAIN_WRITE_BUDGET", "240"),
            ("TESSERA_PROJECTION_BATCH_SIZE", "1"),
        ];
        // A host applying one event per transaction, killed in the middle of the chain.
        let mut doomed = serve(&app.database, &environment);
        eventually(60, "the doomed host to run part of the chain", || async {
            (workflow_creations(&app).await >= 5).then_some(())
        })
        .await;
        doomed.kill();
        let at_kill = workflow_creations(&app).await;
        assert!(at_kill < budget, "killed mid-chain ({at_kill} of {budget})");

        let mut survivor = serve(&app.database, &environment);
        let result = async {
            eventually(60, "the survivor to spend the budget", || async {
                (workflow_creations(&app).await >= budget).then_some(())
            })
            .await;
            workflows_settled(&app).await;
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            workflows_settled(&app).await;
        };
        let outcome = tokio::time::timeout(std::time::Duration::from_secs(120), result).await;
        survivor.kill();
        outcome.expect("the survivor finished the chain");
        assert_eq!(
            workflow_creations(&app).await,
            budget,
            "the count survived the restart"
        );
        let failed = app
            .scalar(
                "SELECT COUNT(*) FROM workflow_runs
                 WHERE status = 'failed' AND error LIKE '%write budget of 240%'",
            )
            .await;
        assert!(failed > 0, "the runs beyond the budget failed");
    }
);

database_test!(
    activating_beyond_the_active_workflow_limit_is_a_conflict,
    |backend| async move {
        let app = spawn_app_with(
            backend,
            AppOptions::unlimited_and(|config| {
                config.workflows.max_active_per_tenant = 2;
            }),
        )
        .await;
        let team = team(&app, "acme").await;
        let mut ids = Vec::new();
        for n in 0..4 {
            let body = json!({"name": format!("w{n}"), "trigger_event": "entity.created",
                              "actions": [{"type": "update_field",
                                           "config": {"field": "seen", "value": true}}]});
            let created = create_workflow(&app, &team.owner, body).await;
            ids.push(created["id"].as_str().unwrap().to_owned());
        }
        let activate = |id: &String| {
            let path = format!("{WORKFLOWS}/{id}/activate");
            let app = &app;
            let token = team.owner.clone();
            async move { app.post_as(&path, &token, &json!({})).await }
        };
        json_with_status(activate(&ids[0]).await, 200).await;

        // Two concurrent activations with one place left: exactly one wins.
        let (first, second) = tokio::join!(activate(&ids[1]), activate(&ids[2]));
        let mut statuses = [first.status().as_u16(), second.status().as_u16()];
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 409]);
        let refused = if first.status() == 409 { first } else { second };
        let body = json_with_status(refused, 409).await;
        let message = body["message"].as_str().unwrap();
        assert!(message.contains("2 active workflows"), "{message}");

        let body = json_with_status(activate(&ids[3]).await, 409).await;
        assert!(body["message"].as_str().unwrap().contains("deactivate"));
        let active = json_with_status(
            app.get_as(&format!("{WORKFLOWS}?per_page=100"), &team.viewer)
                .await,
            200,
        )
        .await["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|workflow| workflow["is_active"] == true)
            .count();
        assert_eq!(active, 2);

        // Creating stays possible (workflows are created inactive); another tenant has its
        // own count; deactivating one frees a place.
        create_workflow(
            &app,
            &team.owner,
            json!({"name": "spare", "trigger_event": "entity.created",
                   "actions": [{"type": "update_field",
                                "config": {"field": "seen", "value": true}}]}),
        )
        .await;
        let other = team_of_other_tenant(&app).await;
        active_workflow(
            &app,
            &other,
            json!({"name": "theirs", "trigger_event": "entity.created",
                   "actions": [{"type": "update_field",
                                "config": {"field": "seen", "value": true}}]}),
        )
        .await;
        let path = format!("{WORKFLOWS}/{}/deactivate", ids[0]);
        json_with_status(app.post_as(&path, &team.owner, &json!({})).await, 200).await;
        json_with_status(activate(&ids[3]).await, 200).await;
    }
);
