//! The OpenAPI 3.1 document: the info block here; the host's paths come from each router's
//! `#[utoipa::path]` handlers, collected by `utoipa_axum` as the routers are merged, plus the
//! documentation-only entries of the engine catch-all and the engines' signed lifecycle
//! endpoints. Each loaded engine's own operations and schemas come from the engine
//! (`describe-api`), merged in by [`ServedDocument`] whenever the loaded engines change.

use std::sync::{Arc, Mutex};

use axum::http::header;
use axum::response::IntoResponse;
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::runtime::EngineRegistry;
use crate::runtime::api_description::{DescribedEngine, merge_into};

use crate::http::error::ErrorBody;
use crate::http::rate_limit;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tessera",
        description = "Multi-tenant workspace platform: authentication, core and engine APIs.",
    ),
    modifiers(&BearerAuth),
    paths(
        engine_get, engine_post, engine_put, engine_patch, engine_delete,
        engine_provision_tenant, engine_deprovision_tenant, engine_provision_user, engine_deprovision_user,
    ),
    tags(
        (name = "health", description = "Health and liveness"),
        (name = "engines", description = "The engine registry and engine routes"),
        (name = "orchestration", description = "Provisioning tenants and users across engines (internal, signed)"),
        (name = "operator", description = "The cluster's operator surface, for a bearer of the operator token (`tessera admin operator-token`)"),
    )
)]
pub struct ApiDoc;

/// The host's static part of the document (the host's own routers add theirs as they are
/// merged).
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// Documents one method of the engine catch-all route under its own operation id.
macro_rules! engine_route_doc {
    ($function:ident, $method:ident) => {
        /// A request under an engine's prefix, authenticated by the host and handled by that
        /// engine's component.
        #[utoipa::path(
            $method,
            path = "/{engine}/api/v1/{path}",
            tag = "engines",
            params(
                ("engine" = String, Path, description = "The engine code"),
                ("path" = String, Path, description = "The rest of the path, handled by the engine"),
            ),
            security(("bearer" = [])),
            responses(
                (status = 200, description = "The engine's response"),
                (status = 401, description = "Missing or invalid bearer token"),
                (status = 404, description = "No engine with that code, or the engine has no such route"),
                (status = 502, description = "The engine failed (trap, memory cap, invalid response)"),
                (status = 504, description = "The engine exceeded its deadline"),
            )
        )]
        #[allow(dead_code)]
        fn $function() {}
    };
}

engine_route_doc!(engine_get, get);
engine_route_doc!(engine_post, post);
engine_route_doc!(engine_put, put);
engine_route_doc!(engine_patch, patch);
engine_route_doc!(engine_delete, delete);

/// Documents one engine-internal lifecycle endpoint (signed, CONTRACT §5).
macro_rules! engine_internal_doc {
    ($function:ident, $path:literal, $summary:literal) => {
        #[doc = $summary]
        #[utoipa::path(
            post,
            path = $path,
            tag = "engines",
            params(
                ("engine" = String, Path, description = "The engine code"),
                ("engine_again" = String, Path, description = "The engine code again"),
                ("X-Service-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256>"),
            ),
            responses(
                (status = 200, description = "`{data: {status, engine}}`"),
                (status = 401, description = "Missing, malformed, wrong or stale signature"),
                (status = 404, description = "No such engine"),
                (status = 422, description = "Missing fields"),
                (status = 502, description = "The engine refused or failed"),
            )
        )]
        #[allow(dead_code)]
        fn $function() {}
    };
}

engine_internal_doc!(
    engine_provision_tenant,
    "/{engine}/api/internal/{engine_again}/provision/tenant",
    "Provision a tenant on one engine."
);
engine_internal_doc!(
    engine_deprovision_tenant,
    "/{engine}/api/internal/{engine_again}/deprovision/tenant",
    "Remove a tenant's data from one engine."
);
engine_internal_doc!(
    engine_provision_user,
    "/{engine}/api/internal/{engine_again}/provision/user",
    "Provision a user on one engine."
);
engine_internal_doc!(
    engine_deprovision_user,
    "/{engine}/api/internal/{engine_again}/deprovision/user",
    "Remove a user's data from one engine."
);

/// Declares the `bearer` scheme (JWT access tokens) that secured operations refer to.
struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
        // The operator endpoints (`/core/api/operator/…`): the token `tessera admin
        // operator-token` prints, derived from the service secret.
        components.add_security_scheme(
            "operator_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The operator token: `tessera admin operator-token` prints it",
                    ))
                    .build(),
            ),
        );
    }
}

/// The answers every operation of the host can give besides its own, added to each operation
/// of the assembled document that does not document them yet (an operation's own description
/// of a status wins):
///
/// - `429` on every rate-limited path (all but the health checks and this document);
/// - `401` on every operation secured by a bearer token;
/// - `400` everywhere (every handler refuses unknown query parameters, and a body that is not
///   JSON);
/// - `408` (body too slow) and `413` (body too large) on every operation with a request body;
/// - `500` everywhere (opaque, logged).
///
/// Each with the `{message}` body (`ErrorBody`).
pub fn add_standard_responses(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};

    let components = document.components.get_or_insert_with(Default::default);
    components
        .schemas
        .entry("ErrorBody".to_owned())
        .or_insert_with(<ErrorBody as utoipa::PartialSchema>::schema);
    let error = |description: &str| {
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build()
    };
    for (path, item) in document.paths.paths.iter_mut() {
        let methods = [
            (axum::http::Method::GET, &mut item.get),
            (axum::http::Method::PUT, &mut item.put),
            (axum::http::Method::POST, &mut item.post),
            (axum::http::Method::DELETE, &mut item.delete),
            (axum::http::Method::PATCH, &mut item.patch),
        ];
        for (method, operation) in methods {
            let Some(operation) = operation else { continue };
            // Every handler refuses unknown query parameters (`ApiQuery`, `NoQuery`).
            let mut standard = vec![
                (
                    "400",
                    "Malformed request: an unknown query parameter, or a body that is not JSON",
                ),
                ("500", "Internal error; the cause is logged, not answered"),
            ];
            if rate_limit::classify(&method, path).is_some() {
                standard.push((
                    "429",
                    "Rate limit exceeded; `Retry-After` says when to retry",
                ));
            }
            if is_secured_by(operation, "bearer") {
                standard.push(("401", "Missing, invalid or expired bearer token"));
            }
            if is_secured_by(operation, "operator_token") {
                standard.push(("401", "No bearer token, or not the operator token"));
            }
            if crate::http::backpressure::applies_to(&method, path) {
                standard.push((
                    "503",
                    "The platform's backlog of accepted work is past its bound; `Retry-After` says when to retry",
                ));
            }
            if operation.request_body.is_some() {
                standard.push(("408", "The body did not arrive in time"));
                standard.push(("413", "The body is larger than the limit"));
            }
            for (status, description) in standard {
                operation
                    .responses
                    .responses
                    .entry(status.to_owned())
                    .or_insert_with(|| error(description).into());
            }
        }
    }
}

/// Whether `operation` requires the security scheme `scheme`.
fn is_secured_by(operation: &utoipa::openapi::path::Operation, scheme: &str) -> bool {
    operation.security.iter().flatten().any(|requirement| {
        serde_json::to_value(requirement)
            .ok()
            .and_then(|value| value.as_object().map(|object| object.contains_key(scheme)))
            .unwrap_or(false)
    })
}

/// The document `/api/openapi.json` serves: the host's own operations, plus each loaded
/// engine's API description (`describe-api`), rebuilt when the loaded engines change (a load,
/// a replacement, an unload) and otherwise served from the last build.
pub struct ServedDocument {
    host: serde_json::Value,
    engines: Arc<EngineRegistry>,
    /// The registry generation the bytes were built for.
    built: Mutex<Option<(u64, axum::body::Bytes)>>,
}

impl ServedDocument {
    pub fn new(host: &utoipa::openapi::OpenApi, engines: Arc<EngineRegistry>) -> Self {
        Self {
            host: serde_json::to_value(host).expect("the OpenAPI document serializes"),
            engines,
            built: Mutex::new(None),
        }
    }

    /// The document for the engines loaded now.
    pub fn current(&self) -> axum::body::Bytes {
        let generation = self.engines.generation();
        if let Some((built_for, bytes)) = &*self.built.lock().expect("openapi cache lock")
            && *built_for == generation
        {
            return bytes.clone();
        }
        let loaded = self.engines.loaded();
        let described: Vec<DescribedEngine<'_>> = loaded
            .iter()
            .map(|engine| DescribedEngine {
                code: &engine.descriptor.code,
                name: &engine.descriptor.name,
                api: &engine.api,
            })
            .collect();
        let mut document = self.host.clone();
        merge_into(&mut document, &described);
        let bytes = axum::body::Bytes::from(
            serde_json::to_vec(&document).expect("the OpenAPI document serializes"),
        );
        *self.built.lock().expect("openapi cache lock") = Some((generation, bytes.clone()));
        bytes
    }

    /// [`Self::current`] as a JSON response.
    pub fn response(&self) -> axum::response::Response {
        ([(header::CONTENT_TYPE, "application/json")], self.current()).into_response()
    }
}
