//! JSON body parsing with the host's classification (the rules live in `tessera-wire`, shared
//! with the host): malformed JSON is a 400 (`Invalid JSON body: …`), well-formed JSON of the
//! wrong shape is a 422 naming the field path and the rule (`required`, `string`, `integer`,
//! …).

use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Parses a JSON document into `T`, classifying failures as 400 (not JSON, trailing garbage
/// included) or 422 (wrong shape).
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
    Ok(tessera_wire::parse_json(bytes)?)
}
