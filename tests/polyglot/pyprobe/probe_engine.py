"""pyprobe: a Python test engine that tries, from inside the sandbox, what a Python guest must
not be able to do (read, list and write files, see the environment, open sockets, resolve
names) and answers what happened to each attempt, and when its module was initialised. Its WASI imports link; the host grants them
no capability (no preopened directory, no network, an empty environment)."""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any, Callable

from tessera_engine import Context, Descriptor, Engine, Request, Response, Router

#: When this module's top level ran: at build time, when componentize-py pre-initialised it
#: and snapshotted the result, not when an instance starts.
INITIALISED_AT_NS = time.time_ns()


def _attempt(action: Callable[[], Any]) -> str:
    try:
        result = action()
    except BaseException as error:  # noqa: BLE001 - every refusal is the answer
        return f"refused: {type(error).__name__}: {error}"
    return f"granted: {result!r}"[:200]


def _read_file() -> bytes:
    with open("/etc/passwd", "rb") as handle:
        return handle.read(64)


def _write_file() -> int:
    with open("/tmp/pyprobe-was-here", "w") as handle:
        return handle.write("x")


def _connect() -> str:
    connection = socket.create_connection(("127.0.0.1", 5432), timeout=1)
    connection.close()
    return "connected"


def attempts(ctx: Context, request: Request, params: dict[str, str]) -> Response:
    return Response.ok(
        {
            "read_file": _attempt(_read_file),
            "list_root": _attempt(lambda: os.listdir("/")),
            "list_cwd": _attempt(lambda: os.listdir(".")),
            "write_file": _attempt(_write_file),
            "connect": _attempt(_connect),
            "resolve": _attempt(lambda: socket.gethostbyname("localhost")),
            "environment": dict(os.environ),
            "arguments": list(sys.argv[1:]),
            "initialised_at_ns": INITIALISED_AT_NS,
        }
    )


class ProbeEngine(Engine):
    def describe(self) -> Descriptor:
        return Descriptor("pyprobe", "Python sandbox probe", "0.1.0", requires_tenant_provision=False)

    def router(self) -> Router:
        return Router().get("/api/v1/attempts", attempts)
