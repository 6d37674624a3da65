//! Authentication under attack: parallel guesses never pass the lockout (passwords and second
//! factors), and role or membership changes reach live tokens within seconds, on every host.

use std::time::Duration;

use serde_json::{Value, json};

use crate::auth::tenant_with_user;
use crate::database_test;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, json_with_status, postgres_available,
    spawn_app_with,
};

const PASSWORD: &str = "Correct1horse";
const WRONG: &str = "Wrong1horse";
const LOGIN: &str = "/auth/api/v1/auth/login";
const VERIFY: &str = "/auth/api/v1/auth/mfa/verify";
const ME: &str = "/auth/api/v1/auth/me";
const FAMILIES: &str = "/core/api/v1/families";
const TIMELINE: &str = "/core/api/v1/timeline";
const MAX_ATTEMPTS: u32 = 5;

/// A host on `database` (a fresh one if `None`) with a lockout after five guesses and no rate
/// limits (the auth limit would refuse a burst of logins from one address before the lockout).
async fn spawn(backend: Backend, database: Option<TestDatabase>) -> TestApp {
    spawn_app_with(
        backend,
        AppOptions {
            database,
            configure: Some(Box::new(|config| {
                config.auth.lockout_max_attempts = MAX_ATTEMPTS;
                config.rate_limits.auth_per_minute = 0;
                config.rate_limits.read_per_minute = 0;
                config.rate_limits.write_per_minute = 0;
            })),
            ..AppOptions::default()
        },
    )
    .await
}

async fn login(app: &TestApp, password: &str) -> reqwest::Response {
    app.post_json(
        LOGIN,
        &json!({ "login": "ada@example.com", "password": password }),
    )
    .await
}

/// Every password hashing thread of the host, held by a job that waits for `open`: no password
/// is evaluated meanwhile.
struct HashingGate {
    release: Vec<std::sync::mpsc::Sender<()>>,
    jobs: Vec<tokio::task::JoinHandle<()>>,
}

impl HashingGate {
    async fn close(app: &TestApp) -> Self {
        let hasher = app.state().auth.password_hasher.clone();
        let (started, mut running) = tokio::sync::mpsc::unbounded_channel();
        let (mut release, mut jobs) = (Vec::new(), Vec::new());
        for _ in 0..hasher.threads() {
            let (open, wait) = std::sync::mpsc::channel::<()>();
            release.push(open);
            let (hasher, started) = (hasher.clone(), started.clone());
            jobs.push(tokio::spawn(async move {
                hasher
                    .run(move || {
                        let _ = started.send(());
                        let _ = wait.recv();
                    })
                    .await
                    .unwrap();
            }));
        }
        for _ in 0..hasher.threads() {
            running.recv().await.expect("a hashing thread took its job");
        }
        Self { release, jobs }
    }

    async fn open(self) {
        drop(self.release);
        for job in self.jobs {
            job.await.unwrap();
        }
    }
}

/// Sends each body to `path` at once; every answer arrives on the channel as (index, status).
fn send_all(
    app: &TestApp,
    path: &str,
    bodies: Vec<Value>,
) -> tokio::sync::mpsc::UnboundedReceiver<(usize, u16)> {
    let (answers, received) = tokio::sync::mpsc::unbounded_channel();
    for (index, body) in bodies.into_iter().enumerate() {
        let (client, url, answers) = (app.client.clone(), app.url(path), answers.clone());
        tokio::spawn(async move {
            let status = client.post(url).json(&body).send().await.unwrap().status();
            let _ = answers.send((index, status.as_u16()));
        });
    }
    received
}

async fn receive(
    answers: &mut tokio::sync::mpsc::UnboundedReceiver<(usize, u16)>,
    count: usize,
    what: &str,
) -> Vec<(usize, u16)> {
    let mut received = Vec::new();
    while received.len() < count {
        let answer = tokio::time::timeout(Duration::from_secs(30), answers.recv())
            .await
            .unwrap_or_else(|_| panic!("{what}: only {received:?} answered"))
            .expect("answers");
        received.push(answer);
    }
    received
}

fn count(answers: &[(usize, u16)], status: u16) -> usize {
    answers
        .iter()
        .filter(|(_, answer)| *answer == status)
        .count()
}

database_test!(
    parallel_passwords_beyond_the_limit_are_refused_before_evaluation,
    |backend| async move {
        let app = spawn(backend, None).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        // No password is evaluated until every guess of the burst has been let in or refused.
        let gate = HashingGate::close(&app).await;
        let mut bodies: Vec<Value> = (0..20)
            .map(|_| json!({ "login": "ada@example.com", "password": WRONG }))
            .collect();
        bodies.push(json!({ "login": "ada@example.com", "password": PASSWORD }));
        let mut answers = send_all(&app, LOGIN, bodies);
        // Only five guesses may be evaluated: the sixteen others are refused at once, while
        // the five wait for a hashing thread.
        let refused = receive(
            &mut answers,
            16,
            "guesses beyond the limit are refused before any is evaluated",
        )
        .await;
        assert_eq!(count(&refused, 429), 16, "{refused:?}");
        gate.open().await;
        let evaluated = receive(&mut answers, 5, "the five reserved guesses").await;
        assert_eq!(
            count(&evaluated, 401) + count(&evaluated, 200),
            5,
            "{evaluated:?}"
        );
        let right_one_evaluated = evaluated.iter().any(|(index, _)| *index == 20);
        assert_eq!(
            count(&evaluated, 200),
            usize::from(right_one_evaluated),
            "the right password succeeds exactly when it was among the five: {evaluated:?}"
        );
        if !right_one_evaluated {
            // Five wrong guesses: locked, even for the right password.
            assert_eq!(login(&app, PASSWORD).await.status(), 429);
        }
        app.stop().await;
    }
);

database_test!(
    a_right_password_after_five_reserved_guesses_is_refused,
    |backend| async move {
        let app = spawn(backend, None).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let gate = HashingGate::close(&app).await;
        let wrong = (0..20)
            .map(|_| json!({ "login": "ada@example.com", "password": WRONG }))
            .collect();
        let mut answers = send_all(&app, LOGIN, wrong);
        let refused = receive(&mut answers, 15, "guesses beyond the limit").await;
        assert_eq!(count(&refused, 429), 15, "{refused:?}");
        // Five wrong guesses are reserved and not yet evaluated: the right password now comes
        // too late.
        let right = login(&app, PASSWORD).await;
        assert_eq!(right.status(), 429);
        assert!(right.headers().contains_key("retry-after"));
        gate.open().await;
        let evaluated = receive(&mut answers, 5, "the five reserved guesses").await;
        assert_eq!(count(&evaluated, 401), 5, "{evaluated:?}");
        assert_eq!(login(&app, PASSWORD).await.status(), 429);
        app.stop().await;
    }
);

/// Ada with TOTP on; returns its secret.
async fn enable_totp(app: &TestApp) -> tessera_host::auth::totp::TotpSecret {
    use tessera_host::auth::totp::{TotpSecret, code_at, step_at};
    let body = json_with_status(login(app, PASSWORD).await, 200).await;
    let token = body["data"]["access_token"].as_str().unwrap().to_owned();
    let setup = json_with_status(
        app.post_as("/auth/api/v1/auth/mfa/totp/setup", &token, &json!({}))
            .await,
        200,
    )
    .await;
    let secret = TotpSecret::from_base32(setup["data"]["secret"].as_str().unwrap()).unwrap();
    // A step that is not the current one (the burst below uses the current one).
    let step = step_at(chrono::Utc::now().timestamp()) - 1;
    json_with_status(
        app.post_as(
            "/auth/api/v1/auth/mfa/totp/confirm",
            &token,
            &json!({ "code": code_at(&secret, step) }),
        )
        .await,
        200,
    )
    .await;
    secret
}

async fn mfa_token(app: &TestApp) -> String {
    let body = json_with_status(login(app, PASSWORD).await, 202).await;
    body["data"]["mfa_token"].as_str().unwrap().to_owned()
}

database_test!(
    parallel_second_factors_never_pass_the_limit,
    |backend| async move {
        use tessera_host::auth::totp::{code_at, step_at};
        let app = spawn(backend, None).await;
        tenant_with_user(&app, "acme", "ada@example.com");
        let secret = enable_totp(&app).await;
        // Three challenges (these logins clear nothing that counts below). The right code
        // spends its own challenge, so every answer to `burst_token` is an evaluated code.
        let burst_token = mfa_token(&app).await;
        let right_token = mfa_token(&app).await;
        let later_token = mfa_token(&app).await;
        let step = step_at(chrono::Utc::now().timestamp());
        // A wrong code: far outside the accepted window.
        let wrong_code = code_at(&secret, step - 40);
        let mut bodies: Vec<Value> = (0..20)
            .map(|_| json!({ "mfa_token": burst_token, "method": "totp", "code": wrong_code }))
            .collect();
        bodies.push(json!({
            "mfa_token": right_token,
            "method": "totp",
            "code": code_at(&secret, step),
        }));
        let mut answers = send_all(&app, VERIFY, bodies);
        let burst = receive(&mut answers, 21, "the burst of codes").await;
        assert!(count(&burst, 200) <= 1, "{burst:?}");
        assert_eq!(
            count(&burst, 401) + count(&burst, 200) + count(&burst, 429),
            21,
            "{burst:?}"
        );
        // However the burst interleaved, exactly five wrong codes are ever evaluated: the
        // ones left are refused from the first try on.
        let mut wrong_evaluated = count(&burst, 401);
        assert!(wrong_evaluated <= 5, "{burst:?}");
        loop {
            let status = app
                .post_json(
                    VERIFY,
                    &json!({ "mfa_token": later_token, "method": "totp", "code": wrong_code }),
                )
                .await
                .status();
            if status == 429 {
                break;
            }
            assert_eq!(status, 401);
            wrong_evaluated += 1;
            assert!(
                wrong_evaluated <= 5,
                "more than five wrong codes were evaluated"
            );
        }
        assert_eq!(wrong_evaluated, 5, "{burst:?}");
        let right = app
            .post_json(
                VERIFY,
                &json!({ "mfa_token": later_token, "method": "totp", "code": code_at(&secret, step + 1) }),
            )
            .await;
        assert_eq!(right.status(), 429, "locked, even for a right code");
        assert_eq!(login(&app, PASSWORD).await.status(), 429);
        app.stop().await;
    }
);

/// Calls `request` every 100 ms until it answers `status`, for at most 6 s (the bearer
/// check's cache lives 5 s).
async fn within_six_seconds<F, Fut>(what: &str, status: u16, mut request: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = reqwest::Response>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(6);
    loop {
        let answered = request().await.status().as_u16();
        if answered == status {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: still {answered} after 6 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A family an owner may create (a write only owners may make).
fn family(code: &str) -> Value {
    json!({ "code": code, "label": code, "statuses": ["open", "done"] })
}

/// Changes a membership straight in the database, as another host or the admin CLI would:
/// no cache of the serving hosts hears of it.
async fn change_membership(app: &TestApp, sql: &'static str, user_id: &str) {
    let database = &app.state().database;
    tessera_host::on_pool!(database, pool => sqlx::query(sql)
        .bind(user_id)
        .execute(pool)
        .await
        .map(drop))
    .expect("changing a membership");
}

async fn demotion_and_removal_reach_live_tokens(apps: &[&TestApp]) {
    let first = apps[0];
    let (_, ada) = tenant_with_user(first, "acme", "ada@example.com");
    let body = json_with_status(login(first, PASSWORD).await, 200).await;
    let token = body["data"]["access_token"].as_str().unwrap().to_owned();
    // Every host has seen the token as an owner's (and cached that).
    for (index, app) in apps.iter().enumerate() {
        json_with_status(
            app.post_as(FAMILIES, &token, &family(&format!("before{index}")))
                .await,
            201,
        )
        .await;
        let me = json_with_status(app.get_as(ME, &token).await, 200).await;
        assert_eq!(me["data"]["role"], "owner");
    }

    change_membership(
        first,
        "UPDATE memberships SET role = 'viewer' WHERE user_id = $1",
        &ada,
    )
    .await;
    for (index, app) in apps.iter().enumerate() {
        let body = family(&format!("after{index}"));
        within_six_seconds("a demoted owner's write", 403, || {
            app.post_as(FAMILIES, &token, &body)
        })
        .await;
        let me = json_with_status(app.get_as(ME, &token).await, 200).await;
        assert_eq!(
            me["data"]["role"], "viewer",
            "the token now speaks for a viewer"
        );
        json_with_status(app.get_as(TIMELINE, &token).await, 200).await;
        // The old role never comes back: the token's role is only ever lowered.
        assert_eq!(
            app.post_as(FAMILIES, &token, &family("again"))
                .await
                .status(),
            403
        );
    }

    change_membership(first, "DELETE FROM memberships WHERE user_id = $1", &ada).await;
    for app in apps {
        within_six_seconds("a removed member's read", 401, || {
            app.get_as(TIMELINE, &token)
        })
        .await;
        assert_eq!(app.get_as(ME, &token).await.status(), 401);
    }
}

database_test!(
    a_demoted_or_removed_member_loses_the_role_within_seconds,
    |backend| async move {
        let app = spawn(backend, None).await;
        demotion_and_removal_reach_live_tokens(&[&app]).await;
        app.stop().await;
    }
);

/// Two hosts on one PostgreSQL database: a change made anywhere reaches both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn role_changes_reach_every_host_sharing_the_database() {
    if !postgres_available() {
        return;
    }
    let first = spawn(Backend::Postgres, None).await;
    let second = spawn(Backend::Postgres, Some(first.database.for_another_host())).await;
    // The change goes through one host's database handle; neither host's cache hears of it.
    demotion_and_removal_reach_live_tokens(&[&second, &first]).await;
    second.stop().await;
    first.stop().await;
}
