//! The engine world's records as plain Rust, the same types on both sides of the boundary: the
//! host's runtime converts the WIT records it sends and receives into these, and so does the
//! engine SDK (which re-exports them). What an engine says about itself ([`Descriptor`]), and the
//! arguments of its lifecycle hooks ([`TenantInfo`], [`UserInfo`], [`Event`]).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What an engine says about itself.
///
/// ```
/// use tessera_wire::engine::Descriptor;
///
/// let descriptor = Descriptor::new("activity", "Activity", "0.1.0")
///     .tenant_provision(true)
///     .subscribe("entity.created")
///     .outbound_hosts(&["https://api.example.com"]);
/// assert_eq!(descriptor.subscriptions, vec!["entity.created".to_string()]);
/// assert_eq!(descriptor.outbound_hosts, vec!["https://api.example.com".to_string()]);
/// assert!(!descriptor.requires_user_provision);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Descriptor {
    /// Unique engine code; also its path prefix (`/chat/…`).
    pub code: String,
    /// Human-readable name.
    pub name: String,
    /// The engine's version, usually `env!("CARGO_PKG_VERSION")`.
    pub version: String,
    /// Whether `provision_tenant` must run when a tenant is created.
    pub requires_tenant_provision: bool,
    /// Whether `provision_user` must run when a user is created.
    pub requires_user_provision: bool,
    /// Event types delivered to `on_event`, e.g. `entity.created`.
    pub subscriptions: Vec<String>,
    /// Where the SDK's `http::fetch` may go: `scheme://host[:port]` patterns
    /// (see [`Descriptor::outbound_hosts`]). Empty, the default: no outbound HTTP at all.
    pub outbound_hosts: Vec<String>,
}

impl Descriptor {
    /// A descriptor without provisioning, subscriptions or outbound hosts.
    pub fn new(code: &str, name: &str, version: &str) -> Self {
        Self {
            code: code.to_owned(),
            name: name.to_owned(),
            version: version.to_owned(),
            requires_tenant_provision: false,
            requires_user_provision: false,
            subscriptions: Vec::new(),
            outbound_hosts: Vec::new(),
        }
    }

    /// Sets `requires_tenant_provision`.
    pub fn tenant_provision(mut self, required: bool) -> Self {
        self.requires_tenant_provision = required;
        self
    }

    /// Sets `requires_user_provision`.
    pub fn user_provision(mut self, required: bool) -> Self {
        self.requires_user_provision = required;
        self
    }

    /// Adds a subscription.
    pub fn subscribe(mut self, event_type: &str) -> Self {
        self.subscriptions.push(event_type.to_owned());
        self
    }

    /// Allows the SDK's `http::fetch` to reach URLs matching these patterns
    /// (added to those already declared). A pattern is `scheme://host[:port]`:
    ///
    /// - the scheme, `http` or `https`, must match the URL's;
    /// - the host is a name (`api.example.com`), `*.example.com` (any subdomain, not the
    ///   apex), `*` (any host) or an IP literal (`127.0.0.1`, `[::1]`);
    /// - the port is a number, `*` (any port), or absent: the scheme's default port only.
    ///
    /// So `https://*` is any HTTPS host on port 443 and `https://*:*` any HTTPS URL. The host
    /// checks the patterns when it loads the engine (a malformed one refuses the engine); its
    /// operator may replace the list, and private addresses stay refused unless the host
    /// allows them.
    ///
    /// ```
    /// use tessera_wire::engine::Descriptor;
    ///
    /// let descriptor = Descriptor::new("chat", "Chat", "0.1.0").outbound_hosts(&["https://*"]);
    /// assert_eq!(descriptor.outbound_hosts, vec!["https://*".to_string()]);
    /// ```
    pub fn outbound_hosts(mut self, patterns: &[&str]) -> Self {
        self.outbound_hosts
            .extend(patterns.iter().map(|pattern| (*pattern).to_owned()));
        self
    }
}

/// The tenant being provisioned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantInfo {
    /// The tenant's id (UUID).
    pub tenant_id: String,
    /// The tenant's slug.
    pub tenant_short_id: String,
    /// The tenant's name.
    pub name: String,
}

/// The user being provisioned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserInfo {
    /// The user's tenant.
    pub tenant_id: String,
    /// The user's id (UUID).
    pub user_id: String,
    /// The user's e-mail address.
    pub email: String,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// `user`, `guest` or `agent`.
    pub user_type: String,
}

/// An event from the host's bus, delivered to engines subscribed to its type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// The event id.
    pub id: String,
    /// E.g. `entity.created`.
    pub event_type: String,
    /// The tenant it happened in (storage is scoped to it during `on_event`).
    pub tenant_id: String,
    /// RFC 3339 UTC.
    pub occurred_at: String,
    /// Who caused it, when known.
    pub actor_id: Option<String>,
    /// The correlation id of the request that caused it.
    pub correlation_id: String,
    /// The payload, a JSON object (the host refuses any other payload at `publish`).
    pub payload: serde_json::Value,
}

impl Event {
    /// The payload parsed into `T`.
    pub fn payload_json<T: DeserializeOwned>(&self) -> Result<T, String> {
        T::deserialize(&self.payload).map_err(|error| format!("event payload: {error}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_descriptor_has_no_outbound_hosts() {
        assert!(
            Descriptor::new("notes", "Notes", "0.1.0")
                .outbound_hosts
                .is_empty()
        );
    }

    #[test]
    fn outbound_hosts_accumulate_in_order() {
        let descriptor = Descriptor::new("chat", "Chat", "0.1.0")
            .outbound_hosts(&["https://*"])
            .outbound_hosts(&["http://127.0.0.1:8080", "https://*.example.com"]);
        assert_eq!(
            descriptor.outbound_hosts,
            [
                "https://*",
                "http://127.0.0.1:8080",
                "https://*.example.com"
            ]
        );
    }

    #[test]
    fn an_event_payload_parses_into_a_type() {
        #[derive(Deserialize)]
        struct Created {
            entity_id: String,
        }
        let event = Event {
            id: "e1".into(),
            event_type: "entity.created".into(),
            tenant_id: "t1".into(),
            occurred_at: "2026-01-01T00:00:00Z".into(),
            actor_id: None,
            correlation_id: "c1".into(),
            payload: serde_json::json!({"entity_id": "x"}),
        };
        assert_eq!(event.payload_json::<Created>().unwrap().entity_id, "x");
        assert!(event.payload_json::<Vec<u8>>().is_err());
    }
}

/// What a declared [`Setting`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SettingKind {
    /// Any text.
    Text,
    /// A signed 64-bit decimal integer.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// Non-negative decimal integers separated by commas (`30000,120000`).
    IntegerList,
}

impl SettingKind {
    /// Whether `value` is a value of this kind; the reason when it is not.
    pub fn check(self, value: &str) -> Result<(), String> {
        let fits = match self {
            Self::Text => true,
            Self::Integer => value.parse::<i64>().is_ok(),
            Self::Boolean => matches!(value, "true" | "false"),
            Self::IntegerList => value.split(',').all(|item| {
                !item.is_empty()
                    && item.bytes().all(|b| b.is_ascii_digit())
                    && item.parse::<u64>().is_ok()
            }),
        };
        if fits {
            Ok(())
        } else {
            Err(format!("{value:?} is not {}", self.describe()))
        }
    }

    /// The kind in words, for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Integer => "a 64-bit integer",
            Self::Boolean => "true or false",
            Self::IntegerList => "a comma-separated list of non-negative integers",
        }
    }
}

/// An operator setting an engine declares and reads with `settings::get`. The operator sets it
/// as `TESSERA_ENGINES__<CODE>__<NAME>` (code and name upper-cased, `-` as `_`).
///
/// ```
/// use tessera_wire::engine::{Setting, SettingKind};
///
/// let setting = Setting::new("max-upload-bytes", SettingKind::Integer, "The largest upload.")
///     .default_value("8388608");
/// assert_eq!(setting.check(), Ok(()));
/// assert_eq!(setting.variable("drive"), "TESSERA_ENGINES__DRIVE__MAX_UPLOAD_BYTES");
/// assert!(Setting::new("Bad Name", SettingKind::Text, "").check().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    /// 1 to 64 of `a-z`, `0-9` and `-`, starting with a letter.
    pub name: String,
    /// What it holds.
    pub kind: SettingKind,
    /// The value when the operator sets none (`None`: unset).
    pub default_value: Option<String>,
    /// What it does, for operators.
    pub description: String,
    /// Never shown back (API keys, passwords).
    pub secret: bool,
}

impl Setting {
    /// A non-secret setting without a default.
    pub fn new(name: &str, kind: SettingKind, description: &str) -> Self {
        Self {
            name: name.to_owned(),
            kind,
            default_value: None,
            description: description.to_owned(),
            secret: false,
        }
    }

    /// Sets the default value.
    pub fn default_value(mut self, value: impl ToString) -> Self {
        self.default_value = Some(value.to_string());
        self
    }

    /// Marks the setting secret.
    pub fn secret(mut self) -> Self {
        self.secret = true;
        self
    }

    /// Whether the declaration is well-formed: its name, and its default against its kind.
    pub fn check(&self) -> Result<(), String> {
        let name = &self.name;
        let valid_name = (1..=64).contains(&name.len())
            && name.as_bytes()[0].is_ascii_lowercase()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !valid_name {
            return Err(format!(
                "the setting name {name:?} is not 1-64 of a-z, 0-9 and '-' starting with a letter"
            ));
        }
        if let Some(default) = &self.default_value {
            self.kind
                .check(default)
                .map_err(|reason| format!("the default of setting {name:?}: {reason}"))?;
        }
        Ok(())
    }

    /// The environment variable that sets it for engine `code`.
    pub fn variable(&self, code: &str) -> String {
        format!(
            "TESSERA_ENGINES__{}__{}",
            code.to_ascii_uppercase().replace('-', "_"),
            self.name.to_ascii_uppercase().replace('-', "_")
        )
    }
}

/// A host capability beyond storage that an engine asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Permission {
    /// Sending mail out through the operator's SMTP relay (`mail_transport::send`). Granted to
    /// the engines that ask, unless the operator names the engines (`TESSERA_SMTP_ENGINES`).
    SendMail,
}
