//! A software passkey for the tests and benchmarks: a `passkey-authenticator` authenticator
//! (one credential, with a signature counter, its user always present and verified) behind a
//! `passkey-client` WebAuthn client that plays the browser on `http://localhost:<port>`, taking
//! and giving the W3C JSON the host serves and reads.

use passkey_authenticator::{Authenticator, UiHint, UserCheck, UserValidationMethod};
use passkey_client::{Client, DefaultClientData};
use passkey_crypto::rust_crypto::RustCryptoBackend;
use passkey_types::Passkey;
use passkey_types::ctap2::{Aaguid, Ctap2Error};
use passkey_types::webauthn::{CredentialCreationOptions, CredentialRequestOptions};
use serde_json::Value;
use url::Url;

/// A user who is always present and verified (a fingerprint that always matches).
struct AlwaysVerified;

#[async_trait::async_trait]
impl UserValidationMethod for AlwaysVerified {
    type PasskeyItem = Passkey;

    async fn check_user<'a>(
        &self,
        _hint: UiHint<'a, Passkey>,
        presence: bool,
        verification: bool,
    ) -> Result<UserCheck, Ctap2Error> {
        Ok(UserCheck {
            presence,
            verification,
        })
    }

    fn is_presence_enabled(&self) -> bool {
        true
    }

    fn is_verification_enabled(&self) -> Option<bool> {
        Some(true)
    }
}

type SoftClient =
    Client<Option<Passkey>, AlwaysVerified, RustCryptoBackend, public_suffix::PublicSuffixList, ()>;

/// One software authenticator holding (at most) one passkey, used from the host's origin on
/// `localhost`, with a signature counter.
pub struct SoftPasskey {
    client: SoftClient,
    origin: Url,
}

impl SoftPasskey {
    /// An empty authenticator used from `http://localhost:<port>`.
    pub fn new(port: u16) -> Self {
        Self::holding(port, None)
    }

    fn holding(port: u16, passkey: Option<Passkey>) -> Self {
        let mut authenticator = Authenticator::new(
            Aaguid::new_empty(),
            passkey,
            AlwaysVerified,
            RustCryptoBackend,
        );
        authenticator.set_make_credentials_with_signature_counter(true);
        Self {
            client: Client::new(authenticator).allows_insecure_localhost(true),
            origin: Url::parse(&format!("http://localhost:{port}")).unwrap(),
        }
    }

    /// Another authenticator holding a copy of this one's key, counter and all.
    pub fn cloned(&self) -> Self {
        Self::holding(
            self.origin.port().unwrap(),
            self.client.authenticator().store().clone(),
        )
    }

    /// The credential `navigator.credentials.create(options)` would return, as JSON.
    pub async fn create(&mut self, options: &Value) -> Value {
        let request: CredentialCreationOptions =
            serde_json::from_value(options.clone()).expect("creation options");
        let created = self
            .client
            .register(&self.origin, request, DefaultClientData)
            .await
            .expect("the authenticator creates a credential");
        serde_json::to_value(created).unwrap()
    }

    /// The assertion `navigator.credentials.get(options)` would return, as JSON.
    pub async fn get(&mut self, options: &Value) -> Value {
        let request: CredentialRequestOptions =
            serde_json::from_value(options.clone()).expect("request options");
        let asserted = self
            .client
            .authenticate(&self.origin, request, DefaultClientData)
            .await
            .expect("the authenticator signs");
        serde_json::to_value(asserted).unwrap()
    }
}
