//! The success envelopes of the spec: `{data}` and `{data, meta}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// `{data}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Data<T> {
    pub data: T,
}

/// `{data, meta}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct DataWithMeta<T, M> {
    pub data: T,
    pub meta: M,
}

/// 200 `{data}`.
pub fn ok<T: Serialize>(data: T) -> Response {
    Json(Data { data }).into_response()
}

/// 200 `{data, meta}`.
pub fn ok_with_meta<T: Serialize, M: Serialize>(data: T, meta: M) -> Response {
    Json(DataWithMeta { data, meta }).into_response()
}

/// 201 `{data}`.
pub fn created<T: Serialize>(data: T) -> Response {
    (StatusCode::CREATED, Json(Data { data })).into_response()
}

/// 202 `{data}`.
pub fn accepted<T: Serialize>(data: T) -> Response {
    (StatusCode::ACCEPTED, Json(Data { data })).into_response()
}
