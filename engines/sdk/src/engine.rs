//! The [`Engine`] trait an engine implements, and the [`export_engine!`](crate::export_engine)
//! macro that turns it into the component's `guest` export.

use crate::context::Context;
use crate::request::Request;
use crate::response::Response;
use crate::router::Router;
use crate::types::{Descriptor, Event, Job, Permission, Setting, TenantInfo, UserInfo};

/// An engine. Every hook runs with storage and the other imports scoped by the host to the
/// engine and to the tenant of the call. Only [`describe`](Engine::describe) is required; an
/// engine with an HTTP API gives its [`router`](Engine::router), which both answers requests
/// and describes the API (`describe-api`).
///
/// A hook returning `Err(reason)` fails that call: the host records `reason` (e.g. as the
/// engine's provisioning `error`) and, for jobs, retries later.
pub trait Engine {
    /// The engine's code, name, version, provisioning flags and event subscriptions.
    fn describe() -> Descriptor;

    /// The engine's routes, documented ([`Router::doc`]): what [`handle`](Engine::handle)
    /// dispatches to, and what the host's OpenAPI document shows under the engine's prefix.
    /// Default: no routes.
    fn router() -> Router {
        Router::new()
    }

    /// The operator settings the engine reads with [`settings::get`](crate::settings::get):
    /// the host checks operators' values against them before the engine loads, and lists the
    /// non-secret ones. Default: none.
    fn settings() -> Vec<Setting> {
        Vec::new()
    }

    /// The host capabilities the engine asks for (e.g. [`Permission::SendMail`] for
    /// [`mail_transport::send`](crate::mail_transport::send)). Default: none.
    fn permissions() -> Vec<Permission> {
        Vec::new()
    }

    /// The realtime topics the engine owns (`describe-topics`), named without the engine code:
    /// dot-separated segments of ASCII letters, digits, `_` and `-`, where a segment `*`
    /// matches any one segment (`conversation.*`, `me`). Clients subscribe to
    /// `<code>.<topic>`; a topic none of these match is refused (404) without asking the
    /// engine, and [`realtime`](crate::realtime) may publish only to topics they match.
    /// Default: none (the engine publishes nothing).
    fn topics() -> Vec<String> {
        Vec::new()
    }

    /// Whether `caller` may subscribe to `topic` (a topic of [`topics`](Engine::topics),
    /// without the engine code: `conversation.c1`). Asked when a client subscribes, and again
    /// when the caller's role changes. It is a call of its own and read-only: storage reads
    /// see the tenant's committed state, and nothing it writes or publishes is kept. Decide
    /// as the engine's REST reads do. Default: `false` (deny).
    fn authorize_subscription(caller: &Context, topic: &str) -> bool {
        let _ = (caller, topic);
        false
    }

    /// Answers an HTTP request under the engine's prefix. Default: [`router`](Engine::router)
    /// dispatches it.
    fn handle(ctx: &Context, request: Request) -> Response {
        Self::router().handle(ctx, request)
    }

    /// Creates the tenant's state. Must be idempotent: the host may call it again (retries).
    /// Default: records the tenant under `tenant` (`tenancy::record_tenant`); engines with
    /// defaults of their own override it and call that too.
    fn provision_tenant(tenant: &TenantInfo) -> Result<(), String> {
        crate::tenancy::record_tenant(tenant)?;
        Ok(())
    }

    /// Removes everything of the tenant. Default: deletes all of the engine's storage for the
    /// tenant (`storage::delete_prefix("")`).
    fn deprovision_tenant(tenant_id: &str) -> Result<(), String> {
        let _ = tenant_id;
        crate::storage::delete_prefix("")?;
        Ok(())
    }

    /// Creates a user's state. Must be idempotent. Default: records the user under
    /// `users/<user_id>` (`tenancy::record_user`).
    fn provision_user(user: &UserInfo) -> Result<(), String> {
        crate::tenancy::record_user(user)?;
        Ok(())
    }

    /// Removes a user's state. Default: removes `users/<user_id>` and everything under it
    /// (`tenancy::forget_user`).
    fn deprovision_user(tenant_id: &str, user_id: &str) -> Result<(), String> {
        let _ = tenant_id;
        crate::tenancy::forget_user(user_id)?;
        Ok(())
    }

    /// Handles an event of a subscribed type. Default: ignores it.
    fn on_event(event: &Event) -> Result<(), String> {
        let _ = event;
        Ok(())
    }

    /// Runs a due job the engine scheduled. Default: nothing to do.
    fn run_job(job: &Job) -> Result<(), String> {
        let _ = job;
        Ok(())
    }
}

/// Exports an [`Engine`] as the component's `tessera:engine/guest` implementation. Use it once,
/// in the engine's `cdylib` crate:
///
/// ```
/// use tessera_sdk::{Descriptor, Engine, Operation, Response, Router};
///
/// struct Hello;
///
/// impl Engine for Hello {
///     fn describe() -> Descriptor {
///         Descriptor::new("hello", "Hello", env!("CARGO_PKG_VERSION"))
///     }
///
///     fn router() -> Router {
///         Router::new()
///             .get("/api/v1/hello", |_, _| Ok(Response::ok(&"hello")))
///             .doc(Operation::new("Say hello").ok::<String>())
///     }
/// }
///
/// tessera_sdk::export_engine!(Hello);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! export_engine {
    ($engine:ty) => {
        const _: () = {
            type __TesseraEngineAdapter = $crate::__private::Adapter<$engine>;
            $crate::__private::bindings::__export_tessera_engine!(
                __TesseraEngineAdapter with_types_in $crate::__private::bindings
            );
        };
    };
}
