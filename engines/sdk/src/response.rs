//! The HTTP response an engine returns, with constructors for the host's success envelopes
//! (`{"data": …}`, `{"data": …, "meta": …}`) and error bodies (`{"message": …}`), and how an
//! [`ApiError`] becomes one ([`ApiError::into_response`]).

use serde::Serialize;

use crate::error::{ApiError, MESSAGE_INVALID, MESSAGE_SERVER_ERROR};

/// An HTTP response. Build it with the constructors; the fields are public for anything else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lowercase by convention) and values.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

#[derive(Serialize)]
struct Data<'a, T: ?Sized> {
    data: &'a T,
}

#[derive(Serialize)]
struct DataWithMeta<'a, T: ?Sized, M: ?Sized> {
    data: &'a T,
    meta: &'a M,
}

#[derive(Serialize)]
struct Message<'a> {
    message: &'a str,
}

impl Response {
    /// A response with `status` and no headers or body.
    pub fn new(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// `status` with `value` serialized as the JSON body and `content-type: application/json`.
    /// A value that fails to serialize (a map with non-string keys, say) gives a 500.
    pub fn json<T: Serialize + ?Sized>(status: u16, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(body) => Self::new(status)
                .with_header("content-type", "application/json")
                .with_body(body),
            Err(error) => {
                crate::log::error(format!("response serialization failed: {error}"));
                Self::error(500, MESSAGE_SERVER_ERROR)
            }
        }
    }

    /// 200 `{"data": data}`.
    pub fn ok<T: Serialize + ?Sized>(data: &T) -> Self {
        Self::json(200, &Data { data })
    }

    /// 200 `{"data": data, "meta": meta}`.
    pub fn ok_with_meta<T: Serialize + ?Sized, M: Serialize + ?Sized>(data: &T, meta: &M) -> Self {
        Self::json(200, &DataWithMeta { data, meta })
    }

    /// 201 `{"data": data}`.
    pub fn created<T: Serialize + ?Sized>(data: &T) -> Self {
        Self::json(201, &Data { data })
    }

    /// 202 `{"data": data}`.
    pub fn accepted<T: Serialize + ?Sized>(data: &T) -> Self {
        Self::json(202, &Data { data })
    }

    /// 204 with an empty body.
    pub fn no_content() -> Self {
        Self::new(204)
    }

    /// `status` with `{"message": message}`.
    pub fn error(status: u16, message: &str) -> Self {
        Self::json(status, &Message { message })
    }

    /// Adds a header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Replaces the body.
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// How an [`ApiError`] is answered: the host's error bodies, and the detail of a 500 logged.
impl ApiError {
    /// The JSON response.
    pub fn into_response(self) -> Response {
        let status = self.status();
        match self {
            Self::Validation(errors) => Response::json(
                status,
                &serde_json::json!({ "message": MESSAGE_INVALID, "errors": errors.fields() }),
            ),
            Self::Internal(detail) => {
                crate::log::error(format!("request failed: {detail}"));
                Response::error(status, MESSAGE_SERVER_ERROR)
            }
            other => Response::error(status, other.message()),
        }
    }
}

impl From<ApiError> for Response {
    fn from(error: ApiError) -> Self {
        error.into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::ValidationErrors;
    use serde_json::json;

    fn body(response: &Response) -> serde_json::Value {
        serde_json::from_slice(&response.body).unwrap()
    }

    #[test]
    fn envelopes_match_the_host() {
        let response = Response::ok(&json!({"id": "1"}));
        assert_eq!(response.status, 200);
        assert_eq!(response.header("Content-Type"), Some("application/json"));
        assert_eq!(body(&response), json!({"data": {"id": "1"}}));

        let response = Response::ok_with_meta(
            &["a", "b"],
            &json!({"next_cursor": null, "has_more": false}),
        );
        assert_eq!(
            body(&response),
            json!({"data": ["a", "b"], "meta": {"next_cursor": null, "has_more": false}})
        );

        assert_eq!(Response::created(&1).status, 201);
        assert_eq!(Response::accepted(&1).status, 202);
        let empty = Response::no_content();
        assert_eq!((empty.status, empty.body.len()), (204, 0));
        assert_eq!(
            body(&Response::error(409, "Taken.")),
            json!({"message": "Taken."})
        );
    }

    #[test]
    fn unserializable_values_become_500() {
        let mut map = std::collections::HashMap::new();
        map.insert((1, 2), "tuple keys are not JSON");
        let response = Response::ok(&map);
        assert_eq!(response.status, 500);
        assert_eq!(body(&response), json!({"message": "Server Error."}));
    }

    #[test]
    fn errors_answer_with_the_host_shapes() {
        let response = ApiError::not_found("Note").into_response();
        assert_eq!(response.status, 404);
        assert_eq!(
            body(&response),
            serde_json::json!({"message": "Note not found."})
        );

        let response = ApiError::Forbidden.into_response();
        assert_eq!(response.status, 403);
        assert_eq!(
            body(&response),
            serde_json::json!({"message": "This action is unauthorized."})
        );

        let response = ApiError::Unauthenticated.into_response();
        assert_eq!(
            (response.status, body(&response)),
            (401, serde_json::json!({"message": "Unauthenticated."}))
        );

        let response = ApiError::Internal("disk on fire".into()).into_response();
        assert_eq!(
            (response.status, body(&response)),
            (500, serde_json::json!({"message": "Server Error."}))
        );
    }

    #[test]
    fn validation_errors_list_rules_per_field() {
        let mut errors = ValidationErrors::new();
        errors.add("email", "required");
        errors.add("limit", "min:1");
        let response = ApiError::from(errors).into_response();
        assert_eq!(response.status, 422);
        assert_eq!(
            body(&response),
            serde_json::json!({
                "message": "The given data was invalid.",
                "errors": {"email": ["required"], "limit": ["min:1"]}
            })
        );
        assert!(
            response
                .headers
                .iter()
                .any(|(name, value)| name == "content-type" && value == "application/json")
        );
    }
}
