//! `tessera-sdk`: the guest-side SDK for Tessera engines (WebAssembly components of the
//! `tessera:engine/engine@0.3.0` world).
//!
//! An engine author implements [`Engine`], routes requests with a [`Router`] to handlers that
//! return `Result<Response, ApiError>`, and exports it with [`export_engine!`]. The WIT bindings
//! stay inside the SDK: everything at the boundary is a plain Rust type ([`Context`],
//! [`Request`], [`Response`], [`Descriptor`], …), and the host imports are typed helpers
//! ([`storage`], [`scheduler`], [`events`], [`realtime`], [`http`], [`vault`], [`settings`],
//! [`log`]).
//!
//! # One call, one unit of work
//!
//! Everything a call writes ([`storage`], [`blobs`]), the events it publishes ([`events`],
//! [`realtime`]) and the jobs it schedules ([`scheduler`]) commit together when the call
//! succeeds (a 2xx or 3xx response; `Ok` from a job, an event or a lifecycle call), and not at
//! all when it fails (an error response, `Err`), panics or runs out of time. So write the
//! state, then publish the event that announces it: neither exists without the other, and a
//! failed publish fails the call (propagate it with `?`). Reads see the call's own writes.
//! [`storage::compare_and_swap`] and [`storage::Transaction::commit`] are synchronisation
//! points: their conditions are checked against the committed state at once, and when they
//! hold, everything the call wrote so far commits with them (so a claim is seen by concurrent
//! calls at once). Outbound HTTP and mail are not undone: schedule them as a job when they
//! must follow a committed change. The whole model is documented on the `storage` interface of
//! `wit/engine.wit`.
//!
//! Responses have the host's shapes: `{"data": …}` / `{"data": …, "meta": …}` on success,
//! `{"message": …}` on error and `{"message": "The given data was invalid.", "errors": {field:
//! [rule, …]}}` for a 422. Cursor paging ([`CursorPage`]) encodes cursors exactly like the
//! host. These rules (validation errors, JSON body classification, cursor paging, error
//! messages) are the `tessera-wire` crate's, which the host uses too.
//!
//! # A complete engine
//!
//! A `cdylib` crate depending on `tessera-sdk` and `serde`, built with
//! `cargo build --release --target wasm32-wasip2`:
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use tessera_sdk::{
//!     ApiError, Context, CursorPage, Descriptor, Engine, HandlerResult, Request, Response,
//!     Router, TenantInfo, ValidationErrors, events, storage, tenancy, time,
//! };
//!
//! struct Notes;
//!
//! #[derive(Serialize, Deserialize)]
//! struct Note {
//!     id: String,
//!     title: String,
//!     author_id: String,
//!     created_at: String,
//! }
//!
//! #[derive(Deserialize)]
//! struct NewNote {
//!     title: String,
//! }
//!
//! fn list(_ctx: &Context, req: &Request) -> HandlerResult {
//!     let page = CursorPage::from_query(req.query(&["cursor", "limit"])?)?;
//!     let (rows, meta) = storage::page_json::<Note>("notes/", &page, false)?;
//!     let notes: Vec<Note> = rows.into_iter().map(|(_, note)| note).collect();
//!     Ok(Response::ok_with_meta(&notes, &meta))
//! }
//!
//! fn create(ctx: &Context, req: &Request) -> HandlerResult {
//!     ctx.require_writer()?;
//!     let body: NewNote = req.json()?; // 400 for bad JSON, 422 for a wrong shape
//!     let mut errors = ValidationErrors::new();
//!     errors.check_length(&body.title, "title", 1, 200);
//!     errors.into_result()?;
//!     let note = Note {
//!         id: time::new_id(),
//!         title: body.title,
//!         author_id: ctx.user_id.clone(),
//!         created_at: time::now_rfc3339(),
//!     };
//!     storage::put_json(&format!("notes/{}", note.id), &note)?;
//!     events::publish("note.created", &serde_json::json!({ "note_id": note.id }))?;
//!     Ok(Response::created(&note))
//! }
//!
//! fn show(_ctx: &Context, req: &Request) -> HandlerResult {
//!     req.query(&[])?;
//!     let note: Note = storage::get_json(&format!("notes/{}", req.param("id")))?
//!         .ok_or_else(|| ApiError::not_found("Note"))?;
//!     Ok(Response::ok(&note))
//! }
//!
//! fn destroy(ctx: &Context, req: &Request) -> HandlerResult {
//!     ctx.require_writer()?;
//!     if !storage::delete(&format!("notes/{}", req.param("id")))? {
//!         return Err(ApiError::not_found("Note"));
//!     }
//!     Ok(Response::no_content())
//! }
//!
//! impl Engine for Notes {
//!     fn describe() -> Descriptor {
//!         Descriptor::new("notes", "Notes", env!("CARGO_PKG_VERSION"))
//!             .tenant_provision(true)
//!     }
//!
//!     fn handle(ctx: &Context, req: Request) -> Response {
//!         Router::new()
//!             .get("/api/v1/status", |ctx, req| tenancy::status("notes", ctx, req))
//!             .get("/api/v1/notes", list)
//!             .post("/api/v1/notes", create)
//!             .get("/api/v1/notes/{id}", show)
//!             .delete("/api/v1/notes/{id}", destroy)
//!             .handle(ctx, req)
//!     }
//!
//!     fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
//!         storage::put_json_if_absent("settings", || serde_json::json!({ "max_notes": 1000 }))?;
//!         tenancy::record_tenant(tenant)?;
//!         Ok(())
//!     }
//! }
//!
//! tessera_sdk::export_engine!(Notes);
//! # fn main() {}
//! ```
//!
//! # Realtime
//!
//! An engine owns the topics it declares ([`Engine::topics`]; clients subscribe to
//! `<code>.<topic>`), decides who may subscribe ([`Engine::authorize_subscription`], deny by
//! default) and publishes to them with [`realtime`], in the call's unit of work:
//!
//! ```
//! use tessera_sdk::{Context, Descriptor, Engine, Response, Router, realtime};
//!
//! struct Board;
//!
//! impl Engine for Board {
//!     fn describe() -> Descriptor {
//!         Descriptor::new("board", "Board", env!("CARGO_PKG_VERSION"))
//!     }
//!
//!     fn topics() -> Vec<String> {
//!         vec!["lobby".into(), "room.*".into()] // board.lobby, board.room.<id>
//!     }
//!
//!     fn authorize_subscription(caller: &Context, topic: &str) -> bool {
//!         match topic.split_once('.') {
//!             None => topic == "lobby" && !caller.is_guest(),
//!             Some(("room", _room)) => caller.can_write(),
//!             Some(_) => false,
//!         }
//!     }
//!
//!     fn router() -> Router {
//!         Router::new().post("/api/v1/rooms/{id}/pings", |ctx, req| {
//!             ctx.require_writer()?;
//!             let data = serde_json::json!({ "room_id": req.param("id"), "by": ctx.user_id });
//!             realtime::publish(&format!("room.{}", req.param("id")), "ping.sent", &data)?;
//!             Ok(Response::no_content())
//!         })
//!     }
//! }
//!
//! tessera_sdk::export_engine!(Board);
//! # fn main() {}
//! ```
//!
//! The pure parts (routing, requests, responses, errors, validation, JSON, paging, time) work on
//! any target, so handlers' logic can be unit-tested natively. With the `test-kit` feature
//! (a dev-dependency), the import wrappers call in-memory fakes of the host instead
//! ([`testkit`]): `cargo test` drives the engine's routes, jobs and event handlers natively,
//! without a host or a wasm build.

#![deny(missing_docs)]

extern crate self as tessera_sdk;

mod context;
mod engine;
mod error;
mod generated;
mod guest;
mod host;
mod imports;
pub mod json;
pub mod log;
pub mod openapi;
pub mod paging;
mod request;
mod response;
mod router;
pub mod storage;
pub mod tenancy;
#[cfg(feature = "test-kit")]
pub mod testkit;
pub mod time;
mod types;
mod validation;

pub use context::Context;
pub use engine::Engine;
pub use error::{
    ApiError, HostError, MESSAGE_FORBIDDEN, MESSAGE_INVALID, MESSAGE_METHOD_NOT_ALLOWED,
    MESSAGE_SERVER_ERROR, MESSAGE_UNAUTHENTICATED,
};
pub use host::{blobs, events, http, mail_transport, realtime, scheduler, settings, vault};
pub use openapi::Operation;
pub use paging::{CursorMeta, CursorPage};
pub use request::{Query, Request};
pub use response::Response;
pub use router::{HandlerResult, Router};
pub use schemars;
pub use serde_json;
pub use time::{new_id, now_rfc3339};
pub use types::{Descriptor, Event, Job, Permission, Setting, SettingKind, TenantInfo, UserInfo};
pub use validation::{ValidationErrors, is_email};

/// Used by [`export_engine!`]; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::generated::bindings;
    pub use crate::guest::Adapter;
}
