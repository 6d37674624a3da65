//! The passkeys' relying party: `webauthn-rs` configured from the public URL and the
//! operator's settings (a loopback address becomes `localhost`; another bare IP address has no
//! passkeys unless the operator names the id).

use webauthn_rs::prelude::{Url, Webauthn, WebauthnBuilder};

use super::ceremony::CEREMONY_LIFETIME;

/// The operator's passkey settings; unset parts come from the public URL.
#[derive(Debug, Clone)]
pub struct RelyingPartyConfig {
    /// `TESSERA_WEBAUTHN_RP_ID`: the relying-party id (a domain). Default: the public URL's
    /// host, or `localhost` when that is a loopback address.
    pub rp_id: Option<String>,
    /// `TESSERA_WEBAUTHN_ORIGINS`: the origins browsers may use, each on the id's domain.
    /// Default: the public URL's origin (on `localhost` for a loopback address).
    pub origins: Vec<String>,
    /// `TESSERA_WEBAUTHN_RP_NAME`: the name authenticators show.
    pub rp_name: String,
    /// `TESSERA_WEBAUTHN_MAX_CREDENTIALS`: passkeys one user may register.
    pub max_credentials_per_user: u32,
}

impl Default for RelyingPartyConfig {
    fn default() -> Self {
        Self {
            rp_id: None,
            origins: Vec::new(),
            rp_name: "Tessera".into(),
            max_credentials_per_user: 20,
        }
    }
}

/// The host's relying party: `webauthn-rs` configured for it, and its limits.
pub struct RelyingParty {
    pub(crate) webauthn: Webauthn,
    pub(crate) max_credentials_per_user: u32,
}

impl RelyingParty {
    /// The relying party for `public_url` and `config`; `None` (passkeys off, with a warning)
    /// when the public URL's host is an IP address other than loopback and no id is set. A
    /// setting that cannot work (an origin outside the id's domain) is an error naming it.
    pub fn new(public_url: &str, config: &RelyingPartyConfig) -> anyhow::Result<Option<Self>> {
        let public = Url::parse(public_url)
            .map_err(|error| anyhow::anyhow!("TESSERA_PUBLIC_URL is not a URL: {error}"))?;
        let (rp_id, default_origin) = match (&config.rp_id, public.host()) {
            (Some(rp_id), _) => (rp_id.clone(), public.clone()),
            (None, Some(url::Host::Domain(domain))) => (domain.to_owned(), public.clone()),
            (None, Some(url::Host::Ipv4(ip))) if ip.is_loopback() => localhost(&public)?,
            (None, Some(url::Host::Ipv6(ip))) if ip.is_loopback() => localhost(&public)?,
            (None, _) => {
                tracing::warn!(
                    "passkeys are off: the public URL's host is an IP address, which cannot be a \
                     WebAuthn relying-party id; set TESSERA_WEBAUTHN_RP_ID (and \
                     TESSERA_WEBAUTHN_ORIGINS) to offer them"
                );
                return Ok(None);
            }
        };
        let origins = if config.origins.is_empty() {
            vec![default_origin]
        } else {
            config
                .origins
                .iter()
                .map(|origin| {
                    Url::parse(origin).map_err(|error| {
                        anyhow::anyhow!(
                            "TESSERA_WEBAUTHN_ORIGINS: {origin:?} is not a URL: {error}"
                        )
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?
        };
        for origin in &origins {
            let on_domain = origin
                .domain()
                .is_some_and(|host| host == rp_id || host.ends_with(&format!(".{rp_id}")));
            if !on_domain {
                anyhow::bail!(
                    "TESSERA_WEBAUTHN_ORIGINS: {origin} is not on the relying-party id's domain \
                     ({rp_id}, TESSERA_WEBAUTHN_RP_ID or the public URL's host)"
                );
            }
        }
        let mut builder = WebauthnBuilder::new(&rp_id, &origins[0])
            .map_err(|error| anyhow::anyhow!("TESSERA_WEBAUTHN_RP_ID {rp_id:?}: {error}"))?
            .rp_name(&config.rp_name)
            .timeout(
                CEREMONY_LIFETIME
                    .to_std()
                    .expect("the ceremony lifetime is positive"),
            );
        for origin in &origins[1..] {
            builder = builder.append_allowed_origin(origin);
        }
        let webauthn = builder
            .build()
            .map_err(|error| anyhow::anyhow!("configuring passkeys: {error}"))?;
        Ok(Some(Self {
            webauthn,
            max_credentials_per_user: config.max_credentials_per_user,
        }))
    }

    /// The origins browsers may sign in from, the first being the relying party's own.
    pub fn origins(&self) -> &[Url] {
        self.webauthn.get_allowed_origins()
    }
}

/// `localhost` and the public URL's origin moved onto it (same scheme and port).
fn localhost(public: &Url) -> anyhow::Result<(String, Url)> {
    let mut origin = public.clone();
    origin
        .set_host(Some("localhost"))
        .map_err(|error| anyhow::anyhow!("moving the public URL onto localhost: {error}"))?;
    origin.set_path("");
    Ok(("localhost".into(), origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> RelyingPartyConfig {
        RelyingPartyConfig::default()
    }

    #[test]
    fn the_relying_party_follows_the_public_url() {
        let on_domain = RelyingParty::new("https://tessera.example.com", &config())
            .unwrap()
            .unwrap();
        assert_eq!(
            on_domain.origins()[0].as_str(),
            "https://tessera.example.com/"
        );
        let loopback = RelyingParty::new("http://127.0.0.1:8080", &config())
            .unwrap()
            .unwrap();
        assert_eq!(loopback.origins()[0].as_str(), "http://localhost:8080/");
        assert!(
            RelyingParty::new("http://10.0.0.5:8080", &config())
                .unwrap()
                .is_none()
        );
        let named = RelyingParty::new(
            "http://10.0.0.5:8080",
            &RelyingPartyConfig {
                rp_id: Some("example.com".into()),
                origins: vec!["https://app.example.com".into()],
                ..config()
            },
        )
        .unwrap()
        .unwrap();
        assert_eq!(named.origins()[0].as_str(), "https://app.example.com/");
        let outside = RelyingParty::new(
            "https://tessera.example.com",
            &RelyingPartyConfig {
                origins: vec!["https://evil.example.net".into()],
                ..config()
            },
        );
        assert!(
            outside
                .err()
                .unwrap()
                .to_string()
                .contains("TESSERA_WEBAUTHN_ORIGINS")
        );
    }
}
