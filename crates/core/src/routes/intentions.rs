//! `POST /core/api/v1/intentions`: the write path of the core service.

use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::intentions::{
    self, Intention, MAX_FIELD_CODE, MAX_FIELDS, MAX_VALUE_BYTES, ProcessedIntention, Submitter,
    field_code_pattern,
};
use crate::state::CoreState;
use tessera_auth::caller::Caller;
use tessera_http::conventions::CorrelationId;
use tessera_http::envelope::{self, Data};
use tessera_http::extract::{ApiJson, NoQuery};
use tessera_http::schema::{NOT_BLANK, UUID, nullable_string, string, string_enum};
use tessera_http::{ApiError, ApiResult};

pub(super) fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    CoreState: axum::extract::FromRef<S>,
    tessera_auth::AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new().routes(routes!(submit_intention))
}

/// The body of an intention. Its schema is written by hand (`PartialSchema` below): the
/// shape of `payload` depends on `type`.
#[derive(Debug, Deserialize)]
pub struct IntentionRequest {
    /// `entity.create`, `entity.update`, `entity.delete` or `entity.status_change`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// `entity.create`: `family`, `fields`, optional `status`; `entity.update`: `entity_id`,
    /// `fields`; `entity.delete`: `entity_id`; `entity.status_change`: `entity_id`, `status`.
    pub payload: Option<Value>,
}

impl utoipa::PartialSchema for IntentionRequest {
    /// One object per `type`, each with the `payload` `Intention::parse` requires of it.
    fn schema() -> RefOr<Schema> {
        let entity_id = || {
            string(UUID).description(Some(
                "The entity's id: a UUID (hyphenated, simple, braced or `urn:uuid:`, either \
                 case, surrounding white space allowed)",
            ))
        };
        let create = ObjectBuilder::new()
            .property(
                "family",
                string(NOT_BLANK).description(Some(
                    "The code of one of the tenant's families (trimmed; 422 when there is none)",
                )),
            )
            .required("family")
            .property("fields", fields_schema(0))
            .required("fields")
            .property(
                "status",
                nullable_string(NOT_BLANK).description(Some(
                    "A status of the family's pipeline (trimmed); absent or `null`: its first",
                )),
            );
        let update = ObjectBuilder::new()
            .property("entity_id", entity_id())
            .required("entity_id")
            .property("fields", fields_schema(1))
            .required("fields");
        let delete = ObjectBuilder::new()
            .property("entity_id", entity_id())
            .required("entity_id");
        let status_change = ObjectBuilder::new()
            .property("entity_id", entity_id())
            .required("entity_id")
            .property(
                "status",
                string(NOT_BLANK)
                    .description(Some("A status of the entity's family's pipeline (trimmed)")),
            )
            .required("status");
        let form = |kind: &str, payload: ObjectBuilder| {
            ObjectBuilder::new()
                .property("type", string_enum(&[kind]))
                .required("type")
                .property("payload", payload.schema_type(Type::Object))
                .required("payload")
        };
        OneOfBuilder::new()
            .item(form("entity.create", create))
            .item(form("entity.update", update))
            .item(form("entity.delete", delete))
            .item(form("entity.status_change", status_change))
            .description(Some(
                "`type` (`entity.create`, `entity.update`, `entity.delete` or \
                 `entity.status_change`) and the `payload` of that type",
            ))
            .into()
    }
}

impl ToSchema for IntentionRequest {}

/// The `fields` of a payload: at least `min` and at most `MAX_FIELDS` of them, each keyed by
/// a field code, each value at most `MAX_VALUE_BYTES` bytes of JSON.
fn fields_schema(min: usize) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property_names(Some(string(format!("^{}$", field_code_pattern()))))
        // The byte limit is no schema's; but a longer string cannot meet it (its quotes take two).
        .additional_properties(Some(
            ObjectBuilder::new()
                .schema_type(SchemaType::AnyValue)
                .max_length(Some(MAX_VALUE_BYTES - 2)),
        ))
        .min_properties((min > 0).then_some(min))
        .max_properties(Some(MAX_FIELDS))
        .description(Some(format!(
            "Field code to value{}; at most {MAX_FIELDS} fields; a code is a letter, then \
             letters, digits or `_` (at most {MAX_FIELD_CODE}); each value any JSON of at most \
             {MAX_VALUE_BYTES} bytes",
            if min > 0 { ", at least one" } else { "" }
        )))
}

/// Submits an intention; it is processed synchronously and answered with its domain events.
#[utoipa::path(
    post,
    path = "/core/api/v1/intentions",
    tag = "core",
    security(("bearer" = [])),
    request_body = IntentionRequest,
    responses(
        (status = 200, description = "Processed, with the resulting domain events", body = Data<ProcessedIntention>),
        (status = 400, description = "Malformed JSON"),
        (status = 401, description = "Unauthenticated"),
        (status = 403, description = "A viewer or guest cannot write; only owners change entities others created"),
        (status = 404, description = "The entity is not in the tenant"),
        (status = 422, description = "Invalid payload, unknown family, or a status outside the pipeline; nothing changed"),
    )
)]
async fn submit_intention(
    State(state): State<CoreState>,
    caller: Caller,
    correlation_id: CorrelationId,
    _: NoQuery,
    ApiJson(request): ApiJson<IntentionRequest>,
) -> ApiResult<Response> {
    caller.require_writer()?;
    let intention = Intention::parse(request.kind.as_deref(), request.payload.as_ref())
        .map_err(ApiError::Validation)?;
    let submitter = Submitter {
        may_modify_others: caller.require_owner().is_ok(),
        tenant_id: caller.tenant_id,
        user_id: caller.user_id,
        correlation_id: Some(correlation_id.0),
        depth: 0,
        traceparent: tessera_http::trace_context::current_traceparent(),
    };
    // A refused intention is answered as its `ApiError` (`From<IntentionError>`).
    let processed = intentions::process(
        &state.database,
        &state.intention_writer,
        submitter,
        intention,
    )
    .await?;
    Ok(envelope::ok(processed))
}
