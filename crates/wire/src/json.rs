//! JSON bodies: malformed JSON is a 400 (`Invalid JSON body: …`), well-formed JSON of the wrong
//! shape is a 422 naming the field path and the rule (`required`, `string`, `integer`, …).

use std::fmt;

use serde::Deserialize as _;
use serde::de::DeserializeOwned;
use serde_path_to_error::{Path, Segment};

use crate::validation::ValidationErrors;

/// Why a JSON body was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// Not JSON at all (a syntax error, trailing garbage, an empty body): a 400 whose message is
    /// this text, `Invalid JSON body: <serde's reason>.`
    Malformed(String),
    /// Well-formed JSON of the wrong shape: a 422 with the field path and rule.
    Invalid(ValidationErrors),
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(message) => f.write_str(message),
            Self::Invalid(errors) => errors.fmt(f),
        }
    }
}

impl std::error::Error for BodyError {}

impl BodyError {
    /// This refusal as an API error of either side (the host's or the SDK's `ApiError`): its
    /// 400 built by `malformed` from the message, its 422 by `invalid` from the field errors.
    pub fn into_api_error<E>(
        self,
        malformed: impl FnOnce(String) -> E,
        invalid: impl FnOnce(ValidationErrors) -> E,
    ) -> E {
        match self {
            Self::Malformed(message) => malformed(message),
            Self::Invalid(errors) => invalid(errors),
        }
    }
}

impl From<ValidationErrors> for BodyError {
    fn from(errors: ValidationErrors) -> Self {
        Self::Invalid(errors)
    }
}

/// Parses a JSON document into `T`, classifying failures as [`BodyError::Malformed`] (400) or
/// [`BodyError::Invalid`] (422).
///
/// The syntax is checked first, so malformed JSON (trailing garbage included) is always a 400,
/// even when its beginning would already fail the shape.
///
/// ```
/// use serde::Deserialize;
/// use tessera_wire::{BodyError, parse_json};
///
/// #[derive(Deserialize)]
/// struct NewNote { title: String }
///
/// assert!(matches!(parse_json::<NewNote>(b"{\"title\": "), Err(BodyError::Malformed(_))));
/// let Err(BodyError::Invalid(errors)) = parse_json::<NewNote>(b"{\"title\": 5}") else {
///     panic!("expected a 422");
/// };
/// assert_eq!(errors.fields()["title"], vec!["string".to_string()]);
/// ```
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, BodyError> {
    let malformed =
        |error: serde_json::Error| BodyError::Malformed(format!("Invalid JSON body: {error}."));
    let mut syntax = serde_json::Deserializer::from_slice(bytes);
    serde::de::IgnoredAny::deserialize(&mut syntax)
        .and_then(|_| syntax.end())
        .map_err(malformed)?;
    let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().clone();
        let inner = error.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => {
                let (field, rule) = describe_data_error(&path, &inner.to_string());
                BodyError::Invalid(ValidationErrors::single(field, rule))
            }
            _ => malformed(inner),
        }
    })
}

/// [`parse_json`] for a body that must be a JSON object, as every body of the spec's API is: a
/// well-formed document of another type (an array, a string, …) is a 422 `{"body":
/// ["object"]}`. Without this an array would pass for a struct, whose derived `Deserialize`
/// also accepts its fields in order (`[null, null]`).
///
/// ```
/// use serde::Deserialize;
/// use tessera_wire::{BodyError, parse_json_object};
///
/// #[derive(Deserialize)]
/// struct Switch { tenant_id: Option<String> }
///
/// assert!(parse_json_object::<Switch>(b" {} ").is_ok());
/// let Err(BodyError::Invalid(errors)) = parse_json_object::<Switch>(b"[null]") else {
///     panic!("expected a 422");
/// };
/// assert_eq!(errors.fields()["body"], vec!["object".to_string()]);
/// ```
pub fn parse_json_object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, BodyError> {
    let parsed = parse_json::<T>(bytes);
    let is_object = bytes
        .iter()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|first| *first == b'{');
    match parsed {
        Err(BodyError::Malformed(message)) => Err(BodyError::Malformed(message)),
        _ if !is_object => Err(BodyError::Invalid(ValidationErrors::single(
            "body", "object",
        ))),
        other => other,
    }
}

/// Turns serde's description of a shape error (of a JSON body or of query parameters) into a
/// field path (`items.0.count`, `body` for the document itself) and a rule name: `required`
/// for a missing field, `string`, `boolean`, `integer`, `numeric`, `array`, `object` for a
/// value of the wrong type, `in` for an unknown enum variant, else `invalid`.
pub fn describe_data_error(path: &Path, message: &str) -> (String, String) {
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

/// Whether a `Content-Type` header value names JSON: `application/json` or any
/// `application/…+json`, parameters (`; charset=utf-8`) and case aside. A body sent with another
/// type is a 400 [`MESSAGE_EXPECTED_JSON`](crate::messages::MESSAGE_EXPECTED_JSON).
pub fn is_json_content_type(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
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
        #[serde(default)]
        ratio: Option<f64>,
        #[serde(default)]
        done: Option<bool>,
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

    fn fields(error: BodyError) -> Vec<(String, Vec<String>)> {
        match error {
            BodyError::Invalid(errors) => errors.into_fields().into_iter().collect(),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn malformed_json_is_a_bad_request() {
        for body in [
            &b"{\"name\": "[..],
            b"",
            b"not json",
            b"{} trailing",
            // Wrong shape at the start, but broken further on: still a 400.
            b"{\"name\": 5, ",
            br#"{"name": "n", "items": []} {"#,
        ] {
            match parse_json::<Body>(body).unwrap_err() {
                BodyError::Malformed(message) => {
                    assert!(message.starts_with("Invalid JSON body: "), "{message}");
                    assert!(message.ends_with('.'), "{message}");
                }
                other => panic!("expected 400, got {other:?}"),
            }
        }
    }

    #[test]
    fn missing_and_mistyped_fields_name_their_path_and_rule() {
        let cases: [(&[u8], &str, &str); 9] = [
            (br#"{"items": []}"#, "name", "required"),
            (
                br#"{"name": "n", "items": [{"count": 1}, {"count": "x"}]}"#,
                "items.1.count",
                "integer",
            ),
            (
                br#"{"name": "n", "items": [{}]}"#,
                "items.0.count",
                "required",
            ),
            (br#"{"name": 7, "items": []}"#, "name", "string"),
            (br#"{"name": "n", "items": {}}"#, "items", "array"),
            (
                br#"{"name": "n", "items": [], "kind": "odd"}"#,
                "kind",
                "in",
            ),
            (
                br#"{"name": "n", "items": [], "ratio": "x"}"#,
                "ratio",
                "numeric",
            ),
            (
                br#"{"name": "n", "items": [], "done": 1}"#,
                "done",
                "boolean",
            ),
            (b"5", "body", "object"),
        ];
        for (body, field, rule) in cases {
            assert_eq!(
                fields(parse_json::<Body>(body).unwrap_err()),
                vec![(field.to_string(), vec![rule.to_string()])],
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn well_formed_bodies_parse() {
        let body: Body =
            parse_json(br#"{"name": "n", "items": [{"count": 2}], "kind": "fancy"}"#).unwrap();
        assert_eq!(body.items[0].count, 2);
        assert!(matches!(body.kind, Some(Kind::Fancy)));
        assert!(!matches!(body.kind, Some(Kind::Plain)));
    }

    #[test]
    fn unknown_variants_without_a_list_are_in_failures() {
        // The path of an error at the document's root.
        let path = serde_path_to_error::deserialize::<_, u32>(
            &mut serde_json::Deserializer::from_str("\"x\""),
        )
        .unwrap_err()
        .path()
        .clone();
        assert_eq!(
            describe_data_error(&path, "unknown variant `odd`, there are no variants"),
            ("body".to_string(), "in".to_string())
        );
        assert_eq!(
            describe_data_error(&path, "invalid digit found in string"),
            ("body".to_string(), "integer".to_string())
        );
        assert_eq!(
            describe_data_error(&path, "something else"),
            ("body".to_string(), "invalid".to_string())
        );
    }

    #[test]
    fn json_content_types() {
        assert!(is_json_content_type("application/json"));
        assert!(is_json_content_type("Application/JSON; charset=utf-8"));
        assert!(is_json_content_type("application/merge-patch+json"));
        assert!(!is_json_content_type("text/plain"));
        assert!(!is_json_content_type("application/jsonx"));
        assert!(!is_json_content_type(""));
    }
}
