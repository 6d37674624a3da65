//! The API's error type: every failure a handler returns becomes one of these, with a stable
//! body (`{message}`, or `{message, errors}` for 422) and the status code of the spec.
//! Internal errors are logged with their whole chain and answered with an opaque message.
//! [`ValidationErrors`] and the messages are `tessera-wire`'s, shared with the engine SDK.

use std::collections::BTreeMap;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use tessera_wire::BodyError;
pub use tessera_wire::ValidationErrors;
pub use tessera_wire::messages::{
    MESSAGE_FORBIDDEN, MESSAGE_INVALID, MESSAGE_METHOD_NOT_ALLOWED, MESSAGE_PAYLOAD_TOO_LARGE,
    MESSAGE_SERVER_ERROR, MESSAGE_TOO_MANY_ATTEMPTS, MESSAGE_UNAUTHENTICATED,
};

/// `{message}`: the body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub message: String,
}

/// `{message, errors}`: the body of a 422.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValidationErrorBody {
    pub message: String,
    /// Field name (dotted path for nested items) to the rules it failed, e.g. `["required"]`.
    pub errors: BTreeMap<String, Vec<String>>,
}

/// Every error the HTTP layer answers with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("unauthenticated")]
    Unauthenticated,
    #[error("forbidden")]
    Forbidden,
    #[error("not found: {0}")]
    NotFound(String),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("payload too large")]
    PayloadTooLarge,
    #[error("validation failed")]
    Validation(ValidationErrors),
    #[error("too many requests")]
    TooManyRequests { retry_after_seconds: u64 },
    #[error("bad gateway: {0}")]
    BadGateway(String),
    #[error("gateway timeout: {0}")]
    GatewayTimeout(String),
    #[error("service unavailable: {0}")]
    ServiceUnavailable(String),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    pub fn not_found(what: &str) -> Self {
        Self::NotFound(format!("{what} not found."))
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Validation(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::BadGateway(_) => StatusCode::BAD_GATEWAY,
            Self::GatewayTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
            Self::ServiceUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn message(&self) -> String {
        match self {
            Self::BadRequest(message)
            | Self::NotFound(message)
            | Self::Conflict(message)
            | Self::BadGateway(message)
            | Self::GatewayTimeout(message)
            | Self::ServiceUnavailable(message) => message.clone(),
            Self::Unauthenticated => MESSAGE_UNAUTHENTICATED.into(),
            Self::Forbidden => MESSAGE_FORBIDDEN.into(),
            Self::MethodNotAllowed => MESSAGE_METHOD_NOT_ALLOWED.into(),
            Self::PayloadTooLarge => MESSAGE_PAYLOAD_TOO_LARGE.into(),
            Self::Validation(_) => MESSAGE_INVALID.into(),
            Self::TooManyRequests { .. } => MESSAGE_TOO_MANY_ATTEMPTS.into(),
            Self::Internal(_) => MESSAGE_SERVER_ERROR.into(),
        }
    }
}

/// A 422 with these field errors, so `errors.into_result()?` answers it.
impl From<ValidationErrors> for ApiError {
    fn from(errors: ValidationErrors) -> Self {
        Self::Validation(errors)
    }
}

/// A refused JSON body: 400 when it is not JSON, 422 when it has the wrong shape.
impl From<BodyError> for ApiError {
    fn from(error: BodyError) -> Self {
        error.into_api_error(Self::BadRequest, Self::Validation)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = self.message();
        match self {
            Self::Internal(error) => {
                tracing::error!(error = format!("{error:#}"), "request failed");
                (status, Json(ErrorBody { message })).into_response()
            }
            Self::Validation(errors) => (
                status,
                Json(ValidationErrorBody {
                    message,
                    errors: errors.into_fields(),
                }),
            )
                .into_response(),
            Self::TooManyRequests {
                retry_after_seconds,
            } => {
                let mut response = (status, Json(ErrorBody { message })).into_response();
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_seconds));
                response
            }
            _ => (status, Json(ErrorBody { message })).into_response(),
        }
    }
}

/// 503 `{message}` with `Retry-After`: a refusal for lack of capacity (engine slots, a backlog
/// past its bound) that the client should retry after `retry_after_seconds`.
pub fn unavailable_retry_after(message: String, retry_after_seconds: u64) -> Response {
    let mut response = ApiError::ServiceUnavailable(message).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_seconds));
    response
}

/// The `{message}` a bare status gets when no handler wrote a body (axum's 405, a body-limit
/// 413, the fallback 404, a caught panic).
pub fn default_message(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "Bad request.",
        StatusCode::UNAUTHORIZED => MESSAGE_UNAUTHENTICATED,
        StatusCode::FORBIDDEN => MESSAGE_FORBIDDEN,
        StatusCode::NOT_FOUND => "Not found.",
        StatusCode::METHOD_NOT_ALLOWED => MESSAGE_METHOD_NOT_ALLOWED,
        StatusCode::PAYLOAD_TOO_LARGE => MESSAGE_PAYLOAD_TOO_LARGE,
        StatusCode::UNPROCESSABLE_ENTITY => MESSAGE_INVALID,
        StatusCode::TOO_MANY_REQUESTS => MESSAGE_TOO_MANY_ATTEMPTS,
        StatusCode::BAD_GATEWAY => "Bad gateway.",
        StatusCode::SERVICE_UNAVAILABLE => "Service unavailable.",
        StatusCode::GATEWAY_TIMEOUT => "Gateway timeout.",
        _ if status.is_server_error() => MESSAGE_SERVER_ERROR,
        _ => "Request failed.",
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
