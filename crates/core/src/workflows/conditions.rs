//! Workflow conditions: whether a condition holds for the entity a run is about.
//!
//! Values compare sensibly: a number and a numeric string as numbers (`1` equals `1.0` and
//! `"1"`), two dates or timestamps as instants (RFC 3339, or `YYYY-MM-DD` as midnight UTC),
//! other strings as exact, case-sensitive text, booleans only with booleans, arrays and
//! objects by JSON equality. A field the entity does not have (absent, or `null`) never
//! matches a comparison by accident: only `is_empty` and `changed` can hold for it.

use std::cmp::Ordering;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;

use crate::workflows::definition::{Condition, Operator};
/// The entity a run is about, which conditions are checked against.
pub use crate::workflows::subject::Subject;

/// Whether every condition holds (an empty list does).
pub fn all_hold(conditions: &[Condition], subject: &Subject) -> bool {
    conditions.iter().all(|condition| holds(condition, subject))
}

/// Whether one condition holds for `subject`.
pub fn holds(condition: &Condition, subject: &Subject) -> bool {
    let actual = subject.value(&condition.field);
    let actual = actual.as_deref();
    let expected = &condition.value;
    match condition.operator {
        Operator::Changed => subject.changed.contains(&condition.field),
        Operator::IsEmpty => actual.is_none_or(is_blank),
        Operator::IsNotEmpty => !actual.is_none_or(is_blank),
        Operator::Equals => actual.is_some_and(|actual| values_equal(actual, expected)),
        Operator::NotEquals => actual.is_some_and(|actual| !values_equal(actual, expected)),
        Operator::Contains => actual.is_some_and(|actual| contains(actual, expected)),
        Operator::GreaterThan => {
            actual.is_some_and(|actual| order_of(actual, expected) == Some(Ordering::Greater))
        }
        Operator::LessThan => {
            actual.is_some_and(|actual| order_of(actual, expected) == Some(Ordering::Less))
        }
        Operator::In => actual.is_some_and(|actual| is_one_of(actual, expected)),
        Operator::NotIn => {
            actual.is_some_and(|actual| expected.is_array() && !is_one_of(actual, expected))
        }
    }
}

/// Whether a value counts as empty: `null`, a blank string, `[]` or `{}`.
fn is_blank(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.trim().is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(object) => object.is_empty(),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Whether two values are equal under the comparison rules: numbers (and numeric strings
/// against numbers) by value, two dates or timestamps as instants, two other strings exactly,
/// booleans with booleans, arrays and objects by JSON equality. Different kinds are unequal.
pub fn values_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::String(left), Value::String(right)) => match (instant(left), instant(right)) {
            (Some(left), Some(right)) => left == right,
            _ => left == right,
        },
        (Value::Number(_), Value::Number(_) | Value::String(_))
        | (Value::String(_), Value::Number(_)) => {
            order_of_numbers(left, right) == Some(Ordering::Equal)
        }
        (Value::Bool(left), Value::Bool(right)) => left == right,
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => left == right,
        _ => false,
    }
}

/// How `left` orders against `right`, when they are comparable: numbers (and numeric strings
/// against numbers) by value; two strings as numbers when both are numeric, as instants when
/// both are dates or timestamps, else lexicographically. `None` for anything else.
pub fn order_of(left: &Value, right: &Value) -> Option<Ordering> {
    match (left, right) {
        (Value::String(left), Value::String(right)) => Some(order_of_texts(left, right)),
        _ => order_of_numbers(left, right),
    }
}

/// Orders two strings: numerically, chronologically, or as text, in that preference.
fn order_of_texts(left: &str, right: &str) -> Ordering {
    if let (Some(left), Some(right)) = (Numeric::of_text(left), Numeric::of_text(right))
        && let Some(order) = left.order(right)
    {
        return order;
    }
    if let (Some(left), Some(right)) = (instant(left), instant(right)) {
        return left.cmp(&right);
    }
    left.cmp(right)
}

/// Orders two values as numbers, when both are numbers or numeric strings.
fn order_of_numbers(left: &Value, right: &Value) -> Option<Ordering> {
    Numeric::of_value(left)?.order(Numeric::of_value(right)?)
}

/// Whether `actual` contains `expected`: a string contains the text of a string or number,
/// case-insensitively; an array contains an element equal to it. Anything else does not.
fn contains(actual: &Value, expected: &Value) -> bool {
    match actual {
        Value::String(text) => {
            let needle = match expected {
                Value::String(needle) => needle.clone(),
                Value::Number(number) => number.to_string(),
                _ => return false,
            };
            text.to_lowercase().contains(&needle.to_lowercase())
        }
        Value::Array(items) => items.iter().any(|item| values_equal(item, expected)),
        _ => false,
    }
}

/// Whether `actual` equals an element of the array `candidates` (never for a non-array).
fn is_one_of(actual: &Value, candidates: &Value) -> bool {
    candidates.as_array().is_some_and(|candidates| {
        candidates
            .iter()
            .any(|candidate| values_equal(actual, candidate))
    })
}

/// A date or timestamp: RFC 3339, or `YYYY-MM-DD` taken as midnight UTC.
fn instant(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(timestamp) = DateTime::parse_from_rfc3339(text) {
        return Some(timestamp.with_timezone(&Utc));
    }
    let date = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc())
}

/// A number to compare: exact for integers (so large ids do not collide), else a float.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Numeric {
    Integer(i128),
    Float(f64),
}

impl Numeric {
    /// A JSON number, or a string holding one (surrounding whitespace allowed).
    fn of_value(value: &Value) -> Option<Self> {
        match value {
            Value::Number(number) => Self::of_number(number),
            Value::String(text) => Self::of_text(text),
            _ => None,
        }
    }

    fn of_number(number: &serde_json::Number) -> Option<Self> {
        if let Some(integer) = number.as_i64() {
            Some(Self::Integer(integer.into()))
        } else if let Some(integer) = number.as_u64() {
            Some(Self::Integer(integer.into()))
        } else {
            number.as_f64().map(Self::Float)
        }
    }

    /// A string that is a finite decimal number (`"5"`, `" -2.5 "`, `"1e3"`).
    fn of_text(text: &str) -> Option<Self> {
        let text = text.trim();
        if let Ok(integer) = text.parse::<i128>() {
            return Some(Self::Integer(integer));
        }
        text.parse::<f64>()
            .ok()
            .filter(|float| float.is_finite())
            .map(Self::Float)
    }

    fn as_float(self) -> f64 {
        match self {
            // Precision loss only past 2^53, where the integers are compared exactly anyway.
            Self::Integer(integer) => integer as f64,
            Self::Float(float) => float,
        }
    }

    fn order(self, other: Self) -> Option<Ordering> {
        match (self, other) {
            (Self::Integer(left), Self::Integer(right)) => Some(left.cmp(&right)),
            _ => self.as_float().partial_cmp(&other.as_float()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::{Map, json};

    use super::*;

    /// A test entity: `fields` as given, status `open`, `changed` the listed codes.
    struct Entity {
        fields: Map<String, Value>,
        changed: BTreeSet<String>,
        status: Option<&'static str>,
    }

    impl Entity {
        fn new(fields: Value) -> Self {
            let Value::Object(fields) = fields else {
                panic!("fields must be an object")
            };
            Self {
                fields,
                changed: BTreeSet::new(),
                status: Some("open"),
            }
        }

        fn changed(mut self, codes: &[&str]) -> Self {
            self.changed = codes.iter().map(|code| code.to_string()).collect();
            self
        }

        fn subject(&self) -> Subject<'_> {
            Subject {
                entity_id: "0190a0e4-0000-7000-8000-0000000000aa",
                owner_id: Some("0190a0e4-0000-7000-8000-000000000002"),
                status: self.status,
                fields: &self.fields,
                changed: &self.changed,
            }
        }

        /// Whether `field operator value` holds.
        fn check(&self, field: &str, operator: Operator, value: Value) -> bool {
            let condition = Condition {
                field: field.to_owned(),
                operator,
                value,
            };
            holds(&condition, &self.subject())
        }
    }

    fn sample() -> Entity {
        Entity::new(json!({
            "title": "Quarterly Review",
            "amount": 1250,
            "price": 19.99,
            "amount_text": "1250",
            "ratio": 1.0,
            "urgent": true,
            "due": "2026-01-01T01:00:00+01:00",
            "day": "2026-03-15",
            "tags": ["red", "Blue", 3],
            "address": {"city": "Lyon"},
            "notes": null,
            "blank": "   ",
            "empty_list": [],
            "empty_object": {},
            "zero": 0,
            "no": false,
        }))
    }

    #[test]
    fn equals_compares_strings_exactly() {
        let entity = sample();
        assert!(entity.check("title", Operator::Equals, json!("Quarterly Review")));
        assert!(!entity.check("title", Operator::Equals, json!("quarterly review")));
        assert!(!entity.check("title", Operator::Equals, json!("Quarterly")));
    }

    #[test]
    fn equals_compares_numbers_and_numeric_strings_as_numbers() {
        let entity = sample();
        assert!(entity.check("amount", Operator::Equals, json!(1250)));
        assert!(entity.check("amount", Operator::Equals, json!(1250.0)));
        assert!(entity.check("amount", Operator::Equals, json!("1250")));
        assert!(entity.check("amount", Operator::Equals, json!(" 1250.0 ")));
        assert!(entity.check("amount_text", Operator::Equals, json!(1250)));
        assert!(entity.check("ratio", Operator::Equals, json!(1)));
        assert!(entity.check("price", Operator::Equals, json!("19.99")));
        assert!(!entity.check("amount", Operator::Equals, json!(1251)));
        assert!(!entity.check("amount", Operator::Equals, json!("1250 EUR")));
    }

    #[test]
    fn large_integers_compare_exactly() {
        let entity = Entity::new(json!({"big": 9_007_199_254_740_993_u64}));
        assert!(entity.check("big", Operator::Equals, json!(9_007_199_254_740_993_u64)));
        assert!(!entity.check("big", Operator::Equals, json!(9_007_199_254_740_992_u64)));
        assert!(entity.check("big", Operator::Equals, json!("9007199254740993")));
        assert!(entity.check(
            "big",
            Operator::GreaterThan,
            json!(9_007_199_254_740_992_u64)
        ));
    }

    #[test]
    fn equals_compares_dates_as_instants() {
        let entity = sample();
        assert!(entity.check("due", Operator::Equals, json!("2026-01-01T00:00:00Z")));
        assert!(entity.check("due", Operator::Equals, json!("2026-01-01")));
        assert!(entity.check("day", Operator::Equals, json!("2026-03-15T00:00:00+00:00")));
        assert!(entity.check("day", Operator::Equals, json!("2026-03-15T02:00:00+02:00")));
        assert!(!entity.check("day", Operator::Equals, json!("2026-03-15T00:00:01Z")));
    }

    #[test]
    fn booleans_only_equal_booleans() {
        let entity = sample();
        assert!(entity.check("urgent", Operator::Equals, json!(true)));
        assert!(!entity.check("urgent", Operator::Equals, json!(false)));
        assert!(!entity.check("urgent", Operator::Equals, json!(1)));
        assert!(!entity.check("urgent", Operator::Equals, json!("true")));
        assert!(!entity.check("zero", Operator::Equals, json!(false)));
        assert!(!entity.check("no", Operator::Equals, json!(0)));
        assert!(entity.check("urgent", Operator::NotEquals, json!(1)));
    }

    #[test]
    fn arrays_and_objects_equal_by_json_equality() {
        let entity = sample();
        assert!(entity.check("tags", Operator::Equals, json!(["red", "Blue", 3])));
        assert!(!entity.check("tags", Operator::Equals, json!(["Blue", "red", 3])));
        assert!(entity.check("address", Operator::Equals, json!({"city": "Lyon"})));
        assert!(!entity.check("address", Operator::Equals, json!({"city": "Paris"})));
        assert!(!entity.check("address", Operator::Equals, json!("Lyon")));
    }

    #[test]
    fn incomparable_types_are_unequal() {
        let entity = sample();
        assert!(!entity.check("title", Operator::Equals, json!(5)));
        assert!(entity.check("title", Operator::NotEquals, json!(5)));
        assert!(!entity.check("amount", Operator::Equals, json!("abc")));
        assert!(entity.check("amount", Operator::NotEquals, json!("abc")));
        assert!(!entity.check("amount", Operator::GreaterThan, json!("abc")));
        assert!(!entity.check("amount", Operator::LessThan, json!("abc")));
        assert!(!entity.check("urgent", Operator::GreaterThan, json!(0)));
        assert!(!entity.check("tags", Operator::LessThan, json!(5)));
    }

    #[test]
    fn not_equals_holds_for_a_present_different_value() {
        let entity = sample();
        assert!(entity.check("title", Operator::NotEquals, json!("Other")));
        assert!(!entity.check("title", Operator::NotEquals, json!("Quarterly Review")));
        assert!(!entity.check("amount", Operator::NotEquals, json!("1250")));
        assert!(!entity.check("due", Operator::NotEquals, json!("2026-01-01T00:00:00Z")));
        assert!(entity.check("title", Operator::NotEquals, json!("quarterly review")));
    }

    #[test]
    fn contains_finds_text_case_insensitively() {
        let entity = sample();
        assert!(entity.check("title", Operator::Contains, json!("review")));
        assert!(entity.check("title", Operator::Contains, json!("QUARTERLY")));
        assert!(!entity.check("title", Operator::Contains, json!("annual")));
        assert!(entity.check("amount_text", Operator::Contains, json!(25)));
        assert!(!entity.check("title", Operator::Contains, json!(true)));
    }

    #[test]
    fn contains_finds_equal_array_elements() {
        let entity = sample();
        assert!(entity.check("tags", Operator::Contains, json!("red")));
        assert!(!entity.check("tags", Operator::Contains, json!("blue")));
        assert!(entity.check("tags", Operator::Contains, json!("Blue")));
        assert!(entity.check("tags", Operator::Contains, json!(3.0)));
        assert!(entity.check("tags", Operator::Contains, json!("3")));
        assert!(!entity.check("tags", Operator::Contains, json!("re")));
    }

    #[test]
    fn contains_is_false_for_other_kinds() {
        let entity = sample();
        assert!(!entity.check("amount", Operator::Contains, json!(25)));
        assert!(!entity.check("address", Operator::Contains, json!("Lyon")));
        assert!(!entity.check("urgent", Operator::Contains, json!(true)));
    }

    #[test]
    fn greater_and_less_compare_numbers() {
        let entity = sample();
        assert!(entity.check("amount", Operator::GreaterThan, json!(1000)));
        assert!(!entity.check("amount", Operator::GreaterThan, json!(1250)));
        assert!(entity.check("amount", Operator::LessThan, json!(1250.5)));
        assert!(entity.check("price", Operator::GreaterThan, json!(19)));
        assert!(entity.check("price", Operator::LessThan, json!(20)));
        assert!(entity.check("amount", Operator::GreaterThan, json!("999")));
        assert!(entity.check("amount_text", Operator::GreaterThan, json!(999)));
    }

    #[test]
    fn numeric_strings_order_as_numbers() {
        let entity = Entity::new(json!({"count": "10", "label": "b"}));
        assert!(entity.check("count", Operator::GreaterThan, json!(9)));
        assert!(entity.check("count", Operator::GreaterThan, json!("9")));
        assert!(!entity.check("count", Operator::LessThan, json!("9")));
        assert!(entity.check("label", Operator::GreaterThan, json!("a")));
        assert!(entity.check("label", Operator::LessThan, json!("c")));
        assert!(entity.check("label", Operator::LessThan, json!("ba")));
    }

    #[test]
    fn greater_and_less_compare_dates_as_instants() {
        let entity = sample();
        assert!(entity.check("due", Operator::GreaterThan, json!("2025-12-31T23:59:59Z")));
        assert!(!entity.check("due", Operator::GreaterThan, json!("2026-01-01T00:00:00Z")));
        assert!(entity.check("due", Operator::LessThan, json!("2026-01-01T00:30:00Z")));
        assert!(entity.check("day", Operator::GreaterThan, json!("2026-03-14")));
        assert!(entity.check("day", Operator::LessThan, json!("2026-03-15T00:00:01Z")));
        // An offset that moves the instant past the date-only midnight.
        assert!(entity.check(
            "day",
            Operator::GreaterThan,
            json!("2026-03-15T00:30:00+01:00")
        ));
    }

    #[test]
    fn in_and_not_in_look_for_an_equal_element() {
        let entity = sample();
        assert!(entity.check("title", Operator::In, json!(["x", "Quarterly Review"])));
        assert!(!entity.check("title", Operator::In, json!(["quarterly review"])));
        assert!(entity.check("amount", Operator::In, json!(["1250", 7])));
        assert!(entity.check("due", Operator::In, json!(["2026-01-01"])));
        assert!(!entity.check("title", Operator::In, json!([])));
        assert!(entity.check("title", Operator::NotIn, json!(["x", "y"])));
        assert!(entity.check("title", Operator::NotIn, json!([])));
        assert!(!entity.check("amount", Operator::NotIn, json!([1250.0])));
        assert!(entity.check("urgent", Operator::NotIn, json!([1, "true"])));
    }

    #[test]
    fn in_and_not_in_need_an_array() {
        let entity = sample();
        assert!(!entity.check("title", Operator::In, json!("Quarterly Review")));
        assert!(!entity.check("title", Operator::NotIn, json!("x")));
    }

    #[test]
    fn a_missing_field_matches_no_comparison() {
        let entity = sample();
        for operator in [
            Operator::Equals,
            Operator::NotEquals,
            Operator::Contains,
            Operator::GreaterThan,
            Operator::LessThan,
        ] {
            for value in [json!("x"), json!(0), json!(""), json!(false)] {
                assert!(!entity.check("missing", operator, value), "{operator}");
            }
        }
        assert!(!entity.check("missing", Operator::In, json!(["x", null])));
        assert!(!entity.check("missing", Operator::NotIn, json!(["x"])));
        assert!(!entity.check("missing", Operator::NotIn, json!([])));
        assert!(entity.check("missing", Operator::IsEmpty, Value::Null));
        assert!(!entity.check("missing", Operator::IsNotEmpty, Value::Null));
        assert!(!entity.check("missing", Operator::Changed, Value::Null));
    }

    #[test]
    fn a_null_field_is_like_a_missing_one() {
        let entity = sample();
        for operator in [
            Operator::Equals,
            Operator::NotEquals,
            Operator::Contains,
            Operator::GreaterThan,
            Operator::LessThan,
        ] {
            assert!(!entity.check("notes", operator, json!("x")), "{operator}");
        }
        assert!(!entity.check("notes", Operator::In, json!(["x", null])));
        assert!(!entity.check("notes", Operator::NotIn, json!(["x"])));
        assert!(entity.check("notes", Operator::IsEmpty, Value::Null));
        assert!(!entity.check("notes", Operator::IsNotEmpty, Value::Null));
    }

    #[test]
    fn is_empty_covers_blank_strings_and_empty_collections() {
        let entity = sample();
        for empty in ["missing", "notes", "blank", "empty_list", "empty_object"] {
            assert!(
                entity.check(empty, Operator::IsEmpty, Value::Null),
                "{empty}"
            );
            assert!(
                !entity.check(empty, Operator::IsNotEmpty, Value::Null),
                "{empty}"
            );
        }
        let with_empty_string = Entity::new(json!({"name": ""}));
        assert!(with_empty_string.check("name", Operator::IsEmpty, Value::Null));
        for filled in ["title", "amount", "zero", "no", "tags", "address"] {
            assert!(
                !entity.check(filled, Operator::IsEmpty, Value::Null),
                "{filled}"
            );
            assert!(
                entity.check(filled, Operator::IsNotEmpty, Value::Null),
                "{filled}"
            );
        }
    }

    #[test]
    fn the_condition_value_of_emptiness_and_change_is_ignored() {
        let entity = sample().changed(&["title"]);
        assert!(entity.check("blank", Operator::IsEmpty, json!("anything")));
        assert!(entity.check("title", Operator::IsNotEmpty, json!(false)));
        assert!(entity.check("title", Operator::Changed, json!("ignored")));
    }

    #[test]
    fn changed_holds_for_fields_the_intention_set() {
        let entity = sample().changed(&["title", "new_field"]);
        assert!(entity.check("title", Operator::Changed, Value::Null));
        assert!(entity.check("new_field", Operator::Changed, Value::Null));
        assert!(!entity.check("amount", Operator::Changed, Value::Null));
        assert!(!entity.check("missing", Operator::Changed, Value::Null));
    }

    #[test]
    fn status_falls_back_to_the_entity_status() {
        let entity = sample();
        assert!(entity.check("status", Operator::Equals, json!("open")));
        assert!(entity.check("status", Operator::In, json!(["open", "won"])));
        assert!(entity.check("status", Operator::NotEquals, json!("won")));
        assert!(entity.check("status", Operator::IsNotEmpty, Value::Null));

        let with_status_field = Entity::new(json!({"status": "custom"}));
        assert!(with_status_field.check("status", Operator::Equals, json!("custom")));

        let mut without_status = Entity::new(json!({}));
        without_status.status = None;
        assert!(without_status.check("status", Operator::IsEmpty, Value::Null));
        assert!(!without_status.check("status", Operator::NotEquals, json!("won")));
    }

    #[test]
    fn all_conditions_must_hold() {
        let entity = sample();
        let condition = |field: &str, operator, value| Condition {
            field: field.to_owned(),
            operator,
            value,
        };
        let subject = entity.subject();
        assert!(all_hold(&[], &subject));
        assert!(all_hold(
            &[
                condition("amount", Operator::GreaterThan, json!(1000)),
                condition("status", Operator::Equals, json!("open")),
            ],
            &subject
        ));
        assert!(!all_hold(
            &[
                condition("amount", Operator::GreaterThan, json!(1000)),
                condition("status", Operator::Equals, json!("won")),
            ],
            &subject
        ));
    }

    #[test]
    fn instants_parse_rfc_3339_and_plain_dates() {
        assert_eq!(
            instant("2026-01-01T01:00:00+01:00"),
            instant("2026-01-01T00:00:00Z")
        );
        assert_eq!(instant("2026-01-01"), instant("2026-01-01T00:00:00Z"));
        assert!(instant("2026-01-01T00:00:00.123Z").is_some());
        assert_eq!(instant("2026-13-01"), None);
        assert_eq!(instant("yesterday"), None);
        assert_eq!(instant("2026"), None);
    }

    #[test]
    fn numeric_text_must_be_a_finite_number() {
        assert_eq!(Numeric::of_text(" 42 "), Some(Numeric::Integer(42)));
        assert_eq!(Numeric::of_text("-2.5"), Some(Numeric::Float(-2.5)));
        assert_eq!(Numeric::of_text("1e3"), Some(Numeric::Float(1000.0)));
        for text in ["", " ", "abc", "12abc", "NaN", "inf", "infinity", "1e400"] {
            assert_eq!(Numeric::of_text(text), None, "{text}");
        }
    }
}
