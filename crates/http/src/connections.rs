//! The listener's connections, and how slow clients are cut off: a cap on connections served
//! at once, a header timeout, an idle timeout (which also ends connections that stop moving
//! bytes) and, as a layer of the router, a body timeout answered with 408.
//!
//! Each accepted connection is served by hyper-util's HTTP/1.1 + HTTP/2 (prior knowledge)
//! builder. Its socket is wrapped to note when bytes move, its service to count the requests
//! in flight; a watcher beside the connection applies the timeouts from those two facts:
//!
//! - nothing in flight, a request head started (the connection just opened, or a first byte
//!   arrived on a kept-alive HTTP/1 connection) and not finished within the header timeout:
//!   the connection is dropped;
//! - nothing in flight and no head started for the idle timeout: closed gracefully;
//! - a request in flight but no byte read or written for the idle timeout (a client that
//!   stopped reading its response): dropped.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;

use crate::config::HttpConfig;
use crate::error::ErrorBody;

/// The first bytes of every HTTP/2 prior-knowledge connection.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// No request head started.
const NONE: u64 = u64::MAX;

/// Accepts connections until `stop` is cancelled, at most `config.max_connections` at once
/// (further ones wait in the kernel's listen backlog), then closes every connection
/// gracefully and returns once the requests in flight have been answered.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    config: &HttpConfig,
    stop: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(config.max_connections));
    let connections = TaskTracker::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // HTTP/2: a peer that does not answer a ping within the header timeout is gone.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(config.header_timeout)
        .keep_alive_timeout(config.header_timeout);
    let builder = Arc::new(builder);
    let timeouts = Timeouts {
        header: config.header_timeout,
        idle: config.idle_timeout,
    };
    loop {
        let permit = tokio::select! {
            () = stop.cancelled() => break,
            permit = permits.clone().acquire_owned() => {
                permit.expect("the connection semaphore is never closed")
            }
        };
        let (stream, peer) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_failed(error).await;
                    continue;
                }
            },
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, %peer, "cannot set TCP_NODELAY");
        }
        connections.spawn(serve_connection(
            builder.clone(),
            stream,
            peer,
            router.clone(),
            timeouts,
            stop.clone(),
            permit,
        ));
    }
    // Stop accepting: connections still in the backlog are refused.
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// Like hyper 0.14 and axum: a failed handshake is the peer's affair; anything else (e.g. out
/// of file descriptors) is logged and retried after a second, when connections may have
/// closed.
async fn accept_failed(error: io::Error) {
    if matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(%error, "accepting a connection failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[derive(Debug, Clone, Copy)]
struct Timeouts {
    header: Duration,
    idle: Duration,
}

/// Serves one connection until it ends, is cut off by a timeout, or the host stops.
async fn serve_connection(
    builder: Arc<auto::Builder<TokioExecutor>>,
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    timeouts: Timeouts,
    stop: CancellationToken,
    _permit: OwnedSemaphorePermit,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(TrackedIo {
        inner: stream,
        activity: activity.clone(),
        sniffed: 0,
    });
    let service = ConnectionService {
        router,
        peer,
        activity: activity.clone(),
    };
    let connection = builder.serve_connection_with_upgrades(io, service);
    tokio::pin!(connection);
    let mut stopping = false;
    // Once closed gracefully for idleness, how long it may take before it is dropped.
    let mut closing_until: Option<Instant> = None;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%peer, error = %error, "a connection ended with an error");
                }
                return;
            }
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
            () = sleep_until_some(closing_until) => {
                tracing::debug!(%peer, "dropping a connection that did not close");
                return;
            }
            expiry = activity.expired(timeouts), if closing_until.is_none() => match expiry {
                Expiry::Idle => {
                    tracing::debug!(%peer, "closing an idle connection");
                    connection.as_mut().graceful_shutdown();
                    closing_until = Some(Instant::now() + timeouts.header);
                }
                Expiry::Cut(reason) => {
                    tracing::debug!(%peer, reason, "cutting off a slow connection");
                    return;
                }
            },
        }
    }
}

async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

enum Expiry {
    /// Nothing in flight for the idle timeout: close gracefully.
    Idle,
    /// A head too slow, or a request whose bytes stopped moving: drop the connection.
    Cut(&'static str),
}

/// What the watcher of one connection knows: times in milliseconds since it was accepted.
struct Activity {
    origin: Instant,
    in_flight: AtomicUsize,
    /// When a byte last moved either way.
    last_io: AtomicU64,
    /// When the last request in flight was answered (or the connection accepted).
    idle_since: AtomicU64,
    /// When the head being read started ([`NONE`]: none). A new connection starts one.
    head_started: AtomicU64,
    http2: AtomicBool,
    changed: Notify,
}

impl Activity {
    fn new() -> Self {
        Self {
            origin: Instant::now(),
            in_flight: AtomicUsize::new(0),
            last_io: AtomicU64::new(0),
            idle_since: AtomicU64::new(0),
            head_started: AtomicU64::new(0),
            http2: AtomicBool::new(false),
            changed: Notify::new(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX - 1)
    }

    fn at(&self, millis: u64, plus: Duration) -> Instant {
        self.origin + Duration::from_millis(millis) + plus
    }

    fn on_read(&self) {
        let now = self.now();
        self.last_io.store(now, Ordering::Relaxed);
        // A byte between requests starts the next head (HTTP/1; HTTP/2 streams are bounded
        // by the idle and body timeouts, and pings, settings and window updates move bytes
        // between them).
        if self.in_flight.load(Ordering::Acquire) == 0
            && !self.http2.load(Ordering::Relaxed)
            && self
                .head_started
                .compare_exchange(NONE, now, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            self.changed.notify_one();
        }
    }

    fn on_write(&self) {
        self.last_io.store(self.now(), Ordering::Relaxed);
    }

    fn saw_http2(&self) {
        self.http2.store(true, Ordering::Relaxed);
        self.changed.notify_one();
    }

    /// When the connection expires as things stand, and how.
    fn deadline(&self, timeouts: Timeouts) -> (Instant, Expiry) {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            let last_io = self.last_io.load(Ordering::Relaxed);
            return (
                self.at(last_io, timeouts.idle),
                Expiry::Cut("no byte moved for the idle timeout"),
            );
        }
        let head_started = self.head_started.load(Ordering::Acquire);
        if head_started != NONE && !self.http2.load(Ordering::Relaxed) {
            return (
                self.at(head_started, timeouts.header),
                Expiry::Cut("the request head did not arrive within the header timeout"),
            );
        }
        let idle_since = self.idle_since.load(Ordering::Acquire);
        (self.at(idle_since, timeouts.idle), Expiry::Idle)
    }

    /// Resolves when the connection has expired.
    async fn expired(&self, timeouts: Timeouts) -> Expiry {
        loop {
            // `notify_one` keeps a permit when nobody waits: no change is missed.
            let changed = self.changed.notified();
            let (deadline, expiry) = self.deadline(timeouts);
            if deadline <= Instant::now() {
                return expiry;
            }
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                () = changed => {}
            }
        }
    }
}

/// One request in flight, from its head to the end (or drop) of its response body.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn enter(activity: Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        activity.head_started.store(NONE, Ordering::Release);
        activity.changed.notify_one();
        Self(activity)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let activity = &self.0;
        activity.idle_since.store(activity.now(), Ordering::Release);
        activity.in_flight.fetch_sub(1, Ordering::AcqRel);
        activity.changed.notify_one();
    }
}

/// The socket, noting when bytes move and whether the client speaks HTTP/2.
struct TrackedIo {
    inner: TcpStream,
    activity: Arc<Activity>,
    /// How many bytes of the HTTP/2 preface were seen; `usize::MAX` once decided.
    sniffed: usize,
}

impl TrackedIo {
    fn sniff(&mut self, read: &[u8]) {
        if self.sniffed == usize::MAX {
            return;
        }
        let expected = &H2_PREFACE[self.sniffed..];
        let compared = read.len().min(expected.len());
        if read[..compared] != expected[..compared] {
            self.sniffed = usize::MAX;
        } else if compared == expected.len() {
            self.sniffed = usize::MAX;
            self.activity.saw_http2();
        } else {
            self.sniffed += compared;
        }
    }
}

impl AsyncRead for TrackedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.sniff(&buf.filled()[before..]);
            this.activity.on_read();
        }
        result
    }
}

impl AsyncWrite for TrackedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        if matches!(result, Poll::Ready(Ok(written)) if written > 0) {
            this.activity.on_write();
        }
        result
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(result, Poll::Ready(Ok(written)) if written > 0) {
            this.activity.on_write();
        }
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// The router as the service of one connection: the peer address as `ConnectInfo` (the rate
/// limits and the audit trail read it), and each request counted in flight.
#[derive(Clone)]
struct ConnectionService {
    router: Router,
    peer: SocketAddr,
    activity: Arc<Activity>,
}

type ServiceFuture =
    Pin<Box<dyn Future<Output = Result<hyper::Response<TrackedBody>, Infallible>> + Send>>;

impl hyper::service::Service<hyper::Request<Incoming>> for ConnectionService {
    type Response = hyper::Response<TrackedBody>;
    type Error = Infallible;
    type Future = ServiceFuture;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        let in_flight = InFlight::enter(self.activity.clone());
        let mut request = request.map(Body::new);
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let router = self.router.clone();
        Box::pin(async move {
            let response = router.oneshot(request).await?;
            Ok(response.map(|body| TrackedBody {
                inner: body,
                _in_flight: in_flight,
            }))
        })
    }
}

/// A response body that keeps its request counted in flight until it is sent or dropped.
struct TrackedBody {
    inner: Body,
    _in_flight: InFlight,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Middleware: the request body must arrive whole within `timeout` of the request head.
/// Past it, reading the body fails and the answer is 408 `{message}`, with
/// `Connection: close` on HTTP/1.
pub async fn body_deadline(
    State(timeout): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let expired = Arc::new(AtomicBool::new(false));
    let http1 = request.version() <= Version::HTTP_11;
    let request = request.map(|body| {
        Body::new(DeadlineBody {
            inner: body,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            expired: expired.clone(),
        })
    });
    let response = next.run(request).await;
    if !expired.load(Ordering::Acquire) {
        return response;
    }
    let message = format!(
        "The request body did not arrive within {}.",
        humantime::format_duration(timeout)
    );
    let mut response = (StatusCode::REQUEST_TIMEOUT, Json(ErrorBody { message })).into_response();
    if http1 {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that fails once its deadline passes.
struct DeadlineBody {
    inner: Body,
    deadline: Pin<Box<tokio::time::Sleep>>,
    expired: Arc<AtomicBool>,
}

/// The error a [`DeadlineBody`] fails with.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
struct BodyTimedOut;

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        if this.expired.load(Ordering::Acquire) {
            return Poll::Ready(Some(Err(axum::Error::new(BodyTimedOut))));
        }
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            this.expired.store(true, Ordering::Release);
            return Poll::Ready(Some(Err(axum::Error::new(BodyTimedOut))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
