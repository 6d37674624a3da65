//! TOTP (RFC 6238) for multi-factor authentication: secrets, `otpauth://` enrolment URLs, code
//! verification with replay protection, single-use recovery codes, and sealing of the secret at
//! rest. Everything here is pure (no database, no clock, no HTTP) so the endpoints decide where
//! state lives and tests can pin the time.
//!
//! The scheme is the one every authenticator app speaks: HMAC-SHA-1 over the 30-second step
//! number (`unix_time div 30`), dynamically truncated to 6 decimal digits. [`verify`] accepts the
//! code of the current step and of one step either side (clock drift and typing time), and
//! returns the step it matched so the caller can refuse that step, and every earlier one, from
//! then on: RFC 6238 §5.2 says a code must never be accepted twice.
//!
//! How the endpoints are meant to use it (CONTRACT §4):
//!
//! - **Setup** (`POST …/mfa/totp/setup`): [`TotpSecret::generate`], store
//!   `seal(&secret, &derive_key(service_secret))` as the user's *pending* secret (MFA stays off),
//!   answer `secret` = [`TotpSecret::to_base32`] and `otpauth_url` = [`otpauth_url`] with
//!   [`ISSUER`] and the user's email. Calling setup again replaces a pending secret; refuse it (or
//!   require disabling first) while MFA is enabled.
//! - **Confirm** (`POST …/mfa/totp/confirm`): [`open`] the pending secret and
//!   `verify(&secret, code, now, None)`. `None` is a wrong code (422). On `Some(step)` mark MFA
//!   enabled, store `step` as the user's last used step (so the confirming code cannot also log
//!   in), [`generate_recovery_codes`], store their [`hash_recovery_code`] hashes and answer the
//!   plain codes. This is the only time they are ever shown.
//! - **Verify** (`POST …/mfa/verify`, method `totp`): [`open`] the secret and
//!   `verify(&secret, code, now, last_used_step)`. On `Some(step)` store `step` *atomically* —
//!   `UPDATE users SET totp_last_step = $step WHERE id = $id AND (totp_last_step IS NULL OR
//!   totp_last_step < $step)` — and treat zero affected rows as a wrong code: two parallel
//!   requests carrying one code then cannot both succeed. Method `recovery_code`: look the code up
//!   by [`hash_recovery_code`] and burn it atomically in the same way (`UPDATE … SET used_at =
//!   now() WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL`, one affected row = success),
//!   or use [`matching_recovery_code`] when the hashes are kept as a list. A wrong code is 401 and
//!   counts toward the lockout, like a wrong password.
//! - **Disable** (`DELETE …/mfa/totp`): verify the code exactly as in *verify* (including storing
//!   the step), then delete the sealed secret, the last used step and the recovery codes.
//!
//! `now` is the Unix time in seconds (`chrono::Utc::now().timestamp()`).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead as _, KeyInit as _, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use rand::TryRngCore as _;
use sha2::{Digest as _, Sha256};
use subtle::{Choice, ConstantTimeEq as _};

/// Digits in a code.
pub const DIGITS: usize = 6;

/// Seconds in a time step.
pub const PERIOD_SECONDS: i64 = 30;

/// Steps accepted either side of the current one.
pub const SKEW_STEPS: i64 = 1;

/// Bytes in a secret: 160 bits, RFC 4226 §4's recommendation.
pub const SECRET_BYTES: usize = 20;

/// The issuer shown by authenticator apps, for [`otpauth_url`].
pub const ISSUER: &str = "Tessera";

/// Recovery codes handed out when MFA is enabled.
pub const RECOVERY_CODE_COUNT: usize = 10;

/// Why a secret could not be read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// [`TotpSecret::from_base32`] got something that is not the base32 of 20 bytes.
    #[error("not the base32 encoding of a {SECRET_BYTES}-byte TOTP secret")]
    Base32,
    /// [`open`] got something that is not a sealed secret of a known version.
    #[error("not a sealed TOTP secret")]
    Malformed,
    /// [`open`] got a sealed secret that fails authentication: another key, or tampered with.
    #[error("the sealed TOTP secret does not open under this key")]
    Unsealing,
}

/// A TOTP shared secret: 20 bytes from the operating system's CSPRNG. `Debug` does not print it.
#[derive(Clone)]
pub struct TotpSecret([u8; SECRET_BYTES]);

impl TotpSecret {
    /// A fresh random secret.
    ///
    /// Panics if the operating system's random number generator fails, as `rand::rng()` would.
    pub fn generate() -> Self {
        let mut bytes = [0; SECRET_BYTES];
        fill_random(&mut bytes);
        Self(bytes)
    }

    /// The secret made of `bytes` (tests, and migrations from another store).
    pub fn from_bytes(bytes: [u8; SECRET_BYTES]) -> Self {
        Self(bytes)
    }

    /// The raw key bytes.
    pub fn as_bytes(&self) -> &[u8; SECRET_BYTES] {
        &self.0
    }

    /// RFC 4648 base32 without padding (32 characters, upper case): what a user types into an
    /// authenticator app that cannot scan the QR code.
    pub fn to_base32(&self) -> String {
        totp_rs::Secret::new_stack(self.0).to_base32()
    }

    /// Parses [`Self::to_base32`]'s output. Lenient about what people do to it: case, spaces
    /// and trailing `=` padding are ignored. Anything that does not decode to exactly 20 bytes is
    /// [`SecretError::Base32`].
    pub fn from_base32(encoded: &str) -> Result<Self, SecretError> {
        let cleaned: String = encoded
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .trim_end_matches('=')
            .to_ascii_uppercase();
        let decoded =
            totp_rs::Secret::try_from_base32(&cleaned).map_err(|_| SecretError::Base32)?;
        let bytes =
            <[u8; SECRET_BYTES]>::try_from(decoded.as_bytes()).map_err(|_| SecretError::Base32)?;
        // The decoder ignores trailing bits; insist on the canonical spelling so one secret has
        // one encoding.
        let secret = Self(bytes);
        if secret.to_base32() == cleaned {
            Ok(secret)
        } else {
            Err(SecretError::Base32)
        }
    }

    fn totp(&self) -> totp_rs::Totp {
        totp_rs::Builder::new()
            .with_algorithm(totp_rs::Algorithm::SHA1)
            .with_digits(DIGITS as u8)
            .with_step_duration(PERIOD_SECONDS as u64)
            .with_skew(SKEW_STEPS as u16)
            .with_secret(totp_rs::Secret::new_stack(self.0))
            .build()
            .expect("the TOTP parameters are RFC 6238 compliant")
    }
}

impl std::fmt::Debug for TotpSecret {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("TotpSecret(***)")
    }
}

/// What a label or query value may contain unescaped in an `otpauth://` URL: RFC 3986's
/// unreserved characters. Everything else, `@`, `:`, spaces and non-ASCII included, is
/// percent-encoded (a space as `%20`, never `+`).
const URL_ESCAPED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The Key URI an authenticator app scans (as a QR code) to enrol `secret`, e.g.
/// `otpauth://totp/Tessera:ada%40example.com?secret=…&issuer=Tessera&algorithm=SHA1&digits=6&period=30`.
///
/// `issuer` is normally [`ISSUER`] and `account` the user's email; both are percent-encoded, in
/// the label and in the `issuer` parameter alike. The parameters are spelled out even where
/// they are the defaults, since some apps assume other defaults.
pub fn otpauth_url(secret: &TotpSecret, issuer: &str, account: &str) -> String {
    let issuer = utf8_percent_encode(issuer, URL_ESCAPED).to_string();
    let account = utf8_percent_encode(account, URL_ESCAPED);
    format!(
        "otpauth://totp/{issuer}:{account}?secret={}&issuer={issuer}&algorithm=SHA1&digits={DIGITS}&period={PERIOD_SECONDS}",
        secret.to_base32()
    )
}

/// The time step `now_unix` (Unix seconds) falls in: `now_unix div 30`.
pub fn step_at(now_unix: i64) -> i64 {
    now_unix.div_euclid(PERIOD_SECONDS)
}

/// The 6-digit code of `step` (see [`step_at`]), zero-padded: what the user's app shows during
/// that step. For tests, including integration tests that log in with MFA. A step before 1970
/// (negative) has no code of its own and gets step 0's.
pub fn code_at(secret: &TotpSecret, step: i64) -> String {
    code_of(&secret.totp(), step)
}

fn code_of(totp: &totp_rs::Totp, step: i64) -> String {
    let time = u64::try_from(step)
        .unwrap_or(0)
        .saturating_mul(PERIOD_SECONDS as u64);
    totp.generate(time).to_string()
}

/// Checks `code` at `now_unix` (Unix seconds) and returns the step it matched, or `None`.
///
/// - The codes of the current step and of one step either side are accepted (RFC 6238 §5.2's
///   recommended network delay), compared in constant time.
/// - No step at or before `last_used_step` is accepted: pass the step this function returned
///   last time the user's code was accepted (`None` if it never was). The caller must store the
///   returned step atomically — `UPDATE … SET totp_last_step = $step WHERE id = $id AND
///   (totp_last_step IS NULL OR totp_last_step < $step)`, success only if a row changed — or two
///   parallel requests could both spend one code.
/// - Should one code be valid for two of the candidate steps (one chance in a million), the
///   later step is returned, so storing it burns both.
/// - Surrounding whitespace and spaces inside (`"123 456"`, as apps display it) are ignored;
///   anything else that is not exactly 6 ASCII digits is refused, without panicking.
pub fn verify(
    secret: &TotpSecret,
    code: &str,
    now_unix: i64,
    last_used_step: Option<i64>,
) -> Option<i64> {
    let code = normalize_code(code)?;
    let totp = secret.totp();
    let now = step_at(now_unix);
    let mut matched = None;
    for step in now - SKEW_STEPS..=now.saturating_add(SKEW_STEPS) {
        if step < 0 || last_used_step.is_some_and(|last| step <= last) {
            continue;
        }
        if bool::from(code_of(&totp, step).as_bytes().ct_eq(&code)) {
            matched = Some(step);
        }
    }
    matched
}

/// The 6 ASCII digits of a submitted code, or `None`.
fn normalize_code(code: &str) -> Option<[u8; DIGITS]> {
    // A long input is garbage; refuse it before copying anything.
    if code.len() > 4 * DIGITS {
        return None;
    }
    let mut digits = [0; DIGITS];
    let mut count = 0;
    for byte in code.trim().bytes().filter(|&byte| byte != b' ') {
        if !byte.is_ascii_digit() || count == DIGITS {
            return None;
        }
        digits[count] = byte;
        count += 1;
    }
    (count == DIGITS).then_some(digits)
}

/// The alphabet of recovery codes: Crockford's base32 in lower case — digits and letters
/// without `i`, `l`, `o` and `u`, so nothing reads as something else.
const RECOVERY_ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// Characters in each of a recovery code's two groups.
const RECOVERY_GROUP: usize = 6;

/// Ten fresh recovery codes, `xxxxxx-xxxxxx` from [Crockford's base32] (60 random bits each),
/// all distinct. Show them to the user once; store only [`hash_recovery_code`] of each.
///
/// [Crockford's base32]: https://www.crockford.com/base32.html
pub fn generate_recovery_codes() -> Vec<String> {
    let mut codes: Vec<String> = Vec::with_capacity(RECOVERY_CODE_COUNT);
    while codes.len() < RECOVERY_CODE_COUNT {
        let mut random = [0u8; 2 * RECOVERY_GROUP];
        fill_random(&mut random);
        // 256 is a multiple of 32: masking keeps every symbol equally likely.
        let symbol = |byte: &u8| char::from(RECOVERY_ALPHABET[usize::from(byte & 31)]);
        let (first, second) = random.split_at(RECOVERY_GROUP);
        let code: String = first
            .iter()
            .map(symbol)
            .chain(std::iter::once('-'))
            .chain(second.iter().map(symbol))
            .collect();
        if !codes.contains(&code) {
            codes.push(code);
        }
    }
    codes
}

/// A recovery code as hashed: trimmed, lower case, without spaces and hyphens, and with the
/// look-alikes Crockford's base32 leaves out read as what they resemble (`o` → `0`, `i`/`l` →
/// `1`). `" ABCDEF-ghjk mn "` and `"abcdefghjkmn"` are the same code.
fn normalize_recovery_code(code: &str) -> String {
    code.trim()
        .chars()
        .filter(|&c| c != '-' && !c.is_whitespace())
        .map(|c| match c.to_ascii_lowercase() {
            'o' => '0',
            'i' | 'l' => '1',
            other => other,
        })
        .collect()
}

/// The value to store for a recovery code: lower-case hex SHA-256 of the normalized code (see
/// [`generate_recovery_codes`]; normalization makes case, spaces and hyphens irrelevant). Being
/// deterministic, it can also be looked up: `WHERE code_hash = $1 AND used_at IS NULL`.
///
/// A fast hash on purpose, not argon2: slow hashes protect guessable secrets, whose attacker
/// walks a dictionary of likely passwords. A recovery code is 60 uniformly random bits with no
/// dictionary to walk — exhausting 2^60 SHA-256 inputs is out of reach — so a slow hash would
/// only spend server CPU on every attempt, and salting is unnecessary because no two users
/// realistically share a code.
pub fn hash_recovery_code(code: &str) -> String {
    hex::encode(Sha256::digest(normalize_recovery_code(code).as_bytes()))
}

/// Whether `code` is the recovery code `hash` ([`hash_recovery_code`]) was made from, compared in
/// constant time. The caller still has to mark the code used atomically (it works once).
pub fn recovery_code_matches(code: &str, hash: &str) -> bool {
    bool::from(hash_recovery_code(code).as_bytes().ct_eq(hash.as_bytes()))
}

/// The index in `hashes` of the unused recovery code `code` matches, if any, checking every hash
/// in constant time: for callers that keep a user's hashes as one list. Remove (or mark) the
/// returned entry atomically with the rest of the login.
pub fn matching_recovery_code<S: AsRef<str>>(code: &str, hashes: &[S]) -> Option<usize> {
    let candidate = hash_recovery_code(code);
    let mut found = None;
    for (index, hash) in hashes.iter().enumerate() {
        let equal: Choice = candidate.as_bytes().ct_eq(hash.as_ref().as_bytes());
        if bool::from(equal) && found.is_none() {
            found = Some(index);
        }
    }
    found
}

/// Prefix of the current sealing format: XChaCha20-Poly1305, then base64url (no padding) of the
/// 24-byte nonce followed by the ciphertext and its 16-byte tag.
const SEAL_V1: &str = "v1:";

/// Associated data of the v1 format: binds a sealed value to its purpose.
const SEAL_AAD: &[u8] = b"tessera/auth/totp-secret/v1";

const NONCE_BYTES: usize = 24;
const TAG_BYTES: usize = 16;

/// The key that seals TOTP secrets, derived from the service secret
/// (`state.service_secret.expose()`) with HKDF-SHA-256 under a label of its own, so it is
/// independent of every other use of that secret (request signatures among them).
///
/// Changing the service secret makes every sealed TOTP secret unreadable ([`open`] fails):
/// affected users have to enrol again.
pub fn derive_key(service_secret: &str) -> [u8; 32] {
    let mut key = [0; 32];
    Hkdf::<Sha256>::new(None, service_secret.as_bytes())
        .expand(b"tessera/auth/totp-secret-seal/v1", &mut key)
        .expect("32 bytes is a valid HKDF-SHA-256 output length");
    key
}

/// `secret` encrypted and authenticated under `key` ([`derive_key`]) for storage:
/// `v1:` + base64url of a fresh random 24-byte nonce, the ciphertext and the tag
/// (XChaCha20-Poly1305). Sealing one secret twice gives two different strings.
pub fn seal(secret: &TotpSecret, key: &[u8; 32]) -> String {
    let mut nonce = [0; NONCE_BYTES];
    fill_random(&mut nonce);
    let ciphertext = XChaCha20Poly1305::new(&Key::from(*key))
        .encrypt(
            &XNonce::from(nonce),
            Payload {
                msg: &secret.0,
                aad: SEAL_AAD,
            },
        )
        .expect("XChaCha20-Poly1305 encrypts 20 bytes");
    let mut sealed = Vec::with_capacity(NONCE_BYTES + ciphertext.len());
    sealed.extend_from_slice(&nonce);
    sealed.extend_from_slice(&ciphertext);
    format!("{SEAL_V1}{}", URL_SAFE_NO_PAD.encode(sealed))
}

/// The secret [`seal`] sealed. [`SecretError::Malformed`] when `sealed` is not in a known
/// format, [`SecretError::Unsealing`] when it does not authenticate under `key` (another key,
/// or the stored value was altered).
pub fn open(sealed: &str, key: &[u8; 32]) -> Result<TotpSecret, SecretError> {
    let encoded = sealed.strip_prefix(SEAL_V1).ok_or(SecretError::Malformed)?;
    let bytes = URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| SecretError::Malformed)?;
    if bytes.len() != NONCE_BYTES + SECRET_BYTES + TAG_BYTES {
        return Err(SecretError::Malformed);
    }
    let (nonce, ciphertext) = bytes.split_at(NONCE_BYTES);
    let nonce = <[u8; NONCE_BYTES]>::try_from(nonce).map_err(|_| SecretError::Malformed)?;
    let plaintext = XChaCha20Poly1305::new(&Key::from(*key))
        .decrypt(
            &XNonce::from(nonce),
            Payload {
                msg: ciphertext,
                aad: SEAL_AAD,
            },
        )
        .map_err(|_| SecretError::Unsealing)?;
    let secret =
        <[u8; SECRET_BYTES]>::try_from(plaintext.as_slice()).map_err(|_| SecretError::Malformed)?;
    Ok(TotpSecret(secret))
}

/// Fills `bytes` from the operating system's CSPRNG; panics if it fails, as `rand::rng()` would.
fn fill_random(bytes: &mut [u8]) {
    rand::rngs::OsRng
        .try_fill_bytes(bytes)
        .expect("the operating system's random number generator failed");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 Appendix B's SHA-1 key: the ASCII string `12345678901234567890`.
    fn rfc_secret() -> TotpSecret {
        TotpSecret::from_bytes(*b"12345678901234567890")
    }

    #[test]
    fn codes_are_the_last_six_digits_of_the_rfc_6238_sha1_vectors() {
        let vectors = [
            (59, "94287082"),
            (1_111_111_109, "07081804"),
            (1_111_111_111, "14050471"),
            (1_234_567_890, "89005924"),
            (2_000_000_000, "69279037"),
            (20_000_000_000, "65353130"),
        ];
        let secret = rfc_secret();
        for (time, eight_digits) in vectors {
            assert_eq!(
                code_at(&secret, step_at(time)),
                eight_digits[2..],
                "T = {time}"
            );
            assert_eq!(
                verify(&secret, &eight_digits[2..], time, None),
                Some(step_at(time))
            );
        }
    }

    #[test]
    fn steps_are_thirty_seconds() {
        assert_eq!(step_at(0), 0);
        assert_eq!(step_at(29), 0);
        assert_eq!(step_at(30), 1);
        assert_eq!(step_at(59), 1);
        assert_eq!(step_at(-1), -1);
    }

    #[test]
    fn codes_one_step_either_side_are_accepted_two_are_not() {
        let secret = TotpSecret::generate();
        let now = 1_700_000_015;
        let step = step_at(now);
        for offset in -1..=1 {
            let code = code_at(&secret, step + offset);
            assert_eq!(verify(&secret, &code, now, None), Some(step + offset));
        }
        for offset in [-3, -2, 2, 3] {
            let code = code_at(&secret, step + offset);
            // A code of a far step may, one time in a million, equal a near step's.
            let near = (-1..=1).any(|near| code_at(&secret, step + near) == code);
            assert_eq!(verify(&secret, &code, now, None).is_some(), near);
        }
    }

    #[test]
    fn a_code_from_another_secret_is_refused() {
        let secret = rfc_secret();
        let other = TotpSecret::from_bytes([7; SECRET_BYTES]);
        let now = 1_700_000_000;
        let code = code_at(&other, step_at(now));
        assert_ne!(code, code_at(&secret, step_at(now)));
        assert_eq!(verify(&secret, &code, now, None), None);
    }

    #[test]
    fn a_used_step_and_every_earlier_one_are_refused() {
        let secret = TotpSecret::generate();
        let now = 1_700_000_000;
        let step = step_at(now);
        let code = code_at(&secret, step);
        let used = verify(&secret, &code, now, None).unwrap();
        assert_eq!(used, step);
        // The same code again, in the same step or the next.
        assert_eq!(verify(&secret, &code, now, Some(used)), None);
        assert_eq!(verify(&secret, &code, now + 30, Some(used)), None);
        // The previous step's code, still inside the window, is older than the used one.
        assert_eq!(
            verify(&secret, &code_at(&secret, step - 1), now, Some(used)),
            None
        );
        // The next step's code is fresh.
        let next = code_at(&secret, step + 1);
        assert_eq!(verify(&secret, &next, now, Some(used)), Some(step + 1));
        assert_eq!(verify(&secret, &next, now, Some(step + 1)), None);
    }

    #[test]
    fn a_code_valid_for_two_steps_burns_the_later_one() {
        // Found by search: with the RFC key, steps 910737 and 910738 share a code.
        let secret = rfc_secret();
        assert_eq!(code_at(&secret, 910_737), "911617");
        assert_eq!(code_at(&secret, 910_738), "911617");
        let now = 910_738 * 30;
        let used = verify(&secret, "911617", now, None);
        assert_eq!(used, Some(910_738));
        assert_eq!(verify(&secret, "911617", now, used), None);
        assert_eq!(verify(&secret, "911617", now - 30, None), Some(910_738));
    }

    #[test]
    fn garbage_is_refused_without_panicking() {
        let secret = rfc_secret();
        let now = 59;
        assert_eq!(verify(&secret, "287082", now, None), Some(1));
        for garbage in [
            "",
            " ",
            "28708",
            "2870821",
            "28708a",
            "+87082",
            "-87082",
            "２８７０８２",
            "287-082",
            "287\u{0}082",
            "0x1234",
            "99999999999999999999",
            "287082287082287082287082287082",
        ] {
            assert_eq!(verify(&secret, garbage, now, None), None, "{garbage:?}");
        }
        // Whitespace people paste along is not garbage.
        assert_eq!(verify(&secret, " 287 082\n", now, None), Some(1));
        // Before the epoch there is nothing to match, and no overflow at the extremes.
        assert_eq!(verify(&secret, "287082", -30, None), None);
        assert_eq!(verify(&secret, "287082", i64::MIN, None), None);
        assert_eq!(verify(&secret, "287082", i64::MAX, Some(i64::MAX)), None);
        let _ = code_at(&secret, i64::MAX);
        let _ = code_at(&secret, -1);
    }

    #[test]
    fn base32_round_trips() {
        let secret = rfc_secret();
        assert_eq!(secret.to_base32(), "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
        for _ in 0..20 {
            let secret = TotpSecret::generate();
            let encoded = secret.to_base32();
            assert_eq!(encoded.len(), 32);
            assert!(!encoded.contains('='));
            let decoded = TotpSecret::from_base32(&encoded).unwrap();
            assert_eq!(decoded.as_bytes(), secret.as_bytes());
        }
        let lenient = TotpSecret::from_base32(" gezd gnbv gy3t qojq gezd gnbv gy3t qojq ").unwrap();
        assert_eq!(lenient.as_bytes(), b"12345678901234567890");
        for bad in [
            "",
            "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJ",    // 19.4 bytes
            "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGE", // 21 bytes
            "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJ1",   // 1 is not base32
            "GEZDGNBVGY3TQOJQ!EZDGNBVGY3TQOJQ",
            "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQA", // 20 bytes and 5 stray bits
        ] {
            assert_eq!(
                TotpSecret::from_base32(bad).unwrap_err(),
                SecretError::Base32,
                "{bad}"
            );
        }
    }

    #[test]
    fn secrets_are_random_and_never_printed() {
        let first = TotpSecret::generate();
        let second = TotpSecret::generate();
        assert_ne!(first.as_bytes(), second.as_bytes());
        let printed = format!("{first:?} {:?}", Some(&first));
        assert!(!printed.contains(&first.to_base32()), "{printed}");
        assert!(
            !printed.contains(&hex::encode(first.as_bytes())),
            "{printed}"
        );
        assert_eq!(format!("{first:?}"), "TotpSecret(***)");
    }

    #[test]
    fn the_otpauth_url_names_every_parameter_and_encodes_the_label() {
        let secret = rfc_secret();
        assert_eq!(
            otpauth_url(&secret, ISSUER, "ada@example.com"),
            "otpauth://totp/Tessera:ada%40example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ\
             &issuer=Tessera&algorithm=SHA1&digits=6&period=30"
        );
        assert_eq!(
            otpauth_url(&secret, "Acme Corp", "a+b:c/d?e&f=g é@x.io"),
            "otpauth://totp/Acme%20Corp:a%2Bb%3Ac%2Fd%3Fe%26f%3Dg%20%C3%A9%40x.io\
             ?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Acme%20Corp\
             &algorithm=SHA1&digits=6&period=30"
        );
        // It parses as a URL whose parts decode back.
        let url = url::Url::parse(&otpauth_url(
            &secret,
            ISSUER,
            "ada.lovelace+mfa@example.com",
        ))
        .unwrap();
        assert_eq!(url.scheme(), "otpauth");
        assert_eq!(url.host_str(), Some("totp"));
        assert_eq!(url.path(), "/Tessera:ada.lovelace%2Bmfa%40example.com");
        let query: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        assert_eq!(
            query,
            [
                ("secret", "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"),
                ("issuer", "Tessera"),
                ("algorithm", "SHA1"),
                ("digits", "6"),
                ("period", "30"),
            ]
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
        );
    }

    #[test]
    fn ten_distinct_recovery_codes_of_sixty_bits() {
        let codes = generate_recovery_codes();
        assert_eq!(codes.len(), RECOVERY_CODE_COUNT);
        let distinct: std::collections::HashSet<_> = codes.iter().collect();
        assert_eq!(distinct.len(), RECOVERY_CODE_COUNT);
        for code in &codes {
            let (first, second) = code.split_once('-').unwrap();
            assert_eq!((first.len(), second.len()), (6, 6), "{code}");
            assert!(
                first
                    .bytes()
                    .chain(second.bytes())
                    .all(|byte| RECOVERY_ALPHABET.contains(&byte)),
                "{code}"
            );
            assert!(!code.contains(['i', 'l', 'o', 'u']), "{code}");
            // Normalizing a generated code changes nothing but the hyphen.
            assert_eq!(normalize_recovery_code(code), code.replace('-', ""));
        }
        // Two batches do not overlap.
        let again = generate_recovery_codes();
        assert!(codes.iter().all(|code| !again.contains(code)));
    }

    #[test]
    fn recovery_codes_are_normalized_before_hashing() {
        let hash = hash_recovery_code("abcdef-ghjk01");
        assert_eq!(hash.len(), 64);
        assert!(
            hash.bytes()
                .all(|byte| byte.is_ascii_hexdigit() && !byte.is_ascii_uppercase())
        );
        assert_eq!(hash, hex::encode(Sha256::digest(b"abcdefghjk01")));
        for spelling in [
            "abcdefghjk01",
            "  ABCDEF-GHJK01\n",
            "abc def ghj k01",
            "AbCdEf--GhJk-0-1",
            "abcdef-ghjkOI",
            "abcdef-ghjkol",
        ] {
            assert_eq!(hash_recovery_code(spelling), hash, "{spelling:?}");
        }
        assert_ne!(hash_recovery_code("abcdef-ghjk02"), hash);
    }

    #[test]
    fn recovery_code_hashes_match_only_their_code() {
        let codes = generate_recovery_codes();
        let hashes: Vec<String> = codes.iter().map(|code| hash_recovery_code(code)).collect();
        assert!(recovery_code_matches(&codes[0], &hashes[0]));
        assert!(recovery_code_matches(&codes[0].to_uppercase(), &hashes[0]));
        assert!(!recovery_code_matches(&codes[0], &hashes[1]));
        assert!(!recovery_code_matches("", &hashes[0]));
        assert!(!recovery_code_matches(&codes[0], ""));
        assert!(!recovery_code_matches(&codes[0], &hashes[0].to_uppercase()));
        for (index, code) in codes.iter().enumerate() {
            assert_eq!(matching_recovery_code(code, &hashes), Some(index));
        }
        assert_eq!(matching_recovery_code("0000000000-00", &hashes), None);
        assert_eq!(matching_recovery_code(&codes[3], &hashes[4..]), None);
        assert_eq!(matching_recovery_code::<String>(&codes[3], &[]), None);
    }

    #[test]
    fn sealed_secrets_open_under_their_key_only() {
        let key = derive_key("service secret");
        let secret = TotpSecret::generate();
        let sealed = seal(&secret, &key);
        assert!(sealed.starts_with("v1:"), "{sealed}");
        assert!(!sealed.contains(&secret.to_base32()));
        assert_eq!(open(&sealed, &key).unwrap().as_bytes(), secret.as_bytes());
        // A fresh nonce every time.
        let again = seal(&secret, &key);
        assert_ne!(again, sealed);
        assert_eq!(open(&again, &key).unwrap().as_bytes(), secret.as_bytes());
        // Another key.
        let other = derive_key("another service secret");
        assert_eq!(open(&sealed, &other).unwrap_err(), SecretError::Unsealing);
    }

    #[test]
    fn a_tampered_sealed_secret_does_not_open() {
        let key = derive_key("service secret");
        let sealed = seal(&TotpSecret::generate(), &key);
        let bytes = URL_SAFE_NO_PAD.decode(&sealed[3..]).unwrap();
        assert_eq!(bytes.len(), NONCE_BYTES + SECRET_BYTES + TAG_BYTES);
        // Every byte: nonce, ciphertext and tag.
        for index in 0..bytes.len() {
            let mut tampered = bytes.clone();
            tampered[index] ^= 0x01;
            let tampered = format!("v1:{}", URL_SAFE_NO_PAD.encode(tampered));
            assert_eq!(
                open(&tampered, &key).unwrap_err(),
                SecretError::Unsealing,
                "{index}"
            );
        }
        for malformed in [
            String::new(),
            sealed[3..].to_owned(),
            sealed.replacen("v1:", "v2:", 1),
            format!("{sealed}A"),
            sealed[..sealed.len() - 4].to_owned(),
            format!("v1:{}", &sealed[4..]),
            "v1:***".to_owned(),
        ] {
            assert_eq!(
                open(&malformed, &key).unwrap_err(),
                SecretError::Malformed,
                "{malformed}"
            );
        }
    }

    #[test]
    fn the_sealing_key_depends_on_the_service_secret_only() {
        assert_eq!(derive_key("a"), derive_key("a"));
        assert_ne!(derive_key("a"), derive_key("b"));
        assert_ne!(derive_key(""), [0; 32]);
        // Not merely a hash of the service secret: a label separates it from other uses.
        assert_ne!(derive_key("a").as_slice(), Sha256::digest(b"a").as_slice());
    }
}
