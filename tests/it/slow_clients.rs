//! Slow clients are cut off: the header, body and idle timeouts and the connection cap of the
//! listener, each against raw TCP clients, while another client's requests are answered.

use std::time::Duration;

use serde_json::Value;
use tessera_host::config::Config;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::helpers::{AppOptions, Backend, TestApp, spawn_app_with};

/// Long enough for any timeout configured here to have passed several times over.
const PATIENCE: Duration = Duration::from_secs(20);

async fn spawn(configure: impl FnOnce(&mut Config) + Send + 'static) -> TestApp {
    spawn_app_with(
        Backend::Sqlite,
        AppOptions {
            configure: Some(Box::new(configure)),
            ..AppOptions::default()
        },
    )
    .await
}

/// Another client's ordinary request, on a new connection, answered while a slow one is held.
/// (Not on a pooled one: a short idle timeout may be closing it just as it is reused.)
async fn assert_others_are_served(app: &TestApp) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let response = client
        .get(app.url("/auth/api/health"))
        .send()
        .await
        .expect("another client's request");
    assert_eq!(response.status(), 200, "another client must be served");
}

async fn connect(app: &TestApp) -> TcpStream {
    TcpStream::connect(app.address).await.expect("connecting")
}

/// Reads until the server closes the connection (end of stream or a reset), failing if it
/// does not within [`PATIENCE`]. Answers what was read before the close.
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let closed = tokio::time::timeout(PATIENCE, async {
        let mut buffer = [0_u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => received.extend_from_slice(&buffer[..read]),
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the server kept the connection open; it sent {:?}",
        String::from_utf8_lossy(&received)
    );
    received
}

/// One HTTP/1.1 response: status, lower-case headers, body (by `Content-Length`).
struct RawResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

async fn read_response(stream: &mut TcpStream) -> RawResponse {
    let mut received = Vec::new();
    let mut buffer = [0_u8; 4096];
    let head_end = loop {
        if let Some(at) = received.windows(4).position(|window| window == b"\r\n\r\n") {
            break at + 4;
        }
        let read = stream.read(&mut buffer).await.expect("reading a response");
        assert!(read > 0, "the connection closed before a response");
        received.extend_from_slice(&buffer[..read]);
    };
    let head = String::from_utf8_lossy(&received[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .map_or(0, |(_, value)| {
            value.parse().expect("a numeric Content-Length")
        });
    let mut body = received[head_end..].to_vec();
    while body.len() < length {
        let read = stream.read(&mut buffer).await.expect("reading a body");
        assert!(read > 0, "the connection closed inside a body");
        body.extend_from_slice(&buffer[..read]);
    }
    RawResponse {
        status,
        headers,
        body,
    }
}

const HEALTH_REQUEST: &[u8] = b"GET /auth/api/health HTTP/1.1\r\nHost: tessera\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_headers_are_cut_off_after_the_header_timeout() {
    let app = spawn(|config| {
        config.http.header_timeout = Duration::from_secs(1);
        config.http.idle_timeout = Duration::from_secs(600);
    })
    .await;

    // A request head that never ends, and a connection that never says anything.
    let mut partial = connect(&app).await;
    partial
        .write_all(b"GET /auth/api/health HTTP/1.1\r\nHost: tessera\r\nX-Slow: ")
        .await
        .unwrap();
    let mut silent = connect(&app).await;
    assert_others_are_served(&app).await;

    let answered = read_until_closed(&mut partial).await;
    assert!(
        !answered.starts_with(b"HTTP/1.1 200"),
        "a partial head is never served"
    );
    read_until_closed(&mut silent).await;

    // On a kept-alive connection, the next head is timed from its first byte.
    let mut kept = connect(&app).await;
    kept.write_all(HEALTH_REQUEST).await.unwrap();
    assert_eq!(read_response(&mut kept).await.status, 200);
    kept.write_all(b"GET /auth/api/health HTTP/1.1\r\n")
        .await
        .unwrap();
    assert_others_are_served(&app).await;
    read_until_closed(&mut kept).await;
    assert_others_are_served(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_body_is_answered_408_and_the_connection_closed() {
    let app = spawn(|config| {
        config.http.body_timeout = Duration::from_secs(1);
    })
    .await;

    // A body that stops arriving.
    let mut stalled = connect(&app).await;
    stalled
        .write_all(
            b"POST /test/echo HTTP/1.1\r\nHost: tessera\r\nContent-Type: application/json\r\n\
              Content-Length: 4000\r\n\r\n{\"name\": \"",
        )
        .await
        .unwrap();
    assert_others_are_served(&app).await;
    let response = tokio::time::timeout(PATIENCE, read_response(&mut stalled))
        .await
        .expect("a stalled body is answered");
    assert_eq!(response.status, 408);
    assert_eq!(response.header("connection"), Some("close"));
    assert!(response.header("x-correlation-id").is_some());
    let body: Value = serde_json::from_slice(&response.body).expect("a JSON error body");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|text| !text.is_empty()),
        "{body}"
    );
    read_until_closed(&mut stalled).await;

    // A body that trickles in: the timeout bounds the whole body, not the gap between bytes.
    let mut trickling = connect(&app).await;
    trickling
        .write_all(
            b"POST /test/echo HTTP/1.1\r\nHost: tessera\r\nContent-Type: application/json\r\n\
              Content-Length: 4000\r\n\r\n",
        )
        .await
        .unwrap();
    let trickle = async {
        loop {
            if trickling.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), trickle).await;
    assert_others_are_served(&app).await;
    let response = tokio::time::timeout(PATIENCE, read_response(&mut trickling))
        .await
        .expect("a trickling body is answered");
    assert_eq!(response.status, 408);
    read_until_closed(&mut trickling).await;

    // A body that arrives in time is served as before.
    let response = app
        .post_json("/test/echo", &serde_json::json!({ "name": "in time" }))
        .await;
    assert_eq!(response.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let app = spawn(|config| {
        config.http.idle_timeout = Duration::from_secs(1);
        config.http.header_timeout = Duration::from_secs(600);
    })
    .await;

    let mut idle = connect(&app).await;
    for _ in 0..2 {
        idle.write_all(HEALTH_REQUEST).await.unwrap();
        let response = read_response(&mut idle).await;
        assert_eq!(response.status, 200);
        assert_ne!(response.header("connection"), Some("close"));
    }
    assert_others_are_served(&app).await;
    let after = read_until_closed(&mut idle).await;
    assert!(
        after.is_empty(),
        "nothing more is sent to an idle connection"
    );
    assert_others_are_served(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_wait_until_one_closes() {
    let app = spawn(|config| {
        config.http.max_connections = 2;
        config.http.header_timeout = Duration::from_secs(600);
        config.http.idle_timeout = Duration::from_secs(600);
    })
    .await;

    // An idle connection holds one slot, another client's kept-alive connection the other.
    let idle = connect(&app).await;
    let mut other = connect(&app).await;
    other.write_all(HEALTH_REQUEST).await.unwrap();
    // Served, so accepted, and so was the idle one, which connected first.
    assert_eq!(read_response(&mut other).await.status, 200);

    // The kernel completes the handshake, but the host does not serve it while at the cap.
    let mut waiting = connect(&app).await;
    waiting.write_all(HEALTH_REQUEST).await.unwrap();
    let mut first_byte = [0_u8; 1];
    let early = tokio::time::timeout(Duration::from_secs(1), waiting.read(&mut first_byte)).await;
    assert!(
        early.is_err(),
        "a connection beyond the cap must wait, not be served"
    );
    // Meanwhile the connections within the cap are served.
    for _ in 0..3 {
        other.write_all(HEALTH_REQUEST).await.unwrap();
        assert_eq!(read_response(&mut other).await.status, 200);
    }

    // One closes: the waiting connection is taken and answered.
    drop(idle);
    let response = tokio::time::timeout(PATIENCE, read_response(&mut waiting))
        .await
        .expect("the waiting connection is served once a slot frees");
    assert_eq!(response.status, 200);
    drop(other);
    assert_others_are_served(&app).await;
}
