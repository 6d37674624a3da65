//! `oci://REGISTRY/REPOSITORY:TAG` and `oci://REGISTRY/REPOSITORY@sha256:DIGEST` (CONTRACT §10):
//! the registry is always named (no implied Docker Hub) and so is a tag or a digest (no implied
//! `latest`), so that what a command reads is what it fetches.

use std::str::FromStr as _;

use oci_client::Reference;

use crate::DistributionError;

/// The scheme every reference starts with.
pub const SCHEME: &str = "oci://";

/// A component's place in a registry.
#[derive(Debug, Clone)]
pub struct ComponentReference {
    given: String,
    pub(crate) reference: Reference,
}

impl ComponentReference {
    /// Whether `text` is meant as a reference (it starts with `oci://`), not as a file.
    pub fn is_reference(text: &str) -> bool {
        text.starts_with(SCHEME)
    }

    /// Parses `oci://REGISTRY/REPOSITORY:TAG` or `oci://REGISTRY/REPOSITORY@sha256:DIGEST`.
    pub fn parse(text: &str) -> Result<Self, DistributionError> {
        let refuse = |why: &str| DistributionError::BadReference(text.to_owned(), why.to_owned());
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| refuse("it must start with oci://"))?;
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| refuse("it names no repository"))?;
        if registry.is_empty()
            || !(registry.contains('.') || registry.contains(':') || registry == "localhost")
        {
            return Err(refuse(
                "the first part must be the registry's host (with a dot or a port, or localhost)",
            ));
        }
        let last = path.rsplit('/').next().unwrap_or(path);
        if !last.contains(':') && !path.contains('@') {
            return Err(refuse(
                "it names neither a tag (:TAG) nor a digest (@sha256:…)",
            ));
        }
        if let Some((_, digest)) = path.split_once('@') {
            let valid = digest.strip_prefix("sha256:").is_some_and(|hex| {
                hex.len() == 64 && hex.bytes().all(|byte| byte.is_ascii_hexdigit())
            });
            if !valid {
                return Err(refuse("a digest is sha256: and 64 hexadecimal digits"));
            }
        }
        let reference = Reference::from_str(rest).map_err(|error| refuse(&error.to_string()))?;
        Ok(Self {
            given: text.to_owned(),
            reference,
        })
    }

    /// The registry's host (and port).
    pub fn registry(&self) -> &str {
        self.reference.resolve_registry()
    }

    /// The repository within the registry.
    pub fn repository(&self) -> &str {
        self.reference.repository()
    }

    /// The digest the reference pins, if it pins one.
    pub fn digest(&self) -> Option<&str> {
        self.reference.digest()
    }
}

impl std::fmt::Display for ComponentReference {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.given)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_names_its_registry_and_a_tag_or_a_digest() {
        let tagged = ComponentReference::parse("oci://127.0.0.1:5000/engines/notes:1.2").unwrap();
        assert_eq!(tagged.registry(), "127.0.0.1:5000");
        assert_eq!(tagged.repository(), "engines/notes");
        assert_eq!(tagged.digest(), None);
        let digest = format!("sha256:{}", "ab".repeat(32));
        let pinned =
            ComponentReference::parse(&format!("oci://registry.example.com/notes@{digest}"))
                .unwrap();
        assert_eq!(pinned.digest(), Some(digest.as_str()));

        for (text, why) in [
            ("127.0.0.1:5000/notes:1", "oci://"),
            ("oci://notes:1", "repository"),
            ("oci://library/notes:1", "registry's host"),
            ("oci://127.0.0.1:5000/notes", "neither a tag"),
            ("oci://127.0.0.1:5000/notes@sha256:abc", "64 hexadecimal"),
        ] {
            let error = ComponentReference::parse(text).unwrap_err().to_string();
            assert!(error.contains(why), "{text}: {error}");
        }
    }
}
