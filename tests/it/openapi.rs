//! The OpenAPI document the host serves.

use serde_json::{Value, json};
use tessera_host::http::schema::{UUID, trimmed, trimmed_one_of, trimmed_text};

use crate::components::{ENGINES, install_engines};
use crate::helpers::{
    AppOptions, Backend, TestDatabase, json_with_status, spawn_app, spawn_app_with,
};

#[tokio::test]
async fn the_openapi_document_is_3_1_and_lists_every_endpoint() {
    let app = spawn_app(Backend::Sqlite).await;
    let document = app.openapi().await;
    assert!(
        document["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        document["openapi"]
    );
    assert_eq!(document["info"]["version"], env!("CARGO_PKG_VERSION"));
    let paths = document["paths"].as_object().expect("paths");
    for path in [
        "/auth/api/health",
        "/core/api/health",
        "/core/api/health/extended",
    ] {
        assert!(paths[path]["get"].is_object(), "{path} is documented");
    }
    for (method, path) in [
        ("get", "/core/api/v1/engines"),
        ("get", "/core/api/v1/families"),
        ("post", "/core/api/v1/families"),
        ("get", "/core/api/v1/families/{code}"),
        ("get", "/core/api/metrics"),
        ("post", "/core/api/v1/intentions"),
        ("get", "/core/api/v1/entities"),
        ("get", "/core/api/v1/entities/{id}"),
        ("get", "/core/api/v1/timeline"),
        ("get", "/core/api/v1/inbox"),
        ("post", "/core/api/v1/inbox/{id}/read"),
        ("get", "/core/api/v1/search"),
        ("get", "/core/api/v1/workflows"),
        ("post", "/core/api/v1/workflows"),
        ("get", "/core/api/v1/workflows/{id}"),
        ("patch", "/core/api/v1/workflows/{id}"),
        ("delete", "/core/api/v1/workflows/{id}"),
        ("post", "/core/api/v1/workflows/{id}/activate"),
        ("post", "/core/api/v1/workflows/{id}/deactivate"),
        ("get", "/core/api/v1/workflows/{id}/runs"),
        ("post", "/auth/api/v1/auth/login"),
        ("post", "/auth/api/v1/auth/refresh"),
        ("post", "/auth/api/v1/auth/logout"),
        ("post", "/auth/api/v1/auth/logout/all"),
        ("get", "/auth/api/v1/auth/me"),
        ("post", "/auth/api/v1/auth/switch-context"),
        ("get", "/auth/api/v1/auth/config"),
        ("get", "/auth/.well-known/jwks.json"),
        ("post", "/auth/api/v1/auth/mfa/totp/setup"),
        ("post", "/auth/api/v1/auth/mfa/totp/confirm"),
        ("post", "/auth/api/v1/auth/mfa/verify"),
        ("delete", "/auth/api/v1/auth/mfa/totp"),
        ("post", "/auth/api/v1/auth/password/change"),
        ("post", "/auth/api/v1/auth/password/forgot"),
        ("post", "/auth/api/v1/auth/password/reset"),
        ("post", "/auth/api/v1/auth/mfa/otp/enable"),
        ("post", "/auth/api/v1/auth/mfa/otp/confirm"),
        ("post", "/auth/api/v1/auth/mfa/otp/send"),
        ("delete", "/auth/api/v1/auth/mfa/otp"),
        ("post", "/auth/api/v1/auth/magic-link"),
        ("post", "/auth/api/v1/auth/magic-link/verify"),
        ("post", "/auth/api/v1/auth/mfa/webauthn/register/start"),
        ("post", "/auth/api/v1/auth/mfa/webauthn/register/finish"),
        ("get", "/auth/api/v1/auth/mfa/webauthn/credentials"),
        ("delete", "/auth/api/v1/auth/mfa/webauthn/credentials/{id}"),
        ("post", "/auth/api/v1/auth/mfa/webauthn/challenge"),
        ("post", "/auth/api/v1/auth/passkey/start"),
        ("post", "/auth/api/v1/auth/passkey/finish"),
        ("get", "/auth/api/v1/audit"),
        ("post", "/core/api/internal/orchestration/provision/tenant"),
        ("post", "/core/api/internal/orchestration/provision/user"),
        ("post", "/core/api/internal/orchestration/deprovision/user"),
        (
            "post",
            "/core/api/internal/orchestration/deprovision/tenant",
        ),
        (
            "get",
            "/core/api/internal/orchestration/provision/tenant/{tenantId}/status",
        ),
        (
            "post",
            "/core/api/internal/orchestration/provision/tenant/{tenantId}/retry",
        ),
        (
            "post",
            "/{engine}/api/internal/{engine_again}/provision/tenant",
        ),
        (
            "post",
            "/{engine}/api/internal/{engine_again}/deprovision/tenant",
        ),
        (
            "post",
            "/{engine}/api/internal/{engine_again}/provision/user",
        ),
        (
            "post",
            "/{engine}/api/internal/{engine_again}/deprovision/user",
        ),
    ] {
        assert!(
            paths[path][method].is_object(),
            "{method} {path} is documented"
        );
    }
    for method in ["get", "post", "put", "patch", "delete"] {
        assert!(
            paths["/{engine}/api/v1/{path}"][method].is_object(),
            "the engine route documents {method}"
        );
    }
    assert!(document["components"]["securitySchemes"]["bearer"].is_object());
    let mut operation_ids: Vec<&str> = paths
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .filter_map(|operation| operation["operationId"].as_str())
        .collect();
    let count = operation_ids.len();
    operation_ids.sort_unstable();
    operation_ids.dedup();
    assert_eq!(operation_ids.len(), count, "operation ids are unique");
}

/// The answers the conventions give on every route are in the document: clients (and
/// schemathesis) see every status an operation can answer.
#[tokio::test]
async fn every_operation_documents_the_standard_answers() {
    let app = spawn_app(Backend::Sqlite).await;
    let document = app.openapi().await;
    assert!(
        document["components"]["schemas"]["ErrorBody"].is_object(),
        "the error body is a named schema"
    );
    let unlimited = [
        "/livez",
        "/readyz",
        "/auth/api/health",
        "/core/api/health",
        "/core/api/health/extended",
    ];
    let mut checked = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if !["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                continue;
            }
            let responses = operation["responses"].as_object().unwrap();
            let has = |status: &str| responses.contains_key(status);
            let what = format!("{} {path}", method.to_uppercase());
            assert!(has("400") && has("500"), "{what}: 400 and 500");
            assert_eq!(
                has("429"),
                !unlimited.contains(&path.as_str()),
                "{what}: 429 exactly where rate limits apply"
            );
            let secured = operation["security"]
                .as_array()
                .is_some_and(|all| all.iter().any(|one| one.get("bearer").is_some()));
            if secured {
                assert!(
                    has("401"),
                    "{what}: a bearer-secured operation documents 401"
                );
            }
            if operation.get("requestBody").is_some() {
                assert!(
                    has("408") && has("413"),
                    "{what}: a body can be slow or too large"
                );
            }
            assert_eq!(
                responses["500"]["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorBody",
                "{what}"
            );
            checked += 1;
        }
    }
    // The host's own operations (the engines' are checked with the engines loaded, below).
    assert!(checked > 45, "only {checked} operations checked");
    app.stop().await;
}

/// Parameters are where they are sent: a path parameter is a `{name}` of its path (and every
/// `{name}` is one), a query parameter is never required unless the route needs it, and page
/// sizes and page numbers start at 1, as the handlers check.
#[tokio::test]
async fn parameters_are_documented_where_they_are_sent() {
    let app = spawn_app(Backend::Sqlite).await;
    let document = app.openapi().await;
    let mut query_parameters = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        let template: Vec<&str> = path
            .split('/')
            .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        for (method, operation) in item.as_object().unwrap() {
            let Some(parameters) = operation["parameters"].as_array() else {
                assert!(
                    template.is_empty(),
                    "{method} {path}: path parameters undocumented"
                );
                continue;
            };
            let in_path: Vec<&str> = parameters
                .iter()
                .filter(|parameter| parameter["in"] == "path")
                .map(|parameter| parameter["name"].as_str().unwrap())
                .collect();
            assert_eq!(in_path, template, "{method} {path}: path parameters");
            for parameter in parameters
                .iter()
                .filter(|parameter| parameter["in"] == "query")
            {
                query_parameters += 1;
                let name = parameter["name"].as_str().unwrap();
                if ["limit", "page", "per_page"].contains(&name) {
                    assert_eq!(
                        parameter["schema"]["minimum"], 1,
                        "{method} {path}: `{name}` starts at 1"
                    );
                }
            }
        }
    }
    assert!(
        query_parameters > 20,
        "only {query_parameters} query parameters"
    );
    app.stop().await;
}

/// The schema of an operation's JSON body, its `$ref` followed.
fn body_schema<'a>(document: &'a Value, method: &str, path: &str) -> &'a Value {
    let schema =
        &document["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"];
    resolved(document, schema)
}

/// `schema`, or the named schema it refers to.
fn resolved<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("{reference} is not a schema"));
            let named = &document["components"]["schemas"][name];
            assert!(named.is_object(), "{reference} resolves");
            named
        }
        None => schema,
    }
}

/// The forms of a `oneOf`, each keyed by the single `enum` value (or trimmed pattern) of its
/// discriminating property.
fn forms<'a>(schema: &'a Value, key: &str) -> Vec<(String, &'a Value)> {
    schema["oneOf"]
        .as_array()
        .unwrap_or_else(|| panic!("one form per `{key}`: {schema}"))
        .iter()
        .map(|form| {
            let property = &form["properties"][key];
            let name = match property["enum"].as_array() {
                Some(names) => {
                    assert_eq!(names.len(), 1, "{property}");
                    names[0].as_str().unwrap().to_owned()
                }
                None => property["pattern"].as_str().unwrap().to_owned(),
            };
            (name, form)
        })
        .collect()
}

/// The bodies the handlers check by hand (intentions, workflows, switch-context, the MFA
/// codes) are documented as they are checked: every key the code requires is `required` and
/// not nullable, types, patterns and bounds are the code's, and where the shape depends on a
/// kind (`type`, `method`, `operator`) there is one form per kind.
#[tokio::test]
async fn hand_checked_bodies_are_documented_as_checked() {
    let app = spawn_app(Backend::Sqlite).await;
    let document = app.openapi().await;
    let field_code = "^[A-Za-z][A-Za-z0-9_]{0,63}$";

    // POST /core/api/v1/intentions: `type` a non-null string, one form per type.
    let intention = body_schema(&document, "post", "/core/api/v1/intentions");
    let intention_forms = forms(intention, "type");
    let kinds: Vec<&str> = intention_forms
        .iter()
        .map(|(kind, _)| kind.as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "entity.create",
            "entity.update",
            "entity.delete",
            "entity.status_change"
        ]
    );
    for (kind, form) in &intention_forms {
        assert_eq!(form["required"], json!(["type", "payload"]), "{kind}");
        assert_eq!(form["properties"]["type"]["type"], "string", "{kind}");
        assert_eq!(form["properties"]["payload"]["type"], "object", "{kind}");
    }
    let payload = |index: usize| &intention_forms[index].1["properties"]["payload"];
    assert_eq!(payload(0)["required"], json!(["family", "fields"]));
    assert_eq!(payload(0)["properties"]["family"]["type"], "string");
    assert_eq!(
        payload(0)["properties"]["status"]["type"],
        json!(["string", "null"])
    );
    let fields = &payload(0)["properties"]["fields"];
    assert_eq!(fields["propertyNames"]["pattern"], field_code);
    assert_eq!(fields["maxProperties"], 100);
    assert!(fields.get("minProperties").is_none());
    assert_eq!(payload(1)["required"], json!(["entity_id", "fields"]));
    assert_eq!(payload(1)["properties"]["fields"]["minProperties"], 1);
    assert_eq!(payload(1)["properties"]["entity_id"]["pattern"], UUID);
    assert_eq!(payload(2)["required"], json!(["entity_id"]));
    assert_eq!(payload(3)["required"], json!(["entity_id", "status"]));

    // POST /core/api/v1/workflows and PATCH …/{id}: the same keys, required only to create.
    let new = body_schema(&document, "post", "/core/api/v1/workflows");
    let patch = body_schema(&document, "patch", "/core/api/v1/workflows/{id}");
    assert_eq!(new["required"], json!(["name", "trigger_event", "actions"]));
    assert!(patch.get("required").is_none(), "{patch}");
    assert_eq!(new["properties"], patch["properties"]);
    let keys = &new["properties"];
    assert_eq!(keys["name"]["type"], "string");
    assert_eq!(keys["name"]["pattern"], trimmed_text(200));
    assert_eq!(keys["trigger_event"]["type"], "string");
    assert_eq!(
        keys["trigger_event"]["pattern"],
        trimmed_one_of(&[
            "entity.created",
            "entity.updated",
            "entity.deleted",
            "entity.status_changed"
        ])
    );
    assert_eq!(keys["description"]["type"], json!(["string", "null"]));
    assert_eq!(keys["family"]["type"], json!(["string", "null"]));
    assert_eq!(keys["conditions"]["type"], json!(["array", "null"]));
    assert_eq!(keys["conditions"]["maxItems"], 50);
    assert_eq!(keys["actions"]["type"], "array");
    assert_eq!(keys["actions"]["minItems"], 1);
    assert_eq!(keys["actions"]["maxItems"], 20);
    let action = resolved(&document, &keys["actions"]["items"]);
    let action_forms = forms(action, "type");
    let configs: Vec<(&str, &Value)> = action_forms
        .iter()
        .map(|(kind, form)| {
            assert_eq!(form["required"], json!(["type", "config"]), "{kind}");
            (kind.as_str(), &form["properties"]["config"])
        })
        .collect();
    assert_eq!(configs[0].0, trimmed_one_of(&["update_field"]));
    assert_eq!(configs[0].1["required"], json!(["field", "value"]));
    assert_eq!(configs[1].0, trimmed_one_of(&["send_notification"]));
    assert_eq!(configs[1].1["required"], json!(["recipient", "title"]));
    assert_eq!(
        configs[1].1["properties"]["message"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(configs[2].0, trimmed_one_of(&["create_entity"]));
    assert_eq!(configs[2].1["required"], json!(["family"]));
    assert_eq!(
        configs[2].1["properties"]["fields"]["propertyNames"]["pattern"],
        field_code
    );
    let condition = resolved(&document, &keys["conditions"]["items"]);
    let condition_forms = forms(condition, "operator");
    assert_eq!(condition_forms.len(), 4, "one form per kind of value");
    for (operators, form) in &condition_forms {
        let takes_value = !operators.contains("is_empty");
        let mut required = vec!["field", "operator"];
        if takes_value {
            required.push("value");
        }
        assert_eq!(form["required"], json!(required), "{operators}");
        assert_eq!(
            form["properties"]["field"]["pattern"],
            trimmed(&field_code[1..field_code.len() - 1])
        );
    }
    let value = resolved(&document, &configs[0].1["properties"]["value"]);
    assert!(
        value["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .any(|branch| branch["items"]["$ref"] == "#/components/schemas/WorkflowValue"),
        "values nest: {value}"
    );

    // POST /auth/api/v1/auth/switch-context: `null` or a UUID, never blank.
    let switch = body_schema(&document, "post", "/auth/api/v1/auth/switch-context");
    assert!(switch.get("required").is_none(), "{switch}");
    for key in ["tenant_id", "workspace_id"] {
        assert_eq!(switch["properties"][key]["type"], json!(["string", "null"]));
        assert_eq!(switch["properties"][key]["pattern"], UUID);
    }

    // The MFA codes: six digits at confirm; at verify, by `method`, six digits or a recovery
    // code.
    let totp = trimmed("[0-9](?: *[0-9]){5}");
    let confirm = body_schema(&document, "post", "/auth/api/v1/auth/mfa/totp/confirm");
    assert_eq!(confirm["required"], json!(["code"]));
    assert_eq!(confirm["properties"]["code"]["type"], "string");
    assert_eq!(confirm["properties"]["code"]["pattern"], totp);
    assert_eq!(confirm["properties"]["code"]["maxLength"], 24);
    let verify = body_schema(&document, "post", "/auth/api/v1/auth/mfa/verify");
    let verify_forms = forms(verify, "method");
    let methods: Vec<&str> = verify_forms
        .iter()
        .map(|(method, _)| method.as_str())
        .collect();
    assert_eq!(methods, ["totp", "recovery_code", "otp", "webauthn"]);
    for (method, form) in &verify_forms {
        let answer = if method == "webauthn" {
            "credential"
        } else {
            "code"
        };
        assert_eq!(
            form["required"],
            json!(["mfa_token", "method", answer]),
            "{method}"
        );
    }
    assert_eq!(
        verify_forms[3].1["properties"]["credential"]["type"],
        "object"
    );
    assert_eq!(
        verify_forms[0].1["properties"]["code"],
        confirm["properties"]["code"]
    );
    let recovery = verify_forms[1].1["properties"]["code"]["pattern"]
        .as_str()
        .unwrap();
    assert!(recovery.ends_with("{12}$"), "{recovery}");
    app.stop().await;
}

/// What the documents of those bodies newly admit, the server accepts (a braced UUID, padded
/// names and kinds, nested placeholders, blank optional texts), and what they newly refuse,
/// it refuses (the bodies schemathesis found schema-valid and refused).
#[tokio::test]
async fn hand_checked_bodies_accept_what_their_documents_admit() {
    let app = spawn_app(Backend::Sqlite).await;
    let tenant_id = app.create_tenant("documented");
    let owner = app
        .token(&tenant_id, &uuid::Uuid::new_v4().to_string(), "owner")
        .await;
    let braced = |id: &str| format!(" {{{}}}\t", id.to_uppercase());

    let workflow = json!({
        "name": "  Padded  ",
        "description": "  ",
        "trigger_event": " entity.created\n",
        "family": "",
        "conditions": [{"field": " status ", "operator": " is_empty ", "value": {"ignored": 1}}],
        "actions": [
            {"type": " send_notification ", "config": {
                "recipient": braced(&uuid::Uuid::new_v4().to_string()),
                "title": "{ Hi }} {{ entity.title }}",
                "message": null,
            }},
            {"type": "update_field", "config": {
                "field": "done",
                "value": ["{{now}}", {"by": "{{current_user}}"}, null],
            }},
            {"type": "create_entity", "config": {"family": "task", "fields": null, "status": ""}},
        ],
    });
    let created = json_with_status(
        app.post_as("/core/api/v1/workflows", &owner, &workflow)
            .await,
        201,
    )
    .await;
    assert_eq!(created["data"]["name"], "Padded");
    let refused = json_with_status(
        app.post_as("/core/api/v1/workflows", &owner, &json!({}))
            .await,
        422,
    )
    .await;
    for key in ["name", "trigger_event", "actions"] {
        assert_eq!(refused["errors"][key], json!(["required"]), "{key}");
    }

    // A well-formed id of no entity is a 404, not a 422.
    let missing = braced(&uuid::Uuid::new_v4().to_string());
    let response = app
        .intention(&owner, "entity.delete", json!({"entity_id": missing}))
        .await;
    json_with_status(response, 404).await;
    let refused = json_with_status(
        app.post_as(
            "/core/api/v1/intentions",
            &owner,
            &json!({"payload": {}, "type": null}),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(refused["errors"]["type"], json!(["required"]));

    let switch = "/auth/api/v1/auth/switch-context";
    let switched = json_with_status(
        app.post_as(switch, &owner, &json!({"tenant_id": braced(&tenant_id)}))
            .await,
        200,
    )
    .await;
    assert!(switched["data"]["access_token"].is_string(), "{switched}");
    json_with_status(
        app.post_as(
            switch,
            &owner,
            &json!({"tenant_id": null, "workspace_id": null}),
        )
        .await,
        200,
    )
    .await;
    let refused = json_with_status(
        app.post_as(
            switch,
            &owner,
            &json!({"tenant_id": null, "workspace_id": ""}),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(refused["errors"]["workspace_id"], json!(["uuid"]));
    app.stop().await;
}

/// The seven engines' operations, schemas and tags come from the engines (`describe-api`):
/// every route of each is documented under its prefix, tagged, secured, with a success answer,
/// and every `$ref` of the merged document resolves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engines_document_their_own_operations() {
    let database = TestDatabase::new(Backend::Sqlite).await;
    install_engines(&database.data_dir.join("plugins"), &ENGINES);
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            database: Some(database),
            ..AppOptions::default()
        },
    )
    .await;
    let document = app.openapi().await;
    let paths = document["paths"].as_object().expect("paths");
    let mut engine_operations = 0;
    for code in ENGINES {
        let prefix = format!("/{code}/");
        assert!(
            paths[&format!("/{code}/api/v1/status")]["get"].is_object(),
            "{code} documents its status route"
        );
        for (path, item) in paths.iter().filter(|(path, _)| path.starts_with(&prefix)) {
            for (method, operation) in item.as_object().unwrap() {
                engine_operations += 1;
                assert_eq!(operation["tags"][0], code, "{method} {path}");
                assert!(
                    operation["security"][0]["bearer"].is_array(),
                    "{method} {path} requires a bearer token"
                );
                let summary = operation["summary"].as_str().unwrap_or_default();
                assert!(
                    !summary.is_empty() && !summary.starts_with(&method.to_uppercase()),
                    "{method} {path} has a summary: {summary:?}"
                );
                let responses = operation["responses"].as_object().unwrap();
                assert!(
                    responses.keys().any(|status| status.starts_with('2')),
                    "{method} {path} documents its success"
                );
                assert!(
                    operation["operationId"]
                        .as_str()
                        .is_some_and(|id| id.starts_with(&format!("{code}."))),
                    "{method} {path}"
                );
            }
        }
        assert!(
            document["tags"]
                .as_array()
                .expect("tags")
                .iter()
                .any(|tag| tag["name"] == code),
            "the {code} tag is declared"
        );
        let schemas = document["components"]["schemas"].as_object().unwrap();
        assert!(
            schemas
                .keys()
                .any(|name| name.starts_with(&format!("{code}."))),
            "{code} documents its schemas"
        );
    }
    // Every route of the seven engines: 59 besides their seven status routes.
    assert!(
        engine_operations >= 66,
        "{engine_operations} engine operations"
    );
    // The chat engine's routes, each documented on its own besides the catch-all.
    for (method, path) in [
        ("get", "/chat/api/v1/conversations"),
        ("post", "/chat/api/v1/conversations"),
        ("get", "/chat/api/v1/conversations/{id}"),
        ("patch", "/chat/api/v1/conversations/{id}"),
        ("get", "/chat/api/v1/conversations/{id}/messages"),
        ("post", "/chat/api/v1/conversations/{id}/messages"),
        (
            "patch",
            "/chat/api/v1/conversations/{id}/messages/{message_id}",
        ),
        (
            "delete",
            "/chat/api/v1/conversations/{id}/messages/{message_id}",
        ),
        ("post", "/chat/api/v1/conversations/{id}/members"),
        (
            "delete",
            "/chat/api/v1/conversations/{id}/members/{user_id}",
        ),
        ("get", "/chat/api/v1/webhooks"),
        ("post", "/chat/api/v1/webhooks"),
        ("get", "/chat/api/v1/webhooks/{id}"),
        ("patch", "/chat/api/v1/webhooks/{id}"),
        ("delete", "/chat/api/v1/webhooks/{id}"),
        ("post", "/chat/api/v1/webhooks/{id}/secret"),
        ("post", "/chat/api/v1/webhooks/{id}/test"),
        ("get", "/chat/api/v1/webhooks/{id}/deliveries"),
        (
            "post",
            "/chat/api/v1/webhooks/{id}/deliveries/{delivery_id}/retry",
        ),
        ("get", "/chat/api/v1/webhooks/dlq"),
        ("post", "/chat/api/v1/webhooks/dlq/{id}/retry"),
    ] {
        let operation = &paths[path][method];
        assert!(operation.is_object(), "{method} {path} is documented");
    }
    let mut unresolved = Vec::new();
    collect_unresolved_references(&document, &document, &mut unresolved);
    assert!(
        unresolved.is_empty(),
        "unresolved references: {unresolved:?}"
    );
    app.stop().await;
}

/// Every `$ref` under `value` that does not point at a schema of `document`.
fn collect_unresolved_references(document: &Value, value: &Value, unresolved: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
                let resolves = reference
                    .strip_prefix("#/components/schemas/")
                    .is_some_and(|name| document["components"]["schemas"][name].is_object());
                if !resolves {
                    unresolved.push(reference.to_owned());
                }
            }
            for child in object.values() {
                collect_unresolved_references(document, child, unresolved);
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_unresolved_references(document, item, unresolved);
            }
        }
        _ => {}
    }
}
