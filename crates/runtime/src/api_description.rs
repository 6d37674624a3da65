//! An engine's API description (`describe-api`): checked when the engine loads (a malformed one
//! refuses the engine), prefixed for the engine (`/<code>/…` paths, `<code>.<Name>` schemas,
//! `<code>.<operationId>`, the engine's tag, the host's bearer security and answers), and
//! merged into the host's OpenAPI document by [`merge_into`].
//!
//! An operation marked `x-tessera-audit: "<name>"` is an audited operation
//! ([`AuditedOperation`]): when a request of it is answered with a success, the host records
//! `<code>.<name>` in the tenant's audit trail (`routes.rs`). The merged document shows the
//! full name there.

use serde_json::{Map, Value, json};

use crate::component_manifest::PublicPaths;

/// The largest API description the host accepts, in bytes of JSON.
pub const MAX_API_DESCRIPTION_BYTES: usize = 2 * 1024 * 1024;

/// Where schemas live, in the engine's fragment and in the merged document.
const SCHEMAS: &str = "#/components/schemas/";

/// The operations of a path item.
const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

/// What the host itself answers on any engine route, besides the engine's own answers.
const HOST_ANSWERS: [(&str, &str); 6] = [
    ("401", "Missing, invalid or expired bearer token"),
    ("413", "The body is larger than the engine body limit"),
    (
        "429",
        "Rate limit exceeded; `Retry-After` says when to retry",
    ),
    (
        "502",
        "The engine failed (trap, memory cap, invalid response)",
    ),
    (
        "503",
        "No engine capacity for the tenant now, or (a write) the platform's backlog of accepted work is past its bound; `Retry-After` says when to retry",
    ),
    ("504", "The engine exceeded its deadline"),
];

/// The extension marking an audited operation; its value is the engine's name for it.
pub const AUDIT_EXTENSION: &str = "x-tessera-audit";

/// An engine's API, prefixed for the merged document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiDescription {
    /// `/<code>/api/v1/…` → path item.
    pub paths: Map<String, Value>,
    /// `<code>.<Name>` → schema.
    pub schemas: Map<String, Value>,
    /// The operations marked `x-tessera-audit`.
    pub audited: Vec<AuditedOperation>,
}

/// An operation the host records in the audit trail when it answers with a success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditedOperation {
    /// Upper-case, e.g. `POST`.
    pub method: String,
    /// The engine's path template, e.g. `/api/v1/webhooks/{id}/test`.
    pub path: String,
    /// The full event name, `<code>.<name>`.
    pub event: String,
}

/// A request matched to an audited operation.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditedRequest<'a> {
    pub operation: &'a AuditedOperation,
    /// The path parameters, by the template's names.
    pub parameters: Map<String, Value>,
}

impl AuditedOperation {
    /// The path parameters of `path` when it matches the template, with how many segments
    /// matched literally (the more, the more specific).
    fn matches(&self, path: &str) -> Option<(usize, Map<String, Value>)> {
        let mut template = self.path.split('/');
        let mut segments = path.split('/');
        let mut literal = 0;
        let mut parameters = Map::new();
        loop {
            match (template.next(), segments.next()) {
                (None, None) => return Some((literal, parameters)),
                (Some(expected), Some(segment)) => {
                    if let Some(name) = expected
                        .strip_prefix('{')
                        .and_then(|rest| rest.strip_suffix('}'))
                    {
                        if segment.is_empty() {
                            return None;
                        }
                        parameters.insert(name.to_owned(), segment.into());
                    } else if expected == segment {
                        literal += 1;
                    } else {
                        return None;
                    }
                }
                _ => return None,
            }
        }
    }
}

impl ApiDescription {
    /// The audited operation a request of `method` (any case) on the engine path `path`
    /// (`/api/v1/…`) is, if any: of the templates matching, the one with the most literal
    /// segments (`/webhooks/dlq` before `/webhooks/{id}`, as a router picks).
    pub fn audited_request(&self, method: &str, path: &str) -> Option<AuditedRequest<'_>> {
        self.audited
            .iter()
            .filter(|operation| operation.method.eq_ignore_ascii_case(method))
            .filter_map(|operation| {
                let (literal, parameters) = operation.matches(path)?;
                Some((literal, operation, parameters))
            })
            .max_by_key(|(literal, _, _)| *literal)
            .map(|(_, operation, parameters)| AuditedRequest {
                operation,
                parameters,
            })
    }
}

impl ApiDescription {
    /// The API of a `wasi:http` component, which does not describe its own: every method on
    /// every path under `/<code>/`, answered by the component, with the host's answers; a
    /// bearer token required except on its public paths (listed in the description).
    pub fn wasi_http_component(code: &str, public_paths: &PublicPaths) -> Self {
        let public = if public_paths.is_empty() {
            String::new()
        } else {
            " Its manifest's public paths answer without a bearer token.".to_owned()
        };
        let mut item = Map::new();
        for method in METHODS {
            let mut operation = json!({
                "operationId": method,
                "summary": format!("A request to the wasi:http component {code}"),
                "description": format!(
                    "Handed to the component's wasi:http/incoming-handler with the /{code} prefix removed, and the caller's identity in x-tessera-* headers.{public}"
                ),
                "parameters": [{
                    "name": "path",
                    "in": "path",
                    "required": true,
                    "description": "The rest of the path, handled by the component",
                    "schema": {"type": "string"},
                }],
                "responses": {"200": {"description": "The component's response"}},
            });
            // Only fails on a fragment without responses, which this is not.
            if prefix_operation(code, &mut operation).is_ok() {
                item.insert(method.to_owned(), operation);
            }
        }
        let mut paths = Map::new();
        paths.insert(format!("/{code}/{{path}}"), Value::Object(item));
        Self {
            paths,
            schemas: Map::new(),
            audited: Vec::new(),
        }
    }

    /// Checks and prefixes the fragment `text` of engine `code`. Empty text and `{}` describe
    /// nothing.
    pub fn parse(code: &str, text: &str) -> Result<Self, String> {
        if text.len() > MAX_API_DESCRIPTION_BYTES {
            return Err(format!(
                "the API description is {} bytes; at most {MAX_API_DESCRIPTION_BYTES} are accepted",
                text.len()
            ));
        }
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let fragment: Value = serde_json::from_str(text)
            .map_err(|error| format!("the API description is not JSON: {error}"))?;
        let Value::Object(mut fragment) = fragment else {
            return Err("the API description is not a JSON object".into());
        };
        let schemas = match fragment
            .get_mut("components")
            .and_then(|components| components.get_mut("schemas"))
        {
            None => Map::new(),
            Some(Value::Object(schemas)) => std::mem::take(schemas),
            Some(_) => return Err("components.schemas is not an object".into()),
        };
        for name in schemas.keys() {
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            {
                return Err(format!(
                    "the schema name {name:?} is not letters, digits, '.', '_' and '-'"
                ));
            }
        }
        let paths = match fragment.remove("paths") {
            None => Map::new(),
            Some(Value::Object(paths)) => paths,
            Some(_) => return Err("paths is not an object".into()),
        };

        let mut described = Self::default();
        for (name, mut schema) in schemas.clone() {
            prefix_references(code, &mut schema, &schemas)
                .map_err(|error| format!("schema {name:?}: {error}"))?;
            described.schemas.insert(format!("{code}.{name}"), schema);
        }
        for (path, item) in paths {
            check_path(&path)?;
            let Value::Object(mut item) = item else {
                return Err(format!("the path item {path:?} is not an object"));
            };
            for key in item.keys() {
                if !METHODS.contains(&key.as_str())
                    && !matches!(key.as_str(), "summary" | "description" | "parameters")
                {
                    return Err(format!(
                        "the path item {path:?} has {key:?}; operations are {METHODS:?}"
                    ));
                }
            }
            for method in METHODS {
                if let Some(operation) = item.get_mut(method) {
                    let failed =
                        |error: String| format!("{} {path}: {error}", method.to_uppercase());
                    prefix_operation(code, operation).map_err(failed)?;
                    if let Some(event) = audited_event(code, operation).map_err(failed)? {
                        described.audited.push(AuditedOperation {
                            method: method.to_uppercase(),
                            path: path.clone(),
                            event,
                        });
                    }
                }
            }
            let mut item = Value::Object(item);
            prefix_references(code, &mut item, &schemas)
                .map_err(|error| format!("the path item {path:?}: {error}"))?;
            described.paths.insert(format!("/{code}{path}"), item);
        }
        Ok(described)
    }
}

/// An engine path: under `/api/v1/` (the only paths the host routes to engines), without empty,
/// `.` or `..` segments, query or fragment.
fn check_path(path: &str) -> Result<(), String> {
    let routed = path
        .strip_prefix("/api/v1/")
        .is_some_and(|rest| !rest.is_empty());
    let clean = path
        .split('/')
        .skip(1)
        .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
        && !path.contains(['?', '#', '\\']);
    if routed && clean {
        Ok(())
    } else {
        Err(format!(
            "the path {path:?} is not a clean path under /api/v1/ (the engine routes the host serves)"
        ))
    }
}

/// The engine's operation as the merged document shows it: its id prefixed, the engine's tag,
/// the bearer scheme, and the host's own answers where the engine did not describe them.
fn prefix_operation(code: &str, operation: &mut Value) -> Result<(), String> {
    let Value::Object(operation) = operation else {
        return Err("the operation is not an object".into());
    };
    let Some(Value::Object(responses)) = operation.get_mut("responses") else {
        return Err("the operation has no responses object".into());
    };
    for (status, description) in HOST_ANSWERS {
        responses.entry(status).or_insert_with(|| {
            json!({
                "description": description,
                "content": {"application/json": {"schema": {"$ref": format!("{SCHEMAS}ErrorBody")}}},
            })
        });
    }
    if let Some(id) = operation.get("operationId") {
        let id = id.as_str().ok_or("operationId is not a string")?;
        operation.insert("operationId".into(), format!("{code}.{id}").into());
    }
    operation.insert("tags".into(), json!([code]));
    operation.insert("security".into(), json!([{"bearer": []}]));
    Ok(())
}

/// The full audit event name of an operation marked `x-tessera-audit` (then shown in full in
/// the merged document), `None` when it is not marked.
fn audited_event(code: &str, operation: &mut Value) -> Result<Option<String>, String> {
    let Some(marked) = operation.get_mut(AUDIT_EXTENSION) else {
        return Ok(None);
    };
    let name = marked
        .as_str()
        .ok_or_else(|| format!("{AUDIT_EXTENSION} is not a string"))?;
    let event = tessera_auth::audit::engine_event_name(code, name)?;
    *marked = Value::String(event.clone());
    Ok(Some(event))
}

/// Rewrites every `$ref` under `value` from `#/components/schemas/<Name>` to
/// `#/components/schemas/<code>.<Name>`; a reference anywhere else, or to a schema the
/// fragment does not define, is an error. The host's `ErrorBody` (added above) stays.
fn prefix_references(
    code: &str,
    value: &mut Value,
    schemas: &Map<String, Value>,
) -> Result<(), String> {
    match value {
        Value::Object(object) => {
            if let Some(reference) = object.get_mut("$ref") {
                let Some(name) = reference
                    .as_str()
                    .and_then(|text| text.strip_prefix(SCHEMAS))
                else {
                    return Err(format!(
                        "the reference {reference} does not point at #/components/schemas/"
                    ));
                };
                if schemas.contains_key(name) {
                    *reference = format!("{SCHEMAS}{code}.{name}").into();
                } else if name != "ErrorBody" {
                    return Err(format!(
                        "the reference {reference} names no schema of the engine"
                    ));
                }
            }
            for (key, child) in object.iter_mut() {
                if key != "$ref" {
                    prefix_references(code, child, schemas)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter_mut()
            .try_for_each(|item| prefix_references(code, item, schemas)),
        _ => Ok(()),
    }
}

/// An engine as the merged document names it.
pub struct DescribedEngine<'a> {
    pub code: &'a str,
    pub name: &'a str,
    pub api: &'a ApiDescription,
}

/// `document` (the host's own OpenAPI document as JSON) with each engine's paths, schemas and
/// tag added.
pub fn merge_into(document: &mut Value, engines: &[DescribedEngine<'_>]) {
    for engine in engines {
        if let Some(paths) = document.get_mut("paths").and_then(Value::as_object_mut) {
            for (path, item) in &engine.api.paths {
                paths.insert(path.clone(), item.clone());
            }
        }
        if let Some(schemas) = document
            .pointer_mut("/components/schemas")
            .and_then(Value::as_object_mut)
        {
            for (name, schema) in &engine.api.schemas {
                schemas.insert(name.clone(), schema.clone());
            }
        }
        if !engine.api.paths.is_empty()
            && let Some(tags) = document.get_mut("tags").and_then(Value::as_array_mut)
        {
            tags.push(
                json!({"name": engine.code, "description": format!("The {} engine", engine.name)}),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fragment() -> Value {
        json!({
            "openapi": "3.1.0",
            "paths": {
                "/api/v1/notes/{id}": {
                    "get": {
                        "operationId": "show_note",
                        "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Note"}}}}},
                    },
                },
            },
            "components": {"schemas": {
                "Note": {"type": "object", "properties": {"tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}}}},
                "Tag": {"type": "string"},
            }},
        })
    }

    #[test]
    fn fragments_are_prefixed() {
        let described = ApiDescription::parse("notes", &fragment().to_string()).unwrap();
        let operation = &described.paths["/notes/api/v1/notes/{id}"]["get"];
        assert_eq!(operation["operationId"], "notes.show_note");
        assert_eq!(operation["tags"], json!(["notes"]));
        assert_eq!(
            operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/notes.Note"
        );
        assert!(operation["responses"]["504"].is_object());
        assert_eq!(
            described.schemas["notes.Note"]["properties"]["tags"]["items"]["$ref"],
            "#/components/schemas/notes.Tag"
        );
        assert_eq!(
            ApiDescription::parse("notes", "{}").unwrap(),
            ApiDescription::default()
        );
    }

    #[test]
    fn malformed_fragments_are_refused() {
        let mut foreign = fragment();
        foreign["paths"]["/api/v1/notes/{id}"]["get"]["responses"]["200"]["content"]["application/json"]
            ["schema"]["$ref"] = "https://example.com/schema.json".into();
        let mut missing = fragment();
        missing["components"]["schemas"]
            .as_object_mut()
            .unwrap()
            .remove("Tag");
        let mut escaping = fragment();
        let item = escaping["paths"]
            .as_object_mut()
            .unwrap()
            .remove("/api/v1/notes/{id}")
            .unwrap();
        escaping["paths"]["/api/v1/../../core/api/v1/x"] = item;
        let mut unrouted = fragment();
        let item = unrouted["paths"]
            .as_object_mut()
            .unwrap()
            .remove("/api/v1/notes/{id}")
            .unwrap();
        unrouted["paths"]["/internal/x"] = item;
        let mut no_responses = fragment();
        no_responses["paths"]["/api/v1/notes/{id}"]["get"]
            .as_object_mut()
            .unwrap()
            .remove("responses");
        for (case, text) in [
            ("foreign reference", foreign.to_string()),
            ("missing schema", missing.to_string()),
            ("escaping path", escaping.to_string()),
            ("unrouted path", unrouted.to_string()),
            ("no responses", no_responses.to_string()),
            ("not JSON", "{".to_owned()),
            ("not an object", "[]".to_owned()),
            (
                "too large",
                format!("{{\"x\": \"{}\"}}", "a".repeat(MAX_API_DESCRIPTION_BYTES)),
            ),
        ] {
            assert!(ApiDescription::parse("notes", &text).is_err(), "{case}");
        }
    }

    #[test]
    fn audited_operations_are_named_in_full_and_matched_most_specific_first() {
        let response = json!({"200": {"description": "OK"}});
        let text = json!({"paths": {
            "/api/v1/webhooks/{id}/test": {"post": {"responses": response, "x-tessera-audit": "webhook.tested"}},
            "/api/v1/webhooks/dlq/{id}/retry": {"post": {"responses": response, "x-tessera-audit": "dead_letter.replayed"}},
            "/api/v1/webhooks/{id}/{action}/retry": {"post": {"responses": response, "x-tessera-audit": "other"}},
            "/api/v1/webhooks": {"get": {"responses": response}},
        }})
        .to_string();
        let described = ApiDescription::parse("chat", &text).unwrap();
        assert_eq!(described.audited.len(), 3);
        assert_eq!(
            described.paths["/chat/api/v1/webhooks/{id}/test"]["post"][AUDIT_EXTENSION],
            "chat.webhook.tested"
        );
        let replay = described
            .audited_request("post", "/api/v1/webhooks/dlq/d-1/retry")
            .unwrap();
        assert_eq!(replay.operation.event, "chat.dead_letter.replayed");
        assert_eq!(
            replay.parameters,
            json!({"id": "d-1"}).as_object().unwrap().clone()
        );
        let test = described
            .audited_request("POST", "/api/v1/webhooks/w-1/test")
            .unwrap();
        assert_eq!(test.operation.event, "chat.webhook.tested");
        for (method, path) in [
            ("GET", "/api/v1/webhooks/w-1/test"),
            ("POST", "/api/v1/webhooks/w-1/test/again"),
            ("POST", "/api/v1/webhooks//test"),
            ("GET", "/api/v1/webhooks"),
        ] {
            assert!(
                described.audited_request(method, path).is_none(),
                "{method} {path}"
            );
        }

        for (case, marked) in [
            ("not a string", json!(true)),
            ("malformed", json!("Webhook Created")),
            ("a host event", json!("failed")),
        ] {
            let text = json!({"paths": {"/api/v1/x": {"post": {"responses": response, "x-tessera-audit": marked}}}});
            let code = if case == "a host event" {
                "login"
            } else {
                "chat"
            };
            assert!(
                ApiDescription::parse(code, &text.to_string()).is_err(),
                "{case}"
            );
        }
    }

    #[test]
    fn merging_adds_paths_schemas_and_tags() {
        let described = ApiDescription::parse("notes", &fragment().to_string()).unwrap();
        let mut document = json!({"paths": {"/core/api/v1/x": {}}, "components": {"schemas": {"ErrorBody": {}}}, "tags": []});
        merge_into(
            &mut document,
            &[DescribedEngine {
                code: "notes",
                name: "Notes",
                api: &described,
            }],
        );
        assert!(document["paths"]["/core/api/v1/x"].is_object());
        assert!(document["paths"]["/notes/api/v1/notes/{id}"]["get"].is_object());
        assert!(document["components"]["schemas"]["notes.Tag"].is_object());
        assert_eq!(document["tags"][0]["name"], "notes");
    }
}
