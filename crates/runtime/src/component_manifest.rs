//! The manifest of a `wasi:http` component engine: `<name>.toml` beside `<name>.wasm` in the
//! plugins dir says what an engine-world component says of itself through `describe` (its
//! code, name and version, the outbound hosts it may call, the settings `wasi:config` reads)
//! and which of its paths answer without a bearer token. Without a manifest the code is the
//! file name without `.wasm`, every path needs a token, and nothing else is granted. Unknown
//! keys are refused, so a misspelt grant is an error, not a silent denial.
//!
//! ```toml
//! code = "counter"
//! name = "Counter"
//! version = "1.2.0"
//! public-paths = ["/health", "/public/*"]
//! outbound-hosts = ["https://api.example.com"]
//!
//! [[settings]]
//! name = "greeting"
//! default = "hello"
//! description = "What the component greets with."
//! ```

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Deserialize;
use tessera_wire::engine::{Setting, SettingKind};

/// The largest manifest read, in bytes.
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024;

/// The most public paths a manifest may list.
pub const MAX_PUBLIC_PATHS: usize = 64;

/// A `wasi:http` component's manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ComponentManifest {
    /// The engine code (default: the file name without `.wasm`).
    pub code: Option<String>,
    /// Its display name (default: the code).
    pub name: Option<String>,
    /// Its version (default: `0.0.0`).
    pub version: Option<String>,
    /// Paths answered without a bearer token: exact (`/health`) or a prefix (`/public/*`).
    #[serde(default)]
    pub public_paths: Vec<String>,
    /// What its outgoing requests may reach, as an engine's `outbound-hosts`.
    #[serde(default)]
    pub outbound_hosts: Vec<String>,
    /// The settings `wasi:config/store` reads.
    #[serde(default)]
    pub settings: Vec<ManifestSetting>,
}

/// A setting a manifest declares (an engine's declared setting, as `describe-settings` gives
/// it).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ManifestSetting {
    pub name: String,
    #[serde(default = "text_kind")]
    pub kind: SettingKind,
    pub default: Option<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub secret: bool,
}

fn text_kind() -> SettingKind {
    SettingKind::Text
}

impl ComponentManifest {
    /// The manifest beside `component` (`x.toml` for `x.wasm`), with its text; `None` when
    /// there is none.
    pub fn read_beside(component: &Path) -> anyhow::Result<Option<(Self, String)>> {
        let path = Self::path_beside(component);
        let text = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error).with_context(|| format!("reading {}", path.display())),
        };
        let text =
            String::from_utf8(text).with_context(|| format!("{} is not UTF-8", path.display()))?;
        Self::with_text(text)
            .map(Some)
            .with_context(|| format!("reading {}", path.display()))
    }

    /// A manifest from its text (at most [`MAX_MANIFEST_BYTES`]), checked, with the text: what
    /// a plugins dir's file and a publication both give.
    pub fn with_text(text: String) -> anyhow::Result<(Self, String)> {
        anyhow::ensure!(
            text.len() <= MAX_MANIFEST_BYTES,
            "the manifest is {} bytes; a manifest is at most {MAX_MANIFEST_BYTES}",
            text.len()
        );
        let manifest = Self::parse(&text)?;
        Ok((manifest, text))
    }

    /// Where the manifest of `component` is.
    pub fn path_beside(component: &Path) -> PathBuf {
        component.with_extension("toml")
    }

    /// A manifest from its text, checked.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let manifest: Self = toml::from_str(text).context("the manifest is not valid")?;
        anyhow::ensure!(
            manifest.public_paths.len() <= MAX_PUBLIC_PATHS,
            "the manifest lists {} public paths; at most {MAX_PUBLIC_PATHS} are accepted",
            manifest.public_paths.len()
        );
        PublicPaths::parse(&manifest.public_paths).map_err(anyhow::Error::msg)?;
        Ok(manifest)
    }

    /// Its settings as an engine's declared settings.
    pub fn declared_settings(&self) -> Vec<Setting> {
        self.settings
            .iter()
            .map(|setting| Setting {
                name: setting.name.clone(),
                kind: setting.kind,
                default_value: setting.default.clone(),
                description: setting.description.clone(),
                secret: setting.secret,
            })
            .collect()
    }
}

/// The paths of a `wasi:http` component that answer without a bearer token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublicPaths(Vec<PublicPath>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum PublicPath {
    Exact(String),
    /// `/public/*`: `/public` and every path under `/public/`.
    Under(String),
}

impl PublicPaths {
    /// Checks the manifest's patterns: each starts with `/`, has no empty, `.` or `..`
    /// segment, and has `*` only as its whole last segment.
    pub fn parse(patterns: &[String]) -> Result<Self, String> {
        patterns
            .iter()
            .map(|pattern| {
                let (base, under) = match pattern.strip_suffix("/*") {
                    // `/*`: every path.
                    Some("") => ("/", true),
                    Some(base) => (base, true),
                    None => (pattern.as_str(), false),
                };
                let clean = base.starts_with('/')
                    && !base.contains(['*', '?', '#', '%', '\\'])
                    && (base == "/"
                        || base.split('/').skip(1).all(|segment| {
                            !segment.is_empty() && segment != "." && segment != ".."
                        }));
                if !clean {
                    return Err(format!(
                        "the public path {pattern:?} is not a clean path starting with '/', optionally ending in '/*'"
                    ));
                }
                Ok(if under {
                    PublicPath::Under(base.trim_end_matches('/').to_owned())
                } else {
                    PublicPath::Exact(base.to_owned())
                })
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    /// Whether `path` (the request's path with the engine prefix removed, before any
    /// decoding) is public. A path with a `.` or `..` segment, or with a `%` (which could
    /// spell one), is never public: the component could resolve it elsewhere.
    pub fn allows(&self, path: &str) -> bool {
        if path.contains('%')
            || path.contains('\\')
            || path
                .split('/')
                .any(|segment| segment == "." || segment == "..")
        {
            return false;
        }
        self.0.iter().any(|public| match public {
            PublicPath::Exact(exact) => path == exact,
            PublicPath::Under(base) => {
                path == base
                    || path
                        .strip_prefix(base.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            }
        })
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(patterns: &[&str]) -> PublicPaths {
        PublicPaths::parse(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn public_paths_match_exactly_or_under_a_prefix() {
        let paths = public(&["/health", "/public/*"]);
        assert!(paths.allows("/health"));
        assert!(!paths.allows("/health/more"));
        assert!(!paths.allows("/healthz"));
        assert!(paths.allows("/public"));
        assert!(paths.allows("/public/a/b"));
        assert!(!paths.allows("/publicity"));
        assert!(!paths.allows("/private"));
    }

    #[test]
    fn dot_segments_and_encodings_are_never_public() {
        let paths = public(&["/public/*"]);
        assert!(!paths.allows("/public/../private"));
        assert!(!paths.allows("/public/./x"));
        assert!(!paths.allows("/public/%2e%2e/private"));
        assert!(!paths.allows("/public/..%2fprivate"));
    }

    #[test]
    fn unclean_patterns_are_refused() {
        for pattern in ["health", "/a/../b", "/a//b", "/a*", "/*/x", "/a?b"] {
            assert!(
                PublicPaths::parse(&[pattern.to_owned()]).is_err(),
                "{pattern} was accepted"
            );
        }
        assert!(PublicPaths::parse(&["/*".to_owned()]).is_ok());
    }

    #[test]
    fn a_manifest_refuses_unknown_keys() {
        let error = ComponentManifest::parse("code = \"x\"\npublic_path = [\"/a\"]\n").unwrap_err();
        assert!(format!("{error:#}").contains("public_path"), "{error:#}");
        let manifest = ComponentManifest::parse(
            "code = \"counter\"\npublic-paths = [\"/health\"]\n[[settings]]\nname = \"greeting\"\ndefault = \"hi\"\n",
        )
        .unwrap();
        assert_eq!(manifest.code.as_deref(), Some("counter"));
        assert_eq!(
            manifest.declared_settings()[0].default_value.as_deref(),
            Some("hi")
        );
    }
}
