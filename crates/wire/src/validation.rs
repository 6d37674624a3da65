//! Field-level validation failures (the `errors` of a 422) and the small rule checks the host
//! and engines use to build them.

use std::collections::BTreeMap;
use std::fmt;

use crate::messages::MESSAGE_INVALID;

/// Field-level validation failures, keyed by field path (dotted for nested items, e.g.
/// `items.1.count`), each with the spec's rule names it failed, in the order they were recorded:
/// `required`, `email`, `uuid`, `min:N`, `max:N`, `unique`, `string`, `integer`, `in`, …
///
/// Build one with [`new`](Self::new) and record failures with [`add`](Self::add) or the checks
/// ([`check`](Self::check), [`check_length`](Self::check_length), [`required`](Self::required),
/// [`uuid`](Self::uuid)), then end with [`into_result`](Self::into_result): the host's and the
/// SDK's `ApiError` convert from `ValidationErrors` (into a 422), so `errors.into_result()?`
/// answers it.
///
/// ```
/// use tessera_wire::ValidationErrors;
///
/// let mut errors = ValidationErrors::new();
/// errors.check(false, "title", "required");
/// errors.check(true, "body", "string");
/// let id = errors.uuid("owner_id", Some("not-a-uuid".into()));
/// assert_eq!(id, None);
/// assert_eq!(errors.fields()["title"], vec!["required".to_string()]);
/// assert_eq!(errors.fields()["owner_id"], vec!["uuid".to_string()]);
/// assert!(errors.into_result().is_err());
/// ```
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ValidationErrors {
    fields: BTreeMap<String, Vec<String>>,
}

impl ValidationErrors {
    /// No failures yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One field failing one rule.
    pub fn single(field: impl Into<String>, rule: impl Into<String>) -> Self {
        let mut errors = Self::new();
        errors.add(field, rule);
        errors
    }

    /// Records that `field` failed `rule`.
    pub fn add(&mut self, field: impl Into<String>, rule: impl Into<String>) {
        self.fields
            .entry(field.into())
            .or_default()
            .push(rule.into());
    }

    /// Records that `field` failed `rule` unless `passed`; returns `passed`.
    pub fn check(&mut self, passed: bool, field: &str, rule: &str) -> bool {
        if !passed {
            self.add(field, rule);
        }
        passed
    }

    /// Checks that a string has between `min` and `max` characters (inclusive), recording
    /// `min:N` or `max:N`; returns whether it passed.
    pub fn check_length(&mut self, value: &str, field: &str, min: usize, max: usize) -> bool {
        let length = value.chars().count();
        self.check(length >= min, field, &format!("min:{min}"))
            && self.check(length <= max, field, &format!("max:{max}"))
    }

    /// `value` as given, recording `required` (and answering `""`) when it is absent or
    /// blank.
    pub fn required(&mut self, field: &str, value: Option<String>) -> String {
        match value.filter(|value| !value.trim().is_empty()) {
            Some(value) => value,
            None => {
                self.add(field, "required");
                String::new()
            }
        }
    }

    /// An optional UUID in its canonical lower-case hyphenated form, recording `uuid` (and
    /// answering `None`) when it is malformed; `None` stays `None` without a failure.
    pub fn uuid(&mut self, field: &str, value: Option<String>) -> Option<String> {
        match uuid::Uuid::try_parse(value?.trim()) {
            Ok(parsed) => Some(parsed.hyphenated().to_string()),
            Err(_) => {
                self.add(field, "uuid");
                None
            }
        }
    }

    /// True when nothing failed.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The failures, field path to rule names.
    pub fn fields(&self) -> &BTreeMap<String, Vec<String>> {
        &self.fields
    }

    /// The failures, field path to rule names, by value (the `errors` of a 422 body).
    pub fn into_fields(self) -> BTreeMap<String, Vec<String>> {
        self.fields
    }

    /// `Ok(())` when nothing failed, else these failures: with `?` in a handler, the host's or
    /// the SDK's `ApiError` makes them a 422.
    pub fn into_result(self) -> Result<(), ValidationErrors> {
        if self.is_empty() { Ok(()) } else { Err(self) }
    }
}

/// `The given data was invalid.` followed by each field and its rules, e.g.
/// `The given data was invalid. (title: required, max:10; email: email)`.
impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MESSAGE_INVALID)?;
        for (index, (field, rules)) in self.fields.iter().enumerate() {
            let separator = if index == 0 { " (" } else { "; " };
            write!(f, "{separator}{field}: {}", rules.join(", "))?;
        }
        if !self.fields.is_empty() {
            f.write_str(")")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

/// A pragmatic e-mail check (`local@domain.tld`, no spaces), the `email` rule.
pub fn is_email(value: &str) -> bool {
    let Some((local, domain)) = value.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && !value.chars().any(char::is_whitespace)
        && domain
            .split_once('.')
            .is_some_and(|(host, tld)| !host.is_empty() && !tld.is_empty())
        && !domain.ends_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_rules_per_field_in_order() {
        let mut errors = ValidationErrors::new();
        errors.add("title", "required");
        errors.add("title", "max:10");
        errors.add("email", "email");
        assert_eq!(
            errors.fields().get("title").unwrap(),
            &vec!["required".to_string(), "max:10".to_string()]
        );
        assert_eq!(errors.fields().len(), 2);
        assert_eq!(
            errors.to_string(),
            "The given data was invalid. (email: email; title: required, max:10)"
        );
        assert_eq!(errors.clone().into_result(), Err(errors.clone()));
        assert_eq!(errors.into_fields().len(), 2);
        assert!(ValidationErrors::new().into_result().is_ok());
        assert_eq!(
            ValidationErrors::single("limit", "min:1").fields()["limit"],
            vec!["min:1".to_string()]
        );
    }

    #[test]
    fn length_checks_name_the_bound() {
        let mut errors = ValidationErrors::new();
        assert!(errors.check_length("abc", "a", 1, 3));
        assert!(!errors.check_length("", "b", 1, 3));
        assert!(!errors.check_length("abcd", "c", 1, 3));
        assert_eq!(errors.fields()["b"], vec!["min:1".to_string()]);
        assert_eq!(errors.fields()["c"], vec!["max:3".to_string()]);
        assert!(!errors.fields().contains_key("a"));
    }

    #[test]
    fn required_values_must_not_be_absent_or_blank() {
        let mut errors = ValidationErrors::new();
        assert_eq!(errors.required("name", Some(" Ada ".into())), " Ada ");
        assert_eq!(errors.required("code", Some("  ".into())), "");
        assert_eq!(errors.required("token", None), "");
        assert!(!errors.fields().contains_key("name"));
        assert_eq!(errors.fields()["code"], vec!["required".to_string()]);
        assert_eq!(errors.fields()["token"], vec!["required".to_string()]);
    }

    #[test]
    fn uuids_are_canonicalised_or_refused() {
        let mut errors = ValidationErrors::new();
        assert_eq!(
            errors.uuid("a", Some(" 67E55044-10B1-426F-9247-BB680E5FE0C8 ".into())),
            Some("67e55044-10b1-426f-9247-bb680e5fe0c8".into())
        );
        assert_eq!(errors.uuid("b", None), None);
        assert_eq!(errors.uuid("c", Some("67e55044".into())), None);
        assert_eq!(
            errors.into_fields().into_iter().collect::<Vec<_>>(),
            vec![("c".to_string(), vec!["uuid".to_string()])]
        );
    }

    #[test]
    fn recognises_plausible_emails() {
        assert!(is_email("ada@example.com"));
        assert!(is_email("a.b+c@mail.example.org"));
        assert!(!is_email("ada"));
        assert!(!is_email("ada@example"));
        assert!(!is_email("@example.com"));
        assert!(!is_email("ada@@example.com"));
        assert!(!is_email("a da@example.com"));
        assert!(!is_email("ada@example."));
    }
}
