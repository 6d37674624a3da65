//! Search: prefix, field:value, highlights, relevance, family filter, paging, isolation,
//! re-indexing on update, deletion — through the API (entities made by intentions, the index
//! followed by polling) and on the index itself (batches applied straight to the projection).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tessera_host::core::events::StoredEvent;
use tessera_host::core::projections::Projection;
use tessera_host::core::search::query::parse;
use tessera_host::core::search::{IndexQuery, SearchProjection, search};
use tessera_host::storage::Database;

use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, json_with_status, spawn_app, spawn_app_with,
};

const SEARCH: &str = "/core/api/v1/search";

/// A tenant and an editor's token for it.
async fn editor(app: &TestApp, slug: &str) -> String {
    let tenant = app.create_tenant(slug);
    app.token(&tenant, &uuid::Uuid::new_v4().to_string(), "editor")
        .await
}

fn search_path(query: &str) -> String {
    let mut path = format!("{SEARCH}?");
    path.push_str(query);
    path
}

fn q(text: &str) -> String {
    search_path(&format!("q={}", urlencode(text)))
}

fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// GETs `path` (200) every 20 ms until `ready` holds, for up to 10 s: the index follows the
/// log asynchronously.
async fn search_until(
    app: &TestApp,
    token: &str,
    path: &str,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body = json_with_status(app.get_as(path, token).await, 200).await;
        if ready(&body) {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "{path} never gave the expected result; last: {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn total(body: &Value) -> u64 {
    body["meta"]["total"].as_u64().unwrap()
}

fn ids(body: &Value) -> Vec<&str> {
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| result["id"].as_str().unwrap())
        .collect()
}

fn entity_id(created: &Value) -> String {
    created["entity_id"].as_str().unwrap().to_owned()
}

fn result_for<'a>(body: &'a Value, id: &str) -> &'a Value {
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|result| result["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {body}"))
}

database_test!(
    prefixes_and_field_terms_find_entities_with_highlights_of_the_matched_fields,
    |backend| async move {
        let app = spawn_app(backend).await;
        let token = editor(&app, "acme").await;
        let ada = entity_id(
            &app.create_entity(
                &token,
                "contact",
                json!({"name": "Ada Lovelace", "email": "ada@example.com"}),
            )
            .await,
        );
        let grace = entity_id(
            &app.create_entity(
                &token,
                "contact",
                json!({"name": "Grace Hopper", "email": "grace@example.com", "notes": "Admired <Lovelace> & Babbage"}),
            )
            .await,
        );

        let body = search_until(&app, &token, &q("lov"), |body| total(body) == 2).await;
        let first = result_for(&body, &ada);
        assert_eq!(
            first.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["id", "family_code", "fields", "score", "highlights"]
        );
        assert_eq!(first["family_code"], "contact");
        assert_eq!(
            first["fields"],
            json!({"name": "Ada Lovelace", "email": "ada@example.com"})
        );
        assert!(first["score"].as_f64().unwrap() > 0.0, "{first}");
        assert_eq!(
            first["highlights"],
            json!({"name": "Ada <mark>Lovelace</mark>"})
        );
        assert_eq!(
            result_for(&body, &grace)["highlights"],
            json!({"notes": "Admired &lt;<mark>Lovelace</mark>&gt; &amp; Babbage"}),
            "only the matching field, HTML-escaped"
        );
        assert_eq!(body["meta"], json!({"total": 2, "page": 1, "per_page": 20}));

        // Case does not matter, whole words match too, and every term must match.
        let exact = json_with_status(app.get_as(&q("LOVELACE ada"), &token).await, 200).await;
        assert_eq!(ids(&exact), [ada.as_str()]);
        assert_eq!(
            exact["data"][0]["highlights"],
            json!({"name": "<mark>Ada</mark> <mark>Lovelace</mark>", "email": "<mark>ada</mark>@example.com"})
        );
        let none = json_with_status(app.get_as(&q("lov zzz"), &token).await, 200).await;
        assert_eq!(none["data"], json!([]));
        assert_eq!(total(&none), 0);
        // A prefix must start a word: "ove" is inside "Lovelace", not its start.
        assert_eq!(
            total(&json_with_status(app.get_as(&q("ove"), &token).await, 200).await),
            0
        );

        // field:value matches in that field only, as a prefix.
        let in_name = json_with_status(app.get_as(&q("name:lov"), &token).await, 200).await;
        assert_eq!(ids(&in_name), [ada.as_str()]);
        assert_eq!(
            in_name["data"][0]["highlights"],
            json!({"name": "Ada <mark>Lovelace</mark>"})
        );
        assert_eq!(
            total(&json_with_status(app.get_as(&q("notes:ada"), &token).await, 200).await),
            0
        );
        // Combined terms narrow the result.
        let by_domain = json_with_status(app.get_as(&q("email:exam"), &token).await, 200).await;
        assert_eq!(total(&by_domain), 2);
        let narrowed =
            json_with_status(app.get_as(&q("email:exam name:gra"), &token).await, 200).await;
        assert_eq!(ids(&narrowed), [grace.as_str()]);
        assert_eq!(
            narrowed["data"][0]["highlights"],
            json!({"name": "<mark>Grace</mark> Hopper", "email": "grace@<mark>example</mark>.com"})
        );
        assert_eq!(
            total(
                &json_with_status(
                    app.get_as(&q("email:exam name:hop notes:zzz"), &token)
                        .await,
                    200
                )
                .await
            ),
            0
        );
        // A value of several words needs all of them in the field.
        let address =
            json_with_status(app.get_as(&q("email:ada@example.com"), &token).await, 200).await;
        assert_eq!(ids(&address), [ada.as_str()]);
        let quoted =
            json_with_status(app.get_as(&q(r#"name:"grace hop""#), &token).await, 200).await;
        assert_eq!(ids(&quoted), [grace.as_str()]);
        assert_eq!(
            total(&json_with_status(app.get_as(&q("name:ada@example"), &token).await, 200).await),
            0
        );
        // Query syntax of the engines underneath is plain text here.
        for text in [
            r#"ada" OR "grace"#,
            "lov*",
            "NEAR(ada grace)",
            "'ada' | grace",
            "-ada",
        ] {
            let body = json_with_status(app.get_as(&q(text), &token).await, 200).await;
            assert!(total(&body) <= 2, "{text}: {body}");
        }
        app.stop().await;
    }
);

database_test!(
    better_matches_rank_first_and_scores_descend,
    |backend| async move {
        let app = spawn_app(backend).await;
        let token = editor(&app, "acme").await;
        let weak = entity_id(
            &app.create_entity(
                &token,
                "contact",
                json!({
                    "name": "Bob Stone",
                    "notes": "met ada once at a long conference about engines, looms, tables and several other unrelated topics"
                }),
            )
            .await,
        );
        let strong = entity_id(
            &app.create_entity(
                &token,
                "contact",
                json!({"name": "Ada Byron", "notes": "Ada, called Ada"}),
            )
            .await,
        );

        let body = search_until(&app, &token, &q("ada"), |body| total(body) == 2).await;
        assert_eq!(ids(&body), [strong.as_str(), weak.as_str()]);
        let scores: Vec<f64> = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|result| result["score"].as_f64().unwrap())
            .collect();
        assert!(scores[0] > scores[1], "{scores:?}");
        app.stop().await;
    }
);

database_test!(
    the_family_filter_and_paging_follow_the_list_conventions,
    |backend| async move {
        let app = spawn_app(backend).await;
        let token = editor(&app, "acme").await;
        let mut contacts = Vec::new();
        for index in 0..5 {
            let created = app
                .create_entity(
                    &token,
                    "contact",
                    json!({"name": format!("Acme person {index}")}),
                )
                .await;
            contacts.push(entity_id(&created));
        }
        let mut companies = Vec::new();
        for name in ["Acme Corporation", "Acme Holdings"] {
            let created = app
                .create_entity(&token, "company", json!({"name": name}))
                .await;
            companies.push(entity_id(&created));
        }

        let all = search_until(&app, &token, &q("acme"), |body| total(body) == 7).await;
        let families: Vec<&str> = all["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|result| result["family_code"].as_str().unwrap())
            .collect();
        assert_eq!(families.iter().filter(|f| **f == "company").count(), 2);
        assert_eq!(families.iter().filter(|f| **f == "contact").count(), 5);

        let only_companies = json_with_status(
            app.get_as(&search_path("q=acme&family=company"), &token)
                .await,
            200,
        )
        .await;
        let mut found: Vec<&str> = ids(&only_companies);
        found.sort_unstable();
        let mut expected: Vec<&str> = companies.iter().map(String::as_str).collect();
        expected.sort_unstable();
        assert_eq!(found, expected);
        assert_eq!(total(&only_companies), 2);
        let no_deals = json_with_status(
            app.get_as(&search_path("q=acme&family=deal"), &token).await,
            200,
        )
        .await;
        assert_eq!((no_deals["data"].clone(), total(&no_deals)), (json!([]), 0));

        // Pages of 2 walk all seven results once, in score order.
        let mut walked = Vec::new();
        for page in 1..=4 {
            let body = json_with_status(
                app.get_as(
                    &search_path(&format!("q=acme&per_page=2&page={page}")),
                    &token,
                )
                .await,
                200,
            )
            .await;
            assert_eq!(
                body["meta"],
                json!({"total": 7, "page": page, "per_page": 2})
            );
            assert_eq!(
                body["data"].as_array().unwrap().len(),
                if page < 4 { 2 } else { 1 }
            );
            walked.extend(ids(&body).into_iter().map(str::to_owned));
        }
        walked.sort_unstable();
        walked.dedup();
        assert_eq!(walked.len(), 7);
        let past_the_end = json_with_status(
            app.get_as(&search_path("q=acme&per_page=2&page=9"), &token)
                .await,
            200,
        )
        .await;
        assert_eq!(past_the_end["data"], json!([]));
        assert_eq!(
            past_the_end["meta"],
            json!({"total": 7, "page": 9, "per_page": 2})
        );
        let clamped = json_with_status(
            app.get_as(&search_path("q=acme&per_page=1000"), &token)
                .await,
            200,
        )
        .await;
        assert_eq!(clamped["meta"]["per_page"], 100);
        assert_eq!(clamped["data"].as_array().unwrap().len(), 7);

        // Refusals.
        json_with_status(
            app.get_as(&search_path("q=acme&colour=red"), &token).await,
            400,
        )
        .await;
        for query in ["", "family=contact", "q=", "q=%20%20"] {
            let missing =
                json_with_status(app.get_as(&search_path(query), &token).await, 422).await;
            assert_eq!(missing["errors"], json!({"q": ["required"]}), "{query}");
            assert!(missing["message"].is_string());
        }
        let zeros = json_with_status(
            app.get_as(&search_path("q=acme&page=0&per_page=0"), &token)
                .await,
            422,
        )
        .await;
        assert_eq!(
            zeros["errors"],
            json!({"page": ["min:1"], "per_page": ["min:1"]})
        );
        let both = json_with_status(app.get_as(&search_path("page=0"), &token).await, 422).await;
        assert_eq!(
            both["errors"],
            json!({"page": ["min:1"], "q": ["required"]})
        );
        json_with_status(app.get(&q("acme")).await, 401).await;
        // Nothing searchable in q: nothing matches.
        let symbols = json_with_status(app.get_as(&q("!!! ::"), &token).await, 200).await;
        assert_eq!((symbols["data"].clone(), total(&symbols)), (json!([]), 0));
        app.stop().await;
    }
);

database_test!(
    tenants_never_see_each_others_documents,
    |backend| async move {
        let app = spawn_app(backend).await;
        let acme = editor(&app, "acme").await;
        let globex = editor(&app, "globex").await;
        let empty = editor(&app, "initech").await;
        let fields = json!({"name": "Ada Lovelace", "email": "ada@example.com"});
        let mine = entity_id(&app.create_entity(&acme, "contact", fields.clone()).await);
        let theirs = entity_id(&app.create_entity(&globex, "contact", fields).await);

        for (token, id) in [(&acme, &mine), (&globex, &theirs)] {
            for text in ["ada", "name:lov", "email:example ada"] {
                let body = search_until(&app, token, &q(text), |body| total(body) >= 1).await;
                assert_eq!(ids(&body), [id.as_str()], "{text}");
                assert_eq!(total(&body), 1);
            }
        }
        for text in ["ada", "lov", "a", "name:ada"] {
            let body = json_with_status(app.get_as(&q(text), &empty).await, 200).await;
            assert_eq!(
                (body["data"].clone(), total(&body)),
                (json!([]), 0),
                "{text}"
            );
        }
        app.stop().await;
    }
);

database_test!(
    updates_reindex_and_deletions_remove_the_document,
    |backend| async move {
        let app = spawn_app(backend).await;
        let token = editor(&app, "acme").await;
        let id = entity_id(
            &app.create_entity(
                &token,
                "contact",
                json!({"name": "Ada Lovelace", "email": "ada@example.com"}),
            )
            .await,
        );
        search_until(&app, &token, &q("lovelace"), |body| total(body) == 1).await;

        json_with_status(
            app.intention(
                &token,
                "entity.update",
                json!({"entity_id": id, "fields": {"name": "Grace Hopper"}}),
            )
            .await,
            200,
        )
        .await;
        let body = search_until(&app, &token, &q("hop"), |body| total(body) == 1).await;
        assert_eq!(
            body["data"][0]["fields"],
            json!({"name": "Grace Hopper", "email": "ada@example.com"})
        );
        let old = json_with_status(app.get_as(&q("lovelace"), &token).await, 200).await;
        assert_eq!(total(&old), 0, "the old words no longer match: {old}");
        let kept = json_with_status(app.get_as(&q("email:ada"), &token).await, 200).await;
        assert_eq!(ids(&kept), [id.as_str()]);

        json_with_status(
            app.intention(&token, "entity.delete", json!({"entity_id": id}))
                .await,
            200,
        )
        .await;
        search_until(&app, &token, &q("hop"), |body| total(body) == 0).await;
        let gone = json_with_status(app.get_as(&q("ada"), &token).await, 200).await;
        assert_eq!(gone["data"], json!([]));
        app.stop().await;
    }
);

database_test!(
    the_operator_sets_how_many_matches_a_search_ranks_and_counts,
    |backend| async move {
        let app = spawn_app_with(
            backend,
            AppOptions::unlimited_and(|config| config.search.max_candidates = 2),
        )
        .await;
        let token = editor(&app, "acme").await;
        for n in 0..3 {
            app.create_entity(
                &token,
                "contact",
                json!({"name": format!("Acme person{n}")}),
            )
            .await;
            search_until(&app, &token, &q(&format!("person{n}")), |body| {
                total(body) == 1
            })
            .await;
        }
        let body = json_with_status(app.get_as(&q("acme"), &token).await, 200).await;
        assert_eq!(body["meta"], json!({"total": 2, "page": 1, "per_page": 20}));
        assert_eq!(body["data"].as_array().unwrap().len(), 2);
        app.stop().await;
    }
);

// The index itself: batches applied straight to the projection, without the API.

/// A fresh, migrated database without a server (and so without workers).
async fn index_database(backend: Backend) -> (TestDatabase, Database) {
    let test_database = TestDatabase::new(backend).await;
    let database = Database::connect_and_migrate(&test_database.database_config())
        .await
        .expect("migrating the test database");
    (test_database, database)
}

/// SQLite's page statement looks each row of the page up in `search_documents` by rowid, after
/// ranking the candidate window: it never walks the tenant's documents (a plan that read every
/// document of the tenant per search, 43 ms at a million contacts, BENCHMARKS.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_pages_look_documents_up_by_rowid_from_the_window() {
    let (_guard, database) = index_database(Backend::Sqlite).await;
    let mut log = Log::new();
    for n in 0..500 {
        let city = if n % 10 == 0 { "London" } else { "Paris" };
        log.create(
            "t1",
            &format!("c{n}"),
            "contact",
            json!({"name": format!("Ada {n}"), "city": city}),
        );
    }
    log.apply(&database).await;
    let tessera_host::storage::Pool::Sqlite(pool) = database.pool() else {
        panic!("a SQLite database");
    };
    let plan: Vec<(i64, i64, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "EXPLAIN QUERY PLAN {}",
        tessera_host::core::search::SQLITE_PAGE_STATEMENT
    )))
    .bind("\"00000001wlondon\"")
    .bind(500_i64)
    .bind(20_i64)
    .bind(0_i64)
    .bind(1_i64)
    .bind(1_i64)
    .fetch_all(pool)
    .await
    .unwrap();
    let steps: Vec<&str> = plan.iter().map(|step| step.3.as_str()).collect();
    assert!(
        steps.contains(&"SEARCH d USING INTEGER PRIMARY KEY (rowid=?)"),
        "{steps:?}"
    );
    assert!(
        !steps
            .iter()
            .any(|step| step.starts_with("SCAN d") || step.contains("search_documents")),
        "{steps:?}"
    );
    let page = find(&database, "t1", "london", None).await;
    assert_eq!(page.1, 50);
    database.close().await;
}

struct Log {
    events: Vec<StoredEvent>,
}

impl Log {
    fn new() -> Self {
        Self { events: Vec::new() }
    }

    fn push(&mut self, tenant: &str, entity: &str, event_type: &str, data: Value) -> &mut Self {
        let position = self.events.len() as i64 + 1;
        self.events.push(StoredEvent {
            position,
            transaction_id: 0,
            id: uuid::Uuid::new_v4().to_string(),
            tenant_id: tenant.to_owned(),
            sequence: position,
            event_type: event_type.to_owned(),
            entity_id: Some(entity.to_owned()),
            intention_id: None,
            actor_id: None,
            correlation_id: None,
            depth: 0,
            data: data.to_string(),
            occurred_at: "2026-11-21T10:00:00.000000Z".to_owned(),
            entity_state: None,
            traceparent: None,
            group_offset: 0,
        });
        self
    }

    fn create(&mut self, tenant: &str, entity: &str, family: &str, fields: Value) -> &mut Self {
        self.push(tenant, entity, "entity.created", json!({"family": family}));
        for (field, value) in fields.as_object().unwrap() {
            self.set(tenant, entity, field, value.clone());
        }
        self
    }

    fn set(&mut self, tenant: &str, entity: &str, field: &str, value: Value) -> &mut Self {
        self.push(
            tenant,
            entity,
            "entity.field_set",
            json!({"field": field, "value": value}),
        )
    }

    /// Applies the events pushed so far as one batch, and forgets them.
    async fn apply(&mut self, database: &Database) {
        let mut tx = database.begin().await.unwrap();
        SearchProjection.apply(&mut tx, &self.events).await.unwrap();
        tx.commit().await.unwrap();
        self.events.clear();
    }
}

/// The candidate window of the index-level searches (the default of `SearchLimits`).
const WINDOW: i64 = 500;

/// The entity ids and total of a search in `tenant`.
async fn find(
    database: &Database,
    tenant: &str,
    text: &str,
    family: Option<&str>,
) -> (Vec<String>, u64) {
    find_page(database, tenant, text, family, (100, 0), WINDOW).await
}

/// The entity ids and total of one page (`limit`, `offset`) of a search in `tenant`, in the
/// family if one is given, with a candidate window of `window` matches.
async fn find_page(
    database: &Database,
    tenant: &str,
    text: &str,
    family: Option<&str>,
    (limit, offset): (i64, i64),
    window: i64,
) -> (Vec<String>, u64) {
    let terms = parse(text);
    let (hits, total) = search(
        database,
        &IndexQuery {
            tenant_id: tenant,
            terms: &terms,
            family,
            limit,
            offset,
            window,
        },
    )
    .await
    .unwrap();
    (hits.into_iter().map(|hit| hit.entity_id).collect(), total)
}

database_test!(
    a_batch_is_folded_per_entity_and_other_events_are_ignored,
    |backend| async move {
        let (_guard, database) = index_database(backend).await;
        let mut log = Log::new();
        log.create("t1", "a", "contact", json!({"name": "Ada Lovelace", "age": 36, "tags": ["math", {"k": "poetry"}], "flag": true}))
            .create("t1", "b", "contact", json!({"name": "Temporary"}))
            .create("t2", "a2", "contact", json!({"name": "Ada Lovelace"}))
            .push("t1", "a", "entity.field_updated", json!({"field": "name", "old_value": "Ada Lovelace", "new_value": "Ada King"}))
            .push("t1", "a", "entity.status_changed", json!({"old_status": "new", "new_status": "done"}))
            .push("t1", "b", "entity.deleted", json!({"family": "contact"}))
            .push("t1", "x", "inbox.item_read", json!({"item_id": "whatever"}))
            .push("t1", "y", "notification.created", json!({"recipient_id": "u", "title": "Ada"}));
        log.apply(&database).await;

        assert_eq!(
            find(&database, "t1", "ada king", None).await,
            (vec!["a".to_owned()], 1)
        );
        assert_eq!(
            find(&database, "t1", "lovelace", None).await.1,
            0,
            "updated in the same batch"
        );
        assert_eq!(
            find(&database, "t1", "temp", None).await.1,
            0,
            "deleted in the same batch"
        );
        for text in ["36", "math", "poet", "tags:poetry", "age:3", "flag:true"] {
            assert_eq!(find(&database, "t1", text, None).await.0, ["a"], "{text}");
        }
        assert_eq!(find(&database, "t2", "ada", None).await.0, ["a2"]);
        assert_eq!(find(&database, "t3", "ada", None).await.1, 0);

        // A later batch changes and deletes documents written by an earlier one.
        log.set("t1", "a", "name", json!("Grace")).push(
            "t2",
            "a2",
            "entity.deleted",
            json!({"family": "contact"}),
        );
        log.apply(&database).await;
        assert_eq!(find(&database, "t1", "king", None).await.1, 0);
        assert_eq!(
            find(&database, "t1", "grace math", Some("contact")).await.0,
            ["a"]
        );
        assert_eq!(find(&database, "t1", "grace", Some("deal")).await.1, 0);
        assert_eq!(find(&database, "t2", "ada", None).await.1, 0);

        // A rebuild starts from nothing.
        let mut tx = database.begin().await.unwrap();
        assert!(SearchProjection.reset(&mut tx).await.unwrap());
        tx.commit().await.unwrap();
        assert_eq!(find(&database, "t1", "grace", None).await.1, 0);
        log.create("t1", "a", "contact", json!({"name": "Grace"}));
        log.apply(&database).await;
        assert_eq!(find(&database, "t1", "grace", None).await.0, ["a"]);
        database.close().await;
    }
);

database_test!(
    counts_are_exact_across_pages_and_tenants,
    |backend| async move {
        let (_guard, database) = index_database(backend).await;
        let mut log = Log::new();
        for index in 0..120 {
            let tenant = if index % 3 == 0 { "other" } else { "mine" };
            log.create(
                tenant,
                &format!("e{index}"),
                if index % 2 == 0 { "deal" } else { "task" },
                json!({"title": format!("Quarterly review {index}")}),
            );
        }
        log.apply(&database).await;
        assert_eq!(find(&database, "mine", "quar rev", None).await.1, 80);
        assert_eq!(find(&database, "other", "q", None).await.1, 40);
        assert_eq!(find(&database, "mine", "q", Some("deal")).await.1, 40);
        let mut seen = Vec::new();
        for page in 0..9 {
            let (hits, total) = find_page(
                &database,
                "mine",
                "quarterly",
                None,
                (10, page * 10),
                WINDOW,
            )
            .await;
            assert_eq!(total, 80, "page {page}");
            assert_eq!(hits.len(), if page < 8 { 10 } else { 0 });
            seen.extend(hits);
        }
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 80);
        database.close().await;
    }
);

database_test!(
    a_query_matching_more_than_its_window_ranks_pages_and_counts_the_window_alone,
    |backend| async move {
        let (_guard, database) = index_database(backend).await;
        let mut log = Log::new();
        // One batch each, in this order: the window is the first matches in the index's order.
        for n in 0..5 {
            let name = match n {
                // The strongest on both databases: the shortest document (both ranks
                // normalise by length; SQLite's counts a term once per document).
                4 => "Window Zebra".to_owned(),
                n => format!("Window person {n}"),
            };
            log.create("t1", &format!("w{n}"), "contact", json!({ "name": name }));
            log.apply(&database).await;
        }
        let everything = find_page(&database, "t1", "window", None, (100, 0), WINDOW).await;
        assert_eq!(everything.1, 5);
        assert_eq!(
            everything.0[0], "w4",
            "the strongest match first: {everything:?}"
        );

        // A window of three: the three indexed first, ranked, paged and counted alone.
        let (mut windowed, total) = find_page(&database, "t1", "window", None, (100, 0), 3).await;
        assert_eq!(total, 3);
        windowed.sort_unstable();
        assert_eq!(windowed, ["w0", "w1", "w2"]);
        let (first_page, total) = find_page(&database, "t1", "window", None, (2, 0), 3).await;
        assert_eq!((first_page.len(), total), (2, 3));
        let (second_page, total) = find_page(&database, "t1", "window", None, (2, 2), 3).await;
        assert_eq!((second_page.len(), total), (1, 3));
        assert!(!first_page.contains(&second_page[0]));
        let past_the_window = find_page(&database, "t1", "window", None, (2, 4), 3).await;
        assert_eq!(past_the_window, (Vec::new(), 3));
        // A narrower query reaches what the window left out.
        assert_eq!(
            find_page(&database, "t1", "window zebra", None, (100, 0), 3).await,
            (vec!["w4".to_owned()], 1)
        );
        database.close().await;
    }
);

database_test!(
    prefixes_longer_than_the_prefix_indexes_find_every_word_they_begin,
    |backend| async move {
        let (_guard, database) = index_database(backend).await;
        let mut log = Log::new();
        let many_words: Vec<String> = (0..40).map(|n| format!("zetaword{n}")).collect();
        log.create(
            "t1",
            "a",
            "contact",
            json!({"name": "Ada Lovelace", "notes": many_words.join(" ")}),
        )
        .create("t1", "b", "contact", json!({"name": "Bea Loveless"}))
        .create("t1", "c", "contact", json!({"name": "Cy Love"}))
        .create("t2", "d", "contact", json!({"name": "Di Lovelace"}));
        log.apply(&database).await;
        let sorted = |(mut ids, total): (Vec<String>, u64)| {
            ids.sort_unstable();
            (ids, total)
        };
        let found = |ids: &[&str]| {
            (
                ids.iter().map(|id| (*id).to_owned()).collect(),
                ids.len() as u64,
            )
        };
        // Short prefixes come from FTS5's prefix indexes, longer ones through the dictionary.
        assert_eq!(
            sorted(find(&database, "t1", "lov", None).await),
            found(&["a", "b", "c"])
        );
        assert_eq!(
            sorted(find(&database, "t1", "love", None).await),
            found(&["a", "b", "c"])
        );
        assert_eq!(
            sorted(find(&database, "t1", "lovel", None).await),
            found(&["a", "b"])
        );
        assert_eq!(find(&database, "t1", "lovela", None).await, found(&["a"]));
        assert_eq!(
            sorted(find(&database, "t1", "name:lovel", None).await),
            found(&["a", "b"])
        );
        assert_eq!(find(&database, "t1", "notes:lovel", None).await, found(&[]));
        assert_eq!(find(&database, "t1", "lovex", None).await, found(&[]));
        assert_eq!(find(&database, "t2", "lovel", None).await, found(&["d"]));
        // A prefix of more words than are expanded, and one of fewer.
        assert_eq!(find(&database, "t1", "zetaword", None).await, found(&["a"]));
        assert_eq!(
            find(&database, "t1", "zetaword3", None).await,
            found(&["a"])
        );
        assert_eq!(
            find(&database, "t1", "zetaword39 ada", None).await,
            found(&["a"])
        );
        // A field term finds the words in that field alone.
        assert_eq!(
            find(&database, "t1", "notes:zetaword39", None).await,
            found(&["a"])
        );
        assert_eq!(
            find(&database, "t1", "name:zetaword39", None).await,
            found(&[])
        );
        // Words of deleted and changed documents: gone from the answers, and on SQLite from
        // the dictionary once no document holds them (it never grows past the live words).
        log.push("t1", "b", "entity.deleted", json!({"family": "contact"}));
        log.push(
            "t1",
            "a",
            "entity.field_updated",
            json!({"field": "notes", "old_value": many_words.join(" "), "new_value": "zetaword7"}),
        );
        log.apply(&database).await;
        assert_eq!(find(&database, "t1", "lovel", None).await, found(&["a"]));
        assert_eq!(find(&database, "t1", "lovele", None).await, found(&[]));
        assert_eq!(find(&database, "t1", "zetaword3", None).await, found(&[]));
        assert_eq!(find(&database, "t1", "zetaword", None).await, found(&["a"]));
        if backend == Backend::Sqlite {
            let listed: Vec<String> = tessera_host::on_pool!(&database, pool => sqlx::query_scalar(
                "SELECT term FROM search_terms WHERE term LIKE '%loveless' OR term LIKE '%zetaword%'
                 ORDER BY term",
            )
            .fetch_all(pool)
            .await
            .unwrap());
            // Words alone: a field term is expanded through them.
            assert_eq!(listed, ["00000001wzetaword7"]);
        }
        database.close().await;
    }
);
