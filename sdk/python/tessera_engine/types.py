"""The kit's own types of the engine world (`wit/engine.wit`): what hooks receive and return.
The WIT records componentize-py generates are converted to and from these at one boundary
(`component.py`) and go no further, so an engine and its tests never import `wit_world`."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional


class HostError(Exception):
    """A host import answered `err`: the host's reason in `reason`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Context:
    """The verified caller of a request, established by the host from the bearer token."""

    tenant_id: str
    user_id: str
    role: str = "owner"
    token_type: str = "user"
    workspace_id: Optional[str] = None
    correlation_id: str = "test-correlation"

    def is_owner(self) -> bool:
        return self.role == "owner"

    def is_guest(self) -> bool:
        return self.token_type == "guest"

    def can_write(self) -> bool:
        """Owners and editors may change things; viewers and guests read."""
        return self.role in ("owner", "editor") and not self.is_guest()


@dataclass
class Descriptor:
    """What an engine says about itself (`describe`)."""

    code: str
    name: str
    version: str
    requires_tenant_provision: bool = True
    requires_user_provision: bool = False
    subscriptions: list[str] = field(default_factory=list)
    outbound_hosts: list[str] = field(default_factory=list)


class SettingKind(enum.Enum):
    TEXT = "text"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    INTEGER_LIST = "integer-list"


@dataclass
class Setting:
    """An operator setting the engine declares and reads with `settings.get`."""

    name: str
    kind: SettingKind
    default_value: Optional[str]
    description: str
    secret: bool = False

    @classmethod
    def integer(cls, name: str, default: Optional[int], description: str) -> "Setting":
        return cls(name, SettingKind.INTEGER, None if default is None else str(default), description)

    @classmethod
    def text(cls, name: str, default: Optional[str], description: str, secret: bool = False) -> "Setting":
        return cls(name, SettingKind.TEXT, default, description, secret)

    @classmethod
    def boolean(cls, name: str, default: Optional[bool], description: str) -> "Setting":
        value = None if default is None else ("true" if default else "false")
        return cls(name, SettingKind.BOOLEAN, value, description)


class Permission(enum.Enum):
    SEND_MAIL = "send-mail"


class Level(enum.Enum):
    TRACE = "trace"
    DEBUG = "debug"
    INFO = "info"
    WARN = "warn"
    ERROR = "error"


@dataclass
class TenantInfo:
    tenant_id: str
    tenant_short_id: str
    name: str


@dataclass
class UserInfo:
    tenant_id: str
    user_id: str
    email: str
    first_name: str = ""
    last_name: str = ""
    user_type: str = "user"


@dataclass
class Event:
    """An event of a subscribed type; `payload` is the JSON object's text."""

    id: str
    event_type: str
    tenant_id: str
    occurred_at: str
    payload: str
    actor_id: Optional[str] = None
    correlation_id: str = "test-correlation"


@dataclass
class Job:
    """A due job the engine scheduled; `attempt` is 1 on the first run."""

    id: str
    tenant_id: str
    payload: bytes
    attempt: int = 1


@dataclass
class Transaction:
    """What `storage.transact` commits (see `wit/engine.wit`)."""

    expect: list[tuple[str, Optional[bytes]]] = field(default_factory=list)
    sets: list[tuple[str, bytes]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    add: list[tuple[str, int]] = field(default_factory=list)
    jobs: list[tuple[int, bytes]] = field(default_factory=list)


@dataclass
class OutboundRequest:
    method: str
    url: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    timeout_ms: int = 10_000


@dataclass
class OutboundResponse:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    elapsed_ms: int = 0


@dataclass
class OutgoingMail:
    sender: str
    recipients: list[str]
    subject: str
    text: str
    message_id: str
