//! JSON body parsing with the host's classification: malformed JSON is a 400
//! (`Invalid JSON body: …`), well-formed JSON of the wrong shape is a 422 naming the field path
//! and the rule (`required`, `string`, `integer`, …).

use serde::Deserialize as _;
use serde::de::DeserializeOwned;
use serde_path_to_error::{Path, Segment};

use crate::error::ApiError;

/// Parses a JSON document into `T`, classifying failures as 400 (not JSON) or 422 (wrong shape).
///
/// ```
/// use serde::Deserialize;
/// use tessera_sdk::{ApiError, json::parse_json};
///
/// #[derive(Deserialize)]
/// struct NewNote { title: String }
///
/// assert!(matches!(parse_json::<NewNote>(b"{\"title\": "), Err(ApiError::BadRequest(_))));
/// let Err(ApiError::Validation(errors)) = parse_json::<NewNote>(b"{\"title\": 5}") else {
///     panic!("expected a 422");
/// };
/// assert_eq!(errors.fields()["title"], vec!["string".to_string()]);
/// ```
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // Syntax first, so that malformed JSON (trailing garbage included) is always a 400, even
    // when its beginning would already fail the shape.
    let mut syntax = serde_json::Deserializer::from_slice(bytes);
    serde::de::IgnoredAny::deserialize(&mut syntax)
        .and_then(|_| syntax.end())
        .map_err(|error| ApiError::BadRequest(format!("Invalid JSON body: {error}.")))?;
    let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().clone();
        let inner = error.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => {
                let (field, rule) = describe_data_error(&path, &inner.to_string());
                ApiError::invalid(field, rule)
            }
            _ => ApiError::BadRequest(format!("Invalid JSON body: {inner}.")),
        }
    })
}

/// Turns serde's description of a shape error into a field path (`items.0.count`) and a rule
/// name (`required`, `string`, `integer`, …) like the host does (plus `in` for any unknown
/// enum variant).
pub(crate) fn describe_data_error(path: &Path, message: &str) -> (String, String) {
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
        _ if message.starts_with("unknown variant") => "in",
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
        #[serde(default)]
        kind: Option<Kind>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        count: u32,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Plain,
        Fancy,
    }

    fn fields(error: ApiError) -> Vec<(String, Vec<String>)> {
        match error {
            ApiError::Validation(errors) => errors.fields().clone().into_iter().collect(),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn malformed_json_is_a_bad_request() {
        for body in [&b"{\"name\": "[..], b"", b"not json", b"{} trailing"] {
            match parse_json::<Body>(body).unwrap_err() {
                ApiError::BadRequest(message) => {
                    assert!(message.starts_with("Invalid JSON body: "), "{message}")
                }
                other => panic!("expected 400, got {other:?}"),
            }
        }
    }

    #[test]
    fn missing_and_mistyped_fields_name_their_path_and_rule() {
        assert_eq!(
            fields(parse_json::<Body>(br#"{"items": []}"#).unwrap_err()),
            vec![("name".into(), vec!["required".into()])]
        );
        assert_eq!(
            fields(
                parse_json::<Body>(br#"{"name": "n", "items": [{"count": 1}, {"count": "x"}]}"#)
                    .unwrap_err()
            ),
            vec![("items.1.count".into(), vec!["integer".into()])]
        );
        assert_eq!(
            fields(parse_json::<Body>(br#"{"name": 7, "items": []}"#).unwrap_err()),
            vec![("name".into(), vec!["string".into()])]
        );
        assert_eq!(
            fields(parse_json::<Body>(br#"{"name": "n", "items": {}}"#).unwrap_err()),
            vec![("items".into(), vec!["array".into()])]
        );
        assert_eq!(
            fields(
                parse_json::<Body>(br#"{"name": "n", "items": [], "kind": "odd"}"#).unwrap_err()
            ),
            vec![("kind".into(), vec!["in".into()])]
        );
        assert_eq!(
            fields(parse_json::<Body>(b"5").unwrap_err()),
            vec![("body".into(), vec!["object".into()])]
        );
    }

    #[test]
    fn well_formed_bodies_parse() {
        let body: Body =
            parse_json(br#"{"name": "n", "items": [{"count": 2}], "kind": "fancy"}"#).unwrap();
        assert_eq!(body.items[0].count, 2);
        assert!(matches!(body.kind, Some(Kind::Fancy)));
        assert!(!matches!(body.kind, Some(Kind::Plain)));
    }
}
