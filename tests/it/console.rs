//! The web console in headless Chromium, driven over WebDriver (chromedriver and
//! `fantoccini`) against a real host with the seven engines and a real HTTPS webhook receiver:
//! an owner signs in with a password and TOTP, adds a webhook, sees its failed deliveries,
//! replays a dead letter once the receiver recovers, creates a member and changes its role,
//! and reads the audit log (the chat engine's audited operations beside sign-ins and members);
//! a viewer sees no admin action; a session ended elsewhere returns to sign-in and back to the same place;
//! a webhook's page shows its deliveries as they happen (the chat engine's realtime topic),
//! without a reload, resuming after a dropped connection.
//! Every main screen is checked with axe-core (no serious or critical violation), at 360 px
//! wide (nothing wider than the window), and written as a screenshot to
//! `$CARGO_TARGET_DIR/console-screenshots/`.
//!
//! Chromium and chromedriver come from Debian's `chromium` and `chromium-driver` (`.ci/run` and
//! `cargo xtask test` install them when missing); axe-core from npm, pinned in
//! `tests/console/package.json`, installed under the target dir on first use.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use tessera_host::auth::totp::{TotpSecret, code_at, step_at};
use tessera_host::config::{Config, parse_retry_schedule};

use crate::components;
use crate::helpers::{
    AppOptions, Backend, TestApp, TestDatabase, eventually, json_with_status, loopback_listener,
    run_admin, serve_https, spawn_app_with, without_rate_limits,
};

const OWNER: &str = "owner@example.com";
const VIEWER: &str = "viewer@example.com";
const PASSWORD: &str = "Correct-Horse-42";

/// Where Debian puts them.
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

// ---------------------------------------------------------------------------------------------
// The browser
// ---------------------------------------------------------------------------------------------

/// A headless Chromium through its own chromedriver; both end when it drops.
struct Browser {
    client: Client,
    driver: Child,
    base_url: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The colour scheme the browser asks pages for (`prefers-color-scheme`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Light,
    Dark,
}

impl Browser {
    async fn start(base_url: &str) -> Self {
        Self::start_in(base_url, Scheme::Light).await
    }

    async fn start_in(base_url: &str, scheme: Scheme) -> Self {
        assert!(
            Path::new(CHROMEDRIVER).exists() && Path::new(CHROMIUM).exists(),
            "the console's browser tests need Debian's chromium and chromium-driver \
             (apt-get install chromium chromium-driver; .ci/run and cargo xtask test install them)"
        );
        let (listener, port) = loopback_listener();
        drop(listener);
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting chromedriver");
        let webdriver = format!("http://127.0.0.1:{port}");
        let mut args = vec![
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--disable-gpu",
            "--window-size=1280,900",
            "--lang=en-US",
        ];
        if scheme == Scheme::Dark {
            // Chromium then answers `prefers-color-scheme: dark`.
            args.push("--force-dark-mode");
        }
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
        });
        let capabilities = capabilities.as_object().unwrap().clone();
        let client = eventually(20, "chromedriver to accept a session", || {
            let (webdriver, capabilities) = (webdriver.clone(), capabilities.clone());
            async move {
                ClientBuilder::new(HttpConnector::new())
                    .capabilities(capabilities)
                    .connect(&webdriver)
                    .await
                    .ok()
            }
        })
        .await;
        Self {
            client,
            driver,
            base_url: base_url.to_owned(),
        }
    }

    /// Opens the console at `hash` (e.g. `#/audit`).
    async fn open(&self, hash: &str) {
        self.client
            .goto(&format!("{}/console{hash}", self.base_url))
            .await
            .unwrap();
    }

    /// Goes to `hash` inside the loaded console (no reload: the session stays).
    async fn go(&self, hash: &str) {
        // The state is reset first, so `ready` waits for this navigation's screen; going to
        // the address already shown draws it again, as a click on its menu item would.
        self.client
            .execute(
                "const app = document.getElementById('app');
                 app.dataset.state = 'navigating';
                 const target = '#' + arguments[0];
                 if (window.location.hash === target) {
                     window.dispatchEvent(new HashChangeEvent('hashchange'));
                 } else {
                     window.location.hash = target;
                 }",
                vec![json!(hash.trim_start_matches('#'))],
            )
            .await
            .unwrap();
        self.ready().await;
    }

    /// Waits until the console has drawn a screen (or the sign-in screen).
    async fn ready(&self) {
        self.wait_for("#app[data-state='ready'], #app[data-state='signin']")
            .await;
    }

    /// Waits for the element `css` selects.
    async fn wait_for(&self, css: &str) -> fantoccini::elements::Element {
        self.wait_for_element(Locator::Css(css), css).await
    }

    /// Waits (15 s at most) for the element `locator` finds; `what` names it if it never comes.
    async fn wait_for_element(
        &self,
        locator: Locator<'_>,
        what: &str,
    ) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(Duration::from_secs(15))
            .for_element(locator)
            .await
            .unwrap_or_else(|error| panic!("no {what} on the page: {error}"))
    }

    /// Waits for an element whose text contains `text`.
    async fn wait_for_text(&self, text: &str) -> fantoccini::elements::Element {
        let xpath = format!(
            "//*[contains(normalize-space(.), {})][not(*[contains(normalize-space(.), {0})])]",
            xpath_literal(text)
        );
        self.wait_for_element(Locator::XPath(&xpath), &format!("{text:?}"))
            .await
    }

    async fn heading(&self) -> String {
        self.client
            .find(Locator::Css("main h1"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Types `value` into the field labelled `label`.
    async fn fill(&self, label: &str, value: &str) {
        let xpath = format!("//label[normalize-space(.)={}]", xpath_literal(label));
        let label_element = self
            .wait_for_element(Locator::XPath(&xpath), &format!("field labelled {label:?}"))
            .await;
        let id = label_element.attr("for").await.unwrap().unwrap();
        let input = self.client.find(Locator::Id(&id)).await.unwrap();
        input.clear().await.unwrap();
        input.send_keys(value).await.unwrap();
    }

    /// Clicks the button named `name` (its text or its `aria-label`).
    async fn click(&self, name: &str) {
        let literal = xpath_literal(name);
        let xpath = format!("//button[normalize-space(.)={literal} or @aria-label={literal}]");
        let button = self
            .wait_for_element(Locator::XPath(&xpath), &format!("button {name:?}"))
            .await;
        button.click().await.unwrap();
    }

    /// The texts of the elements `css` selects, in page order.
    async fn texts(&self, css: &str) -> Vec<String> {
        let mut texts = Vec::new();
        for element in self.client.find_all(Locator::Css(css)).await.unwrap() {
            texts.push(element.text().await.unwrap());
        }
        texts
    }

    async fn buttons(&self) -> Vec<String> {
        self.texts("main button").await
    }

    async fn menu(&self) -> Vec<String> {
        self.texts("nav.main a").await
    }

    /// Writes a screenshot of the screen as `name.png` into the screenshots folder.
    async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        let folder = screenshots_folder();
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join(format!("{name}.png")), png).unwrap();
    }

    /// axe-core's serious and critical violations on the screen, as `id: help (targets)`.
    async fn accessibility_violations(&self) -> Vec<String> {
        let axe = std::fs::read_to_string(axe_core()).unwrap();
        // Injected through WebDriver, not the page: the console's CSP allows no inline script,
        // and WebDriver's scripts are not subject to it.
        self.client.execute(&axe, vec![]).await.unwrap();
        let results = self
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 axe.run(document, { resultTypes: ['violations'] })
                    .then((results) => done(results.violations.map((violation) => ({
                        id: violation.id, impact: violation.impact, help: violation.help,
                        targets: violation.nodes.map((node) => node.target.join(' ')) }))))
                    .catch((error) => done([{ id: 'axe-failed', impact: 'critical', help: String(error), targets: [] }]));",
                vec![],
            )
            .await
            .unwrap();
        results
            .as_array()
            .unwrap()
            .iter()
            .filter(|violation| {
                matches!(violation["impact"].as_str(), Some("serious" | "critical"))
            })
            .map(|violation| {
                format!(
                    "{}: {} ({})",
                    violation["id"], violation["help"], violation["targets"]
                )
            })
            .collect()
    }

    /// Whether anything on the screen is wider than a 360 px window.
    async fn overflows_at_360(&self) -> bool {
        self.client.set_window_size(360, 800).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let overflow = self
            .client
            .execute(
                "return document.documentElement.scrollWidth > document.documentElement.clientWidth",
                vec![],
            )
            .await
            .unwrap();
        self.client.set_window_size(1280, 900).await.unwrap();
        overflow.as_bool().unwrap()
    }

    /// Checks the screen like a person would: axe-core, 360 px, then a screenshot.
    async fn check_screen(&self, name: &str) {
        let violations = self.accessibility_violations().await;
        assert!(violations.is_empty(), "{name}: {violations:#?}");
        assert!(
            !self.overflows_at_360().await,
            "{name} is wider than 360 px"
        );
        self.screenshot(name).await;
    }

    /// Signs in with the password, and the TOTP code of `secret` when given.
    async fn sign_in(&self, login: &str, totp: Option<(&TotpSecret, i64)>) {
        self.fill("E-mail", login).await;
        self.fill("Password", PASSWORD).await;
        self.click("Sign in").await;
        if let Some((secret, step)) = totp {
            self.fill("Authenticator app code", &code_at(secret, step))
                .await;
            self.click("Confirm").await;
        }
        self.wait_for("#app[data-state='ready'] nav.main").await;
    }
}

/// `text` as an XPath string literal.
fn xpath_literal(text: &str) -> String {
    if text.contains('\'') {
        format!("\"{text}\"")
    } else {
        format!("'{text}'")
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// The test's output folder for screenshots.
fn screenshots_folder() -> PathBuf {
    target_dir().join("console-screenshots")
}

/// axe-core's browser build, installed with `npm ci` from `tests/console` on first use.
fn axe_core() -> PathBuf {
    static INSTALLED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let tools = target_dir().join("console-tools");
            let script = tools.join("node_modules/axe-core/axe.min.js");
            let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/console");
            let lock = std::fs::read(sources.join("package-lock.json")).unwrap();
            let current = std::fs::read(tools.join("package-lock.json")).ok();
            if !script.exists() || current.as_ref() != Some(&lock) {
                std::fs::create_dir_all(&tools).unwrap();
                for file in ["package.json", "package-lock.json"] {
                    std::fs::copy(sources.join(file), tools.join(file)).unwrap();
                }
                let status = Command::new("npm")
                    .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
                    .current_dir(&tools)
                    .status()
                    .expect("npm, to install axe-core for the console's browser tests");
                assert!(status.success(), "npm ci of tests/console failed");
            }
            script
        })
        .clone()
}

// ---------------------------------------------------------------------------------------------
// The host, its tenant and a webhook receiver
// ---------------------------------------------------------------------------------------------

/// An HTTPS receiver answering every delivery with the status it is told.
struct Receiver {
    port: u16,
    answer: Arc<AtomicU16>,
    certificate: crate::helpers::CertificateFile,
}

impl Receiver {
    fn start() -> Self {
        let answer = Arc::new(AtomicU16::new(500));
        let routes = Router::new().route(
            "/{*path}",
            post({
                let answer = answer.clone();
                move || {
                    let answer = answer.clone();
                    async move { StatusCode::from_u16(answer.load(Ordering::SeqCst)).unwrap() }
                }
            }),
        );
        let (port, certificate) = serve_https(routes);
        Self {
            port,
            answer,
            certificate,
        }
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}/hooks/console", self.port)
    }
}

/// A host with the seven engines, webhooks retried quickly into the dead letter queue, and a
/// tenant `acme` with an owner and a viewer.
async fn console_host(receiver: &Receiver) -> TestApp {
    let database = TestDatabase::new(Backend::Sqlite).await;
    components::install_engines(&database.data_dir.join("plugins"), &components::ENGINES);
    let extra_ca = receiver.certificate.0.clone();
    let configure = move |config: &mut Config| {
        without_rate_limits(config);
        config.webhook.retry_schedule = parse_retry_schedule("200ms,200ms,200ms,200ms").unwrap();
        config.usage.flush_interval = Duration::from_millis(200);
        config.outbound.allow_private_targets = true;
        config.outbound.extra_ca = Some(extra_ca);
    };
    let app = spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            database: Some(database),
            configure: Some(Box::new(configure)),
            ..AppOptions::default()
        },
    )
    .await;
    run_admin(
        &app.database,
        &["create-tenant", "--slug", "acme", "--name", "Acme"],
    )
    .json();
    for (email, role) in [(OWNER, "owner"), (VIEWER, "viewer")] {
        run_admin(
            &app.database,
            &[
                "create-user",
                "--tenant",
                "acme",
                "--email",
                email,
                "--password",
                PASSWORD,
                "--role",
                role,
            ],
        )
        .json();
    }
    app
}

/// A fresh access token of `login` through the API (another client of the same account).
async fn api_token(app: &TestApp, login: &str, totp: Option<(&TotpSecret, i64)>) -> String {
    let response = app
        .post_json(
            "/auth/api/v1/auth/login",
            &json!({ "login": login, "password": PASSWORD }),
        )
        .await;
    let body: Value = response.json().await.unwrap();
    let body = match totp {
        None => body,
        Some((secret, step)) => {
            let verify = json!({
                "mfa_token": body["data"]["mfa_token"], "method": "totp",
                "code": code_at(secret, step),
            });
            json_with_status(
                app.post_json("/auth/api/v1/auth/mfa/verify", &verify).await,
                200,
            )
            .await
        }
    };
    body["data"]["access_token"].as_str().unwrap().to_owned()
}

// ---------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn an_owner_manages_webhooks_and_reads_the_audit_log_and_a_viewer_sees_no_admin_action() {
    let receiver = Receiver::start();
    let app = console_host(&receiver).await;
    let browser = Browser::start(&app.url("")).await;

    // The first screen: sign-in, interactive quickly. Loaded five times (the first with an
    // empty cache); the times are recorded for BENCHMARKS.md, not asserted (a timed test on a
    // shared machine would only measure the machine).
    let mut loads = Vec::new();
    for _ in 0..5 {
        browser.open("").await;
        browser.ready().await;
        loads.push(
            browser
                .client
                .execute(
                    "const navigation = performance.getEntriesByType('navigation')[0];
                     const resources = performance.getEntriesByType('resource')
                        .filter((entry) => entry.name.includes('/console/'));
                     return { interactive_ms: Number(document.getElementById('app').dataset.interactiveMs),
                              dom_content_loaded_ms: navigation.domContentLoadedEventEnd,
                              transferred_bytes: navigation.transferSize
                                + resources.reduce((sum, entry) => sum + entry.transferSize, 0),
                              encoded_bytes: navigation.encodedBodySize
                                + resources.reduce((sum, entry) => sum + entry.encodedBodySize, 0) };",
                    vec![],
                )
                .await
                .unwrap(),
        );
    }
    let mut interactive: Vec<f64> = loads
        .iter()
        .map(|load| load["interactive_ms"].as_f64().unwrap())
        .collect();
    interactive.sort_by(f64::total_cmp);
    let timing = json!({ "loads": loads, "median_interactive_ms": interactive[2] });
    std::fs::create_dir_all(screenshots_folder()).unwrap();
    std::fs::write(
        screenshots_folder().join("first-screen.json"),
        serde_json::to_string_pretty(&timing).unwrap(),
    )
    .unwrap();
    println!("console first screen: {timing}");
    assert!(interactive[0] > 0.0, "{timing}");
    // The whole first load, compressed, within the budget (under 500 KB).
    assert!(
        loads[0]["encoded_bytes"].as_f64().unwrap() < 500.0 * 1024.0,
        "{timing}"
    );
    assert_eq!(browser.heading().await, "Sign in to Tessera");
    browser.check_screen("sign-in").await;

    // A wrong password: the API's message, on the same screen.
    browser.fill("E-mail", OWNER).await;
    browser.fill("Password", "not the password").await;
    browser.click("Sign in").await;
    browser.wait_for_text("Wrong e-mail or password.").await;

    // Password, then TOTP set up on the account page.
    browser.sign_in(OWNER, None).await;
    assert_eq!(browser.heading().await, "Overview");
    let menu = browser.menu().await;
    for item in [
        "Overview",
        "Members",
        "Webhooks",
        "Dead letters",
        "Workspaces",
        "Workflows",
        "Engines",
        "Usage",
        "Audit log",
        "Account",
    ] {
        assert!(menu.contains(&item.to_owned()), "{item} in {menu:?}");
    }
    browser.check_screen("overview").await;
    browser.go("#/account").await;
    browser.click("Set up an authenticator app").await;
    let secret_text = browser
        .wait_for("[data-testid='totp-secret']")
        .await
        .text()
        .await
        .unwrap();
    let secret = TotpSecret::from_base32(secret_text.trim()).unwrap();
    let step = step_at(chrono::Utc::now().timestamp());
    browser
        .fill("Code from the app", &code_at(&secret, step - 1))
        .await;
    browser.click("Turn on").await;
    browser.wait_for("[data-testid='recovery-codes'] li").await;
    browser.check_screen("account").await;

    // Signed out, then in again with the password and the app's code.
    browser.click("Sign out").await;
    browser.wait_for_text("You have signed out.").await;
    browser.sign_in(OWNER, Some((&secret, step))).await;
    assert_eq!(
        browser.heading().await,
        "Account",
        "back where the owner signed out"
    );

    // A webhook to a receiver that refuses.
    browser.go("#/webhooks").await;
    browser
        .fill("Receiver URL", "http://insecure.example.com/hook")
        .await;
    browser.click("Add webhook").await;
    // The API's 422, next to its field.
    let field_error = browser
        .wait_for("[data-field='url'] .field-error:not([hidden])")
        .await;
    assert!(!field_error.text().await.unwrap().is_empty());
    browser.fill("Receiver URL", &receiver.url()).await;
    browser.click("Add webhook").await;
    let shown_secret = browser
        .wait_for("[data-testid='webhook-secret']")
        .await
        .text()
        .await
        .unwrap();
    assert!(shown_secret.len() >= 32);
    browser.check_screen("webhooks").await;

    // A message in chat (another client of the owner's) fails every attempt into the dead
    // letter queue.
    let token = api_token(&app, OWNER, Some((&secret, step + 1))).await;
    let conversation = crate::chat::general_conversation(&app, &token).await;
    json_with_status(
        app.post_as(
            &format!("/chat/api/v1/conversations/{conversation}/messages"),
            &token,
            &json!({ "body": "hello from the console test" }),
        )
        .await,
        201,
    )
    .await;
    eventually(30, "the delivery in the dead letter queue", || async {
        let letters: Value = app
            .get_as("/chat/api/v1/webhooks/dlq", &token)
            .await
            .json()
            .await
            .unwrap();
        (!letters["data"].as_array().unwrap().is_empty()).then_some(())
    })
    .await;

    // The webhook's page shows the failed deliveries and the receiver's answer.
    browser.go("#/webhooks").await;
    let link = browser.wait_for_text(&receiver.url()).await;
    link.click().await.unwrap();
    browser.ready().await;
    browser.wait_for_text("failed").await;
    browser.wait_for_text("500").await;
    browser.check_screen("webhook").await;

    // The receiver recovers; the dead letter is replayed from the console.
    receiver.answer.store(204, Ordering::SeqCst);
    browser.go("#/dead-letters").await;
    browser.wait_for_text("message.created").await;
    browser.check_screen("dead-letters").await;
    let replay = browser
        .client
        .find(Locator::XPath("//button[normalize-space(.)='Replay']"))
        .await
        .unwrap();
    replay.click().await.unwrap();
    browser.wait_for_text("Replayed: delivered").await;

    // A new member, then a role changed in place; a bad e-mail is refused beside its field.
    browser.go("#/members").await;
    browser.fill("Their e-mail", "not an address").await;
    browser.fill("First password", PASSWORD).await;
    browser.click("Add member").await;
    browser
        .wait_for("[data-field='email'] .field-error:not([hidden])")
        .await;
    browser.fill("Their e-mail", "grace@example.com").await;
    browser.fill("First name", "Grace").await;
    browser.fill("First password", PASSWORD).await;
    browser.click("Add member").await;
    browser
        .wait_for_text("grace@example.com added as editor.")
        .await;
    let role = browser
        .client
        .find(Locator::Css(
            "select[aria-label='Role of grace@example.com']",
        ))
        .await
        .unwrap();
    role.select_by_value("viewer").await.unwrap();
    browser
        .wait_for_text("grace@example.com is now viewer.")
        .await;
    browser.check_screen("members").await;
    let members: Value = app
        .get_as("/auth/api/v1/members", &token)
        .await
        .json()
        .await
        .unwrap();
    let grace = members["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|member| member["email"] == "grace@example.com")
        .expect("the new member, through the API");
    assert_eq!(grace["role"], "viewer");

    // The member's access: disabled (after the console asks), enabled again, second factors
    // reset; each said on the page.
    browser.click("Disable for grace@example.com").await;
    browser.client.accept_alert().await.unwrap();
    browser
        .wait_for_text("grace@example.com is disabled.")
        .await;
    browser.click("Enable for grace@example.com").await;
    browser.client.accept_alert().await.unwrap();
    browser
        .wait_for_text("grace@example.com can sign in again.")
        .await;
    browser.click("Reset MFA for grace@example.com").await;
    browser.client.accept_alert().await.unwrap();
    browser
        .wait_for_text("grace@example.com had no second factor to remove.")
        .await;

    // A workspace added, then switched to from the header: the overview says where.
    browser.go("#/workspaces").await;
    browser.fill("Workspace name", "Research").await;
    browser.click("Add workspace").await;
    browser.wait_for_text("Workspace Research added.").await;
    browser.check_screen("workspaces").await;
    let context = browser.wait_for("[data-testid='context']").await;
    let research = browser
        .client
        .find(Locator::XPath(
            "//select[@data-testid='context']/option[contains(., 'Research')]",
        ))
        .await
        .unwrap();
    let research_value = research.attr("value").await.unwrap().unwrap();
    browser
        .client
        .execute(
            "document.getElementById('app').dataset.state = 'navigating';",
            vec![],
        )
        .await
        .unwrap();
    context.select_by_value(&research_value).await.unwrap();
    browser.ready().await;
    assert_eq!(browser.heading().await, "Overview");
    browser.wait_for_text("Now in").await;
    let facts = browser.texts("dl.facts dd").await;
    assert!(facts.contains(&"Research".to_owned()), "{facts:?}");

    // The owner's sessions: this browser's and the API client's; the other one ended here.
    browser.go("#/account").await;
    browser.wait_for_text("this session").await;
    let sessions = browser
        .texts("#app section[aria-labelledby='account-sessions'] tbody tr")
        .await;
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    browser.check_screen("account-sessions").await;
    let end_other = browser
        .wait_for("button[aria-label^='End the session']")
        .await;
    end_other.click().await.unwrap();
    browser.wait_for_text("Session ended.").await;
    eventually(10, "the API client's session ended", || async {
        (app.get_as("/auth/api/v1/auth/me", &token).await.status() == 401).then_some(())
    })
    .await;

    // The audit log: the sign-ins, the second factor, the member created and its role
    // changed, the webhook created and the dead letter replayed (the chat engine's audited
    // operations); filtered and paged in the address.
    browser.go("#/audit").await;
    browser.wait_for_text("member.created").await;
    browser.wait_for_text("member.role_changed").await;
    browser.wait_for_text("mfa.enabled").await;
    browser.wait_for_text("mfa.succeeded").await;
    browser.wait_for_text("chat.webhook.created").await;
    browser.wait_for_text("chat.dead_letter.replayed").await;
    browser.check_screen("audit").await;
    let source = browser
        .client
        .find(Locator::Id("audit-engine"))
        .await
        .unwrap();
    source.select_by_value("chat").await.unwrap();
    browser.click("Filter").await;
    browser.ready().await;
    assert!(
        browser
            .client
            .current_url()
            .await
            .unwrap()
            .as_str()
            .ends_with("#/audit?engine=chat")
    );
    browser.wait_for_text("chat.dead_letter.replayed").await;
    let rows = browser.texts("#app tbody tr").await;
    assert_eq!(
        rows.len(),
        2,
        "the webhook created and the replay: {rows:?}"
    );
    assert!(
        rows.iter().all(|row| row.contains("chat engine")),
        "{rows:?}"
    );
    browser.check_screen("audit-engine").await;
    let source = browser
        .client
        .find(Locator::Id("audit-engine"))
        .await
        .unwrap();
    source.select_by_value("").await.unwrap();
    let select = browser
        .client
        .find(Locator::Id("audit-event"))
        .await
        .unwrap();
    select.select_by_value("login.failed").await.unwrap();
    browser.click("Filter").await;
    browser.ready().await;
    assert!(
        browser
            .client
            .current_url()
            .await
            .unwrap()
            .as_str()
            .ends_with("#/audit?event=login.failed")
    );
    browser.wait_for_text("login.failed").await;

    // The tenant's usage: the chat engine's calls of this test counted (flushed every 200 ms).
    eventually(15, "the chat engine's calls on the usage page", || async {
        browser.go("#/usage").await;
        let rows = browser.texts("#app tbody tr").await;
        rows.iter().any(|row| row.starts_with("chat")).then_some(())
    })
    .await;
    browser.check_screen("usage").await;
    browser.go("#/engines").await;
    browser.wait_for_text("This tenant's provisioning").await;
    browser.check_screen("engines-owner").await;

    // A viewer: no admin page in the menu, none reachable, no admin button anywhere.
    browser.click("Sign out").await;
    browser.sign_in(VIEWER, None).await;
    let menu = browser.menu().await;
    for item in ["Members", "Webhooks", "Dead letters", "Usage", "Audit log"] {
        assert!(
            !menu.contains(&item.to_owned()),
            "{item} in a viewer's {menu:?}"
        );
    }
    browser.go("#/webhooks").await;
    browser
        .wait_for_text("This page is not available to your account.")
        .await;
    assert!(browser.buttons().await.is_empty());
    browser.go("#/engines").await;
    assert!(
        browser.buttons().await.is_empty(),
        "a viewer's engines page has no action"
    );
    browser.check_screen("engines").await;
}

#[tokio::test]
async fn a_webhooks_deliveries_and_the_audit_log_appear_live_and_resume_after_a_drop_without_a_reload()
 {
    let receiver = Receiver::start();
    let app = console_host(&receiver).await;
    let token = api_token(&app, OWNER, None).await;
    let webhook = json_with_status(
        app.post_as(
            "/chat/api/v1/webhooks",
            &token,
            &json!({
                "url": receiver.url(),
                "events": ["message.created"],
                "secret": "live-updates-secret-of-32-characters",
            }),
        )
        .await,
        201,
    )
    .await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let browser = Browser::start(&app.url("")).await;
    browser.open("#/webhooks").await;
    browser.ready().await;
    browser.sign_in(OWNER, None).await;
    // Watched from WebDriver (not the page: no inline script): the page's WebSockets and what
    // it sends on them, any CSP violation, and ticket requests held back on demand. A marker on
    // `window` that a reload would drop.
    browser
        .client
        .execute(
            "window.liveMarker = 'never reloaded';
             window.sockets = []; window.sent = []; window.violations = [];
             document.addEventListener('securitypolicyviolation', (event) =>
                 window.violations.push(`${event.violatedDirective} ${event.blockedURI}`));
             const Native = window.WebSocket;
             window.WebSocket = class extends Native {
                 constructor(...args) { super(...args); window.sockets.push(this); }
                 send(data) { window.sent.push(JSON.parse(data)); super.send(data); }
             };
             const nativeFetch = window.fetch.bind(window);
             window.holdTickets = false;
             window.fetch = async (url, options) => {
                 if (String(url).endsWith('/core/api/v1/realtime/tickets')) {
                     while (window.holdTickets) await new Promise((done) => setTimeout(done, 50));
                 }
                 return nativeFetch(url, options);
             };",
            vec![],
        )
        .await
        .unwrap();
    browser.go(&format!("#/webhooks/{webhook}")).await;
    assert_eq!(browser.heading().await, "Webhook");
    browser.wait_for_text("No deliveries match.").await;
    browser
        .wait_for("[data-testid='live-state'][data-state='live']")
        .await;

    // A test ping from another client of the owner's: its failed delivery appears as a row.
    receiver.answer.store(500, Ordering::SeqCst);
    let ping = json_with_status(
        app.post_as(
            &format!("/chat/api/v1/webhooks/{webhook}/test"),
            &token,
            &json!({}),
        )
        .await,
        200,
    )
    .await;
    let ping_id = ping["data"]["delivery_id"].as_str().unwrap().to_owned();
    let ping_row = format!("tr[data-delivery-id='{ping_id}']");
    browser
        .wait_for(&format!("{ping_row}[data-status='failed']"))
        .await;
    let cells = browser.texts(&format!("{ping_row} td")).await;
    assert_eq!(cells[..4], ["test.ping", "failed", "1", "500"], "{cells:?}");
    browser.check_screen("webhook-live").await;

    // Retried through the API once the receiver works: the same row changes in place.
    receiver.answer.store(204, Ordering::SeqCst);
    json_with_status(
        app.post_as(
            &format!("/chat/api/v1/webhooks/{webhook}/deliveries/{ping_id}/retry"),
            &token,
            &json!({}),
        )
        .await,
        200,
    )
    .await;
    browser
        .wait_for(&format!("{ping_row}[data-status='delivered']"))
        .await;
    let cells = browser.texts(&format!("{ping_row} td")).await;
    assert_eq!(
        cells[..4],
        ["test.ping", "delivered", "2", "204"],
        "{cells:?}"
    );
    assert_eq!(
        browser
            .texts("[data-testid='deliveries'] tbody tr")
            .await
            .len(),
        1
    );

    // The connection drops, and comes back only once the test lets it have a ticket; a message
    // delivered meanwhile appears after it resumes from the last event it had.
    browser
        .client
        .execute(
            "window.holdTickets = true; window.sockets.at(-1).close();",
            vec![],
        )
        .await
        .unwrap();
    browser
        .wait_for("[data-testid='live-state'][data-state='reconnecting']")
        .await;
    let conversation = crate::chat::general_conversation(&app, &token).await;
    json_with_status(
        app.post_as(
            &format!("/chat/api/v1/conversations/{conversation}/messages"),
            &token,
            &json!({ "body": "said while the console was away" }),
        )
        .await,
        201,
    )
    .await;
    let message_id = eventually(30, "the message's delivery delivered", || async {
        let deliveries: Value = app
            .get_as(
                &format!("/chat/api/v1/webhooks/{webhook}/deliveries?status=delivered"),
                &token,
            )
            .await
            .json()
            .await
            .unwrap();
        deliveries["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|delivery| delivery["event"] == "message.created")
            .map(|delivery| delivery["id"].as_str().unwrap().to_owned())
    })
    .await;
    assert!(
        browser
            .client
            .find(Locator::Css(&format!(
                "tr[data-delivery-id='{message_id}']"
            )))
            .await
            .is_err(),
        "nothing arrives while the connection is down"
    );
    browser
        .client
        .execute("window.holdTickets = false;", vec![])
        .await
        .unwrap();
    browser
        .wait_for(&format!(
            "tr[data-delivery-id='{message_id}'][data-status='delivered']"
        ))
        .await;
    browser
        .wait_for("[data-testid='live-state'][data-state='live']")
        .await;
    let rows = browser.texts("[data-testid='deliveries'] tbody tr").await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows[0].starts_with("message.created"),
        "newest first: {rows:?}"
    );

    let watched = browser
        .client
        .execute(
            "return { marker: window.liveMarker, sockets: window.sockets.length,
                      sent: window.sent.filter((frame) => frame.op === 'subscribe'),
                      violations: window.violations, hash: window.location.hash };",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(watched["marker"], "never reloaded", "{watched}");
    assert_eq!(
        watched["hash"],
        format!("#/webhooks/{webhook}"),
        "{watched}"
    );
    assert_eq!(
        watched["violations"],
        json!([]),
        "the CSP allows the WebSocket: {watched}"
    );
    assert_eq!(watched["sockets"], 2, "{watched}");
    let subscribes = watched["sent"].as_array().unwrap();
    assert_eq!(subscribes.len(), 2, "{watched}");
    let topic = format!("chat.webhook.{webhook}");
    assert_eq!(subscribes[0], json!({ "op": "subscribe", "topic": topic }));
    assert_eq!(subscribes[1]["topic"], topic.as_str());
    assert!(
        subscribes[1]["since"]
            .as_str()
            .is_some_and(|since| !since.is_empty()),
        "the second subscription resumes from the last cursor: {watched}"
    );

    // Leaving the page closes its connection, for good.
    browser.go("#/webhooks").await;
    eventually(10, "the webhook page's WebSocket closed", || async {
        let open = browser
            .client
            .execute(
                "return window.sockets.filter((socket) => socket.readyState !== WebSocket.CLOSED).length;",
                vec![],
            )
            .await
            .unwrap();
        (open == json!(0)).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let sockets = browser
        .client
        .execute("return window.sockets.length;", vec![])
        .await
        .unwrap();
    assert_eq!(sockets, json!(2), "no reconnection after leaving");

    // The audit log follows `core.audit`: another client's failed sign-in appears at the top.
    browser.go("#/audit").await;
    browser
        .wait_for("[data-testid='live-state'][data-state='live']")
        .await;
    let failed = app
        .post_json(
            "/auth/api/v1/auth/login",
            &json!({ "login": VIEWER, "password": "not-the-password-42" }),
        )
        .await;
    assert!(failed.status().is_client_error(), "{}", failed.status());
    eventually(10, "the failed sign-in on the audit page", || async {
        let rows = browser
            .texts("[data-testid='audit-entries'] tbody tr")
            .await;
        rows.first()
            .is_some_and(|row| row.contains("login.failed") && row.contains(VIEWER))
            .then_some(())
    })
    .await;
    let marker = browser
        .client
        .execute("return window.liveMarker;", vec![])
        .await
        .unwrap();
    assert_eq!(marker, "never reloaded");
}

#[tokio::test]
async fn an_ended_session_returns_to_sign_in_and_back_to_the_same_place() {
    let receiver = Receiver::start();
    let app = console_host(&receiver).await;
    let browser = Browser::start(&app.url("")).await;
    browser.open("#/audit?event=login.succeeded").await;
    browser.ready().await;
    browser.sign_in(OWNER, None).await;
    assert_eq!(browser.heading().await, "Audit log");

    // Every session of the owner ends elsewhere (another client signs out everywhere).
    let token = api_token(&app, OWNER, None).await;
    let response = app
        .client
        .post(app.url("/auth/api/v1/auth/logout/all"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);

    // The console's next call finds its session over: sign-in, saying why, at the same address.
    browser.click("Filter").await;
    browser.wait_for_text("Your session has ended").await;
    assert_eq!(browser.heading().await, "Sign in to Tessera");
    assert!(
        browser
            .client
            .current_url()
            .await
            .unwrap()
            .as_str()
            .ends_with("#/audit?event=login.succeeded")
    );
    browser.check_screen("session-ended").await;

    // Signed in again: the same page, with its filter.
    browser.sign_in(OWNER, None).await;
    assert_eq!(browser.heading().await, "Audit log");
    let selected = browser
        .client
        .find(Locator::Id("audit-event"))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap();
    assert_eq!(selected.as_deref(), Some("login.succeeded"));
}

#[tokio::test]
async fn the_operator_manages_tenants_and_sees_the_hosts_engines_and_health() {
    let receiver = Receiver::start();
    let app = console_host(&receiver).await;
    let operator_token = app.admin(&["operator-token"]).json()["operator_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let browser = Browser::start(&app.url("")).await;
    browser.open("").await;
    browser.ready().await;
    browser.click("Sign in as the operator").await;

    // A wrong token is refused where it was typed; the right one signs in.
    browser
        .fill("Operator token", "not-the-operator-token")
        .await;
    browser.click("Sign in").await;
    browser.wait_for("main .notice.error").await;
    browser.fill("Operator token", &operator_token).await;
    browser.click("Sign in").await;
    browser.wait_for("#app[data-state='ready'] nav.main").await;
    assert_eq!(browser.heading().await, "Tenants");
    assert_eq!(
        browser.menu().await,
        ["Tenants", "Hosts", "Published engines", "Usage", "Health"]
    );
    browser.wait_for_text("acme").await;

    // A tenant created, disabled, then deleted once its slug is typed twice.
    browser.fill("Slug", "beta-corp").await;
    browser.fill("Name", "Beta").await;
    browser.click("Create tenant").await;
    browser
        .wait_for_text("beta-corp created (provisioning completed).")
        .await;
    browser.click("Disable beta-corp").await;
    browser.wait_for_text("beta-corp disabled").await;
    browser.check_screen("operator-tenants").await;
    browser
        .fill("Slug of the tenant to delete", "beta-corp")
        .await;
    browser.fill("Type the slug again", "beta").await;
    browser.click("Delete tenant").await;
    browser
        .wait_for("[data-field='confirm'] .field-error:not([hidden])")
        .await;
    browser.fill("Type the slug again", "beta-corp").await;
    browser.click("Delete tenant").await;
    browser.wait_for_text("beta-corp deleted").await;
    let tenants = app.admin(&["list-tenants"]).json();
    assert_eq!(tenants.as_array().unwrap().len(), 1, "{tenants}");

    // The hosts with what they run, the published engines, the health.
    browser.go("#/operator/hosts").await;
    browser.wait_for_text("live").await;
    browser.check_screen("operator-hosts").await;
    browser.go("#/operator/engines").await;
    browser.wait_for_text("Nothing is published").await;
    browser.check_screen("operator-engines").await;
    browser.go("#/operator/health").await;
    browser.wait_for_text("Worker: projector").await;
    let glance = browser
        .texts("section[aria-label='At a glance'] .card")
        .await;
    assert!(
        glance
            .iter()
            .any(|card| card.contains("Hosts live") && card.contains("1 of 1")),
        "{glance:?}"
    );
    assert!(
        glance
            .iter()
            .any(|card| card.contains("Tenants") && card.contains('1')),
        "{glance:?}"
    );
    browser.check_screen("operator-health").await;
    browser.go("#/operator/usage").await;
    assert_eq!(browser.heading().await, "Usage");
    browser.wait_for("#operator-usage-days").await;
    browser.check_screen("operator-usage").await;
}

#[tokio::test]
async fn the_console_in_dark_mode_passes_the_same_checks() {
    let receiver = Receiver::start();
    let app = console_host(&receiver).await;
    let browser = Browser::start_in(&app.url(""), Scheme::Dark).await;
    browser.open("").await;
    browser.ready().await;
    let dark: Value = browser
        .client
        .execute(
            "return matchMedia('(prefers-color-scheme: dark)').matches;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(dark, json!(true), "the browser asks for the dark scheme");
    browser.check_screen("sign-in-dark").await;
    browser.sign_in(OWNER, None).await;
    for (hash, name) in [
        ("#/", "overview-dark"),
        ("#/members", "members-dark"),
        ("#/workspaces", "workspaces-dark"),
        ("#/webhooks", "webhooks-dark"),
        ("#/dead-letters", "dead-letters-dark"),
        ("#/workflows", "workflows-dark"),
        ("#/engines", "engines-dark"),
        ("#/audit", "audit-dark"),
        ("#/account", "account-dark"),
    ] {
        browser.go(hash).await;
        browser.check_screen(name).await;
    }
}
