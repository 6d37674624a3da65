//! How to reach a registry: its credentials (given, or the standard Docker config's), the
//! extra certificate authority its TLS certificate chains to, or plain HTTP when asked for.

use std::path::PathBuf;

use anyhow::Context as _;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;

/// A registry's credentials.
#[derive(Clone, Default)]
pub enum RegistryCredentials {
    /// The standard Docker config's (`$DOCKER_CONFIG/config.json`, else
    /// `~/.docker/config.json`, credential helpers included) for the registry, else none.
    #[default]
    FromDockerConfig,
    /// A user name and password (or token) given by the operator.
    Given { username: String, password: String },
}

impl std::fmt::Debug for RegistryCredentials {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::FromDockerConfig => formatter.write_str("FromDockerConfig"),
            Self::Given { username, .. } => formatter
                .debug_struct("Given")
                .field("username", username)
                .field("password", &"…")
                .finish(),
        }
    }
}

/// Everything needed to talk to a registry.
#[derive(Debug, Clone, Default)]
pub struct RegistryAccess {
    pub credentials: RegistryCredentials,
    /// A PEM file of certificate authorities trusted besides the system's.
    pub extra_ca_file: Option<PathBuf>,
    /// Plain HTTP instead of HTTPS (a registry on a trusted network, or loopback).
    pub plain_http: bool,
}

impl RegistryAccess {
    /// An OCI client with these settings.
    pub(crate) fn client(&self) -> anyhow::Result<oci_client::Client> {
        // reqwest's rustls without a built-in provider: ring's, as everywhere in the host.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut config = ClientConfig {
            protocol: if self.plain_http {
                ClientProtocol::Http
            } else {
                ClientProtocol::Https
            },
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            // One image manifest per component: nothing multi-platform to choose from.
            platform_resolver: None,
            ..ClientConfig::default()
        };
        if let Some(path) = &self.extra_ca_file {
            let data = std::fs::read(path).with_context(|| {
                format!("reading the certificate authorities {}", path.display())
            })?;
            config.extra_root_certificates.push(Certificate {
                encoding: CertificateEncoding::Pem,
                data,
            });
        }
        Ok(oci_client::Client::new(config))
    }

    /// The credentials to present to `registry`.
    pub(crate) fn auth_for(&self, registry: &str) -> RegistryAuth {
        match &self.credentials {
            RegistryCredentials::Given { username, password } => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
            RegistryCredentials::FromDockerConfig => {
                match docker_credential::get_credential(registry) {
                    Ok(docker_credential::DockerCredential::UsernamePassword(user, password)) => {
                        RegistryAuth::Basic(user, password)
                    }
                    Ok(docker_credential::DockerCredential::IdentityToken(token)) => {
                        RegistryAuth::Bearer(token)
                    }
                    Err(error) => {
                        tracing::debug!(%registry, %error, "no Docker credentials: anonymous");
                        RegistryAuth::Anonymous
                    }
                }
            }
        }
    }
}
