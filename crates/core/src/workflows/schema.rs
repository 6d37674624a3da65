//! The documented shape of workflow bodies (`POST /core/api/v1/workflows`, `PATCH …/{id}`):
//! what `definition.rs` checks by hand, written as JSON Schema for the OpenAPI document. Only
//! documentation: the handlers parse the body as a `serde_json::Value`.

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{
    AllOfBuilder, AnyOfBuilder, ArrayBuilder, ObjectBuilder, OneOfBuilder, Ref, Schema, SchemaType,
    Type,
};
use utoipa::{PartialSchema, ToSchema};

use super::definition::{
    ActionType, ExpectedValue, MAX_ACTIONS, MAX_CONDITIONS, MAX_DESCRIPTION_CHARS,
    MAX_MESSAGE_CHARS, MAX_NAME_CHARS, MAX_TITLE_CHARS, Operator, Trigger,
};
use crate::intentions::{MAX_FIELDS, MAX_VALUE_BYTES, field_code_pattern};
use tessera_http::schema::{
    UUID_SPELLINGS, WHITE_SPACE, blank_or_trimmed_text, nullable_string, string, trimmed,
    trimmed_one_of, trimmed_text,
};

/// The longest string a value of at most `MAX_VALUE_BYTES` bytes of JSON can be (its quotes
/// take two): a bound the schema can state of a value that is a string, where the byte limit
/// itself it cannot. (Not of the strings inside a value: those share the limit.)
const MAX_STRING_CHARS: usize = MAX_VALUE_BYTES - 2;

/// The body of `POST /core/api/v1/workflows`: `definition::parse_create`'s rules.
pub struct NewWorkflow;

/// The body of `PATCH /core/api/v1/workflows/{id}`: `definition::parse_patch`'s rules, the
/// keys of [`NewWorkflow`], none required.
pub struct WorkflowPatch;

/// One item of `conditions`.
pub struct WorkflowCondition;

/// One item of `actions`.
pub struct WorkflowAction;

/// A value an action writes (`update_field`'s `value`, `create_entity`'s field values).
pub struct WorkflowValue;

impl PartialSchema for NewWorkflow {
    fn schema() -> RefOr<Schema> {
        ["name", "trigger_event", "actions"]
            .into_iter()
            .fold(workflow_keys(), ObjectBuilder::required)
            .description(Some(
                "A new workflow, inactive: `name`, `trigger_event` and `actions` required; \
                 unknown keys are ignored",
            ))
            .into()
    }
}

impl ToSchema for NewWorkflow {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        parts(schemas);
    }
}

impl PartialSchema for WorkflowPatch {
    fn schema() -> RefOr<Schema> {
        workflow_keys()
            .description(Some(
                "The keys to change, each as in a new workflow; `description: null` and \
                 `family: null` clear them, `conditions: null` empties them; `conditions` and \
                 `actions` are replaced whole; unknown keys are ignored",
            ))
            .into()
    }
}

impl ToSchema for WorkflowPatch {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        parts(schemas);
    }
}

/// The named schemas the two bodies refer to.
fn parts(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    schemas.extend([
        (
            WorkflowCondition::name().into_owned(),
            WorkflowCondition::schema(),
        ),
        (
            WorkflowAction::name().into_owned(),
            WorkflowAction::schema(),
        ),
        (WorkflowValue::name().into_owned(), WorkflowValue::schema()),
    ]);
}

/// A reference to the named schema of `T`.
fn reference<T: ToSchema>() -> Ref {
    Ref::from_schema_name(T::name())
}

/// The keys of a workflow body, none required.
fn workflow_keys() -> ObjectBuilder {
    let triggers = Trigger::ALL.map(Trigger::as_str);
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "name",
            string(trimmed_text(MAX_NAME_CHARS)).description(Some(format!(
                "Not blank; at most {MAX_NAME_CHARS} characters once trimmed"
            ))),
        )
        .property(
            "description",
            nullable_string(blank_or_trimmed_text(MAX_DESCRIPTION_CHARS)).description(Some(
                format!(
                    "At most {MAX_DESCRIPTION_CHARS} characters once trimmed; `null` or blank: \
                     none"
                ),
            )),
        )
        .property(
            "trigger_event",
            string(trimmed_one_of(&triggers)).description(Some(format!(
                "The entity event the workflow reacts to: {} (trimmed)",
                listed(&triggers)
            ))),
        )
        .property(
            "family",
            nullable_string(trimmed(&format!("(?:{})?", field_code_pattern()))).description(Some(
                "The family whose entities the workflow reacts to, a field-code-like code \
                     (trimmed); `null` or blank: every family",
            )),
        )
        .property(
            "conditions",
            ArrayBuilder::new()
                .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
                .items(reference::<WorkflowCondition>())
                .max_items(Some(MAX_CONDITIONS))
                .description(Some(format!(
                    "All must hold for the actions to run; at most {MAX_CONDITIONS}; `null`: none"
                ))),
        )
        .property(
            "actions",
            ArrayBuilder::new()
                .items(reference::<WorkflowAction>())
                .min_items(Some(1))
                .max_items(Some(MAX_ACTIONS))
                .description(Some(format!(
                    "Run in order; at least one, at most {MAX_ACTIONS}"
                ))),
        )
}

impl PartialSchema for WorkflowCondition {
    /// One form per kind of `value` the operators take (`Operator::expected_value`).
    fn schema() -> RefOr<Schema> {
        let forms = [
            ExpectedValue::Any,
            ExpectedValue::NumberOrString,
            ExpectedValue::Array,
            ExpectedValue::Nothing,
        ]
        .map(|expected| {
            let operators: Vec<&str> = Operator::ALL
                .into_iter()
                .filter(|operator| operator.expected_value() == expected)
                .map(Operator::as_str)
                .collect();
            let taken = |schema_type: SchemaType, what: &str| {
                ObjectBuilder::new()
                    .schema_type(schema_type)
                    .description(Some(format!(
                        "{what}; at most {MAX_VALUE_BYTES} bytes of JSON"
                    )))
            };
            let value = match expected {
                ExpectedValue::Any => Some(
                    taken(
                        SchemaType::from_iter([
                            Type::String,
                            Type::Number,
                            Type::Boolean,
                            Type::Array,
                            Type::Object,
                        ]),
                        "Any JSON but `null`",
                    )
                    .max_length(Some(MAX_STRING_CHARS)),
                ),
                ExpectedValue::NumberOrString => Some(
                    taken(
                        SchemaType::from_iter([Type::Number, Type::String]),
                        "A number or a string",
                    )
                    .max_length(Some(MAX_STRING_CHARS)),
                ),
                ExpectedValue::Array => Some(taken(
                    SchemaType::new(Type::Array),
                    "An array of candidates",
                )),
                ExpectedValue::Nothing => None,
            };
            let form = ObjectBuilder::new()
                .schema_type(Type::Object)
                .property(
                    "field",
                    field_code().description(Some(
                        "The field code looked at (`status`: the entity's status unless it has \
                         such a field)",
                    )),
                )
                .required("field")
                .property(
                    "operator",
                    string(trimmed_one_of(&operators))
                        .description(Some(format!("{} (trimmed)", listed(&operators)))),
                )
                .required("operator");
            match value {
                Some(value) => form.property("value", value).required("value"),
                None => form.property(
                    "value",
                    ObjectBuilder::new()
                        .schema_type(SchemaType::AnyValue)
                        .description(Some("Ignored (stored as `null`)")),
                ),
            }
        });
        forms
            .into_iter()
            .fold(OneOfBuilder::new(), OneOfBuilder::item)
            .description(Some(
                "`{field, operator, value}`: what `value` must be depends on `operator`",
            ))
            .into()
    }
}

impl ToSchema for WorkflowCondition {}

impl PartialSchema for WorkflowAction {
    /// One form per action `type`, each with its `config`.
    fn schema() -> RefOr<Schema> {
        ActionType::ALL
            .map(|kind| {
                let config = match kind {
                    ActionType::UpdateField => update_field(),
                    ActionType::SendNotification => send_notification(),
                    ActionType::CreateEntity => create_entity(),
                };
                ObjectBuilder::new()
                    .schema_type(Type::Object)
                    .property(
                        "type",
                        string(trimmed_one_of(&[kind.as_str()]))
                            .description(Some(format!("`{}` (trimmed)", kind.as_str()))),
                    )
                    .required("type")
                    .property("config", config.schema_type(Type::Object))
                    .required("config")
            })
            .into_iter()
            .fold(OneOfBuilder::new(), OneOfBuilder::item)
            .description(Some(
                "`{type, config}`: `update_field`, `send_notification` or `create_entity`, and \
                 the `config` of that type",
            ))
            .into()
    }
}

impl ToSchema for WorkflowAction {}

/// `update_field`'s `config`.
fn update_field() -> ObjectBuilder {
    ObjectBuilder::new()
        .property(
            "field",
            field_code().description(Some("The field of the entity to set")),
        )
        .required("field")
        .property("value", reference::<WorkflowValue>())
        .required("value")
}

/// `send_notification`'s `config`.
fn send_notification() -> ObjectBuilder {
    let recipient = trimmed(&format!(
        r"\{{\{{{WHITE_SPACE}*(?:current_user|entity\.owner){WHITE_SPACE}*\}}\}}|{UUID_SPELLINGS}"
    ));
    ObjectBuilder::new()
        .property(
            "recipient",
            string(recipient).description(Some(
                "`{{current_user}}` (who triggered the run), `{{entity.owner}}` (who created \
                 the entity), spaces allowed inside the braces, or a user id (a UUID); trimmed",
            )),
        )
        .required("recipient")
        .property(
            "title",
            AllOfBuilder::new()
                .schema_type(Type::String)
                .item(matching(trimmed_text(MAX_TITLE_CHARS)))
                .item(matching(template_pattern()))
                .description(Some(format!(
                    "A text template: not blank, at most {MAX_TITLE_CHARS} characters once \
                     trimmed, its `{{{{ variable }}}}` placeholders well-formed"
                ))),
        )
        .required("title")
        .property(
            "message",
            AllOfBuilder::new()
                .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                .item(matching(blank_or_trimmed_text(MAX_MESSAGE_CHARS)))
                .item(matching(template_pattern()))
                .description(Some(format!(
                    "A text template of at most {MAX_MESSAGE_CHARS} characters once trimmed, its \
                     placeholders well-formed; `null` or blank: none"
                ))),
        )
}

/// `create_entity`'s `config`.
fn create_entity() -> ObjectBuilder {
    ObjectBuilder::new()
        .property(
            "family",
            field_code().description(Some("The family of the new entity")),
        )
        .required("family")
        .property(
            "fields",
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
                .property_names(Some(string(format!("^{}$", field_code_pattern()))))
                .additional_properties(Some(reference::<WorkflowValue>()))
                .max_properties(Some(MAX_FIELDS))
                .description(Some(format!(
                    "Field code to value, at most {MAX_FIELDS}; `null`: none"
                ))),
        )
        .property(
            "status",
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                .description(Some(
                    "The new entity's status (default: the family's first); `null` or blank: \
                     the default",
                )),
        )
}

impl PartialSchema for WorkflowValue {
    /// Any JSON whose strings, in arrays and object values too, are text templates.
    fn schema() -> RefOr<Schema> {
        AnyOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(SchemaType::from_iter([
                Type::Null,
                Type::Boolean,
                Type::Number,
            ])))
            .item(string(template_pattern()))
            .item(ArrayBuilder::new().items(reference::<WorkflowValue>()))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Object)
                    .additional_properties(Some(reference::<WorkflowValue>())),
            )
            .description(Some(format!(
                "Any JSON of at most {MAX_VALUE_BYTES} bytes; its strings (in arrays and object \
                 values too) may hold `{{{{ variable }}}}` placeholders: `current_user`, `now`, \
                 `entity.id`, `entity.owner`, `entity.status` or `entity.<field code>`; a string \
                 that is one placeholder becomes the variable's value"
            )))
            .into()
    }
}

impl ToSchema for WorkflowValue {}

/// Any value but a string that does not match `pattern`: one of several patterns a string
/// must match (`allOf`), typed once around them.
fn matching(pattern: String) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(SchemaType::AnyValue)
        .pattern(Some(pattern))
}

/// A field code, trimmed (`definition::parse_field_code`).
fn field_code() -> ObjectBuilder {
    string(trimmed(&field_code_pattern()))
}

/// A text whose placeholders are well-formed (`templates::validate_text`): every `{{` opens a
/// placeholder closed by the next `}}`, around a known variable (`current_user`, `now` or
/// `entity.` and a field code, which covers `entity.id`, `entity.owner` and `entity.status`),
/// white space allowed inside the braces. A lone `{` or any `}` is text.
fn template_pattern() -> String {
    let placeholder = format!(
        r"\{{\{{{WHITE_SPACE}*(?:current_user|now|entity\.{}){WHITE_SPACE}*\}}\}}",
        field_code_pattern()
    );
    format!(r"^(?:[^{{]|\{{[^{{]|{placeholder})*\{{?$")
}

/// `names` as prose: `` `a`, `b` or `c` ``.
fn listed(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}
