"""A realtime client for the integration tests (tests/it/realtime.rs), written with libraries
nobody here wrote: `websockets` for the WebSocket, `httpx-sse` for Server-Sent Events.

Usage:
  client.py ws URL [--token T] [--since C] [--count N] [--timeout S] [--send JSON]...
               [--hold] [--receive-buffer BYTES] [--interactive] TOPIC...
  client.py sse URL [--token T] [--last-event-id C] [--count N] [--timeout S]

Prints one JSON object a line, flushed: every frame received (`ws`), every event received
(`sse`: {"id", "event", "data"}), then {"closed": CODE} when the server closes the WebSocket
(or ends the stream with its `close` event), {"refused": STATUS} when the handshake is refused,
or {"done": true} after N events.

`--hold` (ws): after subscribing, print {"holding": true} and read nothing until a line arrives
on standard input, so the server's frames pile up (with `--receive-buffer`, a small socket
receive buffer, they stop being accepted soon). `--interactive` (ws): every line read from
standard input is sent as a frame, while frames are received.
"""

import argparse
import asyncio
import json
import socket
import sys
from urllib.parse import urlsplit


def emit(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


async def run_ws(args):
    import websockets

    headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
    options = {}
    if args.receive_buffer:
        # A socket that accepts little before the reader takes it, and a client that buffers
        # one frame before it stops reading the socket.
        address = urlsplit(args.url)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.receive_buffer)
        sock.connect((address.hostname, address.port))
        sock.setblocking(False)
        options = {"sock": sock, "max_queue": 1, "compression": None, "proxy": None}
    try:
        connection = await websockets.connect(
            args.url, additional_headers=headers, **options
        )
    except websockets.exceptions.InvalidStatus as refused:
        emit({"refused": refused.response.status_code})
        return
    events = 0
    async with connection:
        try:
            for frame in args.send:
                await connection.send(frame)
            for topic in args.topics:
                frame = {"op": "subscribe", "topic": topic}
                if args.since:
                    frame["since"] = args.since
                await connection.send(json.dumps(frame))
            if args.hold:
                emit({"holding": True})
                await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            if args.interactive:
                asyncio.get_running_loop().create_task(send_lines(connection))
            while True:
                text = await connection.recv()
                frame = json.loads(text)
                emit(frame)
                if frame.get("op") == "event":
                    events += 1
                    if args.count and events >= args.count:
                        emit({"done": True})
                        return
        except websockets.exceptions.ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd else None
            emit({"closed": code})


async def send_lines(connection):
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        if line.strip():
            await connection.send(line.strip())


async def run_sse(args):
    import httpx
    from httpx_sse import aconnect_sse

    headers = {"Authorization": f"Bearer {args.token}"}
    if args.last_event_id:
        headers["Last-Event-ID"] = args.last_event_id
    events = 0
    async with httpx.AsyncClient(timeout=None) as client:
        async with aconnect_sse(client, "GET", args.url, headers=headers) as source:
            if source.response.status_code != 200:
                emit({"refused": source.response.status_code})
                return
            emit({"open": True})
            async for event in source.aiter_sse():
                if event.event == "close":
                    emit({"closed": json.loads(event.data)["code"]})
                    return
                emit({"id": event.id, "event": event.event, "data": json.loads(event.data)})
                events += 1
                if args.count and events >= args.count:
                    emit({"done": True})
                    return


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["ws", "sse"])
    parser.add_argument("url")
    parser.add_argument("topics", nargs="*")
    parser.add_argument("--token")
    parser.add_argument("--since")
    parser.add_argument("--last-event-id")
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--send", action="append", default=[])
    parser.add_argument("--hold", action="store_true")
    parser.add_argument("--receive-buffer", type=int, default=0)
    parser.add_argument("--interactive", action="store_true")
    args = parser.parse_intermixed_args()
    run = run_ws if args.mode == "ws" else run_sse
    try:
        asyncio.run(asyncio.wait_for(run(args), args.timeout))
    except (asyncio.TimeoutError, TimeoutError):
        emit({"timeout": True})


if __name__ == "__main__":
    main()
