//! Workflow definitions: the trigger, the conditions and the actions of a workflow, their
//! validation from request bodies (every failure collected, keyed by its JSON path for the
//! 422), and the JSON form they are shown and stored in (`conditions_json`, `actions_json`,
//! read back with `parse_conditions`, `parse_actions`).

use std::fmt;

use serde_json::{Map, Value, json};

use crate::intentions::{MAX_FIELDS, MAX_VALUE_BYTES, is_field_code};
use crate::workflows::templates::{self, Variable};
use tessera_http::ValidationErrors;

/// Longest workflow name, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// Longest workflow description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 2000;
/// Most conditions of one workflow.
pub const MAX_CONDITIONS: usize = 50;
/// Most actions of one workflow.
pub const MAX_ACTIONS: usize = 20;
/// Longest notification title template, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest notification message template, in characters.
pub const MAX_MESSAGE_CHARS: usize = 2000;

/// The `send_notification` recipient meaning the user whose intention triggered the run.
pub const RECIPIENT_CURRENT_USER: &str = "{{current_user}}";
/// The `send_notification` recipient meaning the user who created the entity.
pub const RECIPIENT_ENTITY_OWNER: &str = "{{entity.owner}}";

/// The kind of entity event a workflow reacts to (`trigger_event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trigger {
    EntityCreated,
    EntityUpdated,
    EntityDeleted,
    EntityStatusChanged,
}

impl Trigger {
    /// Every trigger, in the order the API lists them.
    pub const ALL: [Self; 4] = [
        Self::EntityCreated,
        Self::EntityUpdated,
        Self::EntityDeleted,
        Self::EntityStatusChanged,
    ];

    /// The API name: `entity.created`, `entity.updated`, `entity.deleted` or
    /// `entity.status_changed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EntityCreated => "entity.created",
            Self::EntityUpdated => "entity.updated",
            Self::EntityDeleted => "entity.deleted",
            Self::EntityStatusChanged => "entity.status_changed",
        }
    }

    /// The trigger of an API name, if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|trigger| trigger.as_str() == name)
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// How a condition compares an entity's field with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    Equals,
    NotEquals,
    Contains,
    GreaterThan,
    LessThan,
    In,
    NotIn,
    IsEmpty,
    IsNotEmpty,
    Changed,
}

/// What a condition's `value` must be for an operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ExpectedValue {
    /// Any JSON but `null`.
    Any,
    /// A number or a string.
    NumberOrString,
    /// An array of candidates.
    Array,
    /// Nothing: the value is ignored and stored as `null`.
    Nothing,
}

impl Operator {
    /// Every operator, in the order the API lists them.
    pub const ALL: [Self; 10] = [
        Self::Equals,
        Self::NotEquals,
        Self::Contains,
        Self::GreaterThan,
        Self::LessThan,
        Self::In,
        Self::NotIn,
        Self::IsEmpty,
        Self::IsNotEmpty,
        Self::Changed,
    ];

    /// The API name, in snake case (`equals`, `not_equals`, …, `changed`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Equals => "equals",
            Self::NotEquals => "not_equals",
            Self::Contains => "contains",
            Self::GreaterThan => "greater_than",
            Self::LessThan => "less_than",
            Self::In => "in",
            Self::NotIn => "not_in",
            Self::IsEmpty => "is_empty",
            Self::IsNotEmpty => "is_not_empty",
            Self::Changed => "changed",
        }
    }

    /// The operator of an API name, if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|operator| operator.as_str() == name)
    }

    /// Whether the operator compares with a value (`is_empty`, `is_not_empty` and `changed`
    /// do not).
    pub fn takes_value(self) -> bool {
        self.expected_value() != ExpectedValue::Nothing
    }

    pub(super) fn expected_value(self) -> ExpectedValue {
        match self {
            Self::Equals | Self::NotEquals | Self::Contains => ExpectedValue::Any,
            Self::GreaterThan | Self::LessThan => ExpectedValue::NumberOrString,
            Self::In | Self::NotIn => ExpectedValue::Array,
            Self::IsEmpty | Self::IsNotEmpty | Self::Changed => ExpectedValue::Nothing,
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// One condition of a workflow: `{field, operator, value}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// The field code looked at (`status` falls back to the entity's status).
    pub field: String,
    pub operator: Operator,
    /// What the field is compared with; `null` for operators that take none.
    pub value: Value,
}

impl Condition {
    /// The JSON form: `{"field", "operator", "value"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "field": self.field,
            "operator": self.operator.as_str(),
            "value": self.value,
        })
    }
}

/// One action of a workflow: `{type, config}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// `update_field`: sets one field of the entity; `value` may hold templates.
    UpdateField { field: String, value: Value },
    /// `send_notification`: an inbox item for `recipient` (`{{current_user}}`,
    /// `{{entity.owner}}` or a user id); `title` and `message` are text templates.
    SendNotification {
        recipient: String,
        title: String,
        message: Option<String>,
    },
    /// `create_entity`: a new entity of `family`; the values of `fields` may hold templates;
    /// `status` (default: the family's first) is literal.
    CreateEntity {
        family: String,
        fields: Map<String, Value>,
        status: Option<String>,
    },
}

/// The kinds of action, as `type` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ActionType {
    UpdateField,
    SendNotification,
    CreateEntity,
}

impl ActionType {
    pub(super) const ALL: [Self; 3] = [
        Self::UpdateField,
        Self::SendNotification,
        Self::CreateEntity,
    ];

    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::UpdateField => "update_field",
            Self::SendNotification => "send_notification",
            Self::CreateEntity => "create_entity",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

impl Action {
    /// The `type` names of actions.
    pub const TYPES: [&'static str; 3] = ["update_field", "send_notification", "create_entity"];

    /// The `type` of this action.
    pub fn type_name(&self) -> &'static str {
        self.action_type().as_str()
    }

    /// Whether the action writes through an intention (`update_field`, `create_entity`): what
    /// a chain's write budget counts.
    pub fn executes_intention(&self) -> bool {
        !matches!(self, Self::SendNotification { .. })
    }

    fn action_type(&self) -> ActionType {
        match self {
            Self::UpdateField { .. } => ActionType::UpdateField,
            Self::SendNotification { .. } => ActionType::SendNotification,
            Self::CreateEntity { .. } => ActionType::CreateEntity,
        }
    }

    /// The JSON form: `{"type", "config"}`, without the optional `message` and `status` when
    /// they are unset (`fields` is always there).
    pub fn to_json(&self) -> Value {
        json!({"type": self.type_name(), "config": self.config_json()})
    }

    fn config_json(&self) -> Value {
        let mut config = Map::new();
        match self {
            Self::UpdateField { field, value } => {
                config.insert("field".into(), Value::from(field.as_str()));
                config.insert("value".into(), value.clone());
            }
            Self::SendNotification {
                recipient,
                title,
                message,
            } => {
                config.insert("recipient".into(), Value::from(recipient.as_str()));
                config.insert("title".into(), Value::from(title.as_str()));
                if let Some(message) = message {
                    config.insert("message".into(), Value::from(message.as_str()));
                }
            }
            Self::CreateEntity {
                family,
                fields,
                status,
            } => {
                config.insert("family".into(), Value::from(family.as_str()));
                config.insert("fields".into(), Value::Object(fields.clone()));
                if let Some(status) = status {
                    config.insert("status".into(), Value::from(status.as_str()));
                }
            }
        }
        Value::Object(config)
    }
}

/// A validated workflow, without its identity and bookkeeping (`id`, `is_active`, dates).
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// Trimmed, 1 to 200 characters.
    pub name: String,
    /// Trimmed; `None` for null or blank.
    pub description: Option<String>,
    pub trigger: Trigger,
    /// The family whose entities the workflow reacts to; `None` for every family.
    pub family: Option<String>,
    /// All must hold for the actions to run.
    pub conditions: Vec<Condition>,
    /// At least one, run in order.
    pub actions: Vec<Action>,
}

impl Definition {
    /// Applies the keys a patch holds.
    pub fn apply(&mut self, patch: Patch) {
        if let Some(name) = patch.name {
            self.name = name;
        }
        if let Some(description) = patch.description {
            self.description = description;
        }
        if let Some(trigger) = patch.trigger {
            self.trigger = trigger;
        }
        if let Some(family) = patch.family {
            self.family = family;
        }
        if let Some(conditions) = patch.conditions {
            self.conditions = conditions;
        }
        if let Some(actions) = patch.actions {
            self.actions = actions;
        }
    }

    /// Whether the workflow reacts to `trigger` on an entity of `family`.
    pub fn reacts_to(&self, trigger: Trigger, family: &str) -> bool {
        self.trigger == trigger && self.family.as_deref().is_none_or(|own| own == family)
    }
}

/// A validated partial update: `None` leaves a key as it is; for the nullable keys,
/// `Some(None)` clears it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Patch {
    pub name: Option<String>,
    pub description: Option<Option<String>>,
    pub trigger: Option<Trigger>,
    pub family: Option<Option<String>>,
    pub conditions: Option<Vec<Condition>>,
    pub actions: Option<Vec<Action>>,
}

impl Patch {
    /// Whether the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The JSON form of conditions: an array of `{"field", "operator", "value"}`.
pub fn conditions_json(conditions: &[Condition]) -> Value {
    conditions.iter().map(Condition::to_json).collect()
}

/// The JSON form of actions: an array of `{"type", "config"}`.
pub fn actions_json(actions: &[Action]) -> Value {
    actions.iter().map(Action::to_json).collect()
}

/// Validates a workflow creation body. Errors are keyed by JSON path (`name`,
/// `trigger_event`, `conditions.0.operator`, `actions.1.config.title`, …); all of them are
/// collected. Unknown keys are ignored.
pub fn parse_create(body: &Value) -> Result<Definition, ValidationErrors> {
    let Value::Object(body) = body else {
        return Err(ValidationErrors::single("body", "object"));
    };
    let mut errors = ValidationErrors::new();
    let name = parse_name(&mut errors, body.get("name"));
    let description = parse_description(&mut errors, body.get("description"));
    let trigger = parse_trigger(&mut errors, body.get("trigger_event"));
    let family = parse_family(&mut errors, body.get("family"));
    let conditions = collect_conditions(&mut errors, body.get("conditions"));
    let actions = collect_actions(&mut errors, body.get("actions"));
    match (name, trigger) {
        (Some(name), Some(trigger)) if errors.is_empty() => Ok(Definition {
            name,
            description,
            trigger,
            family,
            conditions,
            actions,
        }),
        _ => Err(errors),
    }
}

/// Validates a workflow update body: the keys present follow the rules of `parse_create`
/// (`name` and `actions` cannot be cleared; `description: null` and `family: null` clear
/// them, `conditions: null` empties them).
pub fn parse_patch(body: &Value) -> Result<Patch, ValidationErrors> {
    let Value::Object(body) = body else {
        return Err(ValidationErrors::single("body", "object"));
    };
    let mut errors = ValidationErrors::new();
    let patch = Patch {
        name: body
            .get("name")
            .and_then(|name| parse_name(&mut errors, Some(name))),
        description: body
            .get("description")
            .map(|description| parse_description(&mut errors, Some(description))),
        trigger: body
            .get("trigger_event")
            .and_then(|trigger| parse_trigger(&mut errors, Some(trigger))),
        family: body
            .get("family")
            .map(|family| parse_family(&mut errors, Some(family))),
        conditions: body
            .get("conditions")
            .map(|conditions| collect_conditions(&mut errors, Some(conditions))),
        actions: body
            .get("actions")
            .map(|actions| collect_actions(&mut errors, Some(actions))),
    };
    if errors.is_empty() {
        Ok(patch)
    } else {
        Err(errors)
    }
}

/// Reads conditions from their JSON form (an array; `null` for none), with the errors of
/// `parse_create` (`conditions`, `conditions.N.…`).
pub fn parse_conditions(value: &Value) -> Result<Vec<Condition>, ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let conditions = collect_conditions(&mut errors, Some(value));
    if errors.is_empty() {
        Ok(conditions)
    } else {
        Err(errors)
    }
}

/// Reads actions from their JSON form (an array of at least one), with the errors of
/// `parse_create` (`actions`, `actions.N.…`).
pub fn parse_actions(value: &Value) -> Result<Vec<Action>, ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let actions = collect_actions(&mut errors, Some(value));
    if errors.is_empty() {
        Ok(actions)
    } else {
        Err(errors)
    }
}

// ---- Top-level keys ----

fn parse_name(errors: &mut ValidationErrors, value: Option<&Value>) -> Option<String> {
    let name = required_text(errors, "name", value)?;
    within_chars(errors, "name", &name, MAX_NAME_CHARS).then_some(name)
}

fn parse_description(errors: &mut ValidationErrors, value: Option<&Value>) -> Option<String> {
    let description = optional_text(errors, "description", value)?;
    within_chars(errors, "description", &description, MAX_DESCRIPTION_CHARS).then_some(description)
}

fn parse_trigger(errors: &mut ValidationErrors, value: Option<&Value>) -> Option<Trigger> {
    let name = required_text(errors, "trigger_event", value)?;
    let trigger = Trigger::parse(&name);
    if trigger.is_none() {
        errors.add("trigger_event", "in");
    }
    trigger
}

/// The family filter: a family code, `None` for null or blank.
fn parse_family(errors: &mut ValidationErrors, value: Option<&Value>) -> Option<String> {
    let family = optional_text(errors, "family", value)?;
    field_code_like(errors, "family", family)
}

// ---- Conditions ----

fn collect_conditions(errors: &mut ValidationErrors, value: Option<&Value>) -> Vec<Condition> {
    let items = match value {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => {
            errors.add("conditions", "array");
            return Vec::new();
        }
    };
    if items.len() > MAX_CONDITIONS {
        errors.add("conditions", format!("max:{MAX_CONDITIONS}"));
    }
    items
        .iter()
        .enumerate()
        .filter_map(|(index, item)| parse_condition(errors, &format!("conditions.{index}"), item))
        .collect()
}

fn parse_condition(errors: &mut ValidationErrors, path: &str, item: &Value) -> Option<Condition> {
    let Value::Object(condition) = item else {
        errors.add(path, "object");
        return None;
    };
    let field = parse_field_code(errors, &format!("{path}.field"), condition.get("field"));
    let operator = parse_operator(
        errors,
        &format!("{path}.operator"),
        condition.get("operator"),
    );
    let value = operator.and_then(|operator| {
        parse_condition_value(
            errors,
            &format!("{path}.value"),
            operator,
            condition.get("value"),
        )
    });
    Some(Condition {
        field: field?,
        operator: operator?,
        value: value?,
    })
}

fn parse_operator(
    errors: &mut ValidationErrors,
    path: &str,
    value: Option<&Value>,
) -> Option<Operator> {
    let name = required_text(errors, path, value)?;
    let operator = Operator::parse(&name);
    if operator.is_none() {
        errors.add(path, "in");
    }
    operator
}

/// The value a condition compares with, checked against what its operator expects.
fn parse_condition_value(
    errors: &mut ValidationErrors,
    path: &str,
    operator: Operator,
    value: Option<&Value>,
) -> Option<Value> {
    let expected = operator.expected_value();
    if expected == ExpectedValue::Nothing {
        return Some(Value::Null);
    }
    let value = match value {
        None | Some(Value::Null) => {
            errors.add(path, "required");
            return None;
        }
        Some(value) => value,
    };
    let fits = match expected {
        ExpectedValue::NumberOrString => value.is_number() || value.is_string(),
        ExpectedValue::Array => value.is_array(),
        ExpectedValue::Any | ExpectedValue::Nothing => true,
    };
    if !fits {
        let rule = match expected {
            ExpectedValue::Array => "array",
            _ => "number_or_string",
        };
        errors.add(path, rule);
        return None;
    }
    within_value_bytes(errors, path, value).then(|| value.clone())
}

// ---- Actions ----

fn collect_actions(errors: &mut ValidationErrors, value: Option<&Value>) -> Vec<Action> {
    let items = match value {
        None | Some(Value::Null) => {
            errors.add("actions", "required");
            return Vec::new();
        }
        Some(Value::Array(items)) => items,
        Some(_) => {
            errors.add("actions", "array");
            return Vec::new();
        }
    };
    if items.is_empty() {
        errors.add("actions", "min:1");
    }
    if items.len() > MAX_ACTIONS {
        errors.add("actions", format!("max:{MAX_ACTIONS}"));
    }
    items
        .iter()
        .enumerate()
        .filter_map(|(index, item)| parse_action(errors, &format!("actions.{index}"), item))
        .collect()
}

fn parse_action(errors: &mut ValidationErrors, path: &str, item: &Value) -> Option<Action> {
    let Value::Object(action) = item else {
        errors.add(path, "object");
        return None;
    };
    let action_type = parse_action_type(errors, &format!("{path}.type"), action.get("type"));
    let config_path = format!("{path}.config");
    let config = match action.get("config") {
        None | Some(Value::Null) => {
            errors.add(&config_path, "required");
            None
        }
        Some(Value::Object(config)) => Some(config),
        Some(_) => {
            errors.add(&config_path, "object");
            None
        }
    };
    let (action_type, config) = (action_type?, config?);
    match action_type {
        ActionType::UpdateField => parse_update_field(errors, &config_path, config),
        ActionType::SendNotification => parse_send_notification(errors, &config_path, config),
        ActionType::CreateEntity => parse_create_entity(errors, &config_path, config),
    }
}

fn parse_action_type(
    errors: &mut ValidationErrors,
    path: &str,
    value: Option<&Value>,
) -> Option<ActionType> {
    let name = required_text(errors, path, value)?;
    let action_type = ActionType::parse(&name);
    if action_type.is_none() {
        errors.add(path, "in");
    }
    action_type
}

/// `update_field`: `field` (a field code) and `value` (any JSON, `null` included; templates
/// allowed).
fn parse_update_field(
    errors: &mut ValidationErrors,
    path: &str,
    config: &Map<String, Value>,
) -> Option<Action> {
    let field = parse_field_code(errors, &format!("{path}.field"), config.get("field"));
    let value_path = format!("{path}.value");
    let value = match config.get("value") {
        None => {
            errors.add(&value_path, "required");
            None
        }
        Some(value) => is_writable_value(errors, &value_path, value).then(|| value.clone()),
    };
    Some(Action::UpdateField {
        field: field?,
        value: value?,
    })
}

/// `send_notification`: `recipient` (see `normalized_recipient`), `title` (required text
/// template), `message` (optional text template).
fn parse_send_notification(
    errors: &mut ValidationErrors,
    path: &str,
    config: &Map<String, Value>,
) -> Option<Action> {
    let recipient_path = format!("{path}.recipient");
    let recipient =
        required_text(errors, &recipient_path, config.get("recipient")).and_then(|recipient| {
            let normalized = normalized_recipient(&recipient);
            if normalized.is_none() {
                errors.add(&recipient_path, "in");
            }
            normalized
        });
    let title_path = format!("{path}.title");
    let title = required_text(errors, &title_path, config.get("title"))
        .and_then(|title| text_template(errors, &title_path, title, MAX_TITLE_CHARS));
    let message_path = format!("{path}.message");
    let message = optional_text(errors, &message_path, config.get("message"))
        .and_then(|message| text_template(errors, &message_path, message, MAX_MESSAGE_CHARS));
    Some(Action::SendNotification {
        recipient: recipient?,
        title: title?,
        message,
    })
}

/// `create_entity`: `family` (a family code), `fields` (an object of field codes, values
/// may hold templates; none when absent), `status` (optional literal).
fn parse_create_entity(
    errors: &mut ValidationErrors,
    path: &str,
    config: &Map<String, Value>,
) -> Option<Action> {
    let family = parse_field_code(errors, &format!("{path}.family"), config.get("family"));
    let fields = parse_entity_fields(errors, &format!("{path}.fields"), config.get("fields"));
    let status = optional_text(errors, &format!("{path}.status"), config.get("status"));
    Some(Action::CreateEntity {
        family: family?,
        fields: fields?,
        status,
    })
}

fn parse_entity_fields(
    errors: &mut ValidationErrors,
    path: &str,
    value: Option<&Value>,
) -> Option<Map<String, Value>> {
    let fields = match value {
        None | Some(Value::Null) => return Some(Map::new()),
        Some(Value::Object(fields)) => fields,
        Some(_) => {
            errors.add(path, "object");
            return None;
        }
    };
    let mut valid = fields.len() <= MAX_FIELDS;
    if !valid {
        errors.add(path, format!("max:{MAX_FIELDS}"));
    }
    for (code, value) in fields {
        let field_path = format!("{path}.{code}");
        if !is_field_code(code) {
            errors.add(field_path, "regex");
            valid = false;
        } else if !is_writable_value(errors, &field_path, value) {
            valid = false;
        }
    }
    valid.then(|| fields.clone())
}

/// The canonical form of a notification recipient: `{{current_user}}`, `{{entity.owner}}`
/// (spaces inside the braces allowed) or a user id (a UUID, lower-case hyphenated).
fn normalized_recipient(recipient: &str) -> Option<String> {
    match templates::sole_variable(recipient) {
        Some(Variable::CurrentUser) => Some(RECIPIENT_CURRENT_USER.to_owned()),
        Some(Variable::EntityOwner) => Some(RECIPIENT_ENTITY_OWNER.to_owned()),
        Some(_) => None,
        None => uuid::Uuid::try_parse(recipient)
            .ok()
            .map(|id| id.hyphenated().to_string()),
    }
}

// ---- Shared rules ----

/// A required string: trimmed, non-blank. `required` when absent, null or blank; `string`
/// when not a string.
fn required_text(
    errors: &mut ValidationErrors,
    path: &str,
    value: Option<&Value>,
) -> Option<String> {
    match value {
        None | Some(Value::Null) => {
            errors.add(path, "required");
            None
        }
        Some(Value::String(text)) if text.trim().is_empty() => {
            errors.add(path, "required");
            None
        }
        Some(Value::String(text)) => Some(text.trim().to_owned()),
        Some(_) => {
            errors.add(path, "string");
            None
        }
    }
}

/// An optional string: trimmed; `None` when absent, null or blank. `string` when not a
/// string.
fn optional_text(
    errors: &mut ValidationErrors,
    path: &str,
    value: Option<&Value>,
) -> Option<String> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.trim().is_empty() => None,
        Some(Value::String(text)) => Some(text.trim().to_owned()),
        Some(_) => {
            errors.add(path, "string");
            None
        }
    }
}

/// A required field code (letters, digits, `_`, starting with a letter): `regex` otherwise.
fn parse_field_code(
    errors: &mut ValidationErrors,
    path: &str,
    value: Option<&Value>,
) -> Option<String> {
    let code = required_text(errors, path, value)?;
    field_code_like(errors, path, code)
}

fn field_code_like(errors: &mut ValidationErrors, path: &str, code: String) -> Option<String> {
    if is_field_code(&code) {
        Some(code)
    } else {
        errors.add(path, "regex");
        None
    }
}

/// A text template of at most `max_chars` characters with well-formed placeholders
/// (`max:N`, `template`).
fn text_template(
    errors: &mut ValidationErrors,
    path: &str,
    text: String,
    max_chars: usize,
) -> Option<String> {
    let short_enough = within_chars(errors, path, &text, max_chars);
    let well_formed = templates::validate_text(&text).is_ok();
    if !well_formed {
        errors.add(path, "template");
    }
    (short_enough && well_formed).then_some(text)
}

/// A value an action writes to an entity: well-formed templates (`template`) and at most
/// `MAX_VALUE_BYTES` of JSON (`max:N`), as intentions require.
fn is_writable_value(errors: &mut ValidationErrors, path: &str, value: &Value) -> bool {
    if templates::validate(value).is_err() {
        errors.add(path, "template");
        return false;
    }
    within_value_bytes(errors, path, value)
}

fn within_value_bytes(errors: &mut ValidationErrors, path: &str, value: &Value) -> bool {
    let fits = value.to_string().len() <= MAX_VALUE_BYTES;
    if !fits {
        errors.add(path, format!("max:{MAX_VALUE_BYTES}"));
    }
    fits
}

fn within_chars(errors: &mut ValidationErrors, path: &str, text: &str, max_chars: usize) -> bool {
    let fits = text.chars().count() <= max_chars;
    if !fits {
        errors.add(path, format!("max:{max_chars}"));
    }
    fits
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const USER_ID: &str = "0190a0e4-0000-7000-8000-000000000001";

    /// A valid creation body using every kind of condition and action.
    fn full_body() -> Value {
        json!({
            "name": "  Escalate big deals ",
            "description": "Notify the owner when a deal gets big.",
            "trigger_event": "entity.updated",
            "family": "deal",
            "is_active": true,
            "conditions": [
                {"field": "amount", "operator": "greater_than", "value": 10000},
                {"field": "stage", "operator": "in", "value": ["proposal", "negotiation"]},
                {"field": "amount", "operator": "changed"},
                {"field": "title", "operator": "contains", "value": "urgent"},
            ],
            "actions": [
                {"type": "update_field", "config": {"field": "escalated_by", "value": "{{current_user}}"}},
                {"type": "send_notification", "config": {
                    "recipient": "{{ entity.owner }}",
                    "title": "Deal {{entity.title}} is big",
                    "message": "Amount: {{entity.amount}}",
                }},
                {"type": "create_entity", "config": {
                    "family": "task",
                    "fields": {"title": "Review {{entity.title}}", "deal_id": "{{entity.id}}"},
                    "status": "todo",
                }},
            ],
        })
    }

    /// The errors of a body, as `(key, rules)`.
    fn errors_of(
        result: Result<impl fmt::Debug, ValidationErrors>,
    ) -> BTreeMap<String, Vec<String>> {
        result.unwrap_err().fields().clone()
    }

    /// The errors of a creation body, as `key: rule` lines.
    fn create_errors(body: Value) -> Vec<String> {
        flatten(errors_of(parse_create(&body)))
    }

    fn patch_errors(body: Value) -> Vec<String> {
        flatten(errors_of(parse_patch(&body)))
    }

    fn flatten(errors: BTreeMap<String, Vec<String>>) -> Vec<String> {
        errors
            .into_iter()
            .flat_map(|(key, rules)| rules.into_iter().map(move |rule| format!("{key}: {rule}")))
            .collect()
    }

    /// A minimal valid body with the given key replaced.
    fn body_with(key: &str, value: Value) -> Value {
        let mut body = json!({
            "name": "Minimal",
            "trigger_event": "entity.created",
            "actions": [{"type": "update_field", "config": {"field": "seen", "value": true}}],
        });
        body[key] = value;
        body
    }

    fn action_errors(action: Value) -> Vec<String> {
        create_errors(body_with("actions", json!([action])))
    }

    fn condition_errors(condition: Value) -> Vec<String> {
        create_errors(body_with("conditions", json!([condition])))
    }

    #[test]
    fn triggers_parse_and_print_their_api_names() {
        for trigger in Trigger::ALL {
            assert_eq!(Trigger::parse(trigger.as_str()), Some(trigger));
        }
        assert_eq!(
            Trigger::parse("entity.created"),
            Some(Trigger::EntityCreated)
        );
        assert_eq!(
            Trigger::parse("entity.updated"),
            Some(Trigger::EntityUpdated)
        );
        assert_eq!(
            Trigger::parse("entity.deleted"),
            Some(Trigger::EntityDeleted)
        );
        assert_eq!(
            Trigger::parse("entity.status_changed"),
            Some(Trigger::EntityStatusChanged)
        );
        assert_eq!(Trigger::parse("entity.field_set"), None);
        assert_eq!(Trigger::parse("Entity.Created"), None);
        assert_eq!(
            Trigger::EntityStatusChanged.to_string(),
            "entity.status_changed"
        );
    }

    #[test]
    fn operators_parse_and_print_their_api_names() {
        let names: Vec<_> = Operator::ALL
            .iter()
            .map(|operator| operator.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "equals",
                "not_equals",
                "contains",
                "greater_than",
                "less_than",
                "in",
                "not_in",
                "is_empty",
                "is_not_empty",
                "changed"
            ]
        );
        for operator in Operator::ALL {
            assert_eq!(Operator::parse(operator.as_str()), Some(operator));
        }
        assert_eq!(Operator::parse("EQUALS"), None);
        assert_eq!(Operator::parse("like"), None);
        assert!(Operator::Equals.takes_value());
        assert!(!Operator::Changed.takes_value());
    }

    #[test]
    fn a_full_body_parses_into_a_definition() {
        let definition = parse_create(&full_body()).unwrap();
        assert_eq!(
            definition,
            Definition {
                name: "Escalate big deals".into(),
                description: Some("Notify the owner when a deal gets big.".into()),
                trigger: Trigger::EntityUpdated,
                family: Some("deal".into()),
                conditions: vec![
                    Condition {
                        field: "amount".into(),
                        operator: Operator::GreaterThan,
                        value: json!(10000)
                    },
                    Condition {
                        field: "stage".into(),
                        operator: Operator::In,
                        value: json!(["proposal", "negotiation"])
                    },
                    Condition {
                        field: "amount".into(),
                        operator: Operator::Changed,
                        value: Value::Null
                    },
                    Condition {
                        field: "title".into(),
                        operator: Operator::Contains,
                        value: json!("urgent")
                    },
                ],
                actions: vec![
                    Action::UpdateField {
                        field: "escalated_by".into(),
                        value: json!("{{current_user}}")
                    },
                    Action::SendNotification {
                        recipient: RECIPIENT_ENTITY_OWNER.into(),
                        title: "Deal {{entity.title}} is big".into(),
                        message: Some("Amount: {{entity.amount}}".into()),
                    },
                    Action::CreateEntity {
                        family: "task".into(),
                        fields: match json!({"title": "Review {{entity.title}}", "deal_id": "{{entity.id}}"})
                        {
                            Value::Object(fields) => fields,
                            _ => unreachable!(),
                        },
                        status: Some("todo".into()),
                    },
                ],
            }
        );
    }

    #[test]
    fn a_minimal_body_has_defaults() {
        let definition = parse_create(&body_with("family", Value::Null)).unwrap();
        assert_eq!(definition.name, "Minimal");
        assert_eq!(definition.description, None);
        assert_eq!(definition.family, None);
        assert!(definition.conditions.is_empty());
        assert_eq!(definition.actions.len(), 1);
        for blank in [json!(null), json!("  ")] {
            assert_eq!(
                parse_create(&body_with("description", blank.clone()))
                    .unwrap()
                    .description,
                None
            );
            assert_eq!(
                parse_create(&body_with("family", blank)).unwrap().family,
                None
            );
        }
        assert!(
            parse_create(&body_with("conditions", Value::Null))
                .unwrap()
                .conditions
                .is_empty()
        );
    }

    #[test]
    fn a_body_must_be_an_object() {
        for body in [json!([]), json!("x"), json!(null)] {
            assert_eq!(create_errors(body.clone()), ["body: object"]);
            assert_eq!(patch_errors(body), ["body: object"]);
        }
    }

    #[test]
    fn an_empty_body_reports_every_required_key() {
        assert_eq!(
            create_errors(json!({})),
            [
                "actions: required",
                "name: required",
                "trigger_event: required"
            ]
        );
    }

    #[test]
    fn top_level_keys_are_validated() {
        assert_eq!(
            create_errors(body_with("name", json!("   "))),
            ["name: required"]
        );
        assert_eq!(create_errors(body_with("name", json!(7))), ["name: string"]);
        assert_eq!(
            create_errors(body_with("name", json!("n".repeat(201)))),
            ["name: max:200"]
        );
        assert!(parse_create(&body_with("name", json!("é".repeat(200)))).is_ok());
        assert_eq!(
            create_errors(body_with("description", json!(false))),
            ["description: string"]
        );
        assert_eq!(
            create_errors(body_with("description", json!("d".repeat(2001)))),
            ["description: max:2000"]
        );
        assert_eq!(
            create_errors(body_with("trigger_event", json!("entity.merged"))),
            ["trigger_event: in"]
        );
        assert_eq!(
            create_errors(body_with("trigger_event", json!(1))),
            ["trigger_event: string"]
        );
        assert_eq!(
            create_errors(body_with("family", json!(3))),
            ["family: string"]
        );
        assert_eq!(
            create_errors(body_with("family", json!("no such-family"))),
            ["family: regex"]
        );
        assert_eq!(
            create_errors(body_with("conditions", json!({}))),
            ["conditions: array"]
        );
        assert_eq!(
            create_errors(body_with("actions", Value::Null)),
            ["actions: required"]
        );
        assert_eq!(
            create_errors(body_with("actions", json!({}))),
            ["actions: array"]
        );
        assert_eq!(
            create_errors(body_with("actions", json!([]))),
            ["actions: min:1"]
        );
    }

    #[test]
    fn list_sizes_are_limited() {
        let condition = json!({"field": "a", "operator": "is_empty"});
        assert!(parse_create(&body_with("conditions", json!(vec![condition.clone(); 50]))).is_ok());
        assert_eq!(
            create_errors(body_with("conditions", json!(vec![condition; 51]))),
            ["conditions: max:50"]
        );
        let action = json!({"type": "update_field", "config": {"field": "a", "value": 1}});
        assert!(parse_create(&body_with("actions", json!(vec![action.clone(); 20]))).is_ok());
        assert_eq!(
            create_errors(body_with("actions", json!(vec![action; 21]))),
            ["actions: max:20"]
        );
    }

    #[test]
    fn unknown_keys_are_ignored() {
        let mut body = body_with("whatever", json!({"x": 1}));
        body["actions"][0]["extra"] = json!(true);
        body["actions"][0]["config"]["extra"] = json!(true);
        assert!(parse_create(&body).is_ok());
    }

    #[test]
    fn every_error_is_collected() {
        let body = json!({
            "name": "",
            "trigger_event": "entity.exploded",
            "conditions": [
                {"field": "amount", "operator": "bigger", "value": 1},
                "not an object",
                {"field": "ok", "operator": "equals", "value": 1},
                {"operator": "in", "value": "x"},
            ],
            "actions": [
                {"type": "explode", "config": {}},
                {"type": "update_field", "config": {"field": "9x", "value": "{{nope}}"}},
                {"type": "send_notification"},
            ],
        });
        assert_eq!(
            create_errors(body),
            [
                "actions.0.type: in",
                "actions.1.config.field: regex",
                "actions.1.config.value: template",
                "actions.2.config: required",
                "conditions.0.operator: in",
                "conditions.1: object",
                "conditions.3.field: required",
                "conditions.3.value: array",
                "name: required",
                "trigger_event: in",
            ]
        );
    }

    #[test]
    fn condition_fields_and_operators_are_validated() {
        assert_eq!(
            condition_errors(json!({"operator": "equals", "value": 1})),
            ["conditions.0.field: required"]
        );
        assert_eq!(
            condition_errors(json!({"field": 1, "operator": "equals", "value": 1})),
            ["conditions.0.field: string"]
        );
        assert_eq!(
            condition_errors(json!({"field": "a.b", "operator": "equals", "value": 1})),
            ["conditions.0.field: regex"]
        );
        assert_eq!(
            condition_errors(json!({"field": "a", "value": 1})),
            ["conditions.0.operator: required"]
        );
        assert_eq!(
            condition_errors(json!({"field": "a", "operator": "like", "value": 1})),
            ["conditions.0.operator: in"]
        );
        assert_eq!(
            condition_errors(json!({"field": "a", "operator": ["equals"], "value": 1})),
            ["conditions.0.operator: string"]
        );
    }

    #[test]
    fn condition_values_follow_their_operator() {
        for operator in [
            "equals",
            "not_equals",
            "contains",
            "greater_than",
            "less_than",
            "in",
            "not_in",
        ] {
            assert_eq!(
                condition_errors(json!({"field": "a", "operator": operator})),
                ["conditions.0.value: required"],
                "{operator}"
            );
            assert_eq!(
                condition_errors(json!({"field": "a", "operator": operator, "value": null})),
                ["conditions.0.value: required"],
                "{operator}"
            );
        }
        for value in [
            json!("x"),
            json!(1.5),
            json!(false),
            json!([1]),
            json!({"a": 1}),
        ] {
            assert!(condition_errors_or_ok(
                json!({"field": "a", "operator": "equals", "value": value})
            ));
        }
        for operator in ["greater_than", "less_than"] {
            for value in [json!(true), json!([1]), json!({})] {
                assert_eq!(
                    condition_errors(json!({"field": "a", "operator": operator, "value": value})),
                    ["conditions.0.value: number_or_string"]
                );
            }
            assert!(condition_errors_or_ok(
                json!({"field": "a", "operator": operator, "value": "2026-01-01"})
            ));
            assert!(condition_errors_or_ok(
                json!({"field": "a", "operator": operator, "value": -3})
            ));
        }
        for operator in ["in", "not_in"] {
            assert_eq!(
                condition_errors(json!({"field": "a", "operator": operator, "value": "x"})),
                ["conditions.0.value: array"]
            );
            assert!(condition_errors_or_ok(
                json!({"field": "a", "operator": operator, "value": []})
            ));
        }
        assert_eq!(
            condition_errors(
                json!({"field": "a", "operator": "equals", "value": "v".repeat(10_001)})
            ),
            ["conditions.0.value: max:10000"]
        );
    }

    /// Whether a single condition is accepted.
    fn condition_errors_or_ok(condition: Value) -> bool {
        parse_create(&body_with("conditions", json!([condition]))).is_ok()
    }

    #[test]
    fn operators_without_a_value_store_null() {
        for operator in ["is_empty", "is_not_empty", "changed"] {
            let definition = parse_create(&body_with(
                "conditions",
                json!([{"field": "a", "operator": operator, "value": {"ignored": [1]}}]),
            ))
            .unwrap();
            assert_eq!(definition.conditions[0].value, Value::Null, "{operator}");
        }
    }

    #[test]
    fn actions_need_a_type_and_a_config_object() {
        assert_eq!(action_errors(json!("update_field")), ["actions.0: object"]);
        assert_eq!(
            action_errors(json!({"config": {}})),
            ["actions.0.type: required"]
        );
        assert_eq!(
            action_errors(json!({"type": "delete_entity", "config": {}})),
            ["actions.0.type: in"]
        );
        assert_eq!(
            action_errors(json!({"type": "update_field"})),
            ["actions.0.config: required"]
        );
        assert_eq!(
            action_errors(json!({"type": "update_field", "config": [1]})),
            ["actions.0.config: object"]
        );
        assert_eq!(
            action_errors(json!({"type": 5, "config": "x"})),
            ["actions.0.config: object", "actions.0.type: string"]
        );
    }

    #[test]
    fn update_field_needs_a_field_code_and_a_value() {
        assert_eq!(
            action_errors(json!({"type": "update_field", "config": {}})),
            [
                "actions.0.config.field: required",
                "actions.0.config.value: required"
            ]
        );
        assert_eq!(
            action_errors(json!({"type": "update_field", "config": {"field": ["x"], "value": 1}})),
            ["actions.0.config.field: string"]
        );
        assert_eq!(
            action_errors(json!({"type": "update_field", "config": {"field": "_x", "value": 1}})),
            ["actions.0.config.field: regex"]
        );
        assert_eq!(
            action_errors(
                json!({"type": "update_field", "config": {"field": "x", "value": {"a": ["{{now"]}}})
            ),
            ["actions.0.config.value: template"]
        );
        assert_eq!(
            action_errors(
                json!({"type": "update_field", "config": {"field": "x", "value": "v".repeat(10_001)}})
            ),
            ["actions.0.config.value: max:10000"]
        );
        let cleared = parse_create(&body_with(
            "actions",
            json!([{"type": "update_field", "config": {"field": "x", "value": null}}]),
        ))
        .unwrap();
        assert_eq!(
            cleared.actions,
            [Action::UpdateField {
                field: "x".into(),
                value: Value::Null
            }]
        );
    }

    #[test]
    fn send_notification_needs_a_known_recipient_and_a_title() {
        let notification = |config: Value| json!({"type": "send_notification", "config": config});
        assert_eq!(
            action_errors(notification(json!({}))),
            [
                "actions.0.config.recipient: required",
                "actions.0.config.title: required"
            ]
        );
        for recipient in [
            "someone",
            "{{entity.id}}",
            "{{ nope }}",
            "{{current_user}}!",
        ] {
            assert_eq!(
                action_errors(notification(json!({"recipient": recipient, "title": "Hi"}))),
                ["actions.0.config.recipient: in"],
                "{recipient}"
            );
        }
        assert_eq!(
            action_errors(notification(
                json!({"recipient": 7, "title": ["x"], "message": 1})
            )),
            [
                "actions.0.config.message: string",
                "actions.0.config.recipient: string",
                "actions.0.config.title: string"
            ]
        );
        assert_eq!(
            action_errors(notification(json!({
                "recipient": "{{current_user}}",
                "title": "Hello {{current_user",
                "message": "{{}}",
            }))),
            [
                "actions.0.config.message: template",
                "actions.0.config.title: template"
            ]
        );
        assert_eq!(
            action_errors(notification(json!({
                "recipient": "{{current_user}}",
                "title": "t".repeat(201),
                "message": "m".repeat(2001),
            }))),
            [
                "actions.0.config.message: max:2000",
                "actions.0.config.title: max:200"
            ]
        );
    }

    #[test]
    fn recipients_are_normalized() {
        let recipient_of = |recipient: &str| {
            let body = body_with(
                "actions",
                json!([{"type": "send_notification", "config": {"recipient": recipient, "title": "Hi", "message": " "}}]),
            );
            match parse_create(&body).unwrap().actions.remove(0) {
                Action::SendNotification {
                    recipient, message, ..
                } => {
                    assert_eq!(message, None);
                    recipient
                }
                other => panic!("unexpected {other:?}"),
            }
        };
        assert_eq!(recipient_of("{{current_user}}"), RECIPIENT_CURRENT_USER);
        assert_eq!(recipient_of("{{  current_user }}"), RECIPIENT_CURRENT_USER);
        assert_eq!(recipient_of("{{entity.owner}}"), RECIPIENT_ENTITY_OWNER);
        assert_eq!(recipient_of(&USER_ID.to_uppercase()), USER_ID);
        assert_eq!(recipient_of(&format!(" {USER_ID} ")), USER_ID);
    }

    #[test]
    fn create_entity_needs_a_family_and_checks_its_fields() {
        let create = |config: Value| json!({"type": "create_entity", "config": config});
        assert_eq!(
            action_errors(create(json!({}))),
            ["actions.0.config.family: required"]
        );
        assert_eq!(
            action_errors(create(
                json!({"family": "Bad Family", "fields": [], "status": 1})
            )),
            [
                "actions.0.config.family: regex",
                "actions.0.config.fields: object",
                "actions.0.config.status: string"
            ]
        );
        assert_eq!(
            action_errors(create(json!({
                "family": "task",
                "fields": {"9lives": 1, "title": "{{entity.}}", "ok": "{{entity.title}}", "big": "b".repeat(10_001)},
            }))),
            [
                "actions.0.config.fields.9lives: regex",
                "actions.0.config.fields.big: max:10000",
                "actions.0.config.fields.title: template"
            ]
        );
        let too_many: Map<String, Value> = (0..101)
            .map(|index| (format!("f{index}"), json!(index)))
            .collect();
        assert_eq!(
            action_errors(create(json!({"family": "task", "fields": too_many}))),
            ["actions.0.config.fields: max:100"]
        );
        let definition = parse_create(&body_with(
            "actions",
            json!([create(json!({"family": "task", "status": "  "}))]),
        ))
        .unwrap();
        assert_eq!(
            definition.actions,
            [Action::CreateEntity {
                family: "task".into(),
                fields: Map::new(),
                status: None
            }]
        );
    }

    #[test]
    fn the_json_form_has_the_api_shape() {
        let definition = parse_create(&full_body()).unwrap();
        assert_eq!(
            conditions_json(&definition.conditions),
            json!([
                {"field": "amount", "operator": "greater_than", "value": 10000},
                {"field": "stage", "operator": "in", "value": ["proposal", "negotiation"]},
                {"field": "amount", "operator": "changed", "value": null},
                {"field": "title", "operator": "contains", "value": "urgent"},
            ])
        );
        assert_eq!(
            actions_json(&definition.actions),
            json!([
                {"type": "update_field", "config": {"field": "escalated_by", "value": "{{current_user}}"}},
                {"type": "send_notification", "config": {
                    "recipient": "{{entity.owner}}",
                    "title": "Deal {{entity.title}} is big",
                    "message": "Amount: {{entity.amount}}",
                }},
                {"type": "create_entity", "config": {
                    "family": "task",
                    "fields": {"title": "Review {{entity.title}}", "deal_id": "{{entity.id}}"},
                    "status": "todo",
                }},
            ])
        );
        let bare = [
            Action::SendNotification {
                recipient: USER_ID.into(),
                title: "Hi".into(),
                message: None,
            },
            Action::CreateEntity {
                family: "task".into(),
                fields: Map::new(),
                status: None,
            },
        ];
        assert_eq!(
            actions_json(&bare),
            json!([
                {"type": "send_notification", "config": {"recipient": USER_ID, "title": "Hi"}},
                {"type": "create_entity", "config": {"family": "task", "fields": {}}},
            ])
        );
        assert_eq!(conditions_json(&[]), json!([]));
    }

    #[test]
    fn the_json_form_round_trips() {
        let definition = parse_create(&full_body()).unwrap();
        let conditions = conditions_json(&definition.conditions);
        let actions = actions_json(&definition.actions);
        assert_eq!(
            parse_conditions(&conditions).unwrap(),
            definition.conditions
        );
        assert_eq!(parse_actions(&actions).unwrap(), definition.actions);
        assert_eq!(
            conditions_json(&parse_conditions(&conditions).unwrap()),
            conditions
        );
        assert_eq!(actions_json(&parse_actions(&actions).unwrap()), actions);
        assert_eq!(parse_conditions(&Value::Null).unwrap(), []);
    }

    #[test]
    fn stored_forms_are_checked_like_bodies() {
        assert_eq!(
            flatten(errors_of(parse_conditions(
                &json!([{"field": "a", "operator": "nope"}])
            ))),
            ["conditions.0.operator: in"]
        );
        assert_eq!(
            flatten(errors_of(parse_actions(&json!([])))),
            ["actions: min:1"]
        );
        assert_eq!(
            flatten(errors_of(parse_actions(
                &json!([{"type": "update_field", "config": {}}])
            ))),
            [
                "actions.0.config.field: required",
                "actions.0.config.value: required"
            ]
        );
    }

    #[test]
    fn a_patch_holds_only_the_keys_present() {
        assert!(parse_patch(&json!({})).unwrap().is_empty());
        assert!(
            parse_patch(&json!({"is_active": false}))
                .unwrap()
                .is_empty()
        );
        let patch = parse_patch(&json!({
            "name": " Renamed ",
            "description": null,
            "family": null,
            "conditions": null,
        }))
        .unwrap();
        assert_eq!(
            patch,
            Patch {
                name: Some("Renamed".into()),
                description: Some(None),
                trigger: None,
                family: Some(None),
                conditions: Some(Vec::new()),
                actions: None,
            }
        );
        let patch = parse_patch(&json!({
            "description": "New",
            "trigger_event": "entity.status_changed",
            "family": "task",
            "actions": [{"type": "update_field", "config": {"field": "a", "value": 1}}],
        }))
        .unwrap();
        assert_eq!(patch.description, Some(Some("New".into())));
        assert_eq!(patch.trigger, Some(Trigger::EntityStatusChanged));
        assert_eq!(patch.family, Some(Some("task".into())));
        assert_eq!(patch.actions.map(|actions| actions.len()), Some(1));
        assert!(!parse_patch(&json!({"name": "x"})).unwrap().is_empty());
    }

    #[test]
    fn a_patch_follows_the_creation_rules() {
        assert_eq!(
            patch_errors(json!({
                "name": null,
                "description": 3,
                "trigger_event": "entity.nope",
                "family": false,
                "conditions": [{"field": "a", "operator": "equals"}],
                "actions": [],
            })),
            [
                "actions: min:1",
                "conditions.0.value: required",
                "description: string",
                "family: string",
                "name: required",
                "trigger_event: in",
            ]
        );
        assert_eq!(patch_errors(json!({"name": "  "})), ["name: required"]);
        assert_eq!(
            patch_errors(json!({"actions": null})),
            ["actions: required"]
        );
        assert_eq!(
            patch_errors(json!({"trigger_event": null})),
            ["trigger_event: required"]
        );
    }

    #[test]
    fn applying_a_patch_changes_only_its_keys() {
        let mut definition = parse_create(&full_body()).unwrap();
        let original = definition.clone();
        definition.apply(Patch::default());
        assert_eq!(definition, original);

        definition.apply(parse_patch(&json!({"description": null, "conditions": []})).unwrap());
        assert_eq!(definition.description, None);
        assert!(definition.conditions.is_empty());
        assert_eq!(definition.name, original.name);
        assert_eq!(definition.family, original.family);
        assert_eq!(definition.actions, original.actions);

        definition.apply(
            parse_patch(&json!({
                "name": "Other",
                "trigger_event": "entity.deleted",
                "family": null,
                "actions": [{"type": "send_notification", "config": {"recipient": USER_ID, "title": "Gone"}}],
            }))
            .unwrap(),
        );
        assert_eq!(definition.name, "Other");
        assert_eq!(definition.trigger, Trigger::EntityDeleted);
        assert_eq!(definition.family, None);
        assert_eq!(definition.actions.len(), 1);
        assert_eq!(definition.actions[0].type_name(), "send_notification");
    }

    #[test]
    fn a_definition_reacts_to_its_trigger_and_family() {
        let mut definition = parse_create(&full_body()).unwrap();
        assert!(definition.reacts_to(Trigger::EntityUpdated, "deal"));
        assert!(!definition.reacts_to(Trigger::EntityUpdated, "task"));
        assert!(!definition.reacts_to(Trigger::EntityCreated, "deal"));
        definition.family = None;
        assert!(definition.reacts_to(Trigger::EntityUpdated, "task"));
    }

    #[test]
    fn action_type_names_match_the_api() {
        assert_eq!(Action::TYPES, ActionType::ALL.map(ActionType::as_str));
        for name in Action::TYPES {
            assert_eq!(ActionType::parse(name).map(ActionType::as_str), Some(name));
        }
    }
}
