//! The [`Engine`] trait an engine implements, and the [`export_engine!`](crate::export_engine)
//! macro that turns it into the component's `guest` export.

use crate::context::Context;
use crate::request::Request;
use crate::response::Response;
use crate::types::{Descriptor, Event, Job, TenantInfo, UserInfo};

/// An engine. Every hook runs with storage and the other imports scoped by the host to the
/// engine and to the tenant of the call. Only [`describe`](Engine::describe) and
/// [`handle`](Engine::handle) are required.
///
/// A hook returning `Err(reason)` fails that call: the host records `reason` (e.g. as the
/// engine's provisioning `error`) and, for jobs, retries later.
pub trait Engine {
    /// The engine's code, name, version, provisioning flags and event subscriptions.
    fn describe() -> Descriptor;

    /// Answers an HTTP request under the engine's prefix (usually through a
    /// [`Router`](crate::Router)).
    fn handle(ctx: &Context, request: Request) -> Response;

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
/// use tessera_sdk::{Context, Descriptor, Engine, Request, Response, Router};
///
/// struct Hello;
///
/// impl Engine for Hello {
///     fn describe() -> Descriptor {
///         Descriptor::new("hello", "Hello", env!("CARGO_PKG_VERSION"))
///     }
///
///     fn handle(ctx: &Context, request: Request) -> Response {
///         Router::new()
///             .get("/api/v1/hello", |_, _| Ok(Response::ok(&"hello")))
///             .handle(ctx, request)
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
