//! Passwords: the policy every password set must meet (HTTP and CLI alike) and argon2id
//! hashing, run on dedicated low-priority threads so hashing never stalls the async workers.

use std::sync::Arc;

use anyhow::Context as _;
use argon2::password_hash::{PasswordHasher as _, SaltString, rand_core::OsRng};
use argon2::{Algorithm, Argon2, Params, Version};
use serde::Serialize;
use utoipa::ToSchema;

/// The password policy (`password_policy` of the auth config endpoint). The defaults are the
/// spec's sample values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct PasswordPolicy {
    pub min_length: u32,
    pub require_uppercase: bool,
    pub require_lowercase: bool,
    pub require_number: bool,
    pub require_special: bool,
}

impl Default for PasswordPolicy {
    fn default() -> Self {
        Self {
            min_length: 8,
            require_uppercase: true,
            require_lowercase: true,
            require_number: true,
            require_special: false,
        }
    }
}

/// Passwords longer than this are refused: argon2 hashes any length, but a megabyte of
/// password is an attack, not a credential.
pub const MAX_PASSWORD_LENGTH: usize = 1024;

impl PasswordPolicy {
    /// The rules `password` fails, as rule names (`min:8`, `max:1024`, `uppercase`,
    /// `lowercase`, `number`, `special`); empty when it passes.
    pub fn violations(&self, password: &str) -> Vec<String> {
        let mut failed = Vec::new();
        if password.chars().count() < self.min_length as usize {
            failed.push(format!("min:{}", self.min_length));
        }
        if password.len() > MAX_PASSWORD_LENGTH {
            failed.push(format!("max:{MAX_PASSWORD_LENGTH}"));
        }
        if self.require_uppercase && !password.chars().any(char::is_uppercase) {
            failed.push("uppercase".into());
        }
        if self.require_lowercase && !password.chars().any(char::is_lowercase) {
            failed.push("lowercase".into());
        }
        if self.require_number && !password.chars().any(|c| c.is_ascii_digit()) {
            failed.push("number".into());
        }
        if self.require_special && password.chars().all(char::is_alphanumeric) {
            failed.push("special".into());
        }
        failed
    }
}

/// OWASP's argon2id recommendation: m = 19 MiB, t = 2, p = 1.
pub fn argon2_params() -> Params {
    Params::new(19 * 1024, 2, 1, None).expect("static argon2 parameters are valid")
}

fn argon2() -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, argon2_params())
}

/// A job for the hashing threads.
type Job = Box<dyn FnOnce() + Send>;

/// Hashes and verifies passwords on dedicated threads, never on the async workers: at most
/// `concurrency` at a time (19 MiB each), the rest queued. On Linux the threads run at a lower
/// priority (nice 10), so a burst of logins uses the idle CPU without starving the request
/// handlers: cheap requests keep their latency while argon2 runs.
#[derive(Clone)]
pub struct PasswordHasher {
    jobs: std::sync::mpsc::Sender<Job>,
    threads: usize,
}

/// Lowers the calling thread's scheduling priority (Linux: nice applies per thread).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls about the calling thread; no memory is handed over.
    unsafe {
        let thread_id = libc::syscall(libc::SYS_gettid) as libc::id_t;
        if libc::setpriority(libc::PRIO_PROCESS, thread_id, 10) != 0 {
            tracing::debug!("could not lower the priority of a password hashing thread");
        }
    }
}

impl PasswordHasher {
    pub fn new(concurrency: usize) -> Self {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let queue = Arc::new(std::sync::Mutex::new(queue));
        let threads = concurrency.max(1);
        for index in 0..threads {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("tessera-argon2-{index}"))
                .spawn(move || {
                    lower_priority();
                    loop {
                        let job = match queue.lock() {
                            Ok(receiver) => receiver.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(),
                            // Every `PasswordHasher` is gone.
                            Err(_) => return,
                        }
                    }
                })
                .expect("starting a password hashing thread");
        }
        Self { jobs, threads }
    }

    /// How many hashing threads there are (hashes that run at once).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `work` on a hashing thread and waits for its result; jobs start in the order they
    /// were handed in.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        let (done, result) = tokio::sync::oneshot::channel();
        self.jobs
            .send(Box::new(move || {
                let _ = done.send(work());
            }))
            .map_err(|_| anyhow::anyhow!("the password hashing threads are gone"))?;
        result.await.context("a password hashing job was dropped")
    }

    /// The PHC string of `password` under argon2id with a fresh random salt.
    pub async fn hash(&self, password: String) -> anyhow::Result<String> {
        self.run(move || {
            let salt = SaltString::generate(&mut OsRng);
            argon2()
                .hash_password(password.as_bytes(), &salt)
                .map(|hash| hash.to_string())
                .map_err(|error| anyhow::anyhow!("hashing a password: {error}"))
        })
        .await?
    }
}

/// The outcome of checking a password against a stored hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verified {
    No,
    Yes,
    /// Right, and the hash uses other parameters than today's: store a new hash.
    YesNeedsRehash,
}

/// A hash of a random password under today's parameters, checked when the account does not
/// exist so that an unknown login costs the same time as a known one.
pub fn dummy_hash() -> String {
    let salt = SaltString::generate(&mut OsRng);
    argon2()
        .hash_password(uuid::Uuid::new_v4().as_bytes(), &salt)
        .expect("hashing a random password")
        .to_string()
}

impl PasswordHasher {
    /// Checks `password` against a PHC string on the blocking pool, under the same bound as
    /// hashing. An unparsable hash never verifies.
    pub async fn verify(&self, password: String, phc: String) -> anyhow::Result<Verified> {
        self.run(move || {
            use argon2::PasswordVerifier as _;
            let Ok(parsed) = argon2::PasswordHash::new(&phc) else {
                return Verified::No;
            };
            if argon2()
                .verify_password(password.as_bytes(), &parsed)
                .is_err()
            {
                return Verified::No;
            }
            let current = argon2_params();
            let same = parsed.algorithm == Algorithm::Argon2id.ident()
                && Params::try_from(&parsed).is_ok_and(|params| {
                    params.m_cost() == current.m_cost()
                        && params.t_cost() == current.t_cost()
                        && params.p_cost() == current.p_cost()
                });
            if same {
                Verified::Yes
            } else {
                Verified::YesNeedsRehash
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::{PasswordHash, PasswordVerifier as _};

    #[test]
    fn the_default_policy_names_every_failed_rule() {
        let policy = PasswordPolicy::default();
        assert!(policy.violations("Correct1horse").is_empty());
        assert_eq!(
            policy.violations("short"),
            vec!["min:8", "uppercase", "number"]
        );
        assert_eq!(policy.violations("ALLUPPER123"), vec!["lowercase"]);
        let strict = PasswordPolicy {
            require_special: true,
            ..PasswordPolicy::default()
        };
        assert_eq!(strict.violations("Correct1horse"), vec!["special"]);
        assert!(strict.violations("Correct1horse!").is_empty());
    }

    #[tokio::test]
    async fn hashes_are_argon2id_phc_strings_that_verify() {
        let hash = PasswordHasher::new(2)
            .hash("Correct1horse".into())
            .await
            .unwrap();
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        let parsed = PasswordHash::new(&hash).unwrap();
        assert!(argon2().verify_password(b"Correct1horse", &parsed).is_ok());
        assert!(argon2().verify_password(b"wrong", &parsed).is_err());
    }

    #[tokio::test]
    async fn verification_reports_outdated_parameters() {
        let hasher = PasswordHasher::new(2);
        let hash = hasher.hash("Correct1horse".into()).await.unwrap();
        assert_eq!(
            hasher
                .verify("Correct1horse".into(), hash.clone())
                .await
                .unwrap(),
            Verified::Yes
        );
        assert_eq!(
            hasher.verify("wrong".into(), hash).await.unwrap(),
            Verified::No
        );
        let weaker = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(8 * 1024, 1, 1, None).unwrap(),
        )
        .hash_password(b"Correct1horse", &SaltString::generate(&mut OsRng))
        .unwrap()
        .to_string();
        assert_eq!(
            hasher.verify("Correct1horse".into(), weaker).await.unwrap(),
            Verified::YesNeedsRehash
        );
        assert_eq!(
            hasher
                .verify("x".into(), "not a hash".into())
                .await
                .unwrap(),
            Verified::No
        );
    }
}
