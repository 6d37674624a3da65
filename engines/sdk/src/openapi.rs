//! The engine's API description (`describe-api`): an OpenAPI 3.1 fragment generated from the
//! [`Router`](crate::Router)'s routes, each documented once with an [`Operation`] whose schemas
//! come from the engine's Rust types ([`JsonSchema`], derived with `schemars`).
//!
//! Paths are relative to the engine's prefix and schemas keep their plain names; the host
//! prefixes both (`/notes/api/v1/notes`, `notes.Note`) and merges the fragment into its
//! `/api/openapi.json`. Every route gets the standard error answers (400, 401, 403, 404, 413,
//! 422, 429, 502, 503, 504), so an operation lists only what it answers on success and what
//! else it wants to describe.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use tessera_sdk::{Operation, Response, Router};
//!
//! /// A note.
//! #[derive(Serialize, JsonSchema)]
//! struct Note {
//!     id: String,
//!     title: String,
//! }
//!
//! /// `POST /api/v1/notes`.
//! #[derive(Deserialize, JsonSchema)]
//! struct NewNote {
//!     #[schemars(length(min = 1, max = 200))]
//!     title: String,
//! }
//!
//! let router = Router::new()
//!     .post("/api/v1/notes", |_, _| Ok(Response::no_content()))
//!     .doc(Operation::new("Create a note").body::<NewNote>().created::<Note>());
//! let document = router.openapi();
//! let create = &document["paths"]["/api/v1/notes"]["post"];
//! assert_eq!(create["summary"], "Create a note");
//! assert_eq!(
//!     create["requestBody"]["content"]["application/json"]["schema"]["$ref"],
//!     "#/components/schemas/NewNote"
//! );
//! assert_eq!(create["responses"]["201"]["content"]["application/json"]["schema"]["properties"]["data"]["$ref"],
//!     "#/components/schemas/Note");
//! assert!(create["responses"]["422"].is_object());
//! # let audited = Router::new()
//! #     .post("/api/v1/notes", |_, _| Ok(Response::no_content()))
//! #     .doc(Operation::new("Create a note").audited("note.created"))
//! #     .openapi();
//! # assert_eq!(audited["paths"]["/api/v1/notes"]["post"]["x-tessera-audit"], "note.created");
//! assert_eq!(document["components"]["schemas"]["NewNote"]["properties"]["title"]["maxLength"], 200);
//! ```

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

/// Makes the schema of a Rust type in a generator (a `$ref` to a named schema, or inline).
type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

fn schema_of<T: JsonSchema + ?Sized>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// How a successful answer carries its schema.
#[derive(Clone, Copy)]
enum Envelope {
    /// `{"data": T}`.
    Data,
    /// `{"data": [T], "meta": CursorMeta}`.
    Page,
    /// The schema as the whole body.
    Bare,
}

#[derive(Clone)]
struct Answer {
    status: u16,
    description: String,
    schema: Option<(SchemaFn, Envelope)>,
    /// Bytes of this media type instead of JSON.
    binary: Option<String>,
}

/// A request body.
#[derive(Clone)]
enum Body {
    /// JSON of a type.
    Json(SchemaFn),
    /// Raw bytes of any media type.
    Binary(String),
}

/// The documentation of one route: what it does, what it reads (query, body) and what it
/// answers. Attach it with [`Router::doc`](crate::Router::doc) right after the route.
#[derive(Clone, Default)]
pub struct Operation {
    summary: String,
    description: Option<String>,
    query: Option<SchemaFn>,
    body: Option<(Body, bool)>,
    answers: Vec<Answer>,
    path_descriptions: Vec<(String, String)>,
    audit: Option<String>,
}

impl Operation {
    /// An operation with a one-line summary.
    pub fn new(summary: &str) -> Self {
        Self {
            summary: summary.to_owned(),
            ..Self::default()
        }
    }

    /// A longer description (Markdown).
    pub fn description(mut self, text: &str) -> Self {
        self.description = Some(text.to_owned());
        self
    }

    /// Makes this an audited operation: when the host answers a request of it with a success
    /// (2xx), it records `<code>.<name>` in the tenant's audit trail, with the caller, their
    /// address, the path and its parameters, in the same transaction as the call's writes.
    /// `name` is lower-case letters, digits and `_` in dot-separated words
    /// (`webhook.created`); it is written as `x-tessera-audit`.
    pub fn audited(mut self, name: &str) -> Self {
        self.audit = Some(name.to_owned());
        self
    }

    /// Describes the path parameter `name` (every `{name}` of the pattern is documented as a
    /// required string anyway).
    pub fn path_parameter(mut self, name: &str, description: &str) -> Self {
        self.path_descriptions
            .push((name.to_owned(), description.to_owned()));
        self
    }

    /// The query parameters: each property of `T` (a struct) is one, required when `T`
    /// requires it.
    pub fn query<T: JsonSchema>(mut self) -> Self {
        self.query = Some(schema_of::<T>);
        self
    }

    /// A required JSON request body of type `T`.
    pub fn body<T: JsonSchema>(mut self) -> Self {
        self.body = Some((Body::Json(schema_of::<T>), true));
        self
    }

    /// An optional JSON request body of type `T` (no body means its defaults).
    pub fn optional_body<T: JsonSchema>(mut self) -> Self {
        self.body = Some((Body::Json(schema_of::<T>), false));
        self
    }

    /// A required request body of raw bytes of `media_type` (e.g. `application/octet-stream`).
    pub fn binary_body(mut self, media_type: &str) -> Self {
        self.body = Some((Body::Binary(media_type.to_owned()), true));
        self
    }

    /// A request body of raw bytes of `media_type` that may be empty or absent (an empty
    /// file).
    pub fn optional_binary_body(mut self, media_type: &str) -> Self {
        self.body = Some((Body::Binary(media_type.to_owned()), false));
        self
    }

    fn answer(
        mut self,
        status: u16,
        description: &str,
        schema: Option<(SchemaFn, Envelope)>,
    ) -> Self {
        self.answers.push(Answer {
            status,
            description: description.to_owned(),
            schema,
            binary: None,
        });
        self
    }

    /// Another answer: `status` with raw bytes of `media_type` (a file's content).
    pub fn answers_binary(mut self, status: u16, description: &str, media_type: &str) -> Self {
        self.answers.push(Answer {
            status,
            description: description.to_owned(),
            schema: None,
            binary: Some(media_type.to_owned()),
        });
        self
    }

    /// The 422 answer, described (which fields, which rules), with the validation error body.
    pub fn invalid(self, description: &str) -> Self {
        self.answer(
            422,
            description,
            Some((schema_of::<ValidationErrorBody>, Envelope::Bare)),
        )
    }

    /// 200 `{"data": T}`.
    pub fn ok<T: JsonSchema>(self) -> Self {
        self.answer(200, "OK", Some((schema_of::<T>, Envelope::Data)))
    }

    /// 200 `{"data": [T], "meta": {next_cursor, has_more}}`, a cursor-paged list.
    pub fn page<T: JsonSchema>(self) -> Self {
        self.answer(
            200,
            "One page of the list",
            Some((schema_of::<T>, Envelope::Page)),
        )
    }

    /// 201 `{"data": T}`.
    pub fn created<T: JsonSchema>(self) -> Self {
        self.answer(201, "Created", Some((schema_of::<T>, Envelope::Data)))
    }

    /// 202 `{"data": T}`.
    pub fn accepted<T: JsonSchema>(self) -> Self {
        self.answer(202, "Accepted", Some((schema_of::<T>, Envelope::Data)))
    }

    /// 204, no body.
    pub fn no_content(self) -> Self {
        self.answer(204, "Done; no body", None)
    }

    /// Another answer: `status` with `{"data": T}`.
    pub fn answers<T: JsonSchema>(self, status: u16, description: &str) -> Self {
        self.answer(status, description, Some((schema_of::<T>, Envelope::Data)))
    }

    /// Another answer: `status` with `T` as the whole body (not in `{"data": …}`), e.g. a file.
    pub fn answers_bare<T: JsonSchema>(self, status: u16, description: &str) -> Self {
        self.answer(status, description, Some((schema_of::<T>, Envelope::Bare)))
    }

    /// Another answer: `status` with the error body `{"message"}`, described (e.g. 409).
    pub fn error(self, status: u16, description: &str) -> Self {
        self.answer(
            status,
            description,
            Some((schema_of::<ErrorBody>, Envelope::Bare)),
        )
    }
}

/// The standard error answers added to every route, unless the route describes them itself.
const STANDARD_ERRORS: [(u16, &str); 10] = [
    (
        400,
        "Malformed request: an unknown query parameter, or a body that is not JSON",
    ),
    (401, "Missing, invalid or expired bearer token"),
    (403, "The caller may not do this"),
    (404, "No such resource"),
    (413, "The body is larger than the limit"),
    (422, "The given data was invalid"),
    (429, "Rate limit exceeded; `Retry-After` says when to retry"),
    (502, "The engine failed"),
    (503, "No engine capacity now; retry later"),
    (504, "The engine did not answer in time"),
];

/// The error body `{"message"}` of every failure but a 422.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct ErrorBody {
    /// What went wrong.
    message: String,
}

/// The body of a 422: the message and, per field, the rules it broke.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct ValidationErrorBody {
    /// `The given data was invalid.`
    message: String,
    /// The rules each field broke, e.g. `{"title": ["required"]}`.
    errors: std::collections::BTreeMap<String, Vec<String>>,
}

/// `meta` of a cursor-paged list.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct CursorMeta {
    /// Pass as `cursor` to continue after the last item returned; null only when nothing was
    /// returned and no cursor was given.
    #[schemars(required, extend("type" = ["string", "null"]))]
    next_cursor: Option<String>,
    /// Whether more items follow.
    has_more: bool,
}

/// One route as the document needs it.
pub(crate) struct DocumentedRoute<'a> {
    pub method: &'a str,
    /// The pattern, `/api/v1/notes/{id}`.
    pub pattern: String,
    pub captures: Vec<&'a str>,
    pub operation: Option<&'a Operation>,
}

/// The OpenAPI 3.1 fragment of `routes`.
pub(crate) fn document(routes: &[DocumentedRoute<'_>]) -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.definitions_path = "/components/schemas".into();
            settings.meta_schema = None;
        })
        .into_generator();
    let mut paths = Map::new();
    for route in routes {
        let operation = describe(route, &mut generator);
        let item = paths
            .entry(route.pattern.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(item) = item {
            item.insert(route.method.to_ascii_lowercase(), operation);
        }
    }
    let schemas = generator.take_definitions(true);
    json!({
        "openapi": "3.1.0",
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

fn describe(route: &DocumentedRoute<'_>, generator: &mut SchemaGenerator) -> Value {
    let default = Operation::new(&format!("{} {}", route.method, route.pattern));
    let operation = route.operation.unwrap_or(&default);
    let mut object = Map::new();
    object.insert("operationId".into(), operation_id(route).into());
    object.insert("summary".into(), operation.summary.clone().into());
    if let Some(description) = &operation.description {
        object.insert("description".into(), description.clone().into());
    }
    if let Some(name) = &operation.audit {
        object.insert("x-tessera-audit".into(), name.clone().into());
    }
    let mut parameters: Vec<Value> = route
        .captures
        .iter()
        .map(|name| {
            let mut parameter = json!({
                "name": name,
                "in": "path",
                "required": true,
                "schema": {"type": "string", "minLength": 1},
            });
            if let Some((_, description)) = operation
                .path_descriptions
                .iter()
                .find(|(parameter, _)| parameter == name)
            {
                parameter["description"] = description.clone().into();
            }
            parameter
        })
        .collect();
    if let Some(query) = operation.query {
        parameters.extend(query_parameters(query, generator));
    }
    if !parameters.is_empty() {
        object.insert("parameters".into(), parameters.into());
    }
    if let Some((body, required)) = &operation.body {
        let content = match body {
            Body::Json(schema) => json!({"application/json": {"schema": schema(generator)}}),
            Body::Binary(media_type) => {
                json!({media_type.as_str(): {"schema": {"type": "string", "format": "binary"}}})
            }
        };
        object.insert(
            "requestBody".into(),
            json!({"required": required, "content": content}),
        );
    }
    let mut responses = Map::new();
    if operation.answers.is_empty() {
        responses.insert(
            "default".into(),
            json!({"description": "The engine's answer"}),
        );
    }
    for answer in &operation.answers {
        let mut response = json!({"description": answer.description});
        if let Some(media_type) = &answer.binary {
            response["content"] =
                json!({media_type.as_str(): {"schema": {"type": "string", "format": "binary"}}});
        }
        if let Some((schema, envelope)) = answer.schema {
            let schema = schema(generator).to_value();
            let body = match envelope {
                Envelope::Bare => schema,
                Envelope::Data => json!({
                    "type": "object",
                    "required": ["data"],
                    "properties": {"data": schema},
                }),
                Envelope::Page => json!({
                    "type": "object",
                    "required": ["data", "meta"],
                    "properties": {
                        "data": {"type": "array", "items": schema},
                        "meta": generator.subschema_for::<CursorMeta>(),
                    },
                }),
            };
            response["content"] = json!({"application/json": {"schema": body}});
        }
        responses.insert(answer.status.to_string(), response);
    }
    for (status, description) in STANDARD_ERRORS {
        let schema = if status == 422 {
            generator.subschema_for::<ValidationErrorBody>()
        } else {
            generator.subschema_for::<ErrorBody>()
        };
        responses.entry(status.to_string()).or_insert_with(|| {
            json!({
                "description": description,
                "content": {"application/json": {"schema": schema}},
            })
        });
    }
    object.insert("responses".into(), responses.into());
    Value::Object(object)
}

/// `get_api_v1_notes_id`: the method and the pattern's segments.
fn operation_id(route: &DocumentedRoute<'_>) -> String {
    let mut id = route.method.to_ascii_lowercase();
    for segment in route
        .pattern
        .split('/')
        .filter(|segment| !segment.is_empty())
    {
        id.push('_');
        id.extend(
            segment
                .chars()
                .filter(|c| !matches!(c, '{' | '}'))
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
        );
    }
    id
}

/// One query parameter per property of the object schema `query` makes, inlined (query
/// parameters cannot be a `$ref` to an object).
fn query_parameters(query: SchemaFn, generator: &mut SchemaGenerator) -> Vec<Value> {
    let schema = query(generator).to_value();
    let resolved = match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let name = reference.trim_start_matches("#/components/schemas/");
            generator.definitions_mut().remove(name).unwrap_or(schema)
        }
        None => schema,
    };
    let required: Vec<&str> = resolved["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = resolved["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, schema)| {
            let mut schema = without_null(schema.clone());
            let description = schema
                .as_object_mut()
                .and_then(|object| object.remove("description"));
            let mut parameter = json!({
                "name": name,
                "in": "query",
                "required": required.contains(&name.as_str()),
                "schema": schema,
            });
            if let Some(description) = description {
                parameter["description"] = description;
            }
            parameter
        })
        .collect()
}

/// `schema` without its `null` alternative (an `Option` field): a query parameter is absent
/// rather than null.
fn without_null(mut schema: Value) -> Value {
    if let Some(types) = schema.get_mut("type").and_then(Value::as_array_mut) {
        types.retain(|kind| kind != "null");
        if types.len() == 1 {
            let kind = types.remove(0);
            schema["type"] = kind;
        }
        if let Some(values) = schema.get_mut("enum").and_then(Value::as_array_mut) {
            values.retain(|value| !value.is_null());
        }
        return schema;
    }
    if let Some(alternatives) = schema.get("anyOf").and_then(Value::as_array) {
        let rest: Vec<&Value> = alternatives
            .iter()
            .filter(|alternative| alternative.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if rest.len() == 1 {
            let mut inner = rest[0].clone();
            if let (Some(object), Some(description)) =
                (inner.as_object_mut(), schema.get("description"))
            {
                object.insert("description".into(), description.clone());
            }
            return inner;
        }
    }
    schema
}

/// A schemars `transform` for answers: requires every property of an object schema, since the
/// engine always writes each field, `null` when it has no value (schemars leaves `Option`
/// fields out of `required`). Use it as `#[schemars(transform = tessera_sdk::openapi::all_required)]`.
pub fn all_required(schema: &mut Schema) {
    let names: Vec<Value> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().map(Value::String).collect())
        .unwrap_or_default();
    let mut required: Vec<Value> = schema
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for name in names {
        if !required.contains(&name) {
            required.push(name);
        }
    }
    schema.insert("required".into(), required.into());
}

/// A schemars `transform` for a field that may be left out but is refused as `null`: drops
/// `null` from its type (and from its values, when it is an enum).
pub fn not_null(schema: &mut Schema) {
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|kind| kind != "null");
        if let [kind] = types.as_slice() {
            let kind = kind.clone();
            schema.insert("type".into(), kind);
        }
    }
}
