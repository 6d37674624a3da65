//! What requests send, validated: note fields (create and patch), share permissions and the
//! list's filters. Every failure is a 422 naming the field and rule; nothing is normalised
//! silently (a tag in capitals is refused, not lower-cased). The one exception is the title,
//! whose surrounding whitespace is trimmed.

use tessera_sdk::serde_json::{Map, Value};
use tessera_sdk::{ApiError, Query, ValidationErrors};

use crate::store::{Note, Permission};

/// Longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Most tags on a note.
pub const MAX_TAGS: usize = 20;
/// Longest tag, in characters.
pub const MAX_TAG_CHARS: usize = 50;
/// Longest user id accepted in a path.
const MAX_USER_ID_CHARS: usize = 100;

/// The note fields a request sets; `None` leaves a field as it is (or at its default).
#[derive(Debug, Default)]
pub struct NoteFields {
    pub title: Option<String>,
    pub body: Option<String>,
    pub tags: Option<Vec<String>>,
    pub pinned: Option<bool>,
}

impl NoteFields {
    /// Validates a create (`creating`: title required) or patch body; the body may have at most
    /// `max_body_chars` characters.
    pub fn parse(
        fields: &Map<String, Value>,
        max_body_chars: usize,
        creating: bool,
    ) -> Result<Self, ApiError> {
        let mut errors = ValidationErrors::new();
        let parsed = Self {
            title: title(fields.get("title"), creating, &mut errors),
            body: body(fields.get("body"), max_body_chars, &mut errors),
            tags: tags(fields.get("tags"), &mut errors),
            pinned: pinned(fields.get("pinned"), &mut errors),
        };
        errors.into_result()?;
        Ok(parsed)
    }

    /// True when the request sets nothing.
    pub fn is_empty(&self) -> bool {
        self.title.is_none() && self.body.is_none() && self.tags.is_none() && self.pinned.is_none()
    }

    /// Sets the fields sent on `note`.
    pub fn apply(&self, note: &mut Note) {
        if let Some(title) = &self.title {
            note.title.clone_from(title);
        }
        if let Some(body) = &self.body {
            note.body.clone_from(body);
        }
        if let Some(tags) = &self.tags {
            note.tags.clone_from(tags);
        }
        if let Some(pinned) = self.pinned {
            note.pinned = pinned;
        }
    }
}

fn title(value: Option<&Value>, required: bool, errors: &mut ValidationErrors) -> Option<String> {
    match value {
        None if !required => None,
        None | Some(Value::Null) => {
            errors.add("title", "required");
            None
        }
        Some(Value::String(text)) => {
            let text = text.trim();
            if text.is_empty() {
                errors.add("title", "required");
                None
            } else {
                errors
                    .check_length(text, "title", 1, MAX_TITLE_CHARS)
                    .then(|| text.to_owned())
            }
        }
        Some(_) => {
            errors.add("title", "string");
            None
        }
    }
}

fn body(value: Option<&Value>, max_chars: usize, errors: &mut ValidationErrors) -> Option<String> {
    match value? {
        Value::String(text) => errors
            .check_length(text, "body", 0, max_chars)
            .then(|| text.clone()),
        _ => {
            errors.add("body", "string");
            None
        }
    }
}

fn tags(value: Option<&Value>, errors: &mut ValidationErrors) -> Option<Vec<String>> {
    let items = match value? {
        Value::Array(items) if items.len() > MAX_TAGS => {
            errors.add("tags", format!("max:{MAX_TAGS}"));
            return None;
        }
        Value::Array(items) => items,
        _ => {
            errors.add("tags", "array");
            return None;
        }
    };
    let mut tags: Vec<String> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let field = format!("tags.{index}");
        let Some(tag) = item.as_str() else {
            errors.add(field, "string");
            continue;
        };
        let problem = if tags.iter().any(|seen| seen == tag) {
            Some("distinct".to_owned())
        } else {
            tag_problem(tag)
        };
        match problem {
            Some(rule) => errors.add(field, rule),
            None => tags.push(tag.to_owned()),
        }
    }
    // Every item was either kept or refused.
    (tags.len() == items.len()).then_some(tags)
}

fn pinned(value: Option<&Value>, errors: &mut ValidationErrors) -> Option<bool> {
    match value? {
        Value::Bool(pinned) => Some(*pinned),
        _ => {
            errors.add("pinned", "boolean");
            None
        }
    }
}

/// The rule a tag breaks, if any: 1 to [`MAX_TAG_CHARS`] characters of lower-case ASCII
/// letters, digits, `-` and `_`.
pub fn tag_problem(tag: &str) -> Option<String> {
    let length = tag.chars().count();
    if length == 0 {
        Some("min:1".into())
    } else if length > MAX_TAG_CHARS {
        Some(format!("max:{MAX_TAG_CHARS}"))
    } else if !tag
        .bytes()
        .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"-_".contains(&byte))
    {
        Some("regex".into())
    } else {
        None
    }
}

/// The `permission` of a share: `read` or `edit`.
pub fn share_permission(
    fields: &Map<String, Value>,
    errors: &mut ValidationErrors,
) -> Option<Permission> {
    let rule = match fields.get("permission") {
        None | Some(Value::Null) => "required",
        Some(Value::String(permission)) if permission == "read" => return Some(Permission::Read),
        Some(Value::String(permission)) if permission == "edit" => return Some(Permission::Edit),
        Some(Value::String(_)) => "in",
        Some(_) => "string",
    };
    errors.add("permission", rule);
    None
}

/// True when `user_id` could be a user id (anything else cannot name a user of the tenant).
pub fn plausible_user_id(user_id: &str) -> bool {
    !user_id.is_empty() && user_id.chars().count() <= MAX_USER_ID_CHARS
}

/// True when `note_id` is a UUID, the only shape note ids have.
pub fn plausible_note_id(note_id: &str) -> bool {
    uuid::Uuid::try_parse(note_id).is_ok()
}

/// Which of the caller's notes a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Owned and shared.
    All,
    /// Owned only.
    Mine,
    /// Shared with the caller only.
    Shared,
}

impl Scope {
    pub fn admits(self, permission: Permission) -> bool {
        match self {
            Self::All => true,
            Self::Mine => permission == Permission::Owner,
            Self::Shared => permission != Permission::Owner,
        }
    }
}

/// The list's filters: `tag`, `pinned` and `scope`.
#[derive(Debug)]
pub struct ListFilter {
    pub tag: Option<String>,
    pub pinned: Option<bool>,
    pub scope: Scope,
}

impl ListFilter {
    pub fn from_query(query: &Query) -> Result<Self, ApiError> {
        let mut errors = ValidationErrors::new();
        let tag = query.get("tag").and_then(|tag| match tag_problem(tag) {
            Some(rule) => {
                errors.add("tag", rule);
                None
            }
            None => Some(tag.to_owned()),
        });
        let pinned = query.get_bool("pinned").unwrap_or_else(|_| {
            errors.add("pinned", "boolean");
            None
        });
        let scope = match query.get("scope") {
            None | Some("all") => Scope::All,
            Some("mine") => Scope::Mine,
            Some("shared") => Scope::Shared,
            Some(_) => {
                errors.add("scope", "in");
                Scope::All
            }
        };
        errors.into_result()?;
        Ok(Self { tag, pinned, scope })
    }

    /// Whether `note` passes the tag and pinned filters.
    pub fn matches(&self, note: &Note) -> bool {
        self.tag
            .as_ref()
            .is_none_or(|tag| note.tags.iter().any(|note_tag| note_tag == tag))
            && self.pinned.is_none_or(|pinned| note.pinned == pinned)
    }
}
