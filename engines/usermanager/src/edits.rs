//! The body of `PATCH /api/v1/users/{user_id}`: which editable fields it sets, validated all at
//! once (a 422 names every failing field, and nothing is applied).
//!
//! - `display_name`: a string of 1 to 100 characters after trimming (`required`, `max:100`);
//! - `title`: null or at most 100 characters (`max:100`);
//! - `phone`: null or 3 to 32 characters of digits, spaces, `+`, `-`, `(`, `)` with at least
//!   three digits (`min:3`, `max:32`, `phone`);
//! - `avatar_url`: null or an `https://` URL with a host, at most 2048 characters (`max:2048`,
//!   `https`, `url`).
//!
//! Strings are trimmed; an empty `title`, `phone` or `avatar_url` clears it like null. Any other
//! field is `prohibited` (e-mail, names and type come from provisioning; status from owners).

use tessera_sdk::serde_json::{Map, Value};
use tessera_sdk::{ApiError, ValidationErrors};

use crate::profile::{MAX_NAME_CHARS, Profile};

/// Longest phone number, in characters.
const MAX_PHONE_CHARS: usize = 32;
/// Shortest phone number, in characters (and fewest digits).
const MIN_PHONE_CHARS: usize = 3;
/// Longest avatar URL, in characters.
const MAX_URL_CHARS: usize = 2048;

/// The fields a PATCH sets: `None` leaves a field alone; `Some(None)` clears a nullable one.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Edits {
    display_name: Option<String>,
    title: Option<Option<String>>,
    phone: Option<Option<String>>,
    avatar_url: Option<Option<String>>,
}

impl Edits {
    /// Validates a PATCH body.
    pub fn parse(body: &Map<String, Value>) -> Result<Self, ApiError> {
        let mut errors = ValidationErrors::new();
        let mut edits = Self::default();
        for (field, value) in body {
            let errors = &mut errors;
            match field.as_str() {
                "display_name" => edits.display_name = display_name(value, errors),
                "title" => edits.title = nullable(field, value, errors, check_title),
                "phone" => edits.phone = nullable(field, value, errors, check_phone),
                "avatar_url" => edits.avatar_url = nullable(field, value, errors, check_url),
                _ => errors.add(field.clone(), "prohibited"),
            }
        }
        errors.into_result()?;
        Ok(edits)
    }

    /// Applies the edits to `profile`; returns the names of the fields whose value changed.
    pub fn apply(self, profile: &mut Profile) -> Vec<&'static str> {
        let mut changed = Vec::new();
        if let Some(display_name) = self.display_name
            && profile.display_name != display_name
        {
            profile.display_name = display_name;
            changed.push("display_name");
        }
        for (edit, field, name) in [
            (self.title, &mut profile.title, "title"),
            (self.phone, &mut profile.phone, "phone"),
            (self.avatar_url, &mut profile.avatar_url, "avatar_url"),
        ] {
            if let Some(value) = edit
                && *field != value
            {
                *field = value;
                changed.push(name);
            }
        }
        changed
    }
}

/// `display_name`: required when present, so never null or blank.
fn display_name(value: &Value, errors: &mut ValidationErrors) -> Option<String> {
    let field = "display_name";
    match value {
        Value::String(text) => {
            let text = text.trim();
            if text.is_empty() {
                errors.add(field, "required");
                None
            } else {
                errors
                    .check_length(text, field, 1, MAX_NAME_CHARS)
                    .then(|| text.to_owned())
            }
        }
        Value::Null => {
            errors.add(field, "required");
            None
        }
        _ => {
            errors.add(field, "string");
            None
        }
    }
}

/// A nullable string field: `Some(None)` for null or blank, `Some(Some(text))` when `check`
/// passes (it records its own failures), `None` on failure.
fn nullable(
    field: &str,
    value: &Value,
    errors: &mut ValidationErrors,
    check: fn(&str, &str, &mut ValidationErrors) -> bool,
) -> Option<Option<String>> {
    match value {
        Value::Null => Some(None),
        Value::String(text) if text.trim().is_empty() => Some(None),
        Value::String(text) => {
            let text = text.trim();
            check(text, field, errors).then(|| Some(text.to_owned()))
        }
        _ => {
            errors.add(field, "string");
            None
        }
    }
}

fn check_title(title: &str, field: &str, errors: &mut ValidationErrors) -> bool {
    errors.check_length(title, field, 1, MAX_NAME_CHARS)
}

fn check_phone(phone: &str, field: &str, errors: &mut ValidationErrors) -> bool {
    if !errors.check_length(phone, field, MIN_PHONE_CHARS, MAX_PHONE_CHARS) {
        return false;
    }
    let allowed = phone
        .chars()
        .all(|c| c.is_ascii_digit() || " +-()".contains(c));
    let digits = phone.chars().filter(char::is_ascii_digit).count();
    errors.check(allowed && digits >= MIN_PHONE_CHARS, field, "phone")
}

fn check_url(url: &str, field: &str, errors: &mut ValidationErrors) -> bool {
    if !errors.check_length(url, field, 1, MAX_URL_CHARS) {
        return false;
    }
    let Some(rest) = url
        .get(..8)
        .filter(|scheme| scheme.eq_ignore_ascii_case("https://"))
        .map(|_| &url[8..])
    else {
        errors.add(field, "https");
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let well_formed = !authority.is_empty()
        && !authority.contains('@')
        && !url.chars().any(|c| c.is_whitespace() || c.is_control());
    errors.check(well_formed, field, "url")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_sdk::serde_json::json;

    fn parse(body: Value) -> Result<Edits, Vec<(String, Vec<String>)>> {
        let Value::Object(body) = body else {
            panic!("an object")
        };
        Edits::parse(&body).map_err(|error| match error {
            ApiError::Validation(errors) => errors.fields().clone().into_iter().collect(),
            other => panic!("{other:?}"),
        })
    }

    fn rule(field: &str, rule: &str) -> Vec<(String, Vec<String>)> {
        vec![(field.to_owned(), vec![rule.to_owned()])]
    }

    #[test]
    fn valid_edits_are_trimmed_and_blank_clears() {
        let edits = parse(json!({
            "display_name": "  Ada  ", "title": "", "phone": "+44 (20) 7946-0958",
            "avatar_url": "https://cdn.example.com/a.png",
        }))
        .unwrap();
        assert_eq!(edits.display_name.as_deref(), Some("Ada"));
        assert_eq!(edits.title, Some(None));
        assert_eq!(edits.phone, Some(Some("+44 (20) 7946-0958".into())));
        assert_eq!(parse(json!({})).unwrap(), Edits::default());
    }

    #[test]
    fn each_rule_is_named() {
        assert_eq!(
            parse(json!({"display_name": " "})).unwrap_err(),
            rule("display_name", "required")
        );
        assert_eq!(
            parse(json!({"display_name": null})).unwrap_err(),
            rule("display_name", "required")
        );
        assert_eq!(
            parse(json!({"display_name": 5})).unwrap_err(),
            rule("display_name", "string")
        );
        assert_eq!(
            parse(json!({"display_name": "x".repeat(101)})).unwrap_err(),
            rule("display_name", "max:100")
        );
        assert_eq!(
            parse(json!({"title": "x".repeat(101)})).unwrap_err(),
            rule("title", "max:100")
        );
        assert_eq!(
            parse(json!({"phone": "12"})).unwrap_err(),
            rule("phone", "min:3")
        );
        assert_eq!(
            parse(json!({"phone": "1".repeat(33)})).unwrap_err(),
            rule("phone", "max:32")
        );
        assert_eq!(
            parse(json!({"phone": "call me"})).unwrap_err(),
            rule("phone", "phone")
        );
        assert_eq!(
            parse(json!({"phone": "+(1)-"})).unwrap_err(),
            rule("phone", "phone")
        );
        assert_eq!(
            parse(json!({"avatar_url": "http://x.io/a"})).unwrap_err(),
            rule("avatar_url", "https")
        );
        assert_eq!(
            parse(json!({"avatar_url": "https:///a"})).unwrap_err(),
            rule("avatar_url", "url")
        );
        assert_eq!(
            parse(json!({"avatar_url": "https://a b"})).unwrap_err(),
            rule("avatar_url", "url")
        );
        assert_eq!(
            parse(json!({"email": "a@b.io"})).unwrap_err(),
            rule("email", "prohibited")
        );
    }
}
