//! Benchmark of the authentication service (`cargo bench -p tessera-host --bench auth`): sign-ins
//! per second on this machine and their latency, with a password (argon2id) and with a passkey
//! (passwordless: the discoverable-credential ceremony, the software authenticator of the tests
//! signing as the browser would), the p99 latency of a cheap authenticated GET during each burst
//! compared with none, and the cost of verifying a bearer token (signature, claims and the
//! session check, warm cache). One run, printed as Markdown tables for BENCHMARKS.md.

// The software passkey of the tests (their clone helper is not used here).
#[allow(dead_code)]
#[path = "../../tests/it/soft_passkey.rs"]
mod soft_passkey;
#[path = "support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use soft_passkey::SoftPasskey;
use support::{micros, percentile};
use tessera_host::auth::password::{PasswordHasher, PasswordPolicy};
use tessera_host::config::{Config, ServeArgs, StorageArgs};
use tessera_host::server::Application;
use tessera_host::tenancy::{NewUser, Role, TenancyService, UserType};

/// The `tessera` binary's allocator, so the benchmark measures what the binary runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PASSWORD: &str = "Correct1horse";
const LOGIN_WINDOW: Duration = Duration::from_secs(5);
const LOGIN_CLIENTS: usize = 8;
const GET_SAMPLES: usize = 2000;
const VERIFY_SAMPLES: usize = 20_000;

async fn login(client: &reqwest::Client, url: &str, email: &str) -> anyhow::Result<String> {
    let response = client
        .post(url)
        .json(&serde_json::json!({ "login": email, "password": PASSWORD }))
        .send()
        .await?;
    anyhow::ensure!(
        response.status() == 200,
        "login answered {}",
        response.status()
    );
    let body: serde_json::Value = response.json().await?;
    Ok(body["data"]["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// Sequential authenticated GETs from a task on the runtime; the latency of each.
async fn sample_gets(url: String, token: String) -> anyhow::Result<Vec<Duration>> {
    tokio::spawn(async move {
        let client = reqwest::Client::new();
        let mut samples = Vec::with_capacity(GET_SAMPLES);
        for _ in 0..GET_SAMPLES {
            let started = Instant::now();
            let response = client.get(&url).bearer_auth(&token).send().await?;
            anyhow::ensure!(
                response.status() == 200,
                "GET answered {}",
                response.status()
            );
            response.bytes().await?;
            samples.push(started.elapsed());
        }
        Ok(samples)
    })
    .await?
}

/// One client's sign-in, repeated during a burst.
type SignIn = Box<dyn FnMut() -> BoxFuture<'static, anyhow::Result<()>> + Send>;

/// What a burst of sign-ins measured.
struct Burst {
    per_second: f64,
    /// Each successful sign-in's latency.
    sign_ins: Vec<Duration>,
    /// The cheap GET's latencies meanwhile.
    gets: Vec<Duration>,
}

/// Runs every client's sign-in in a loop for [`LOGIN_WINDOW`] while sampling the GET.
async fn burst(clients: Vec<SignIn>, me_url: &str, token: &str) -> anyhow::Result<Burst> {
    let bursting = Arc::new(AtomicBool::new(true));
    let failures = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut sign_in| {
            let (bursting, failures) = (bursting.clone(), failures.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while bursting.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    match sign_in().await {
                        Ok(()) => latencies.push(started.elapsed()),
                        Err(_) => {
                            failures.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                latencies
            })
        })
        .collect();
    let started = Instant::now();
    let gets = sample_gets(me_url.to_owned(), token.to_owned()).await?;
    tokio::time::sleep(LOGIN_WINDOW.saturating_sub(started.elapsed())).await;
    bursting.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed();
    let mut sign_ins = Vec::new();
    for task in tasks {
        sign_ins.extend(task.await?);
    }
    let failed = failures.load(Ordering::Relaxed);
    anyhow::ensure!(failed == 0, "{failed} sign-ins failed during the burst");
    Ok(Burst {
        per_second: sign_ins.len() as f64 / elapsed.as_secs_f64(),
        sign_ins,
        gets,
    })
}

/// POSTs `body` (as the bearer of `token`, if any) and reads the 2xx answer's JSON.
async fn post(
    client: &reqwest::Client,
    url: String,
    token: Option<&str>,
    body: &Value,
) -> anyhow::Result<Value> {
    let request = client.post(url).json(body);
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    Ok(request.send().await?.error_for_status()?.json().await?)
}

/// Registers `authenticator`'s passkey for the bearer of `token`.
async fn register_passkey(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    authenticator: &mut SoftPasskey,
) -> anyhow::Result<()> {
    let register = format!("{base}/auth/api/v1/auth/mfa/webauthn/register");
    let started = post(client, format!("{register}/start"), Some(token), &json!({})).await?;
    let credential = authenticator.create(&started["data"]["options"]).await;
    let body = json!({ "credential": credential });
    post(client, format!("{register}/finish"), Some(token), &body).await?;
    Ok(())
}

/// One passwordless sign-in: start, the authenticator's assertion, finish.
async fn passkey_sign_in(
    client: &reqwest::Client,
    base: &str,
    authenticator: &mut SoftPasskey,
) -> anyhow::Result<()> {
    let passkey = format!("{base}/auth/api/v1/auth/passkey");
    let started = post(client, format!("{passkey}/start"), None, &json!({})).await?;
    let credential = authenticator.get(&started["data"]["options"]).await;
    let body = json!({ "challenge_id": started["data"]["challenge_id"], "credential": credential });
    post(client, format!("{passkey}/finish"), None, &body).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let data_dir = std::env::temp_dir().join(format!("tessera-bench-{}", uuid::Uuid::new_v4()));
    let args = ServeArgs {
        storage: StorageArgs {
            data_dir: data_dir.clone(),
            database_url: None,
            plugins_dir: data_dir.join("plugins"),
        },
        listen: "127.0.0.1:0".parse()?,
        public_url: None,
        max_body_bytes: 1024 * 1024,
    };
    let mut config = Config::from_serve_args(args)?;
    // The benchmark measures the service, not the rate limiter.
    config.rate_limits.auth_per_minute = 0;
    config.rate_limits.read_per_minute = 0;
    config.auth.max_active_sessions = 1_000_000;
    let application = Application::build(config).await?;
    let address = application.local_addr();
    let state = application.state().clone();
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone();
    let server = tokio::spawn(application.run_until(async move { stopped.cancelled().await }));

    let tenancy = TenancyService::new(
        state.database.clone(),
        PasswordPolicy::default(),
        PasswordHasher::new(1),
        state.orchestrator.clone(),
    );
    tenancy.create_tenant("bench", "Bench").await?;
    let emails: Vec<String> = (0..LOGIN_CLIENTS)
        .map(|n| format!("user{n}@example.com"))
        .collect();
    for email in &emails {
        tenancy
            .create_user(NewUser {
                tenant_slug: "bench".into(),
                email: email.clone(),
                password: PASSWORD.into(),
                role: Role::Editor,
                user_type: UserType::User,
                first_name: String::new(),
                last_name: String::new(),
            })
            .await?;
    }
    let login_url = format!("http://{address}/auth/api/v1/auth/login");
    let me_url = format!("http://{address}/auth/api/v1/auth/me");
    let client = reqwest::Client::new();
    let token = login(&client, &login_url, &emails[0]).await?;

    // 1. The cost of verifying a bearer token: signature and claims, then the session check
    // (warm cache), as the extractor does.
    let claims = state
        .auth
        .access_tokens
        .verify(&token)
        .await
        .ok_or_else(|| anyhow::anyhow!("the token does not verify"))?;
    state.auth.sessions.is_active(&claims.sid).await?;
    let mut verify = Vec::with_capacity(VERIFY_SAMPLES);
    for _ in 0..VERIFY_SAMPLES {
        let started = Instant::now();
        let claims = state
            .auth
            .access_tokens
            .verify(&token)
            .await
            .expect("valid");
        assert!(state.auth.sessions.is_active(&claims.sid).await?);
        verify.push(started.elapsed());
    }

    // 2. A cheap authenticated GET, alone.
    for _ in 0..200 {
        client.get(&me_url).bearer_auth(&token).send().await?;
    }
    let mut quiet = sample_gets(me_url.clone(), token.clone()).await?;

    // 3. The same GET during a burst of password logins from LOGIN_CLIENTS clients, which also
    // gives logins per second and their latency.
    let password_logins = emails
        .iter()
        .map(|email| {
            let (client, url, email) = (reqwest::Client::new(), login_url.clone(), email.clone());
            Box::new(move || {
                let (client, url, email) = (client.clone(), url.clone(), email.clone());
                Box::pin(async move { login(&client, &url, &email).await.map(drop) })
                    as BoxFuture<'static, anyhow::Result<()>>
            }) as SignIn
        })
        .collect();
    let password = burst(password_logins, &me_url, &token).await?;

    // 4. The same with passkeys: each user registers one, then signs in without a password.
    let base = format!("http://{address}");
    let mut passkey_sign_ins = Vec::with_capacity(emails.len());
    for email in &emails {
        let bearer = login(&client, &login_url, email).await?;
        let mut authenticator = SoftPasskey::new(address.port());
        register_passkey(&client, &base, &bearer, &mut authenticator).await?;
        let authenticator = Arc::new(tokio::sync::Mutex::new(authenticator));
        let (client, base) = (reqwest::Client::new(), base.clone());
        passkey_sign_ins.push(Box::new(move || {
            let (client, base, authenticator) =
                (client.clone(), base.clone(), authenticator.clone());
            Box::pin(async move {
                passkey_sign_in(&client, &base, &mut *authenticator.lock().await).await
            }) as BoxFuture<'static, anyhow::Result<()>>
        }) as SignIn);
    }
    let passkeys = burst(passkey_sign_ins, &me_url, &token).await?;

    println!("| measurement | p50 | p99 |");
    println!("|---|---|---|");
    println!(
        "| bearer verification (EdDSA signature + claims + session check, warm cache) | {} | {} |",
        micros(percentile(&mut verify, 0.5)),
        micros(percentile(&mut verify, 0.99))
    );
    let quiet_p99 = percentile(&mut quiet, 0.99);
    println!(
        "| `GET /auth/api/v1/auth/me`, no sign-ins running | {} | {} |",
        micros(percentile(&mut quiet, 0.5)),
        micros(quiet_p99)
    );
    for (name, burst) in [
        ("password logins", &password),
        ("passwordless passkey sign-ins", &passkeys),
    ] {
        let mut gets = burst.gets.clone();
        println!(
            "| `GET /auth/api/v1/auth/me` during {name} ({LOGIN_CLIENTS} clients) | {} | {} |",
            micros(percentile(&mut gets, 0.5)),
            micros(percentile(&mut gets, 0.99))
        );
    }
    println!();
    println!(
        "| sign-in ({LOGIN_CLIENTS} clients, {} s each) | per second | p50 | p99 | `/me` p99 during / without |",
        LOGIN_WINDOW.as_secs()
    );
    println!("|---|---|---|---|---|");
    for (name, mut burst) in [
        ("password (`POST …/login`, argon2id)", password),
        (
            "passkey, passwordless (`…/passkey/start` + `…/passkey/finish`)",
            passkeys,
        ),
    ] {
        let gets_p99 = percentile(&mut burst.gets, 0.99);
        println!(
            "| {name} | {:.1} | {} | {} | {:.2}× |",
            burst.per_second,
            micros(percentile(&mut burst.sign_ins, 0.5)),
            micros(percentile(&mut burst.sign_ins, 0.99)),
            gets_p99.as_secs_f64() / quiet_p99.as_secs_f64()
        );
    }

    stop.cancel();
    server.await??;
    let _ = std::fs::remove_dir_all(&data_dir);
    Ok(())
}
