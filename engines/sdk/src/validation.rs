//! Field-level validation failures (the `errors` of a 422) and the small rule checks engines use
//! to build them.

use std::collections::BTreeMap;

use crate::error::ApiError;

/// Field-level validation failures, keyed by field path (dotted for nested items, e.g.
/// `items.1.count`), each with the rule names it failed: `required`, `email`, `min:N`, `max:N`,
/// `unique`, `string`, `integer`, `in`, …
///
/// ```
/// use tessera_sdk::ValidationErrors;
///
/// let mut errors = ValidationErrors::new();
/// errors.check(false, "title", "required");
/// errors.check(true, "body", "string");
/// assert_eq!(errors.fields()["title"], vec!["required".to_string()]);
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
    /// `min:N` or `max:N`.
    pub fn check_length(&mut self, value: &str, field: &str, min: usize, max: usize) -> bool {
        let length = value.chars().count();
        self.check(length >= min, field, &format!("min:{min}"))
            && self.check(length <= max, field, &format!("max:{max}"))
    }

    /// True when nothing failed.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The failures, field path to rule names.
    pub fn fields(&self) -> &BTreeMap<String, Vec<String>> {
        &self.fields
    }

    /// `Ok(())` when nothing failed, else the 422.
    pub fn into_result(self) -> Result<(), ApiError> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(ApiError::Validation(self))
        }
    }
}

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
        assert!(matches!(errors.into_result(), Err(ApiError::Validation(_))));
        assert!(ValidationErrors::new().into_result().is_ok());
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
