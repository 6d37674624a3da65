//! The subject of a workflow run: the entity it is about, after the change that triggered it.
//! Conditions (`conditions.rs`) are checked against it and templates (`templates.rs`) read
//! their `entity.*` variables from it.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// The entity a workflow run is about, after the change that triggered it.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub entity_id: &'a str,
    /// The user who created the entity.
    pub owner_id: Option<&'a str>,
    pub status: Option<&'a str>,
    pub fields: &'a Map<String, Value>,
    /// The field codes the triggering intention set or changed.
    pub changed: &'a BTreeSet<String>,
}

impl<'a> Subject<'a> {
    /// The value a condition on `field` looks at: the entity's field of that code or, when the
    /// entity has no such field, its status for `status`. `None` when there is no value
    /// (absent, or `null`).
    pub fn value(&self, field: &str) -> Option<Cow<'a, Value>> {
        match self.fields.get(field) {
            Some(Value::Null) => None,
            Some(value) => Some(Cow::Borrowed(value)),
            None if field == "status" => self
                .status
                .map(|status| Cow::Owned(Value::String(status.to_owned()))),
            None => None,
        }
    }
}
