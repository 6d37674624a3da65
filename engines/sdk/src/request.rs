//! The HTTP request an engine handles: method, path under the engine's prefix, parsed query
//! parameters (with the host's "unknown parameter is a 400" rule), headers, body and the path
//! parameters captured by the [`Router`](crate::Router).

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// An HTTP request under the engine's prefix: for `GET /notes/api/v1/notes?limit=5` the notes
/// engine sees method `GET`, path `/api/v1/notes` and query `limit=5`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method, uppercase (`GET`, `POST`, …).
    pub method: String,
    /// The path under the engine's prefix, starting with `/`.
    pub path: String,
    /// The raw query string, without `?`.
    pub raw_query: String,
    /// Header names and values as the host passed them.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
    query: Query,
    params: Vec<(String, String)>,
}

impl Request {
    /// A request without headers or body; `raw_query` is parsed right away.
    pub fn new(method: &str, path: &str, raw_query: &str) -> Self {
        Self {
            method: method.to_ascii_uppercase(),
            path: path.to_owned(),
            raw_query: raw_query.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
            query: Query::parse(raw_query),
            params: Vec::new(),
        }
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

    /// The path parameter `{name}` captured by the router (percent-decoded), or `""` when the
    /// matched route has no such capture.
    pub fn param(&self, name: &str) -> &str {
        self.params
            .iter()
            .find(|(key, _)| key == name)
            .map_or("", |(_, value)| value.as_str())
    }

    /// All captured path parameters.
    pub fn params(&self) -> &[(String, String)] {
        &self.params
    }

    pub(crate) fn set_params(&mut self, params: Vec<(String, String)>) {
        self.params = params;
    }

    /// The query parameters, after checking that every one is in `allowed`: an unknown one is
    /// 400 ``Unknown query parameter `x`.``. Pass `&[]` for endpoints without parameters.
    pub fn query(&self, allowed: &[&str]) -> Result<&Query, ApiError> {
        self.query.allow(allowed)?;
        Ok(&self.query)
    }

    /// The query parameters without any check (for endpoints that take arbitrary ones).
    pub fn query_unchecked(&self) -> &Query {
        &self.query
    }

    /// The body parsed as JSON into `T`: 400 `Invalid JSON body: …` when it is not JSON (or a
    /// `Content-Type` other than JSON was sent), 422 naming the field and rule when the shape is
    /// wrong. A missing `Content-Type` is accepted.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        if let Some(content_type) = self.header("content-type")
            && !tessera_wire::is_json_content_type(content_type)
        {
            return Err(ApiError::BadRequest(
                tessera_wire::MESSAGE_EXPECTED_JSON.into(),
            ));
        }
        crate::json::parse_json(&self.body)
    }

    /// [`Request::json`] for a body that must be a JSON object (the usual case: a struct's
    /// fields): any other JSON value is 422 `{"body": ["object"]}`, as on the host, rather than
    /// an array read field by field into the struct.
    pub fn json_object<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        if let Some(content_type) = self.header("content-type")
            && !tessera_wire::is_json_content_type(content_type)
        {
            return Err(ApiError::BadRequest(
                tessera_wire::MESSAGE_EXPECTED_JSON.into(),
            ));
        }
        Ok(tessera_wire::parse_json_object(&self.body)?)
    }

    /// The body as UTF-8 text; 400 when it is not.
    pub fn text(&self) -> Result<&str, ApiError> {
        std::str::from_utf8(&self.body)
            .map_err(|_| ApiError::BadRequest("The request body is not valid UTF-8.".into()))
    }
}

/// Parsed `application/x-www-form-urlencoded` query parameters, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses a raw query string (`a=1&b=two+words&c=%2F`); `+` is a space, `%XX` is decoded
    /// (invalid UTF-8 is replaced), empty pieces are skipped.
    pub fn parse(raw: &str) -> Self {
        let pairs = raw
            .split('&')
            .filter(|piece| !piece.is_empty())
            .map(|piece| {
                let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
                (form_decode(name), form_decode(value))
            })
            .collect();
        Self { pairs }
    }

    /// 400 ``Unknown query parameter `x`.`` for the first parameter not in `allowed`.
    pub fn allow(&self, allowed: &[&str]) -> Result<(), ApiError> {
        match self
            .pairs
            .iter()
            .find(|(name, _)| !allowed.contains(&name.as_str()))
        {
            Some((name, _)) => Err(ApiError::BadRequest(tessera_wire::unknown_query_parameter(
                name,
            ))),
            None => Ok(()),
        }
    }

    /// The value of `name` (the last one when repeated).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// `name` as an unsigned integer; 422 `{name: ["integer"]}` when it is not one.
    pub fn get_u32(&self, name: &str) -> Result<Option<u32>, ApiError> {
        self.get(name)
            .map(|value| {
                value
                    .parse::<u32>()
                    .map_err(|_| ApiError::invalid(name, "integer"))
            })
            .transpose()
    }

    /// `name` as an unsigned 64-bit integer; 422 `{name: ["integer"]}` when it is not one.
    pub fn get_u64(&self, name: &str) -> Result<Option<u64>, ApiError> {
        self.get(name)
            .map(|value| {
                value
                    .parse::<u64>()
                    .map_err(|_| ApiError::invalid(name, "integer"))
            })
            .transpose()
    }

    /// `name` as a boolean (`true`/`false`/`1`/`0`); 422 `{name: ["boolean"]}` otherwise.
    pub fn get_bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        self.get(name)
            .map(|value| match value {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                _ => Err(ApiError::invalid(name, "boolean")),
            })
            .transpose()
    }

    /// All parameters in order.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The parameters as a map (the last value wins for repeated names).
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.pairs.iter().cloned().collect()
    }

    /// True without parameters.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// Decodes `%XX` escapes (invalid ones are kept as they are); invalid UTF-8 is replaced.
pub(crate) fn percent_decode(input: &str) -> String {
    decode(input, false)
}

fn form_decode(input: &str) -> String {
    decode(input, true)
}

fn decode(input: &str, plus_is_space: bool) -> String {
    let bytes = input.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'%' => match (
                bytes.get(index + 1).and_then(|b| hex(*b)),
                bytes.get(index + 2).and_then(|b| hex(*b)),
            ) {
                (Some(high), Some(low)) => {
                    out.push(high << 4 | low);
                    index += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' if plus_is_space => out.push(b' '),
            byte => out.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn object_bodies_refuse_other_json() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Fields {
            name: Option<String>,
        }
        let request =
            |body: &str| Request::new("POST", "/", "").with_body(body.as_bytes().to_vec());
        assert!(request(r#"{"name": "x"}"#).json_object::<Fields>().is_ok());
        // An array would fill the struct's fields in order; it is refused instead.
        assert_eq!(
            request(r#"["x"]"#).json_object::<Fields>().unwrap_err(),
            ApiError::invalid("body", "object")
        );
        assert!(matches!(
            request("{").json_object::<Fields>(),
            Err(ApiError::BadRequest(_))
        ));
    }

    use super::*;

    #[test]
    fn parses_and_decodes_query_strings() {
        let query = Query::parse("limit=5&q=two+words&path=%2Fa%2Fb&flag&&limit=7&bad=%zz");
        assert_eq!(query.get("limit"), Some("7"));
        assert_eq!(query.get("q"), Some("two words"));
        assert_eq!(query.get("path"), Some("/a/b"));
        assert_eq!(query.get("flag"), Some(""));
        assert_eq!(query.get("bad"), Some("%zz"));
        assert_eq!(query.get("missing"), None);
        assert_eq!(query.pairs().len(), 6);
        assert_eq!(query.to_map()["limit"], "7");
        assert!(Query::parse("").is_empty());
    }

    #[test]
    fn unknown_parameters_are_bad_requests() {
        let query = Query::parse("limit=5&colour=red");
        assert!(query.allow(&["limit", "colour"]).is_ok());
        assert_eq!(
            query.allow(&["limit"]),
            Err(ApiError::BadRequest(
                "Unknown query parameter `colour`.".into()
            ))
        );
        let request = Request::new("get", "/api/v1/x", "a=1");
        assert_eq!(request.method, "GET");
        assert!(request.query(&[]).is_err());
        assert_eq!(request.query(&["a"]).unwrap().get("a"), Some("1"));
    }

    #[test]
    fn typed_values_are_validated() {
        let query = Query::parse("limit=ten&n=3&yes=true&no=0&maybe=perhaps");
        assert_eq!(
            query.get_u32("limit"),
            Err(ApiError::invalid("limit", "integer"))
        );
        assert_eq!(query.get_u32("n"), Ok(Some(3)));
        assert_eq!(query.get_u64("absent"), Ok(None));
        assert_eq!(query.get_bool("yes"), Ok(Some(true)));
        assert_eq!(query.get_bool("no"), Ok(Some(false)));
        assert_eq!(
            query.get_bool("maybe"),
            Err(ApiError::invalid("maybe", "boolean"))
        );
        assert_eq!(
            Query::parse("limit=-1").get_u32("limit"),
            Err(ApiError::invalid("limit", "integer"))
        );
    }

    #[test]
    fn json_bodies_respect_the_content_type() {
        let request = Request::new("POST", "/", "").with_body(&b"{\"a\": 1}"[..]);
        assert_eq!(
            request.json::<serde_json::Value>().unwrap(),
            serde_json::json!({"a": 1})
        );
        let request = request.with_header("Content-Type", "application/json; charset=utf-8");
        assert!(request.json::<serde_json::Value>().is_ok());
        let request = Request::new("POST", "/", "")
            .with_header("content-type", "text/plain")
            .with_body(&b"{}"[..]);
        assert!(matches!(
            request.json::<serde_json::Value>(),
            Err(ApiError::BadRequest(_))
        ));
    }

    #[test]
    fn percent_decoding_keeps_plus_in_paths() {
        assert_eq!(percent_decode("a+b%20c"), "a+b c");
        assert_eq!(percent_decode("%E2%82%AC"), "€");
        assert_eq!(percent_decode("100%"), "100%");
    }
}
