//! Why a push or a pull failed, each cause by name: the message is what the operator reads
//! (`tessera admin engine push|publish` prints it), so it says what to do where it can.

use oci_client::errors::{OciDistributionError, OciErrorCode};

/// A failed push or pull.
#[derive(Debug, thiserror::Error)]
pub enum DistributionError {
    #[error(
        "{0:?} is not an OCI reference of the form oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:DIGEST: {1}"
    )]
    BadReference(String, String),
    #[error(
        "the registry {registry} refused the credentials (401 Unauthorized): give --username with --password-stdin, or log in with `docker login {registry}`"
    )]
    Unauthorized { registry: String },
    #[error("the registry {registry} denied access to {repository} (403 Forbidden)")]
    Denied {
        registry: String,
        repository: String,
    },
    #[error("{reference} is not in the registry (no such repository, tag or digest)")]
    NotFound { reference: String },
    #[error(
        "what the registry sent for {reference} does not match its digest (expected {expected}, got {actual}): refused"
    )]
    DigestMismatch {
        reference: String,
        expected: String,
        actual: String,
    },
    #[error("{reference} is not a WebAssembly component artifact: {reason}")]
    NotAComponent { reference: String, reason: String },
    #[error(
        "{reference}'s component is {size} bytes, more than TESSERA_ENGINE_MAX_COMPONENT_BYTES ({limit})"
    )]
    TooLarge {
        reference: String,
        size: u64,
        limit: usize,
    },
    #[error(
        "the signature annotation of {reference} ({annotation}) is not a base64 Ed25519 signature"
    )]
    MalformedSignature {
        reference: String,
        annotation: &'static str,
    },
    #[error(
        "the registry {registry} could not be reached over TLS: {reason} (for a private certificate authority give --ca-file; for a plain-HTTP registry on a trusted network --plain-http)"
    )]
    Tls { registry: String, reason: String },
    #[error("the registry {registry} could not be reached: {reason}")]
    Unreachable { registry: String, reason: String },
    #[error("the registry {registry} answered an error: {reason}")]
    Registry { registry: String, reason: String },
    #[error(transparent)]
    Local(#[from] anyhow::Error),
}

impl DistributionError {
    /// Names the cause of an OCI client error for `reference` (on `registry`).
    pub(crate) fn of_registry(
        error: OciDistributionError,
        registry: &str,
        repository: &str,
        reference: &str,
    ) -> Self {
        let registry = registry.to_owned();
        let unauthorized = || Self::Unauthorized {
            registry: registry.clone(),
        };
        let not_found = || Self::NotFound {
            reference: reference.to_owned(),
        };
        match error {
            OciDistributionError::AuthenticationFailure(_)
            | OciDistributionError::UnauthorizedError { .. } => unauthorized(),
            OciDistributionError::ImageManifestNotFoundError(_) => not_found(),
            OciDistributionError::ServerError { code: 401, .. } => unauthorized(),
            OciDistributionError::ServerError { code: 404, .. } => not_found(),
            OciDistributionError::RegistryError { envelope, .. } => {
                let codes: Vec<&OciErrorCode> =
                    envelope.errors.iter().map(|error| &error.code).collect();
                if codes.contains(&&OciErrorCode::Unauthorized) {
                    unauthorized()
                } else if codes.contains(&&OciErrorCode::Denied) {
                    Self::Denied {
                        registry,
                        repository: repository.to_owned(),
                    }
                } else if codes.iter().any(|code| {
                    matches!(
                        code,
                        OciErrorCode::ManifestUnknown
                            | OciErrorCode::NameUnknown
                            | OciErrorCode::BlobUnknown
                            | OciErrorCode::NotFound
                    )
                }) {
                    not_found()
                } else {
                    Self::Registry {
                        registry,
                        reason: envelope.to_string(),
                    }
                }
            }
            OciDistributionError::DigestError(
                oci_client::errors::DigestError::VerificationError { expected, actual },
            ) => Self::DigestMismatch {
                reference: reference.to_owned(),
                expected,
                actual,
            },
            OciDistributionError::RequestError(error) => {
                let reason = error_chain(&error);
                if reason.contains("certificate")
                    || reason.contains("TLS")
                    || reason.contains("tls")
                {
                    Self::Tls { registry, reason }
                } else {
                    Self::Unreachable { registry, reason }
                }
            }
            other => Self::Registry {
                registry,
                reason: error_chain(&other),
            },
        }
    }
}

/// An error with its sources, `: `-separated (reqwest's own message hides the cause).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
