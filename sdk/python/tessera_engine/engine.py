"""The `Engine` an engine subclasses (its hooks, with the Rust SDK's defaults) and the `Adapter`
that serves the `guest` export's calls with it: the API description and the topics made once,
every request answered in the host's shapes (a raised `ValidationErrors` 422, an `ApiError` its
status, any other exception logged with its traceback and answered 500, never a trap), a
subscription refused unless the engine answers exactly `True` (an exception logged, never a
trap), and a failing hook turned into the reason of the export's `err`."""

from __future__ import annotations

import json
import time
import traceback
from typing import Any, Optional

from . import host
from .http import Response, Router
from .request import Request
from .types import (
    Context,
    Descriptor,
    Event,
    HostError,
    Job,
    Level,
    Permission,
    Setting,
    TenantInfo,
    UserInfo,
)
from .wire import MESSAGE_SERVER_ERROR

#: The key of the tenant record the default `provision_tenant` writes.
TENANT_KEY = "tenant"


def user_key(user_id: str) -> str:
    """`users/<user_id>`: where the default `provision_user` records a user."""
    return f"users/{user_id}"


def now_unix_ms() -> int:
    """The host's clock (WASI), in Unix milliseconds."""
    return time.time_ns() // 1_000_000


def format_rfc3339(unix_micros: int) -> str:
    """`YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC), as the Rust SDK writes times."""
    seconds, micros = divmod(unix_micros, 1_000_000)
    parts = time.gmtime(seconds)
    return time.strftime("%Y-%m-%dT%H:%M:%S", parts) + f".{micros:06d}Z"


def now_rfc3339() -> str:
    return format_rfc3339(time.time_ns() // 1_000)


def record_tenant(tenant: TenantInfo) -> dict[str, Any]:
    """Writes the tenant record (idempotent: a second call keeps the first `provisioned_at`)."""
    old = host.storage.get_json(TENANT_KEY)
    record = {
        "tenant_id": tenant.tenant_id,
        "tenant_short_id": tenant.tenant_short_id,
        "name": tenant.name,
        "provisioned_at": old["provisioned_at"] if isinstance(old, dict) else now_rfc3339(),
    }
    host.storage.put_json(TENANT_KEY, record)
    return record


def record_user(user: UserInfo) -> dict[str, Any]:
    """Writes `users/<user_id>` (idempotent like `record_tenant`)."""
    key = user_key(user.user_id)
    old = host.storage.get_json(key)
    record = {
        "tenant_id": user.tenant_id,
        "user_id": user.user_id,
        "email": user.email,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "user_type": user.user_type,
        "provisioned_at": old["provisioned_at"] if isinstance(old, dict) else now_rfc3339(),
    }
    host.storage.put_json(key, record)
    return record


def forget_user(user_id: str) -> None:
    """Removes `users/<user_id>` and everything under `users/<user_id>/`."""
    key = user_key(user_id)
    host.storage.delete(key)
    host.storage.delete_prefix(key + "/")


class Engine:
    """An engine. Every hook runs with the imports scoped by the host to the engine and the
    tenant of the call. Only `describe` is required; an engine with an HTTP API gives its
    `router`, which both answers requests and describes the API. A hook that raises fails the
    call: the host records the reason (a provisioning `error`) and retries jobs later."""

    def describe(self) -> Descriptor:
        raise NotImplementedError("an engine describes itself")

    def router(self) -> Router:
        """The engine's documented routes. Made once, when the component is built."""
        return Router()

    def settings(self) -> list[Setting]:
        """The operator settings the engine reads with `host.settings.get`."""
        return []

    def permissions(self) -> list[Permission]:
        return []

    def topics(self) -> list[str]:
        """The realtime topics the engine owns (`describe-topics`), named without the engine
        code: dot-separated segments of ASCII letters, digits, `_` and `-`, where a segment `*`
        matches any one segment (`conversation.*`, `me`). Clients subscribe to
        `<code>.<topic>`; `host.realtime` publishes only to topics these match. Default: none."""
        return []

    def authorize_subscription(self, ctx: Context, topic: str) -> bool:
        """Whether `ctx`'s user may subscribe to `topic` (one of `topics`, without the engine
        code: `conversation.c1`), decided as the engine's REST reads decide. A read-only call of
        its own: what it writes or publishes is not kept. Anything but `True` refuses. Default:
        `False` (deny)."""
        return False

    def provision_tenant(self, tenant: TenantInfo) -> None:
        """Default: records the tenant under `tenant`. Must be idempotent."""
        record_tenant(tenant)

    def deprovision_tenant(self, tenant_id: str) -> None:
        """Default: deletes all of the engine's storage in the tenant."""
        host.storage.delete_prefix("")

    def provision_user(self, user: UserInfo) -> None:
        """Default: records the user under `users/<user_id>`. Must be idempotent."""
        record_user(user)

    def deprovision_user(self, tenant_id: str, user_id: str) -> None:
        """Default: removes `users/<user_id>` and everything under it."""
        forget_user(user_id)

    def on_event(self, event: Event) -> None:
        """An event of a subscribed type. Default: ignored."""

    def run_job(self, job: Job) -> None:
        """A due job the engine scheduled. Default: nothing to do."""


def _reason(error: BaseException) -> str:
    if isinstance(error, HostError):
        return error.reason
    text = str(error)
    return text or type(error).__name__


class Adapter:
    """Serves the `guest` export's calls with an `Engine`, in the kit's types."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.descriptor = engine.describe()
        self.routes = engine.router()
        self.api_text = json.dumps(self.routes.openapi(), separators=(",", ":"))
        self.declared_settings = engine.settings()
        self.declared_permissions = engine.permissions()
        self.declared_topics = list(engine.topics())

    def handle(self, ctx: Context, request: Request) -> Response:
        host.begin_call()
        try:
            # The router answers a raised `ValidationErrors` or `ApiError` itself.
            return self.routes.handle(ctx, request.method, request.path, request)
        except Exception:  # uncaught it would trap (502) and its traceback would be lost
            self._log_failure(f"{request.method} {request.path} failed")
            return Response.error(500, MESSAGE_SERVER_ERROR)

    def authorize_subscription(self, ctx: Context, topic: str) -> bool:
        """The engine's decision; `False` when it raised (logged) or answered anything but
        `True`."""
        host.begin_call()
        try:
            return self.engine.authorize_subscription(ctx, topic) is True
        except Exception:  # uncaught it would trap; the host refuses either way
            self._log_failure(f"authorize-subscription {topic} failed")
            return False

    def _log_failure(self, what: str) -> None:
        try:
            host.log(Level.ERROR, f"{what}: {traceback.format_exc()}")
        except Exception:  # noqa: BLE001 - the log itself failing must not trap either
            pass

    def lifecycle(self, what: str, hook: Any, *arguments: Any) -> Optional[str]:
        """Runs a hook: None when it returned, else the reason of the export's `err`."""
        host.begin_call()
        try:
            hook(*arguments)
            return None
        except Exception as error:  # noqa: BLE001 - every failure is the call's `err`
            if not isinstance(error, HostError):
                self._log_failure(f"{what} failed")
            return _reason(error)

    def provision_tenant(self, tenant: TenantInfo) -> Optional[str]:
        return self.lifecycle("provision-tenant", self.engine.provision_tenant, tenant)

    def deprovision_tenant(self, tenant_id: str) -> Optional[str]:
        return self.lifecycle("deprovision-tenant", self.engine.deprovision_tenant, tenant_id)

    def provision_user(self, user: UserInfo) -> Optional[str]:
        return self.lifecycle("provision-user", self.engine.provision_user, user)

    def deprovision_user(self, tenant_id: str, user_id: str) -> Optional[str]:
        return self.lifecycle("deprovision-user", self.engine.deprovision_user, tenant_id, user_id)

    def on_event(self, event: Event) -> Optional[str]:
        return self.lifecycle(f"on-event {event.event_type}", self.engine.on_event, event)

    def run_job(self, job: Job) -> Optional[str]:
        return self.lifecycle("run-job", self.engine.run_job, job)
