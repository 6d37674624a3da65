//! An engine's declared settings (`describe-settings`) with the operator's values
//! (`TESSERA_ENGINES__<CODE>__<NAME>`): checked when the engine loads (a value that does not fit
//! its declaration refuses the engine), answered by `settings.get`, listed for owners without
//! the secret ones' values.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use tessera_http::config::Secret;
use tessera_wire::engine::{Setting, SettingKind};
use utoipa::ToSchema;

/// Most settings one engine may declare.
pub const MAX_DECLARED_SETTINGS: usize = 100;

/// The operators' values of engines' settings: engine code → setting name → value, from the
/// variables `TESSERA_ENGINES__<CODE>__<NAME>` (code and name lower-cased, `_` read as `-`).
pub type OperatorSettings = BTreeMap<String, BTreeMap<String, Secret>>;

/// Reads [`OperatorSettings`] from `variables` (the process environment in the host).
pub fn operator_settings(
    variables: impl IntoIterator<Item = (String, String)>,
) -> OperatorSettings {
    let mut settings = OperatorSettings::new();
    for (variable, value) in variables {
        let Some(rest) = variable.strip_prefix("TESSERA_ENGINES__") else {
            continue;
        };
        let Some((code, name)) = rest.split_once("__") else {
            continue;
        };
        let normal = |part: &str| part.to_ascii_lowercase().replace('_', "-");
        settings
            .entry(normal(code))
            .or_default()
            .insert(normal(name), Secret::new(value));
    }
    settings
}

/// One engine's settings: what it declared, and the value each has now.
#[derive(Debug, Clone, Default)]
pub struct EngineSettingValues {
    declared: Vec<Setting>,
    /// Declared name → the operator's value, else the default; absent when neither.
    values: BTreeMap<String, Secret>,
}

impl EngineSettingValues {
    /// Checks engine `code`'s `declared` settings and the operator's values for it.
    pub fn resolve(
        code: &str,
        declared: Vec<Setting>,
        operator: Option<&BTreeMap<String, Secret>>,
    ) -> Result<Self, String> {
        if declared.len() > MAX_DECLARED_SETTINGS {
            return Err(format!(
                "the engine declares {} settings; at most {MAX_DECLARED_SETTINGS} are accepted",
                declared.len()
            ));
        }
        let mut values = BTreeMap::new();
        for (index, setting) in declared.iter().enumerate() {
            setting.check()?;
            if declared[..index]
                .iter()
                .any(|other| other.name == setting.name)
            {
                return Err(format!("the setting {:?} is declared twice", setting.name));
            }
            let value = match operator.and_then(|values| values.get(&setting.name)) {
                Some(value) => {
                    setting.kind.check(value.expose()).map_err(|reason| {
                        // A secret's value stays out of the message (and so out of the log).
                        let reason = if setting.secret {
                            format!("the value is not {}", setting.kind.describe())
                        } else {
                            reason
                        };
                        format!("{}: {reason}", setting.variable(code))
                    })?;
                    Some(value.clone())
                }
                None => setting.default_value.clone().map(Secret::new),
            };
            if let Some(value) = value {
                values.insert(setting.name.clone(), value);
            }
        }
        for name in operator.into_iter().flat_map(BTreeMap::keys) {
            if !declared.iter().any(|setting| &setting.name == name) {
                tracing::warn!(
                    engine = %code,
                    setting = %name,
                    "an operator sets a setting the engine does not declare; it is ignored"
                );
            }
        }
        Ok(Self { declared, values })
    }

    /// The value of the declared setting `name` (the operator's, else the default).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(Secret::expose)
    }

    /// Every declared setting that has a value, by name, with its value.
    pub fn values(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values
            .iter()
            .map(|(name, value)| (name.as_str(), value.expose()))
    }

    /// The declarations with their values for owners: a secret's value is never shown.
    pub fn listing(&self, code: &str) -> Vec<SettingListing> {
        self.declared
            .iter()
            .map(|setting| {
                let value = self.values.get(&setting.name);
                SettingListing {
                    name: setting.name.clone(),
                    kind: setting.kind,
                    description: setting.description.clone(),
                    secret: setting.secret,
                    variable: setting.variable(code),
                    is_set: value.is_some(),
                    value: value
                        .filter(|_| !setting.secret)
                        .map(|value| value.expose().to_owned()),
                    default_value: setting.default_value.clone().filter(|_| !setting.secret),
                }
            })
            .collect()
    }
}

/// A shared, immutable [`EngineSettingValues`], as each call's scope holds it.
pub type SharedSettingValues = Arc<EngineSettingValues>;

/// A declared setting in `GET /core/api/v1/engines/{code}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SettingListing {
    pub name: String,
    /// `text`, `integer`, `boolean` or `integer-list`.
    #[schema(value_type = String, example = "integer")]
    pub kind: SettingKind,
    pub description: String,
    pub secret: bool,
    /// The environment variable that sets it.
    pub variable: String,
    /// Whether it has a value (the operator's or the default).
    pub is_set: bool,
    /// The effective value; null when unset or secret.
    pub value: Option<String>,
    /// The engine's default; null when none or secret.
    pub default_value: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared() -> Vec<Setting> {
        vec![
            Setting::new(
                "max-upload-bytes",
                SettingKind::Integer,
                "The largest upload.",
            )
            .default_value(8),
            Setting::new("api-key", SettingKind::Text, "The key.").secret(),
        ]
    }

    #[test]
    fn variables_are_read_per_engine() {
        let settings = operator_settings([
            (
                "TESSERA_ENGINES__MY_ENGINE__MAX_UPLOAD_BYTES".to_owned(),
                "5".to_owned(),
            ),
            ("TESSERA_ENGINES__BROKEN".to_owned(), "x".to_owned()),
            ("TESSERA_LISTEN".to_owned(), "x".to_owned()),
        ]);
        assert_eq!(settings.len(), 1);
        assert_eq!(settings["my-engine"]["max-upload-bytes"].expose(), "5");
    }

    #[test]
    fn values_come_from_the_operator_then_the_default() {
        let values = EngineSettingValues::resolve("drive", declared(), None).unwrap();
        assert_eq!(values.get("max-upload-bytes"), Some("8"));
        assert_eq!(values.get("api-key"), None);
        assert_eq!(values.get("undeclared"), None);

        let operator = BTreeMap::from([
            ("max-upload-bytes".to_owned(), Secret::new("16".into())),
            ("api-key".to_owned(), Secret::new("hunter2".into())),
        ]);
        let values = EngineSettingValues::resolve("drive", declared(), Some(&operator)).unwrap();
        assert_eq!(values.get("max-upload-bytes"), Some("16"));
        assert_eq!(values.get("api-key"), Some("hunter2"));
        let listing = values.listing("drive");
        assert_eq!(listing[0].value.as_deref(), Some("16"));
        assert_eq!(
            listing[0].variable,
            "TESSERA_ENGINES__DRIVE__MAX_UPLOAD_BYTES"
        );
        assert_eq!(
            (listing[1].is_set, listing[1].value.as_deref()),
            (true, None)
        );
    }

    #[test]
    fn bad_values_and_declarations_refuse_the_engine() {
        let operator =
            BTreeMap::from([("max-upload-bytes".to_owned(), Secret::new("lots".into()))]);
        let error = EngineSettingValues::resolve("drive", declared(), Some(&operator)).unwrap_err();
        assert!(
            error.contains("TESSERA_ENGINES__DRIVE__MAX_UPLOAD_BYTES"),
            "{error}"
        );

        let secret = BTreeMap::from([("api-key".to_owned(), Secret::new("hunter2".into()))]);
        let mut integer_key = declared();
        integer_key[1].kind = SettingKind::Integer;
        let error = EngineSettingValues::resolve("drive", integer_key, Some(&secret)).unwrap_err();
        assert!(!error.contains("hunter2"), "{error}");

        let mut twice = declared();
        twice.push(twice[0].clone());
        assert!(EngineSettingValues::resolve("drive", twice, None).is_err());
        let bad_default = vec![Setting::new("n", SettingKind::Boolean, "").default_value("yes")];
        assert!(EngineSettingValues::resolve("drive", bad_default, None).is_err());
    }
}
