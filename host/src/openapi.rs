//! The OpenAPI 3.1 document: the info block here; the paths come from each router's
//! `#[utoipa::path]` handlers, collected by `utoipa_axum` as the routers are merged.

use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tessera",
        description = "Multi-tenant workspace platform: authentication, core and engine APIs.",
    ),
    tags(
        (name = "health", description = "Health and liveness"),
    )
)]
pub struct ApiDoc;
