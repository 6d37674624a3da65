//! Ceremony state between a start and its finish: sealed (XChaCha20-Poly1305 under a key
//! derived from the service secret, bound to its row), found by the SHA-256 of its challenge,
//! and taken once.

use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead as _, KeyInit as _, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use chrono::Utc;
use hkdf::Hkdf;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::store;
use crate::store::webauthn::NewCeremony;
use tessera_http::config::Secret;
use tessera_storage::{Database, time};

/// How long a ceremony may take between its start and its finish (the options' `timeout`).
pub const CEREMONY_LIFETIME: chrono::Duration = chrono::Duration::minutes(5);

/// The key that seals ceremony state, derived from the service secret.
fn sealing_key(service_secret: &str) -> [u8; 32] {
    let mut key = [0; 32];
    Hkdf::<Sha256>::new(None, service_secret.as_bytes())
        .expand(b"tessera/auth/webauthn-ceremony/v1", &mut key)
        .expect("32 bytes is a valid HKDF-SHA-256 output length");
    key
}

/// `state` as JSON sealed under `key`, bound to its row's `key_hash` (nonce ‖ ciphertext,
/// base64url).
fn seal_state<T: Serialize>(key: &[u8; 32], key_hash: &str, state: &T) -> anyhow::Result<String> {
    let plain = serde_json::to_vec(state).map_err(anyhow::Error::from)?;
    let nonce: [u8; 24] = rand::random();
    let sealed = XChaCha20Poly1305::new(&Key::from(*key))
        .encrypt(
            &XNonce::from(nonce),
            Payload {
                msg: &plain,
                aad: key_hash.as_bytes(),
            },
        )
        .map_err(|_| anyhow::anyhow!("sealing a WebAuthn ceremony"))?;
    let mut bytes = nonce.to_vec();
    bytes.extend_from_slice(&sealed);
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// The state [`seal_state`] sealed for `key_hash`.
fn open_state<T: DeserializeOwned>(
    key: &[u8; 32],
    key_hash: &str,
    sealed: &str,
) -> anyhow::Result<T> {
    let bytes = URL_SAFE_NO_PAD
        .decode(sealed)
        .map_err(|_| anyhow::anyhow!("a sealed WebAuthn ceremony is not base64url"))?;
    anyhow::ensure!(bytes.len() > 24, "a sealed WebAuthn ceremony is too short");
    let (nonce, sealed) = bytes.split_at(24);
    let nonce = <[u8; 24]>::try_from(nonce).expect("split at 24");
    let plain = XChaCha20Poly1305::new(&Key::from(*key))
        .decrypt(
            &XNonce::from(nonce),
            Payload {
                msg: sealed,
                aad: key_hash.as_bytes(),
            },
        )
        .map_err(|_| anyhow::anyhow!("a WebAuthn ceremony does not open under this key"))?;
    serde_json::from_slice(&plain).map_err(anyhow::Error::from)
}

/// Base64url (padded or not) as bytes.
fn base64url(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(text)
        .or_else(|_| URL_SAFE.decode(text))
        .ok()
}

/// The row key of a challenge (its bytes' SHA-256, hex).
fn challenge_key(challenge: &[u8]) -> String {
    hex::encode(Sha256::digest(challenge))
}

/// The row key of the challenge in `options.publicKey.challenge`.
pub(crate) fn options_challenge_key(options: &Value) -> anyhow::Result<String> {
    options
        .pointer("/publicKey/challenge")
        .and_then(Value::as_str)
        .and_then(base64url)
        .map(|challenge| challenge_key(&challenge))
        .ok_or_else(|| anyhow::anyhow!("WebAuthn options without a base64url challenge"))
}

/// The row key of the challenge a credential answers (`response.clientDataJSON.challenge`);
/// `None` when it has none. The relying party checks it against the state afterwards: this
/// only finds the row.
pub(crate) fn credential_challenge_key(credential: &Value) -> Option<String> {
    let client_data = credential
        .pointer("/response/clientDataJSON")
        .and_then(Value::as_str)
        .and_then(base64url)?;
    let client_data: Value = serde_json::from_slice(&client_data).ok()?;
    let challenge = client_data
        .get("challenge")
        .and_then(Value::as_str)
        .and_then(base64url)?;
    Some(challenge_key(&challenge))
}

/// Stores a started ceremony.
pub(crate) async fn store_ceremony<T: Serialize>(
    database: &Database,
    service_secret: &Secret,
    key_hash: &str,
    kind: &str,
    user_id: Option<&str>,
    binding: Option<&str>,
    ceremony: &T,
) -> anyhow::Result<()> {
    let now = Utc::now();
    let key = sealing_key(service_secret.expose());
    let sealed_state = seal_state(&key, key_hash, ceremony)?;
    store::webauthn::insert_ceremony(
        database,
        &NewCeremony {
            key_hash,
            kind,
            user_id,
            binding,
            sealed_state: &sealed_state,
            expires_at: &time::format(now + CEREMONY_LIFETIME),
        },
        &time::format(now),
    )
    .await
}

/// Takes the ceremony of `key_hash` (single use) and opens its state; `None` when there is
/// none of `kind` for `user_id` and `binding`, or it expired.
pub(crate) async fn take_ceremony<T: DeserializeOwned>(
    database: &Database,
    service_secret: &Secret,
    key_hash: &str,
    kind: &str,
    user_id: Option<&str>,
    binding: Option<&str>,
) -> anyhow::Result<Option<T>> {
    let Some(sealed_state) =
        store::webauthn::take_ceremony(database, key_hash, kind, user_id, binding, &time::now())
            .await?
    else {
        return Ok(None);
    };
    let key = sealing_key(service_secret.expose());
    open_state(&key, key_hash, &sealed_state).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_state_opens_under_its_key_and_row_only() {
        let key = sealing_key("secret");
        let sealed = seal_state(&key, "row-1", &vec!["state"]).unwrap();
        let opened: Vec<String> = open_state(&key, "row-1", &sealed).unwrap();
        assert_eq!(opened, ["state"]);
        assert!(open_state::<Vec<String>>(&key, "row-2", &sealed).is_err());
        assert!(open_state::<Vec<String>>(&sealing_key("other"), "row-1", &sealed).is_err());
        assert!(!sealed.contains("state"));
    }

    #[test]
    fn a_credentials_challenge_finds_the_row_of_the_options_challenge() {
        let challenge = URL_SAFE_NO_PAD.encode(b"the challenge bytes");
        let options = serde_json::json!({"publicKey": {"challenge": challenge}});
        let client_data = serde_json::json!({"type": "webauthn.get", "challenge": challenge});
        let credential = serde_json::json!({
            "response": {"clientDataJSON": URL_SAFE_NO_PAD.encode(client_data.to_string())}
        });
        assert_eq!(
            options_challenge_key(&options).unwrap(),
            credential_challenge_key(&credential).unwrap()
        );
        assert_eq!(
            credential_challenge_key(&serde_json::json!({"response": {}})),
            None
        );
        assert_eq!(
            credential_challenge_key(&serde_json::json!({"response": {"clientDataJSON": "!!"}})),
            None
        );
    }
}
