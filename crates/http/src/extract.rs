//! Extractors that reject in the API's own error format: `ApiJson` (400 for malformed JSON,
//! 422 with field paths for well-formed JSON of the wrong shape, 413 past the body limit),
//! `ApiQuery` (400 for unknown parameters, 422 for bad values) and `NoQuery` for endpoints
//! that take no parameters at all.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;
use tessera_wire::messages::{MESSAGE_EXPECTED_JSON, unknown_query_parameter};
use tessera_wire::{describe_data_error, is_json_content_type};

use super::error::{ApiError, ValidationErrors};

/// A JSON body deserialized into `T`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !has_json_content_type(&request) {
            return Err(ApiError::BadRequest(MESSAGE_EXPECTED_JSON.into()));
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::PayloadTooLarge
                } else {
                    ApiError::BadRequest("The request body could not be read.".into())
                }
            })?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// Parses a JSON object, classifying failures as 400 (not JSON, trailing garbage included)
/// or 422 (wrong shape, a document that is not an object included): `tessera-wire`'s rules,
/// the same as engines'.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    Ok(tessera_wire::parse_json_object(bytes)?)
}

fn has_json_content_type(request: &Request) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|content_type| content_type.to_str().ok())
        .is_some_and(is_json_content_type)
}

/// Query parameters deserialized into `T`. Give `T` `#[serde(deny_unknown_fields)]` so an
/// unknown parameter is a 400, as the spec requires.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parse_query(parts.uri.query().unwrap_or("")).map(ApiQuery)
    }
}

/// Parses a query string into `T`.
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let deserializer =
        serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().clone();
        let message = error.into_inner().to_string();
        if let Some(name) = message
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split('`').next())
        {
            return unknown_parameter(name);
        }
        let (field, rule) = describe_data_error(&path, &message);
        ApiError::Validation(ValidationErrors::single(field, rule))
    })
}

fn unknown_parameter(name: &str) -> ApiError {
    ApiError::BadRequest(unknown_query_parameter(name))
}

/// For endpoints without query parameters: any parameter is unknown, hence 400.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoQuery;

impl<S: Send + Sync> FromRequestParts<S> for NoQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        match form_urlencoded::parse(query.as_bytes()).next() {
            Some((name, _)) => Err(unknown_parameter(&name)),
            None => Ok(NoQuery),
        }
    }
}

/// The token of `Authorization: Bearer <token>` (scheme `Bearer` or `bearer`), trimmed; `None`
/// without one. Not verified: the `Caller` extractor verifies it, and what only needs to know
/// whose request it is (usage metering) asks the verified-token cache.
pub fn bearer_token(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
        .filter(|token| !token.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Body {
        name: String,
    }

    fn validation_fields(error: ApiError) -> Vec<(String, Vec<String>)> {
        match error {
            ApiError::Validation(errors) => errors.fields().clone().into_iter().collect(),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    /// The rules themselves are `tessera-wire`'s (and tested there); here, their statuses.
    #[test]
    fn json_bodies_fail_as_400s_and_422s() {
        match parse_json::<Body>(b"{\"name\": ").unwrap_err() {
            ApiError::BadRequest(message) => {
                assert!(message.starts_with("Invalid JSON body: "), "{message}")
            }
            other => panic!("expected 400, got {other:?}"),
        }
        assert_eq!(
            validation_fields(parse_json::<Body>(b"{}").unwrap_err()),
            vec![("name".into(), vec!["required".into()])]
        );
        // A struct's derived `Deserialize` takes an array of its fields in order: refused.
        for not_an_object in [&b"[\"Ada\"]"[..], b"\"Ada\"", b"null", b" [5] "] {
            assert_eq!(
                validation_fields(parse_json::<Body>(not_an_object).unwrap_err()),
                vec![("body".into(), vec!["object".into()])]
            );
        }
        assert!(matches!(
            parse_json::<Body>(b"[\"Ada\"").unwrap_err(),
            ApiError::BadRequest(_)
        ));
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Paging {
        page: Option<u32>,
    }

    #[test]
    fn unknown_query_parameters_are_bad_requests_and_bad_values_are_invalid() {
        assert!(matches!(
            parse_query::<Paging>("page=2").unwrap().page,
            Some(2)
        ));
        let unknown = parse_query::<Paging>("page=2&colour=red").unwrap_err();
        match unknown {
            ApiError::BadRequest(message) => assert!(message.contains("colour"), "{message}"),
            other => panic!("expected 400, got {other:?}"),
        }
        let bad = parse_query::<Paging>("page=two").unwrap_err();
        assert_eq!(
            validation_fields(bad),
            vec![("page".into(), vec!["integer".into()])]
        );
    }
}
