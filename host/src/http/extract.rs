//! Extractors that reject in the API's own error format: `ApiJson` (400 for malformed JSON,
//! 422 with field paths for well-formed JSON of the wrong shape, 413 past the body limit),
//! `ApiQuery` (400 for unknown parameters, 422 for bad values) and `NoQuery` for endpoints
//! that take no parameters at all.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;
use serde_path_to_error::{Path, Segment};

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
            return Err(ApiError::BadRequest(
                "Expected a JSON body with Content-Type: application/json.".into(),
            ));
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

/// Parses a JSON document, classifying failures as 400 (not JSON) or 422 (wrong shape).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().clone();
        let inner = error.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => {
                let (field, rule) = describe_data_error(&path, &inner.to_string());
                ApiError::Validation(ValidationErrors::single(field, rule))
            }
            _ => ApiError::BadRequest(format!("Invalid JSON body: {inner}.")),
        }
    })?;
    Ok(value)
}

fn has_json_content_type(request: &Request) -> bool {
    let Some(content_type) = request.headers().get(header::CONTENT_TYPE) else {
        return false;
    };
    let Ok(content_type) = content_type.to_str() else {
        return false;
    };
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
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
    ApiError::BadRequest(format!("Unknown query parameter `{name}`."))
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

/// Turns serde's description of a shape error into a field path (`actions.0.config.field`)
/// and a rule name (`required`, `string`, `integer`, …).
fn describe_data_error(path: &Path, message: &str) -> (String, String) {
    let mut segments: Vec<String> = path
        .iter()
        .filter_map(|segment| match segment {
            Segment::Seq { index } => Some(index.to_string()),
            Segment::Map { key } => Some(key.clone()),
            Segment::Enum { variant } => Some(variant.clone()),
            Segment::Unknown => None,
        })
        .collect();
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
    {
        segments.push(field.to_owned());
        return (segments.join("."), "required".into());
    }
    let rule = match message.split("expected ").nth(1) {
        Some(expected) if expected.contains("string") || expected.contains("char") => "string",
        Some(expected) if expected.contains("bool") => "boolean",
        Some(expected)
            if expected.contains("integer")
                || expected.starts_with('u')
                || expected.starts_with('i') =>
        {
            "integer"
        }
        Some(expected)
            if expected.contains("f64")
                || expected.contains("f32")
                || expected.contains("number") =>
        {
            "numeric"
        }
        Some(expected) if expected.contains("sequence") => "array",
        Some(expected) if expected.contains("map") || expected.contains("struct") => "object",
        Some(expected) if expected.contains("variant") || expected.contains("one of") => "in",
        _ if message.starts_with("invalid digit") || message.contains("number too large") => {
            "integer"
        }
        _ if message.contains("provided string was not") => "boolean",
        _ => "invalid",
    };
    let field = if segments.is_empty() {
        "body".to_owned()
    } else {
        segments.join(".")
    };
    (field, rule.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Body {
        name: String,
        items: Vec<Item>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        count: u32,
    }

    fn validation_fields(error: ApiError) -> Vec<(String, Vec<String>)> {
        match error {
            ApiError::Validation(errors) => errors.fields().clone().into_iter().collect(),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn malformed_json_is_a_bad_request() {
        let error = parse_json::<Body>(b"{\"name\": ").unwrap_err();
        assert!(matches!(error, ApiError::BadRequest(_)), "{error:?}");
    }

    #[test]
    fn missing_and_mistyped_fields_name_their_path() {
        let missing = parse_json::<Body>(br#"{"items": []}"#).unwrap_err();
        assert_eq!(
            validation_fields(missing),
            vec![("name".into(), vec!["required".into()])]
        );

        let mistyped =
            parse_json::<Body>(br#"{"name": "n", "items": [{"count": 1}, {"count": "x"}]}"#)
                .unwrap_err();
        assert_eq!(
            validation_fields(mistyped),
            vec![("items.1.count".into(), vec!["integer".into()])]
        );
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
