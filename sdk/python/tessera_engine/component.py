"""The boundary with the component: componentize-py's bindings (`wit_world`, generated from
`wit/engine.wit` when the engine is built) on one side, the kit's types on the other. Imported
only by an engine's component module (`app.py`), never by its tests:

    from tessera_engine.component import export
    from my_engine import MyEngine

    Guest = export(MyEngine())

`export` installs the component's imports as the host backend and returns the class
componentize-py instantiates for the `guest` export. componentize-py runs this at build time
and snapshots the result, so the router and the API description are made once, not per call."""

from __future__ import annotations

from typing import Any, Optional

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import blobs as wit_blobs
from wit_world.imports import events as wit_events
from wit_world.imports import log as wit_log
from wit_world.imports import mail_transport as wit_mail
from wit_world.imports import outbound_http as wit_http
from wit_world.imports import realtime as wit_realtime
from wit_world.imports import scheduler as wit_scheduler
from wit_world.imports import settings as wit_settings
from wit_world.imports import storage as wit_storage
from wit_world.imports import types as wit
from wit_world.imports import vault as wit_vault

from . import host
from .engine import Adapter, Engine
from .request import Request
from .types import (
    Context,
    Event,
    HostError,
    Job,
    Level,
    OutboundRequest,
    OutboundResponse,
    OutgoingMail,
    TenantInfo,
    Transaction,
    UserInfo,
)


def _call(function: Any, *arguments: Any) -> Any:
    """An import's call, its `err` raised as `HostError`."""
    try:
        return function(*arguments)
    except Err as failure:
        raise HostError(str(failure.value)) from None


class _Storage:
    def get(self, key: str) -> Optional[bytes]:
        return _call(wit_storage.get, key)

    def get_many(self, keys: list[str]) -> list[Optional[bytes]]:
        return _call(wit_storage.get_many, keys)

    def set(self, key: str, value: bytes) -> None:
        _call(wit_storage.set, key, value)

    def delete(self, key: str) -> bool:
        return _call(wit_storage.delete, key)

    def scan(self, prefix: str, after: Optional[str], limit: int, reverse: bool) -> list[tuple[str, bytes]]:
        return _call(wit_storage.scan, prefix, after, limit, reverse)

    def delete_prefix(self, prefix: str) -> int:
        return _call(wit_storage.delete_prefix, prefix)

    def compare_and_swap(self, key: str, expected: Optional[bytes], value: Optional[bytes]) -> bool:
        return _call(wit_storage.compare_and_swap, key, expected, value)

    def write_batch(
        self, sets: list[tuple[str, bytes]], deletes: list[str], jobs: list[tuple[int, bytes]]
    ) -> list[str]:
        return _call(wit_storage.write_batch, sets, deletes, jobs)

    def transact(self, transaction: Transaction) -> Optional[list[str]]:
        converted = wit_storage.Transaction(
            expect=list(transaction.expect),
            sets=list(transaction.sets),
            deletes=list(transaction.deletes),
            add=list(transaction.add),
            jobs=list(transaction.jobs),
        )
        return _call(wit_storage.transact, converted)


class _Blobs:
    def put(self, key: str, content: bytes, quota_bytes: Optional[int], sets: list[tuple[str, bytes]]) -> bool:
        return _call(wit_blobs.put, key, content, quota_bytes, sets)

    def get(self, key: str) -> Optional[bytes]:
        return _call(wit_blobs.get, key)

    def delete(self, keys: list[str], deletes: list[str]) -> int:
        return _call(wit_blobs.delete, keys, deletes)

    def delete_prefix(self, prefix: str) -> int:
        return _call(wit_blobs.delete_prefix, prefix)

    def usage(self) -> int:
        return _call(wit_blobs.usage)


class _Scheduler:
    def schedule(self, at_unix_ms: int, payload: bytes) -> str:
        return _call(wit_scheduler.schedule, at_unix_ms, payload)

    def cancel(self, job_id: str) -> bool:
        return _call(wit_scheduler.cancel, job_id)


class _Events:
    def publish(self, event_type: str, payload: str) -> None:
        _call(wit_events.publish, event_type, payload)


class _Realtime:
    def publish(self, topic: str, event_type: str, data: str) -> None:
        _call(wit_realtime.publish, topic, event_type, data)

    def publish_to_user(self, user_id: str, topic: str, event_type: str, data: str) -> None:
        _call(wit_realtime.publish_to_user, user_id, topic, event_type, data)

    def end_subscriptions(self, topic: str, user_id: str) -> None:
        _call(wit_realtime.end_subscriptions, topic, user_id)


class _OutboundHttp:
    def fetch(self, request: OutboundRequest) -> OutboundResponse:
        answer = _call(
            wit_http.fetch,
            wit_http.OutboundRequest(
                method=request.method,
                url=request.url,
                headers=list(request.headers),
                body=request.body,
                timeout_ms=request.timeout_ms,
            ),
        )
        return OutboundResponse(answer.status, list(answer.headers), answer.body, answer.elapsed_ms)

    def check_target(self, url: str) -> None:
        _call(wit_http.check_target, url)


class _Vault:
    def seal(self, plaintext: bytes) -> bytes:
        return _call(wit_vault.seal, plaintext)

    def open(self, sealed: bytes) -> bytes:
        return _call(wit_vault.open, sealed)


class _Settings:
    def get(self, name: str) -> Optional[str]:
        return wit_settings.get(name)


class _Mail:
    def send(self, mail: OutgoingMail) -> None:
        _call(
            wit_mail.send,
            wit_mail.OutgoingMail(
                sender=mail.sender,
                recipients=list(mail.recipients),
                subject=mail.subject,
                text=mail.text,
                message_id=mail.message_id,
            ),
        )


_LEVELS = {
    Level.TRACE: wit_log.Level.TRACE,
    Level.DEBUG: wit_log.Level.DEBUG,
    Level.INFO: wit_log.Level.INFO,
    Level.WARN: wit_log.Level.WARN,
    Level.ERROR: wit_log.Level.ERROR,
}


class _Log:
    def log(self, level: Level, message: str) -> None:
        wit_log.log(_LEVELS[level], message)


class ComponentHost:
    """The host backend of a built engine: its imports."""

    storage = _Storage()
    blobs = _Blobs()
    scheduler = _Scheduler()
    events = _Events()
    realtime = _Realtime()
    outbound_http = _OutboundHttp()
    vault = _Vault()
    settings = _Settings()
    mail_transport = _Mail()
    log = _Log()


def _context(caller: wit.Caller) -> Context:
    return Context(
        tenant_id=caller.tenant_id,
        user_id=caller.user_id,
        role=caller.role,
        token_type=caller.token_type,
        workspace_id=caller.workspace_id,
        correlation_id=caller.correlation_id,
    )


def _setting_kind(value: str) -> Any:
    # componentize-py names enum cases after the WIT ones (`integer-list` → INTEGER_LIST).
    return getattr(wit.SettingKind, value.replace("-", "_").upper())


def _permission(value: str) -> Any:
    return getattr(wit.Permission, value.replace("-", "_").upper())


def _failed(reason: Optional[str]) -> None:
    if reason is not None:
        raise Err(reason)


def export(engine: Engine) -> type:
    """The class componentize-py instantiates for the `guest` export, serving `engine`."""
    host.install_backend(ComponentHost())
    adapter = Adapter(engine)
    descriptor = adapter.descriptor

    class Guest(exports.Guest):
        def describe(self) -> wit.Descriptor:
            return wit.Descriptor(
                code=descriptor.code,
                name=descriptor.name,
                version=descriptor.version,
                requires_tenant_provision=descriptor.requires_tenant_provision,
                requires_user_provision=descriptor.requires_user_provision,
                subscriptions=list(descriptor.subscriptions),
                outbound_hosts=list(descriptor.outbound_hosts),
            )

        def describe_api(self) -> str:
            return adapter.api_text

        def describe_settings(self) -> list[wit.Setting]:
            return [
                wit.Setting(
                    name=setting.name,
                    kind=_setting_kind(setting.kind.value),
                    default_value=setting.default_value,
                    description=setting.description,
                    secret=setting.secret,
                )
                for setting in adapter.declared_settings
            ]

        def describe_permissions(self) -> list[Any]:
            return [_permission(permission.value) for permission in adapter.declared_permissions]

        def describe_topics(self) -> list[str]:
            return list(adapter.declared_topics)

        def authorize_subscription(self, caller: wit.Caller, topic: str) -> bool:
            return adapter.authorize_subscription(_context(caller), topic)

        def handle(self, caller: wit.Caller, request: wit.Request) -> wit.Response:
            answer = adapter.handle(
                _context(caller),
                Request(request.method, request.path, request.query, list(request.headers), request.body),
            )
            return wit.Response(status=answer.status, headers=list(answer.headers), body=answer.body)

        def provision_tenant(self, tenant: wit.TenantInfo) -> None:
            _failed(adapter.provision_tenant(TenantInfo(tenant.tenant_id, tenant.tenant_short_id, tenant.name)))

        def deprovision_tenant(self, tenant_id: str) -> None:
            _failed(adapter.deprovision_tenant(tenant_id))

        def provision_user(self, user: wit.UserInfo) -> None:
            _failed(
                adapter.provision_user(
                    UserInfo(
                        user.tenant_id, user.user_id, user.email, user.first_name, user.last_name, user.user_type
                    )
                )
            )

        def deprovision_user(self, tenant_id: str, user_id: str) -> None:
            _failed(adapter.deprovision_user(tenant_id, user_id))

        def on_event(self, event: wit.Event) -> None:
            _failed(
                adapter.on_event(
                    Event(
                        id=event.id,
                        event_type=event.event_type,
                        tenant_id=event.tenant_id,
                        occurred_at=event.occurred_at,
                        payload=event.payload,
                        actor_id=event.actor_id,
                        correlation_id=event.correlation_id,
                    )
                )
            )

        def run_job(self, job: wit.Job) -> None:
            _failed(adapter.run_job(Job(job.id, job.tenant_id, job.payload, job.attempt)))

    return Guest
