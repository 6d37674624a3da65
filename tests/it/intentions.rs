//! Intentions and entities: every event rule of the spec's Domain events table, validation
//! errors that change nothing, 404 across tenants, viewer and guest 403, the event log's
//! bookkeeping, and the entity list's paging and sorting.

use serde_json::{Value, json};

use crate::database_test;
use crate::helpers::{TestApp, json_with_status, spawn_app};

const ENTITIES: &str = "/core/api/v1/entities";

fn event_types(intention: &Value) -> Vec<&str> {
    intention["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect()
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

/// Rows in the log and in `entities`, straight from the database.
async fn counts(app: &TestApp) -> (i64, i64) {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => {
        let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM events").fetch_one(pool).await.unwrap();
        let entities: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM entities").fetch_one(pool).await.unwrap();
        (events, entities)
    })
}

database_test!(
    create_emits_created_then_one_field_set_per_field_and_the_entity_reads_back,
    |backend| async move {
        let app = spawn_app(backend).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;

        let response = app
            .intention(
                &token,
                "entity.create",
                json!({"family": "deal", "fields": {"title": "Big one", "amount": 1200, "tags": ["a"]}}),
            )
            .await;
        let body = json_with_status(response, 200).await;
        let intention = &body["data"];
        assert_eq!(
            keys(intention),
            ["entity_id", "events", "id", "status", "type"]
        );
        assert_eq!(intention["type"], "entity.create");
        assert_eq!(intention["status"], "processed");
        let entity_id = intention["entity_id"].as_str().unwrap();
        assert!(uuid::Uuid::parse_str(intention["id"].as_str().unwrap()).is_ok());
        assert_eq!(
            event_types(intention),
            [
                "entity.created",
                "entity.field_set",
                "entity.field_set",
                "entity.field_set"
            ]
        );
        let created = &intention["events"][0];
        assert_eq!(keys(created), ["entity_id", "family", "timestamp", "type"]);
        assert_eq!(created["family"], "deal");
        assert_eq!(created["entity_id"], entity_id);
        let field_set = &intention["events"][2];
        assert_eq!(
            keys(field_set),
            ["entity_id", "field", "timestamp", "type", "value"]
        );
        assert_eq!(
            (&field_set["field"], &field_set["value"]),
            (&json!("amount"), &json!(1200))
        );
        assert_eq!(
            intention["events"][1]["field"], "title",
            "fields in submitted order"
        );
        assert!(
            chrono::DateTime::parse_from_rfc3339(created["timestamp"].as_str().unwrap()).is_ok()
        );

        let entity = json_with_status(
            app.get_as(&format!("{ENTITIES}/{entity_id}"), &token).await,
            200,
        )
        .await;
        assert_eq!(
            keys(&entity["data"]),
            [
                "created_at",
                "family_code",
                "fields",
                "id",
                "status",
                "updated_at"
            ]
        );
        assert_eq!(
            entity["data"]["status"], "lead",
            "the first status of the pipeline"
        );
        assert_eq!(
            entity["data"]["fields"],
            json!({"title": "Big one", "amount": 1200, "tags": ["a"]})
        );

        let with_status = app.create_entity(&token, "task", json!({})).await;
        assert_eq!(
            event_types(&with_status),
            ["entity.created"],
            "no fields, no field_set"
        );
        let explicit = json_with_status(
            app.intention(
                &token,
                "entity.create",
                json!({"family": "task", "fields": {}, "status": "done"}),
            )
            .await,
            200,
        )
        .await;
        let explicit_id = explicit["data"]["entity_id"].as_str().unwrap();
        let entity = json_with_status(
            app.get_as(&format!("{ENTITIES}/{explicit_id}"), &token)
                .await,
            200,
        )
        .await;
        assert_eq!(entity["data"]["status"], "done");
    }
);

database_test!(
    update_sets_new_fields_updates_old_ones_and_changes_only_what_was_sent,
    |backend| async move {
        let app = spawn_app(backend).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "owner")
            .await;
        let created = app
            .create_entity(&token, "contact", json!({"name": "Ada", "city": "London"}))
            .await;
        let entity_id = created["entity_id"].as_str().unwrap();

        let body = json_with_status(
            app.intention(
                &token,
                "entity.update",
                json!({"entity_id": entity_id, "fields": {"name": "Ada Lovelace", "email": "ada@example.com"}}),
            )
            .await,
            200,
        )
        .await;
        let intention = &body["data"];
        assert_eq!(intention["type"], "entity.update");
        assert_eq!(intention["entity_id"], entity_id);
        assert_eq!(
            event_types(intention),
            ["entity.field_updated", "entity.field_set"]
        );
        let updated = &intention["events"][0];
        assert_eq!(
            keys(updated),
            [
                "entity_id",
                "field",
                "new_value",
                "old_value",
                "timestamp",
                "type"
            ]
        );
        assert_eq!(
            (
                &updated["field"],
                &updated["old_value"],
                &updated["new_value"]
            ),
            (&json!("name"), &json!("Ada"), &json!("Ada Lovelace"))
        );
        assert_eq!(intention["events"][1]["value"], "ada@example.com");

        let entity = json_with_status(
            app.get_as(&format!("{ENTITIES}/{entity_id}"), &token).await,
            200,
        )
        .await;
        assert_eq!(
            entity["data"]["fields"],
            json!({"name": "Ada Lovelace", "city": "London", "email": "ada@example.com"})
        );
        assert!(entity["data"]["updated_at"].as_str() >= entity["data"]["created_at"].as_str());
    }
);

database_test!(
    status_changes_stay_inside_the_family_pipeline,
    |backend| async move {
        let app = spawn_app(backend).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let created = app
            .create_entity(&token, "deal", json!({"title": "x"}))
            .await;
        let entity_id = created["entity_id"].as_str().unwrap();

        let body = json_with_status(
            app.intention(
                &token,
                "entity.status_change",
                json!({"entity_id": entity_id, "status": "qualified"}),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(event_types(&body["data"]), ["entity.status_changed"]);
        let event = &body["data"]["events"][0];
        assert_eq!(
            keys(event),
            ["entity_id", "new_status", "old_status", "timestamp", "type"]
        );
        assert_eq!(
            (&event["old_status"], &event["new_status"]),
            (&json!("lead"), &json!("qualified"))
        );

        let (events_before, _) = counts(&app).await;
        let refused = json_with_status(
            app.intention(
                &token,
                "entity.status_change",
                json!({"entity_id": entity_id, "status": "done"}),
            )
            .await,
            422,
        )
        .await;
        assert_eq!(keys(&refused["errors"]), ["payload.status"]);
        assert!(refused["message"].is_string());
        let refused_create = json_with_status(
            app.intention(
                &token,
                "entity.create",
                json!({"family": "deal", "fields": {}, "status": "done"}),
            )
            .await,
            422,
        )
        .await;
        assert_eq!(keys(&refused_create["errors"]), ["payload.status"]);
        assert_eq!(
            counts(&app).await.0,
            events_before,
            "a refused intention appends nothing"
        );
        let entity = json_with_status(
            app.get_as(&format!("{ENTITIES}/{entity_id}"), &token).await,
            200,
        )
        .await;
        assert_eq!(entity["data"]["status"], "qualified");
    }
);

database_test!(
    delete_removes_the_entity_and_emits_deleted_with_its_family,
    |backend| async move {
        let app = spawn_app(backend).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let created = app
            .create_entity(&token, "company", json!({"name": "Initech"}))
            .await;
        let entity_id = created["entity_id"].as_str().unwrap();

        let body = json_with_status(
            app.intention(&token, "entity.delete", json!({"entity_id": entity_id}))
                .await,
            200,
        )
        .await;
        assert_eq!(body["data"]["type"], "entity.delete");
        assert_eq!(event_types(&body["data"]), ["entity.deleted"]);
        let event = &body["data"]["events"][0];
        assert_eq!(keys(event), ["entity_id", "family", "timestamp", "type"]);
        assert_eq!(event["family"], "company");

        json_with_status(
            app.get_as(&format!("{ENTITIES}/{entity_id}"), &token).await,
            404,
        )
        .await;
        for (kind, payload) in [
            ("entity.delete", json!({"entity_id": entity_id})),
            (
                "entity.update",
                json!({"entity_id": entity_id, "fields": {"a": 1}}),
            ),
            (
                "entity.status_change",
                json!({"entity_id": entity_id, "status": "archived"}),
            ),
        ] {
            json_with_status(app.intention(&token, kind, payload).await, 404).await;
        }
    }
);

database_test!(
    invalid_intentions_are_422_with_keyed_errors_and_change_nothing,
    |backend| async move {
        let app = spawn_app(backend).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (json!({}), vec!["payload", "type"]),
            (
                json!({"type": "entity.explode", "payload": {}}),
                vec!["type"],
            ),
            (json!({"type": 7, "payload": {}}), vec!["type"]),
            (
                json!({"type": "entity.create", "payload": "x"}),
                vec!["payload"],
            ),
            (
                json!({"type": "entity.create", "payload": {}}),
                vec!["payload.family", "payload.fields"],
            ),
            (
                json!({"type": "entity.create", "payload": {"family": "unicorn", "fields": {}}}),
                vec!["payload.family"],
            ),
            (
                json!({"type": "entity.create", "payload": {"family": "task", "fields": []}}),
                vec!["payload.fields"],
            ),
            (
                json!({"type": "entity.create", "payload": {"family": "task", "fields": {"bad code": 1}}}),
                vec!["payload.fields.bad code"],
            ),
            (
                json!({"type": "entity.update", "payload": {"fields": {"a": 1}}}),
                vec!["payload.entity_id"],
            ),
            (
                json!({"type": "entity.update", "payload": {"entity_id": "not-a-uuid", "fields": {"a": 1}}}),
                vec!["payload.entity_id"],
            ),
            (
                json!({"type": "entity.update", "payload": {"entity_id": uuid::Uuid::new_v4(), "fields": {}}}),
                vec!["payload.fields"],
            ),
            (
                json!({"type": "entity.delete", "payload": {}}),
                vec!["payload.entity_id"],
            ),
            (
                json!({"type": "entity.status_change", "payload": {"entity_id": uuid::Uuid::new_v4()}}),
                vec!["payload.status"],
            ),
        ];
        for (body, expected) in cases {
            let response = app.post_as("/core/api/v1/intentions", &token, &body).await;
            let error = json_with_status(response, 422).await;
            assert_eq!(keys(&error["errors"]), expected, "for {body}");
            for messages in error["errors"].as_object().unwrap().values() {
                assert!(!messages.as_array().unwrap().is_empty());
            }
        }
        let malformed = app
            .client
            .post(app.url("/core/api/v1/intentions"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body("{\"type\": ")
            .send()
            .await
            .unwrap();
        json_with_status(malformed, 400).await;
        assert_eq!(counts(&app).await, (0, 0), "nothing was written");
    }
);

database_test!(
    entities_of_another_tenant_are_404_viewers_and_guests_cannot_write_and_only_owners_change_others_entities,
    |backend| async move {
        let app = spawn_app(backend).await;
        let acme = app.create_tenant("acme");
        let globex = app.create_tenant("globex");
        let acme_editor = app.token(&acme, &uuid::Uuid::new_v4().to_string(), "editor").await;
        let globex_owner = app.token(&globex, &uuid::Uuid::new_v4().to_string(), "owner").await;
        let created = app.create_entity(&acme_editor, "contact", json!({"name": "Ada"})).await;
        let entity_id = created["entity_id"].as_str().unwrap();

        json_with_status(app.get_as(&format!("{ENTITIES}/{entity_id}"), &globex_owner).await, 404).await;
        for (kind, payload) in [
            ("entity.update", json!({"entity_id": entity_id, "fields": {"name": "Eve"}})),
            ("entity.status_change", json!({"entity_id": entity_id, "status": "archived"})),
            ("entity.delete", json!({"entity_id": entity_id})),
        ] {
            json_with_status(app.intention(&globex_owner, kind, payload).await, 404).await;
        }
        let listed = json_with_status(app.get_as(ENTITIES, &globex_owner).await, 200).await;
        assert_eq!(listed["data"], json!([]));

        let viewer = app.token(&acme, &uuid::Uuid::new_v4().to_string(), "viewer").await;
        let refused = json_with_status(
            app.intention(&viewer, "entity.update", json!({"entity_id": entity_id, "fields": {"name": "Eve"}}))
                .await,
            403,
        )
        .await;
        assert!(refused["message"].is_string());
        json_with_status(
            app.intention(&viewer, "entity.create", json!({"family": "task", "fields": {}})).await,
            403,
        )
        .await;
        let guest = app
            .token_of(&acme, &uuid::Uuid::new_v4().to_string(), "editor", "guest")
            .await;
        json_with_status(
            app.intention(&guest, "entity.create", json!({"family": "task", "fields": {}}))
                .await,
            403,
        )
        .await;
        // Someone else's entity: editors may not change it, owners may.
        let other_editor = app.token(&acme, &uuid::Uuid::new_v4().to_string(), "editor").await;
        for (kind, payload) in [
            ("entity.update", json!({"entity_id": entity_id, "fields": {"name": "Eve"}})),
            ("entity.status_change", json!({"entity_id": entity_id, "status": "archived"})),
            ("entity.delete", json!({"entity_id": entity_id})),
        ] {
            json_with_status(app.intention(&other_editor, kind, payload).await, 403).await;
        }
        let acme_owner = app.token(&acme, &uuid::Uuid::new_v4().to_string(), "owner").await;
        json_with_status(
            app.intention(&acme_owner, "entity.status_change", json!({"entity_id": entity_id, "status": "archived"}))
                .await,
            200,
        )
        .await;
        // Reading stays open to viewers.
        let entity = json_with_status(app.get_as(&format!("{ENTITIES}/{entity_id}"), &viewer).await, 200).await;
        assert_eq!(entity["data"]["fields"]["name"], "Ada");
        json_with_status(
            app.client
                .post(app.url("/core/api/v1/intentions"))
                .json(&json!({"type": "entity.delete", "payload": {"entity_id": entity_id}}))
                .send()
                .await
                .unwrap(),
            401,
        )
        .await;
    }
);

database_test!(
    the_log_records_tenant_actor_correlation_intention_and_a_gapless_tenant_sequence,
    |backend| async move {
        let app = spawn_app(backend).await;
        let acme = app.create_tenant("acme");
        let globex = app.create_tenant("globex");
        let user = uuid::Uuid::new_v4().to_string();
        let acme_token = app.token(&acme, &user, "editor").await;
        let globex_token = app
            .token(&globex, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let response = app
            .client
            .post(app.url("/core/api/v1/intentions"))
            .bearer_auth(&acme_token)
            .header("x-correlation-id", "trace-42")
            .json(&json!({"type": "entity.create", "payload": {"family": "task", "fields": {"a": 1, "b": 2}}}))
            .send()
            .await
            .unwrap();
        let first = json_with_status(response, 200).await;
        app.create_entity(&globex_token, "task", json!({"c": 3}))
            .await;
        app.create_entity(&acme_token, "task", json!({"d": 4}))
            .await;

        let database = &app.state().database;
        type LogRow = (
            String,
            i64,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<LogRow> = tessera_host::on_pool!(database, pool => sqlx::query_as(
                "SELECT tenant_id, sequence, event_type, actor_id, correlation_id, intention_id
                 FROM event_log ORDER BY position",
            )
            .fetch_all(pool)
            .await
            .unwrap());
        let acme_sequences: Vec<i64> = rows
            .iter()
            .filter(|row| row.0 == acme)
            .map(|row| row.1)
            .collect();
        assert_eq!(acme_sequences, [1, 2, 3, 4, 5]);
        let globex_sequences: Vec<i64> = rows
            .iter()
            .filter(|row| row.0 == globex)
            .map(|row| row.1)
            .collect();
        assert_eq!(globex_sequences, [1, 2]);
        let first_rows: Vec<_> = rows.iter().take(3).collect();
        for row in first_rows {
            assert_eq!(row.3.as_deref(), Some(user.as_str()));
            assert_eq!(row.4.as_deref(), Some("trace-42"));
            assert_eq!(row.5.as_deref(), first["data"]["id"].as_str());
        }
    }
);

database_test!(
    the_entity_list_filters_by_family_sorts_and_pages_on_the_offset_conventions,
    |backend| async move {
        let app = spawn_app(backend).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let empty = json_with_status(app.get_as(ENTITIES, &token).await, 200).await;
        assert_eq!(empty["data"], json!([]));
        assert_eq!(
            empty["meta"],
            json!({"current_page": 1, "last_page": 1, "per_page": 50, "total": 0})
        );
        let mut tasks = Vec::new();
        for index in 0..5 {
            let created = app.create_entity(&token, "task", json!({"n": index})).await;
            tasks.push(created["entity_id"].as_str().unwrap().to_owned());
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        app.create_entity(&token, "contact", json!({"name": "Ada"}))
            .await;
        // Touch the oldest task so it is the most recently updated.
        app.intention(
            &token,
            "entity.update",
            json!({"entity_id": tasks[0], "fields": {"n": 9}}),
        )
        .await;

        let ids = |body: &Value| -> Vec<String> {
            body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|entity| entity["id"].as_str().unwrap().to_owned())
                .collect()
        };
        let page = json_with_status(
            app.get_as(&format!("{ENTITIES}?family=task&per_page=2"), &token)
                .await,
            200,
        )
        .await;
        assert_eq!(
            ids(&page),
            [tasks[4].clone(), tasks[3].clone()],
            "newest first"
        );
        assert_eq!(
            page["meta"],
            json!({"current_page": 1, "last_page": 3, "per_page": 2, "total": 5})
        );
        let last = json_with_status(
            app.get_as(&format!("{ENTITIES}?family=task&per_page=2&page=3"), &token)
                .await,
            200,
        )
        .await;
        assert_eq!(ids(&last), [tasks[0].clone()]);
        let ascending = json_with_status(
            app.get_as(
                &format!("{ENTITIES}?family=task&direction=asc&per_page=1"),
                &token,
            )
            .await,
            200,
        )
        .await;
        assert_eq!(ids(&ascending), [tasks[0].clone()]);
        let by_update = json_with_status(
            app.get_as(
                &format!("{ENTITIES}?family=task&sort=updated_at&per_page=1"),
                &token,
            )
            .await,
            200,
        )
        .await;
        assert_eq!(ids(&by_update), [tasks[0].clone()]);
        let all = json_with_status(
            app.get_as(&format!("{ENTITIES}?per_page=1000"), &token)
                .await,
            200,
        )
        .await;
        assert_eq!(all["meta"]["per_page"], 100);
        assert_eq!(all["meta"]["total"], 6);
        let past =
            json_with_status(app.get_as(&format!("{ENTITIES}?page=7"), &token).await, 200).await;
        assert_eq!(past["data"], json!([]));
        json_with_status(
            app.get_as(&format!("{ENTITIES}?colour=red"), &token).await,
            400,
        )
        .await;
        let invalid = json_with_status(
            app.get_as(
                &format!("{ENTITIES}?sort=colour&direction=up&page=0"),
                &token,
            )
            .await,
            422,
        )
        .await;
        assert_eq!(
            keys(&invalid["errors"]),
            ["page"],
            "paging is checked first"
        );
        let invalid = json_with_status(
            app.get_as(&format!("{ENTITIES}?sort=colour&direction=up"), &token)
                .await,
            422,
        )
        .await;
        assert_eq!(keys(&invalid["errors"]), ["direction", "sort"]);
    }
);

database_test!(
    a_list_of_every_family_merges_the_families_in_order_on_every_page,
    |backend| async move {
        // Entities are indexed per family only: a list of every family is the merge of one
        // ordered read per family, and must page exactly like one sorted list.
        let app = spawn_app(backend).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let families = [
            "task", "contact", "deal", "contact", "company", "task", "contact",
        ];
        let mut created = Vec::new();
        for (index, family) in families.iter().enumerate() {
            let entity = app.create_entity(&token, family, json!({"n": index})).await;
            created.push(entity["entity_id"].as_str().unwrap().to_owned());
        }
        // Update two of the oldest, the first last: by update they come after the others.
        for index in [3, 0] {
            app.intention(
                &token,
                "entity.update",
                json!({"entity_id": created[index], "fields": {"n": 100 + index}}),
            )
            .await;
        }
        let mut by_update: Vec<String> = created
            .iter()
            .enumerate()
            .filter(|(index, _)| ![3, 0].contains(index))
            .map(|(_, id)| id.clone())
            .collect();
        by_update.extend([created[3].clone(), created[0].clone()]);

        for (sort, ascending) in [("created_at", created.clone()), ("updated_at", by_update)] {
            for direction in ["asc", "desc"] {
                let mut expected = ascending.clone();
                if direction == "desc" {
                    expected.reverse();
                }
                for per_page in [1, 2, 3, 7, 10] {
                    let mut listed = Vec::new();
                    for page in 1..=expected.len().div_ceil(per_page) + 1 {
                        let body = json_with_status(
                            app.get_as(
                                &format!(
                                    "{ENTITIES}?sort={sort}&direction={direction}&per_page={per_page}&page={page}"
                                ),
                                &token,
                            )
                            .await,
                            200,
                        )
                        .await;
                        assert_eq!(body["meta"]["total"], families.len());
                        listed.extend(
                            body["data"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .map(|entity| entity["id"].as_str().unwrap().to_owned()),
                        );
                    }
                    assert_eq!(listed, expected, "{sort} {direction}, {per_page} a page");
                }
            }
        }
    }
);

database_test!(
    concurrent_intentions_share_transactions_yet_each_sees_the_ones_before_it,
    |backend| async move {
        let app =
            crate::helpers::spawn_app_with(backend, crate::helpers::AppOptions::unlimited()).await;
        let tenant = app.create_tenant("acme");
        let token = app
            .token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
            .await;
        let created = app.create_entity(&token, "task", json!({"v": -1})).await;
        let entity_id = created["entity_id"].as_str().unwrap().to_owned();

        // 24 concurrent updates of one field, plus refused intentions mixed in.
        let mut requests = Vec::new();
        for value in 0..24 {
            let (client, url, token, entity_id) = (
                app.client.clone(),
                app.url("/core/api/v1/intentions"),
                token.clone(),
                entity_id.clone(),
            );
            requests.push(tokio::spawn(async move {
                let body = if value % 6 == 5 {
                    json!({"type": "entity.status_change", "payload": {"entity_id": uuid::Uuid::new_v4(), "status": "done"}})
                } else {
                    json!({"type": "entity.update", "payload": {"entity_id": entity_id, "fields": {"v": value}}})
                };
                let response = client.post(&url).bearer_auth(&token).json(&body).send().await.unwrap();
                (value, response.status().as_u16(), response.json::<Value>().await.unwrap())
            }));
        }
        let mut pairs = Vec::new();
        for request in requests {
            let (value, status, body) = request.await.unwrap();
            if value % 6 == 5 {
                assert_eq!(status, 404, "a refused intention fails alone: {body}");
                continue;
            }
            assert_eq!(status, 200, "{body}");
            let event = &body["data"]["events"][0];
            assert_eq!(event["type"], "entity.field_updated");
            assert_eq!(event["new_value"], value);
            pairs.push((event["old_value"].as_i64().unwrap(), value));
        }
        // The updates form one chain from -1: each saw exactly the value written before it.
        let mut current = -1;
        let mut chain = 0;
        while let Some(&(_, next)) = pairs.iter().find(|(old, _)| *old == current) {
            current = next;
            chain += 1;
        }
        assert_eq!(
            chain, 20,
            "no update was lost or saw a stale value: {pairs:?}"
        );
        let entity = json_with_status(
            app.get_as(&format!("{ENTITIES}/{entity_id}"), &token).await,
            200,
        )
        .await;
        assert_eq!(entity["data"]["fields"]["v"], current);
        let (events, _) = counts(&app).await;
        assert_eq!(
            events,
            2 + 20,
            "created, field_set, and one event per accepted update"
        );
    }
);
