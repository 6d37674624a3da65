//! Value templates of workflow actions: `{{ name }}` placeholders inside strings, checked when
//! a workflow is saved (`validate`) and filled from the run's context when an action runs
//! (`render`, `render_text`).
//!
//! Variables: `current_user` (the user whose intention triggered the run), `now`, `entity.id`,
//! `entity.owner` (the user who created the entity), `entity.status` and `entity.<field code>`.
//! A string that is exactly one placeholder renders to the variable's JSON value (a number
//! stays a number); placeholders among other text are interpolated as text.

use serde_json::Value;

use crate::intentions::is_field_code;
use crate::workflows::subject::Subject;

/// What opens a placeholder.
const OPENER: &str = "{{";
/// What closes a placeholder.
const CLOSER: &str = "}}";

/// A variable a placeholder may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variable<'a> {
    /// `current_user`: the user whose intention triggered the run.
    CurrentUser,
    /// `now`: the time of the run, as given in the context.
    Now,
    /// `entity.id`: the entity the run is about.
    EntityId,
    /// `entity.owner`: the user who created the entity (`null` when unknown).
    EntityOwner,
    /// `entity.status`: the entity's status (`null` when unknown).
    EntityStatus,
    /// `entity.<field code>`: one field of the entity (`null` when it has none).
    EntityField(&'a str),
}

impl<'a> Variable<'a> {
    /// The variable a placeholder names (already trimmed), if it is a known one. The built-in
    /// `entity.id`, `entity.owner` and `entity.status` win over fields of those codes.
    pub fn parse(name: &'a str) -> Option<Self> {
        match name {
            "current_user" => Some(Self::CurrentUser),
            "now" => Some(Self::Now),
            "entity.id" => Some(Self::EntityId),
            "entity.owner" => Some(Self::EntityOwner),
            "entity.status" => Some(Self::EntityStatus),
            _ => name
                .strip_prefix("entity.")
                .filter(|code| is_field_code(code))
                .map(Self::EntityField),
        }
    }

    /// The variable's value in `context`.
    pub fn resolve(self, context: &Context) -> Value {
        let subject = context.subject;
        match self {
            Self::CurrentUser => Value::from(context.current_user),
            Self::Now => Value::from(context.now),
            Self::EntityId => Value::from(subject.entity_id),
            Self::EntityOwner => subject.owner_id.map_or(Value::Null, Value::from),
            Self::EntityStatus => subject.status.map_or(Value::Null, Value::from),
            Self::EntityField(code) => subject.fields.get(code).cloned().unwrap_or(Value::Null),
        }
    }
}

/// What templates are filled from when an action runs.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The user whose intention triggered the run.
    pub current_user: &'a str,
    /// The time of the run (RFC 3339).
    pub now: &'a str,
    /// The entity the run is about, after the triggering change.
    pub subject: &'a Subject<'a>,
}

/// One piece of a string, as the template scanner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'a> {
    /// Literal text (a lone `}}` included).
    Text(&'a str),
    /// A `{{ … }}` placeholder: its whole source and the name inside, trimmed.
    Placeholder { source: &'a str, name: &'a str },
    /// A `{{` with no `}}` after it: the rest of the string, from the `{{`.
    Unclosed(&'a str),
}

/// Splits `text` into literal text and placeholders, left to right.
fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPENER) {
        if start > 0 {
            pieces.push(Piece::Text(&rest[..start]));
        }
        let inside_and_after = &rest[start + OPENER.len()..];
        let Some(inside_length) = inside_and_after.find(CLOSER) else {
            pieces.push(Piece::Unclosed(&rest[start..]));
            return pieces;
        };
        let end = start + OPENER.len() + inside_length + CLOSER.len();
        pieces.push(Piece::Placeholder {
            source: &rest[start..end],
            name: inside_and_after[..inside_length].trim(),
        });
        rest = &rest[end..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest));
    }
    pieces
}

/// Checks that every string inside `value` (through arrays and object values, not object
/// keys) holds only well-formed placeholders naming known variables. The error says what is
/// wrong: an unclosed `{{`, an empty `{{}}` or an unknown variable.
pub fn validate(value: &Value) -> Result<(), String> {
    match value {
        Value::String(text) => validate_text(text),
        Value::Array(items) => items.iter().try_for_each(validate),
        Value::Object(object) => object.values().try_for_each(validate),
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

/// `validate` for one string.
pub fn validate_text(text: &str) -> Result<(), String> {
    pieces(text).into_iter().try_for_each(|piece| match piece {
        Piece::Text(_) => Ok(()),
        Piece::Unclosed(source) => Err(format!("unclosed `{OPENER}` in `{source}`")),
        Piece::Placeholder { source, name: "" } => Err(format!("empty template `{source}`")),
        Piece::Placeholder { name, .. } if Variable::parse(name).is_none() => {
            Err(format!("unknown template variable `{name}`"))
        }
        Piece::Placeholder { .. } => Ok(()),
    })
}

/// The variable `text` consists of when it is exactly one placeholder (spaces allowed inside
/// the braces only), e.g. `{{ entity.amount }}`; `None` otherwise.
pub fn sole_variable(text: &str) -> Option<Variable<'_>> {
    match pieces(text).as_slice() {
        [Piece::Placeholder { name, .. }] => Variable::parse(name),
        _ => None,
    }
}

/// Fills the templates inside `value`, recursively through arrays and object values. A string
/// that is exactly one placeholder becomes the variable's JSON value (`null` for a missing
/// field); any other string is interpolated as text (see `render_text`). Other values pass
/// through unchanged.
pub fn render(value: &Value, context: &Context) -> Value {
    match value {
        Value::String(text) => match sole_variable(text) {
            Some(variable) => variable.resolve(context),
            None => Value::String(render_text(text, context)),
        },
        Value::Array(items) => items.iter().map(|item| render(item, context)).collect(),
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, item)| (key.clone(), render(item, context)))
                .collect(),
        ),
        Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
    }
}

/// Fills the placeholders of `template` as text: strings as they are, numbers and booleans as
/// JSON text, `null` and missing fields as nothing, arrays and objects as JSON text. Malformed
/// placeholders (which `validate` rejects) are kept as literal text.
pub fn render_text(template: &str, context: &Context) -> String {
    let mut rendered = String::with_capacity(template.len());
    for piece in pieces(template) {
        match piece {
            Piece::Text(text) | Piece::Unclosed(text) => rendered.push_str(text),
            Piece::Placeholder { source, name } => match Variable::parse(name) {
                Some(variable) => rendered.push_str(&text_of(&variable.resolve(context))),
                None => rendered.push_str(source),
            },
        }
    }
    rendered
}

/// A value as interpolated text.
fn text_of(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::{Map, json};

    use super::*;

    const USER: &str = "0190a0e4-0000-7000-8000-000000000001";
    const OWNER: &str = "0190a0e4-0000-7000-8000-000000000002";
    const ENTITY: &str = "0190a0e4-0000-7000-8000-0000000000aa";
    const NOW: &str = "2026-03-04T05:06:07Z";

    fn entity_fields() -> Map<String, Value> {
        match json!({
            "title": "Quarterly review",
            "amount": 1250.5,
            "count": 3,
            "urgent": true,
            "notes": null,
            "tags": ["a", "b"],
            "address": {"city": "Lyon"},
            "id": "field-id",
        }) {
            Value::Object(fields) => fields,
            _ => unreachable!(),
        }
    }

    /// Runs `check` with a context over the test entity.
    fn with_context(owner: Option<&str>, check: impl FnOnce(&Context)) {
        let fields = entity_fields();
        let changed = BTreeSet::new();
        let subject = Subject {
            entity_id: ENTITY,
            owner_id: owner,
            status: Some("open"),
            fields: &fields,
            changed: &changed,
        };
        let context = Context {
            current_user: USER,
            now: NOW,
            subject: &subject,
        };
        check(&context);
    }

    #[test]
    fn variables_parse_by_name() {
        assert_eq!(Variable::parse("current_user"), Some(Variable::CurrentUser));
        assert_eq!(Variable::parse("now"), Some(Variable::Now));
        assert_eq!(Variable::parse("entity.id"), Some(Variable::EntityId));
        assert_eq!(Variable::parse("entity.owner"), Some(Variable::EntityOwner));
        assert_eq!(
            Variable::parse("entity.status"),
            Some(Variable::EntityStatus)
        );
        assert_eq!(
            Variable::parse("entity.amount"),
            Some(Variable::EntityField("amount"))
        );
        for unknown in [
            "",
            "user",
            "entity",
            "entity.",
            "entity.9lives",
            "entity.a-b",
            "Now",
        ] {
            assert_eq!(Variable::parse(unknown), None, "{unknown}");
        }
    }

    #[test]
    fn every_variable_renders_its_value() {
        with_context(Some(OWNER), |context| {
            assert_eq!(render(&json!("{{current_user}}"), context), json!(USER));
            assert_eq!(render(&json!("{{now}}"), context), json!(NOW));
            assert_eq!(render(&json!("{{entity.id}}"), context), json!(ENTITY));
            assert_eq!(render(&json!("{{entity.owner}}"), context), json!(OWNER));
            assert_eq!(render(&json!("{{entity.status}}"), context), json!("open"));
            assert_eq!(
                render(&json!("{{entity.title}}"), context),
                json!("Quarterly review")
            );
        });
    }

    #[test]
    fn a_whole_value_template_keeps_the_json_type() {
        with_context(Some(OWNER), |context| {
            assert_eq!(render(&json!("{{entity.amount}}"), context), json!(1250.5));
            assert_eq!(render(&json!("{{ entity.count }}"), context), json!(3));
            assert_eq!(render(&json!("{{entity.urgent}}"), context), json!(true));
            assert_eq!(
                render(&json!("{{entity.tags}}"), context),
                json!(["a", "b"])
            );
            assert_eq!(
                render(&json!("{{entity.address}}"), context),
                json!({"city": "Lyon"})
            );
            assert_eq!(render(&json!("{{entity.notes}}"), context), Value::Null);
            assert_eq!(render(&json!("{{entity.missing}}"), context), Value::Null);
        });
    }

    #[test]
    fn built_in_entity_variables_win_over_fields_of_the_same_code() {
        with_context(Some(OWNER), |context| {
            assert_eq!(render(&json!("{{entity.id}}"), context), json!(ENTITY));
        });
    }

    #[test]
    fn unknown_owner_and_status_render_as_null_or_nothing() {
        let fields = Map::new();
        let changed = BTreeSet::new();
        let subject = Subject {
            entity_id: ENTITY,
            owner_id: None,
            status: None,
            fields: &fields,
            changed: &changed,
        };
        let context = Context {
            current_user: USER,
            now: NOW,
            subject: &subject,
        };
        assert_eq!(render(&json!("{{entity.owner}}"), &context), Value::Null);
        assert_eq!(render(&json!("{{entity.status}}"), &context), Value::Null);
        assert_eq!(render_text("by {{entity.owner}}.", &context), "by .");
    }

    #[test]
    fn embedded_templates_are_interpolated_as_text() {
        with_context(Some(OWNER), |context| {
            assert_eq!(
                render(
                    &json!("Review {{ entity.title }} ({{entity.status}})"),
                    context
                ),
                json!("Review Quarterly review (open)")
            );
            assert_eq!(
                render(
                    &json!("Total: {{entity.amount}} x{{entity.count}}"),
                    context
                ),
                json!("Total: 1250.5 x3")
            );
            assert_eq!(
                render(&json!("urgent={{entity.urgent}}"), context),
                json!("urgent=true")
            );
            assert_eq!(
                render(&json!("[{{entity.notes}}][{{entity.missing}}]"), context),
                json!("[][]")
            );
            assert_eq!(
                render(
                    &json!("tags {{entity.tags}} at {{entity.address}}"),
                    context
                ),
                json!(r#"tags ["a","b"] at {"city":"Lyon"}"#)
            );
            assert_eq!(
                render(&json!("{{entity.count}}{{entity.count}}"), context),
                json!("33")
            );
        });
    }

    #[test]
    fn whitespace_outside_the_braces_makes_it_text() {
        with_context(Some(OWNER), |context| {
            assert_eq!(render(&json!(" {{entity.count}}"), context), json!(" 3"));
            assert_eq!(render(&json!("{{entity.count}} "), context), json!("3 "));
            assert_eq!(render(&json!("{{  entity.count\t}}"), context), json!(3));
        });
    }

    #[test]
    fn nested_arrays_and_objects_are_rendered_recursively() {
        with_context(Some(OWNER), |context| {
            let template = json!({
                "assignee": "{{current_user}}",
                "summary": "Follow up on {{entity.title}}",
                "lines": [
                    {"amount": "{{entity.amount}}", "label": "due {{now}}"},
                    ["{{entity.id}}", 7, null, false]
                ],
                "constant": 42,
            });
            assert_eq!(
                render(&template, context),
                json!({
                    "assignee": USER,
                    "summary": "Follow up on Quarterly review",
                    "lines": [
                        {"amount": 1250.5, "label": format!("due {NOW}")},
                        [ENTITY, 7, null, false]
                    ],
                    "constant": 42,
                })
            );
        });
    }

    #[test]
    fn non_string_values_and_plain_text_pass_through() {
        with_context(Some(OWNER), |context| {
            for value in [
                json!(null),
                json!(true),
                json!(12),
                json!(1.5),
                json!("plain"),
            ] {
                assert_eq!(render(&value, context), value);
            }
            assert_eq!(render(&json!("a }} b"), context), json!("a }} b"));
            assert_eq!(
                render(&json!({"{{now}}": 1}), context),
                json!({"{{now}}": 1})
            );
        });
    }

    #[test]
    fn render_text_always_gives_text() {
        with_context(Some(OWNER), |context| {
            assert_eq!(render_text("{{entity.count}}", context), "3");
            assert_eq!(render_text("{{entity.owner}}", context), OWNER);
            assert_eq!(render_text("{{ current_user }}", context), USER);
            assert_eq!(
                render_text("Deal {{entity.title}} is {{entity.status}}", context),
                "Deal Quarterly review is open"
            );
            assert_eq!(render_text("", context), "");
        });
    }

    #[test]
    fn malformed_templates_render_as_literal_text() {
        with_context(Some(OWNER), |context| {
            assert_eq!(render_text("a {{unknown}} b", context), "a {{unknown}} b");
            assert_eq!(render_text("a {{}} b", context), "a {{}} b");
            assert_eq!(
                render_text("{{now}} {{ now", context),
                format!("{NOW} {{{{ now")
            );
            assert_eq!(render(&json!("{{unknown}}"), context), json!("{{unknown}}"));
        });
    }

    #[test]
    fn validate_accepts_well_formed_templates() {
        for value in [
            json!("plain text"),
            json!(""),
            json!("{{current_user}}"),
            json!("{{ now }}"),
            json!("{{entity.id}} {{entity.owner}} {{entity.status}} {{entity.amount_2}}"),
            json!("a lone }} is text"),
            json!("}}{{now}}"),
            json!({"nested": ["{{entity.title}}", {"deep": "x {{now}} y"}], "n": 1}),
            json!({"{{not checked}}": "keys are not templates"}),
            json!(null),
            json!(12),
            json!(true),
        ] {
            assert_eq!(validate(&value), Ok(()), "{value}");
        }
    }

    #[test]
    fn validate_rejects_malformed_templates_and_says_why() {
        let error = |value: Value| validate(&value).unwrap_err();
        assert!(error(json!("Hello {{current_user")).contains("unclosed"));
        assert!(error(json!("{{")).contains("unclosed"));
        assert!(error(json!("{{now}} and {{ now")).contains("unclosed"));
        assert!(error(json!("{{}}")).contains("empty"));
        assert!(error(json!("x {{   }} y")).contains("empty"));
        assert!(error(json!("{{user}}")).contains("unknown template variable `user`"));
        assert!(error(json!("{{entity.}}")).contains("unknown"));
        assert!(error(json!("{{entity.9lives}}")).contains("unknown"));
        assert!(error(json!("{{ entity.title}} {{entity}}")).contains("`entity`"));
        assert!(error(json!("{{{now}}}")).contains("unknown"));
        assert!(error(json!(["ok", {"deep": ["{{nope}}"]}])).contains("nope"));
        assert!(error(json!({"a": "{{now"})).contains("unclosed"));
    }

    #[test]
    fn sole_variable_needs_exactly_one_placeholder() {
        assert_eq!(
            sole_variable("{{current_user}}"),
            Some(Variable::CurrentUser)
        );
        assert_eq!(
            sole_variable("{{ entity.owner }}"),
            Some(Variable::EntityOwner)
        );
        assert_eq!(sole_variable(" {{current_user}}"), None);
        assert_eq!(sole_variable("{{now}}{{now}}"), None);
        assert_eq!(sole_variable("{{unknown}}"), None);
        assert_eq!(sole_variable("text"), None);
    }

    #[test]
    fn the_scanner_splits_text_and_placeholders() {
        assert_eq!(
            pieces("a {{ x }} b }} {{c"),
            [
                Piece::Text("a "),
                Piece::Placeholder {
                    source: "{{ x }}",
                    name: "x"
                },
                Piece::Text(" b }} "),
                Piece::Unclosed("{{c"),
            ]
        );
        assert_eq!(pieces(""), []);
    }
}
