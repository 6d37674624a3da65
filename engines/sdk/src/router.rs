//! A small router: method + path pattern (`/api/v1/notes/{id}`) to handler, with JSON 404 for
//! unknown paths and JSON 405 (with `allow`) for known paths with another method.

use crate::context::Context;
use crate::error::ApiError;
use crate::openapi::{DocumentedRoute, Operation};
use crate::request::{Request, percent_decode};
use crate::response::Response;

/// What a handler returns: a response, or an error answered in the host's error format.
pub type HandlerResult = Result<Response, ApiError>;

type Handler = Box<dyn Fn(&Context, &Request) -> HandlerResult>;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Capture(String),
}

struct Route {
    method: String,
    segments: Vec<Segment>,
    handler: Handler,
    doc: Option<Operation>,
}

/// Routes requests to handlers by method and path pattern.
///
/// Patterns are `/`-separated; a segment `{name}` captures one path segment (percent-decoded),
/// read with [`Request::param`]. When several patterns match, the one with a literal segment
/// earliest wins (`/webhooks/dlq` beats `/webhooks/{id}`).
///
/// ```
/// use tessera_sdk::{Context, Request, Response, Router};
///
/// let router = Router::new()
///     .get("/api/v1/notes/{id}", |_ctx, req| Ok(Response::ok(&req.param("id"))));
/// let ctx = Context::for_tests("tenant-1", "user-1", "editor");
/// let response = router.handle(&ctx, Request::new("GET", "/api/v1/notes/42", ""));
/// assert_eq!(response.body, br#"{"data":"42"}"#);
/// assert_eq!(router.handle(&ctx, Request::new("GET", "/nope", "")).status, 404);
/// assert_eq!(router.handle(&ctx, Request::new("DELETE", "/api/v1/notes/42", "")).status, 405);
/// ```
#[derive(Default)]
pub struct Router {
    routes: Vec<Route>,
}

impl Router {
    /// A router without routes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a route for `method` (case-insensitive) and `pattern`.
    pub fn route<H>(mut self, method: &str, pattern: &str, handler: H) -> Self
    where
        H: Fn(&Context, &Request) -> HandlerResult + 'static,
    {
        self.routes.push(Route {
            method: method.to_ascii_uppercase(),
            segments: parse_pattern(pattern),
            handler: Box::new(handler),
            doc: None,
        });
        self
    }

    /// Documents the route added last (see [`Operation`]); its schemas come from the types
    /// the operation names. Without it the route is still in [`Router::openapi`], with its
    /// method, path and the standard answers only.
    pub fn doc(mut self, operation: Operation) -> Self {
        if let Some(route) = self.routes.last_mut() {
            route.doc = Some(operation);
        }
        self
    }

    /// The OpenAPI 3.1 fragment of the routes (`describe-api`): paths relative to the engine's
    /// prefix, the schemas of the documented types under `components.schemas`.
    pub fn openapi(&self) -> serde_json::Value {
        let routes: Vec<DocumentedRoute<'_>> = self
            .routes
            .iter()
            .map(|route| DocumentedRoute {
                method: &route.method,
                pattern: format!(
                    "/{}",
                    route
                        .segments
                        .iter()
                        .map(|segment| match segment {
                            Segment::Literal(literal) => literal.clone(),
                            Segment::Capture(name) => format!("{{{name}}}"),
                        })
                        .collect::<Vec<_>>()
                        .join("/")
                ),
                captures: route
                    .segments
                    .iter()
                    .filter_map(|segment| match segment {
                        Segment::Capture(name) => Some(name.as_str()),
                        Segment::Literal(_) => None,
                    })
                    .collect(),
                operation: route.doc.as_ref(),
            })
            .collect();
        crate::openapi::document(&routes)
    }

    /// Adds a `GET` route.
    pub fn get<H>(self, pattern: &str, handler: H) -> Self
    where
        H: Fn(&Context, &Request) -> HandlerResult + 'static,
    {
        self.route("GET", pattern, handler)
    }

    /// Adds a `POST` route.
    pub fn post<H>(self, pattern: &str, handler: H) -> Self
    where
        H: Fn(&Context, &Request) -> HandlerResult + 'static,
    {
        self.route("POST", pattern, handler)
    }

    /// Adds a `PUT` route.
    pub fn put<H>(self, pattern: &str, handler: H) -> Self
    where
        H: Fn(&Context, &Request) -> HandlerResult + 'static,
    {
        self.route("PUT", pattern, handler)
    }

    /// Adds a `PATCH` route.
    pub fn patch<H>(self, pattern: &str, handler: H) -> Self
    where
        H: Fn(&Context, &Request) -> HandlerResult + 'static,
    {
        self.route("PATCH", pattern, handler)
    }

    /// Adds a `DELETE` route.
    pub fn delete<H>(self, pattern: &str, handler: H) -> Self
    where
        H: Fn(&Context, &Request) -> HandlerResult + 'static,
    {
        self.route("DELETE", pattern, handler)
    }

    /// Dispatches `request`: the path picks the most specific matching pattern first (a
    /// literal segment beats a capture, from the left), then the method picks among that
    /// pattern's routes, so `GET /webhooks/dlq` never falls through to `PATCH /webhooks/{id}`.
    /// The route's handler answers (its error turned into the error response); 404
    /// `{"message": "Not found."}` when no pattern matches the path; 405 `{"message": "Method
    /// not allowed."}` with an `allow` header listing that pattern's methods otherwise.
    pub fn handle(&self, ctx: &Context, mut request: Request) -> Response {
        let path_segments: Vec<&str> = split_path(&request.path);
        let mut best: Option<Vec<bool>> = None;
        let mut candidates: Vec<&Route> = Vec::new();
        for route in &self.routes {
            let Some(specificity) = specificity(&route.segments, &path_segments) else {
                continue;
            };
            match best.as_ref().map(|best| specificity.cmp(best)) {
                Some(std::cmp::Ordering::Less) => continue,
                Some(std::cmp::Ordering::Equal) => candidates.push(route),
                None | Some(std::cmp::Ordering::Greater) => {
                    best = Some(specificity);
                    candidates = vec![route];
                }
            }
        }
        if candidates.is_empty() {
            return Response::error(404, "Not found.");
        }
        let Some(route) = candidates
            .iter()
            .find(|route| route.method == request.method)
        else {
            let mut allowed: Vec<&str> = Vec::new();
            for route in &candidates {
                if !allowed.contains(&route.method.as_str()) {
                    allowed.push(&route.method);
                }
            }
            return ApiError::MethodNotAllowed
                .into_response()
                .with_header("allow", allowed.join(", "));
        };
        let params = route
            .segments
            .iter()
            .zip(&path_segments)
            .filter_map(|(segment, value)| match segment {
                Segment::Capture(name) => Some((name.clone(), percent_decode(value))),
                Segment::Literal(_) => None,
            })
            .collect();
        request.set_params(params);
        (route.handler)(ctx, &request).unwrap_or_else(ApiError::into_response)
    }
}

fn parse_pattern(pattern: &str) -> Vec<Segment> {
    split_path(pattern)
        .into_iter()
        .map(|segment| {
            match segment
                .strip_prefix('{')
                .and_then(|rest| rest.strip_suffix('}'))
            {
                Some(name) => Segment::Capture(name.to_owned()),
                None => Segment::Literal(segment.to_owned()),
            }
        })
        .collect()
}

fn split_path(path: &str) -> Vec<&str> {
    path.strip_prefix('/').unwrap_or(path).split('/').collect()
}

/// `Some(one flag per segment, true for a literal)` when `segments` match `path`; comparing the
/// flag vectors prefers literals from left to right.
fn specificity(segments: &[Segment], path: &[&str]) -> Option<Vec<bool>> {
    if segments.len() != path.len() {
        return None;
    }
    segments
        .iter()
        .zip(path)
        .map(|(segment, value)| match segment {
            Segment::Literal(literal) => (literal == value).then_some(true),
            Segment::Capture(_) => (!value.is_empty()).then_some(false),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn ctx() -> Context {
        Context::for_tests("t", "u", "editor")
    }

    fn router() -> Router {
        Router::new()
            .get("/api/v1/notes", |_, _| Ok(Response::ok(&"list")))
            .post("/api/v1/notes", |_, _| Ok(Response::created(&"create")))
            .get("/api/v1/notes/{id}", |_, req| {
                Ok(Response::ok(&json!({"show": req.param("id")})))
            })
            .delete("/api/v1/notes/{id}", |_, _| Ok(Response::no_content()))
            .get("/api/v1/notes/archive", |_, _| Ok(Response::ok(&"archive")))
            .get("/api/v1/notes/{id}/comments/{comment_id}", |_, req| {
                Ok(Response::ok(&json!([
                    req.param("id"),
                    req.param("comment_id")
                ])))
            })
            .get("/api/v1/fail", |_, _| Err(ApiError::not_found("Note")))
    }

    fn call(method: &str, path: &str) -> (u16, Value, Option<String>) {
        let response = router().handle(&ctx(), Request::new(method, path, ""));
        let body = if response.body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&response.body).unwrap()
        };
        (
            response.status,
            body,
            response.header("allow").map(str::to_owned),
        )
    }

    #[test]
    fn matches_literals_and_captures() {
        assert_eq!(call("GET", "/api/v1/notes").1, json!({"data": "list"}));
        assert_eq!(call("POST", "/api/v1/notes").0, 201);
        assert_eq!(
            call("GET", "/api/v1/notes/n-1").1,
            json!({"data": {"show": "n-1"}})
        );
        assert_eq!(
            call("GET", "/api/v1/notes/a%20b/comments/c%2F1").1,
            json!({"data": ["a b", "c/1"]})
        );
        assert_eq!(call("DELETE", "/api/v1/notes/n-1").0, 204);
    }

    #[test]
    fn literals_beat_captures_regardless_of_order() {
        assert_eq!(
            call("GET", "/api/v1/notes/archive").1,
            json!({"data": "archive"})
        );
    }

    #[test]
    fn unknown_paths_are_json_404s() {
        for path in [
            "/api/v1/nope",
            "/api/v1/notes/n-1/extra",
            "/api/v1/notes/",
            "/",
            "",
        ] {
            let (status, body, _) = call("GET", path);
            assert_eq!(status, 404, "{path}");
            assert_eq!(body, json!({"message": "Not found."}), "{path}");
        }
    }

    #[test]
    fn wrong_methods_are_json_405s_with_allow() {
        let (status, body, allow) = call("PUT", "/api/v1/notes");
        assert_eq!(status, 405);
        assert_eq!(body, json!({"message": "Method not allowed."}));
        assert_eq!(allow.as_deref(), Some("GET, POST"));
        assert_eq!(
            call("PATCH", "/api/v1/notes/x").2.as_deref(),
            Some("GET, DELETE")
        );
    }

    #[test]
    fn a_literal_path_answers_405_with_its_own_methods_only() {
        // `/api/v1/notes/archive` is its own resource (GET only), not a `{id}` of DELETE.
        let (status, _, allow) = call("DELETE", "/api/v1/notes/archive");
        assert_eq!((status, allow.as_deref()), (405, Some("GET")));
    }

    #[test]
    fn handler_errors_become_error_responses() {
        assert_eq!(
            call("GET", "/api/v1/fail"),
            (404, json!({"message": "Note not found."}), None)
        );
    }
}
