//! Errors: [`ApiError`], what a handler returns on failure (answered with the host's error
//! bodies and status codes), and [`HostError`], a failed call of a host import.

use std::fmt;

use tessera_wire::BodyError;

use crate::validation::ValidationErrors;

pub use tessera_wire::messages::{
    MESSAGE_FORBIDDEN, MESSAGE_INVALID, MESSAGE_METHOD_NOT_ALLOWED, MESSAGE_SERVER_ERROR,
    MESSAGE_UNAUTHENTICATED,
};

/// Every failure a handler can answer with. Each becomes a JSON response shaped like the
/// host's: `{"message": …}`, or `{"message": …, "errors": {…}}` for a 422.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// 400 with the message (invalid JSON, unknown query parameter, …).
    BadRequest(String),
    /// 401 `Unauthenticated.`
    Unauthenticated,
    /// 403 `This action is unauthorized.`
    Forbidden,
    /// 404 with the message, e.g. `Note not found.` (see [`ApiError::not_found`]).
    NotFound(String),
    /// 405 `Method not allowed.`
    MethodNotAllowed,
    /// 409 with the message.
    Conflict(String),
    /// 413 with the message (e.g. an upload above the configured limit).
    PayloadTooLarge(String),
    /// 422 `The given data was invalid.` with the field errors.
    Validation(ValidationErrors),
    /// 500 `Server Error.`; the detail is logged, never shown to the client.
    Internal(String),
}

impl ApiError {
    /// 404 `"<what> not found."`.
    pub fn not_found(what: &str) -> Self {
        Self::NotFound(format!("{what} not found."))
    }

    /// 422 with one field failing one rule.
    pub fn invalid(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Self::Validation(ValidationErrors::single(field, rule))
    }

    /// 500, logging `detail`.
    pub fn internal(detail: impl fmt::Display) -> Self {
        Self::Internal(detail.to_string())
    }

    /// The HTTP status code.
    pub fn status(&self) -> u16 {
        match self {
            Self::BadRequest(_) => 400,
            Self::Unauthenticated => 401,
            Self::Forbidden => 403,
            Self::NotFound(_) => 404,
            Self::MethodNotAllowed => 405,
            Self::Conflict(_) => 409,
            Self::PayloadTooLarge(_) => 413,
            Self::Validation(_) => 422,
            Self::Internal(_) => 500,
        }
    }

    /// The `message` of the body.
    pub fn message(&self) -> &str {
        match self {
            Self::BadRequest(message)
            | Self::NotFound(message)
            | Self::Conflict(message)
            | Self::PayloadTooLarge(message) => message,
            Self::Unauthenticated => MESSAGE_UNAUTHENTICATED,
            Self::Forbidden => MESSAGE_FORBIDDEN,
            Self::MethodNotAllowed => MESSAGE_METHOD_NOT_ALLOWED,
            Self::Validation(_) => MESSAGE_INVALID,
            Self::Internal(_) => MESSAGE_SERVER_ERROR,
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Internal(detail) => write!(f, "{}: {detail}", self.status()),
            other => write!(f, "{} {}", other.status(), other.message()),
        }
    }
}

impl std::error::Error for ApiError {}

/// A refused JSON body: 400 when it is not JSON, 422 when it has the wrong shape.
impl From<BodyError> for ApiError {
    fn from(error: BodyError) -> Self {
        error.into_api_error(Self::BadRequest, Self::Validation)
    }
}

/// A 422 with these field errors.
impl From<ValidationErrors> for ApiError {
    fn from(errors: ValidationErrors) -> Self {
        Self::Validation(errors)
    }
}

impl From<HostError> for ApiError {
    fn from(error: HostError) -> Self {
        Self::Internal(error.to_string())
    }
}

/// A host import failed (storage, scheduler, events, outbound HTTP), or a stored value could not
/// be decoded. Converts into [`ApiError::Internal`] (a 500) in handlers and into `String` in
/// lifecycle hooks, so `?` works in both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    operation: &'static str,
    message: String,
}

impl HostError {
    /// A failure of `operation` (e.g. `storage.get`) with the host's or decoder's reason.
    pub fn new(operation: &'static str, message: impl Into<String>) -> Self {
        Self {
            operation,
            message: message.into(),
        }
    }

    /// The operation that failed, e.g. `storage.set`.
    pub fn operation(&self) -> &'static str {
        self.operation
    }

    /// The reason.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.operation, self.message)
    }
}

impl std::error::Error for HostError {}

impl From<HostError> for String {
    fn from(error: HostError) -> Self {
        error.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_errors_convert_with_question_marks() {
        fn check(passed: bool) -> Result<(), ApiError> {
            let mut errors = ValidationErrors::new();
            errors.check(passed, "title", "required");
            errors.into_result()?;
            Ok(())
        }
        assert_eq!(check(true), Ok(()));
        assert_eq!(check(false), Err(ApiError::invalid("title", "required")));
        assert_eq!(
            ApiError::from(BodyError::Malformed("Invalid JSON body: EOF.".into())),
            ApiError::BadRequest("Invalid JSON body: EOF.".into())
        );
        assert_eq!(
            ApiError::from(BodyError::Invalid(ValidationErrors::single("a", "string"))),
            ApiError::invalid("a", "string")
        );
    }

    #[test]
    fn host_errors_become_500s_and_strings() {
        let error = HostError::new("storage.get", "database is locked");
        assert_eq!(
            String::from(error.clone()),
            "storage.get failed: database is locked"
        );
        assert_eq!(ApiError::from(error).status(), 500);
    }
}
