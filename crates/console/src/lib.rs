//! The web console (CONTRACT §8 `/console`): a page app in plain ES modules
//! (`assets/`, no build step) embedded in the binary and served here with a strict
//! Content-Security-Policy. It is a client of the public and operator API like any other: this
//! crate serves files and nothing else (no endpoint of its own, no session, no cookie).
//!
//! Every answer carries the same security headers: scripts and styles from this origin only
//! (no inline script, no `eval`), `frame-ancestors 'none'`, no referrer, `nosniff`. Files are
//! revalidated on every load (`no-cache` with an `ETag` of their SHA-256, 304 when unchanged)
//! and sent gzip-compressed when the client accepts it (compressed once, on first use).

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rust_embed::Embed;
use tessera_http::ApiError;
use tessera_http::extract::NoQuery;
use utoipa_axum::{router::OpenApiRouter, routes};

/// The console's files, built into the binary (also in debug builds, so a test binary serves
/// exactly what it was built with).
#[derive(Embed)]
#[folder = "assets/"]
struct Assets;

/// The Content-Security-Policy of every console answer. `connect-src 'self'` also allows the
/// WebSocket to the page's own host (`ws:`/`wss:`, CSP Level 3), which the webhook page's live
/// updates open (`assets/realtime.js`; the browser tests check that nothing is blocked).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; font-src 'self'; \
     manifest-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/// The console's routes: `GET /console` (the page) and `GET /console/assets/{file}`.
pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    OpenApiRouter::new()
        .routes(routes!(console_page))
        .routes(routes!(console_asset))
        .layer(axum::middleware::map_response(secure))
}

/// The console's page (sign-in, then the screens of the caller's role).
#[utoipa::path(
    get,
    path = "/console",
    tag = "console",
    responses(
        (status = 200, description = "The console's page", content_type = "text/html", body = String),
        (status = 304, description = "Unchanged since the `ETag` the client holds"),
    )
)]
async fn console_page(_: NoQuery, headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

/// One of the console's files (scripts, styles, icon).
#[utoipa::path(
    get,
    path = "/console/assets/{file}",
    tag = "console",
    params(("file" = String, Path, description = "The file's name, e.g. `main.js`")),
    responses(
        (status = 200, description = "The file", content(
            (String = "text/javascript"), (String = "text/css"), (String = "image/svg+xml"),
            (String = "text/html"),
        )),
        (status = 304, description = "Unchanged since the `ETag` the client holds"),
        (status = 404, description = "No such file"),
    )
)]
async fn console_asset(Path(file): Path<String>, _: NoQuery, headers: HeaderMap) -> Response {
    serve(&file, &headers)
}

/// One prepared file: its bytes, gzip-compressed bytes, type and entity tag.
struct Prepared {
    body: Vec<u8>,
    gzip: Vec<u8>,
    content_type: &'static str,
    etag: HeaderValue,
}

fn prepared() -> &'static HashMap<String, Prepared> {
    static PREPARED: OnceLock<HashMap<String, Prepared>> = OnceLock::new();
    PREPARED.get_or_init(|| {
        Assets::iter()
            .filter_map(|name| {
                let file = Assets::get(&name)?;
                let body = file.data.into_owned();
                let etag = format!("\"{}\"", hex::encode(&file.metadata.sha256_hash()[..16]));
                Some((
                    name.to_string(),
                    Prepared {
                        gzip: gzip(&body),
                        body,
                        content_type: content_type(&name),
                        etag: HeaderValue::from_str(&etag).ok()?,
                    },
                ))
            })
            .collect()
    })
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, extension)| extension) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// The total size of the console's files as sent compressed, in bytes (for its budget).
pub fn compressed_size() -> usize {
    prepared().values().map(|file| file.gzip.len()).sum()
}

fn serve(name: &str, request: &HeaderMap) -> Response {
    let Some(file) = prepared().get(name) else {
        return ApiError::NotFound("The requested resource was not found.".into()).into_response();
    };
    let unchanged = request
        .get(header::IF_NONE_MATCH)
        .is_some_and(|tags| tags.as_bytes() == file.etag.as_bytes());
    let accepts_gzip = request
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|coding| {
            let mut parts = coding.trim().split(';');
            parts.next() == Some("gzip") && !parts.any(|parameter| parameter.trim() == "q=0")
        });
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else if accepts_gzip {
        let mut response = file.gzip.clone().into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        response
    } else {
        file.body.clone().into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(file.content_type),
    );
    headers.insert(header::ETAG, file.etag.clone());
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    response
}

/// The security headers of every console answer (errors included).
async fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        "permissions-policy",
        HeaderValue::from_static("camera=(), microphone=(), geolocation=(), payment=()"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_the_page_names_is_embedded_with_its_type() {
        let page = String::from_utf8(Assets::get("index.html").unwrap().data.into_owned()).unwrap();
        for name in ["console.css", "main.js", "icon.svg"] {
            assert!(page.contains(&format!("/console/assets/{name}")), "{name}");
            assert!(prepared().contains_key(name), "{name}");
        }
        assert_eq!(
            prepared()["main.js"].content_type,
            "text/javascript; charset=utf-8"
        );
        // Every module a script imports is embedded too.
        for (name, file) in prepared() {
            if !name.ends_with(".js") {
                continue;
            }
            let source = String::from_utf8(file.body.clone()).unwrap();
            // `import … from "./x.js";`, on one line or several.
            for (at, _) in source.match_indices("from \"./") {
                let rest = &source[at + "from \"./".len()..];
                let imported = &rest[..rest.find('"').unwrap()];
                assert!(
                    prepared().contains_key(imported),
                    "{name} imports {imported}"
                );
            }
        }
    }

    #[test]
    fn no_script_or_style_is_inline_and_nothing_touches_web_storage() {
        let page = String::from_utf8(prepared()["index.html"].body.clone()).unwrap();
        assert!(
            !page.contains("<script>") && !page.contains("<style"),
            "inline code in the page"
        );
        assert!(!page.contains(" style="), "an inline style in the page");
        for (name, file) in prepared() {
            let source = String::from_utf8(file.body.clone()).unwrap();
            for forbidden in [
                "localStorage",
                "sessionStorage",
                "document.cookie",
                "innerHTML",
                "eval(",
            ] {
                assert!(!source.contains(forbidden), "{name} uses {forbidden}");
            }
        }
    }

    #[test]
    fn files_revalidate_and_compress() {
        let mut request = HeaderMap::new();
        request.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("br, gzip"),
        );
        let response = serve("main.js", &request);
        assert_eq!(response.status(), StatusCode::OK);
        let headers = response.headers();
        assert_eq!(headers[header::CONTENT_ENCODING], "gzip");
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
        assert!(CONTENT_SECURITY_POLICY.contains("frame-ancestors 'none'"));
        assert_eq!(headers[header::CACHE_CONTROL], "no-cache");
        let etag = headers[header::ETAG].clone();

        request.insert(header::IF_NONE_MATCH, etag);
        assert_eq!(
            serve("main.js", &request).status(),
            StatusCode::NOT_MODIFIED
        );
        let plain = serve("main.js", &HeaderMap::new());
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());

        let missing = serve("../Cargo.toml", &HeaderMap::new());
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn every_answer_through_the_router_carries_the_security_headers() {
        use tower::ServiceExt as _;
        let (router, _) = router::<()>().split_for_parts();
        for (uri, status) in [
            ("/console", StatusCode::OK),
            ("/console/assets/app.css", StatusCode::NOT_FOUND),
            ("/console?unknown=1", StatusCode::BAD_REQUEST),
        ] {
            let request = axum::http::Request::get(uri)
                .body(axum::body::Body::empty())
                .unwrap();
            let response = router.clone().oneshot(request).await.unwrap();
            assert_eq!(response.status(), status, "{uri}");
            let headers = response.headers();
            assert_eq!(
                headers[header::CONTENT_SECURITY_POLICY],
                CONTENT_SECURITY_POLICY,
                "{uri}"
            );
            assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY", "{uri}");
            assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{uri}");
        }
    }

    #[test]
    fn the_assets_stay_within_their_budget() {
        // The console's budget: under 500 KB compressed.
        assert!(
            compressed_size() < 500 * 1024,
            "{} bytes",
            compressed_size()
        );
        assert!(compressed_size() > 0);
    }
}
