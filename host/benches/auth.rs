//! Benchmark of the authentication service (`cargo bench -p tessera-host --bench auth`): logins
//! per second on this machine, the p99 latency of a cheap authenticated GET during a burst of
//! logins compared with none, and the cost of verifying a bearer token (signature, claims and
//! the session check, warm cache). One run, printed as Markdown tables for BENCHMARKS.md.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

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

fn percentile(samples: &mut [Duration], fraction: f64) -> Duration {
    samples.sort_unstable();
    samples[((samples.len() - 1) as f64 * fraction).round() as usize]
}

fn micros(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

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

    // 3. The same GET during a burst of logins from LOGIN_CLIENTS clients, which also gives
    // logins per second.
    let logins = Arc::new(AtomicU64::new(0));
    let bursting = Arc::new(AtomicBool::new(true));
    let burst: Vec<_> = emails
        .iter()
        .map(|email| {
            let (logins, bursting, url, email) = (
                logins.clone(),
                bursting.clone(),
                login_url.clone(),
                email.clone(),
            );
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                while bursting.load(Ordering::Relaxed) {
                    if login(&client, &url, &email).await.is_ok() {
                        logins.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let burst_started = Instant::now();
    let mut during = sample_gets(me_url.clone(), token.clone()).await?;
    let remaining = LOGIN_WINDOW.saturating_sub(burst_started.elapsed());
    tokio::time::sleep(remaining).await;
    bursting.store(false, Ordering::Relaxed);
    let burst_elapsed = burst_started.elapsed();
    for task in burst {
        task.await?;
    }
    let logins_per_second = logins.load(Ordering::Relaxed) as f64 / burst_elapsed.as_secs_f64();

    let (quiet_p50, quiet_p99) = (percentile(&mut quiet, 0.5), percentile(&mut quiet, 0.99));
    let (during_p50, during_p99) = (percentile(&mut during, 0.5), percentile(&mut during, 0.99));
    println!("| measurement | p50 | p99 |");
    println!("|---|---|---|");
    println!(
        "| bearer verification (EdDSA signature + claims + session check, warm cache) | {} | {} |",
        micros(percentile(&mut verify, 0.5)),
        micros(percentile(&mut verify, 0.99))
    );
    println!(
        "| `GET /auth/api/v1/auth/me`, no logins running | {} | {} |",
        micros(quiet_p50),
        micros(quiet_p99)
    );
    println!(
        "| `GET /auth/api/v1/auth/me` during a burst of logins ({LOGIN_CLIENTS} clients) | {} | {} |",
        micros(during_p50),
        micros(during_p99)
    );
    println!();
    println!(
        "p99 during the burst / p99 without: {:.2}×",
        during_p99.as_secs_f64() / quiet_p99.as_secs_f64()
    );
    println!(
        "logins per second ({LOGIN_CLIENTS} clients, {:.1} s): {logins_per_second:.1}",
        burst_elapsed.as_secs_f64()
    );

    stop.cancel();
    server.await??;
    let _ = std::fs::remove_dir_all(&data_dir);
    Ok(())
}
