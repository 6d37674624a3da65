//! The directory's record of one user ([`Profile`]) and how provisioning creates and refreshes
//! it: the host owns e-mail, names and user type; the user (or an owner) owns display name,
//! title, phone and avatar URL; owners own the status.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tessera_sdk::UserInfo;

/// Longest display name and title, in characters.
pub const MAX_NAME_CHARS: usize = 100;

/// Whether a user is listed as active.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    Deactivated,
}

impl Status {
    /// The query value (`active`, `deactivated`).
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "active" => Some(Self::Active),
            "deactivated" => Some(Self::Deactivated),
            _ => None,
        }
    }
}

/// One user of the tenant's directory, as the API shows it (every field is always present).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = tessera_sdk::openapi::all_required)]
pub struct Profile {
    /// The user's id.
    pub user_id: String,
    /// From provisioning.
    pub email: String,
    /// From provisioning.
    pub first_name: String,
    /// From provisioning.
    pub last_name: String,
    /// "First Last" (or the e-mail address) until edited; at most 100 characters.
    #[schemars(length(max = 100))]
    pub display_name: String,
    /// Null until set; at most 100 characters.
    #[schemars(length(min = 1, max = 100))]
    pub title: Option<String>,
    /// Null until set: 3 to 32 digits, spaces, `+`, `-`, `(`, `)`.
    #[schemars(length(min = 3, max = 32))]
    pub phone: Option<String>,
    /// Null until set: an `https://` URL as the user gave it (trimmed; not normalised, so not
    /// necessarily an RFC 3986 URI).
    #[schemars(length(max = 2048))]
    pub avatar_url: Option<String>,
    /// `user`, `guest` or `agent`, from provisioning.
    pub user_type: String,
    pub status: Status,
    /// When the user was first provisioned (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    /// When the profile last changed (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub updated_at: String,
}

impl Profile {
    /// Whether the case-insensitive `needle` (already lower-cased) occurs in the display name,
    /// a name or the e-mail address.
    pub fn mentions(&self, needle: &str) -> bool {
        [
            &self.display_name,
            &self.first_name,
            &self.last_name,
            &self.email,
        ]
        .iter()
        .any(|text| text.to_lowercase().contains(needle))
    }
}

/// The display name a user gets from the host's data: "First Last", or the e-mail address when
/// both names are empty, cut to [`MAX_NAME_CHARS`].
pub fn default_display_name(first_name: &str, last_name: &str, email: &str) -> String {
    let full_name = format!("{} {}", first_name.trim(), last_name.trim());
    let name = match full_name.trim() {
        "" => email.trim(),
        name => name,
    };
    name.chars().take(MAX_NAME_CHARS).collect()
}

/// The profile after (re-)provisioning `user` at `now`, and the names of the fields that changed
/// (empty for a first provisioning). A display name still equal to the default of the old host
/// data follows the new host data; an edited one is kept, like title, phone, avatar and status.
pub fn provisioned(
    user: &UserInfo,
    current: Option<Profile>,
    now: &str,
) -> (Profile, Vec<&'static str>) {
    let display_name = default_display_name(&user.first_name, &user.last_name, &user.email);
    let Some(mut profile) = current else {
        let profile = Profile {
            user_id: user.user_id.clone(),
            email: user.email.clone(),
            first_name: user.first_name.clone(),
            last_name: user.last_name.clone(),
            display_name,
            title: None,
            phone: None,
            avatar_url: None,
            user_type: user.user_type.clone(),
            status: Status::Active,
            created_at: now.to_owned(),
            updated_at: now.to_owned(),
        };
        return (profile, Vec::new());
    };
    let old_default = default_display_name(&profile.first_name, &profile.last_name, &profile.email);
    let mut changed = Vec::new();
    let mut refresh = |field: &mut String, value: &str, name: &'static str| {
        if field != value {
            value.clone_into(field);
            changed.push(name);
        }
    };
    refresh(&mut profile.email, &user.email, "email");
    refresh(&mut profile.first_name, &user.first_name, "first_name");
    refresh(&mut profile.last_name, &user.last_name, "last_name");
    if profile.display_name == old_default {
        refresh(&mut profile.display_name, &display_name, "display_name");
    }
    refresh(&mut profile.user_type, &user.user_type, "user_type");
    if !changed.is_empty() {
        now.clone_into(&mut profile.updated_at);
    }
    (profile, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(first_name: &str, last_name: &str, email: &str) -> UserInfo {
        UserInfo {
            tenant_id: "t".into(),
            user_id: "u".into(),
            email: email.into(),
            first_name: first_name.into(),
            last_name: last_name.into(),
            user_type: "user".into(),
        }
    }

    #[test]
    fn default_display_names() {
        assert_eq!(
            default_display_name("Ada", "Lovelace", "a@x.io"),
            "Ada Lovelace"
        );
        assert_eq!(default_display_name(" Ada ", "", "a@x.io"), "Ada");
        assert_eq!(default_display_name("", " ", "a@x.io"), "a@x.io");
        assert_eq!(default_display_name(&"x".repeat(150), "", "").len(), 100);
    }

    #[test]
    fn reprovisioning_refreshes_host_data_and_keeps_edits() {
        let (first, changed) = provisioned(&user("Ada", "Lovelace", "a@x.io"), None, "t1");
        assert!(changed.is_empty());
        assert_eq!(
            (first.display_name.as_str(), first.status),
            ("Ada Lovelace", Status::Active)
        );

        let (renamed, changed) =
            provisioned(&user("Ada", "King", "a@x.io"), Some(first.clone()), "t2");
        assert_eq!(changed, ["last_name", "display_name"]);
        assert_eq!(
            (renamed.display_name.as_str(), renamed.updated_at.as_str()),
            ("Ada King", "t2")
        );

        let edited = Profile {
            display_name: "Countess".into(),
            title: Some("Analyst".into()),
            status: Status::Deactivated,
            ..first.clone()
        };
        let (kept, changed) = provisioned(&user("Ada", "King", "b@x.io"), Some(edited), "t3");
        assert_eq!(changed, ["email", "last_name"]);
        assert_eq!(kept.display_name, "Countess");
        assert_eq!(kept.title.as_deref(), Some("Analyst"));
        assert_eq!(kept.status, Status::Deactivated);

        let (same, changed) = provisioned(
            &user("Ada", "Lovelace", "a@x.io"),
            Some(first.clone()),
            "t4",
        );
        assert!(changed.is_empty());
        assert_eq!(same, first);
    }
}
