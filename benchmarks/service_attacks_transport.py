"""Issue 35's attacks on the service's transport (`benchmarks/service_attacks.py` runs
and measures them): compressed WebSocket messages, pipelining, the connection cap held by
refused requests, floods of invalid or unauthenticated bodies, reads, WebSocket messages
over a limit, and a legitimate client's large bodies."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

from benchmarks.service_attacks import (
    ENV,
    TOKENS,
    Attacker,
    answered_until,
    attack,
    create_session,
    exchange,
    open_websocket,
    request,
    until_stopped,
)

WS_MESSAGE_BYTES = 256 * 1024 - 64  # just under the default --max-body-bytes


async def _ws_frames(port: int, messages: list[str], compress: bool) -> tuple[Any, ...]:
    """Opens an OpenEnv WebSocket; returns the connection, whether the server took
    compression, and each message as a frame ready to send (deflated on its own if so)."""
    path = f"/openenv/{ENV}/ws"
    reader, writer, protocol = await open_websocket(
        port, "flooder", TOKENS["flooder"], path, compress=compress
    )
    frames = []
    for message in messages:
        protocol.send_text(message.encode())
        frames.append(b"".join(protocol.data_to_send()))
    return reader, writer, bool(protocol.extensions), *frames  # type: ignore[return-value]


@attack(
    "ws-deflate",
    "8 WebSockets, each 1,000 compressed 256 KB messages behind a slow step (24, 6 MB, "
    "when the server takes no compression)",
)
async def ws_deflate(port: int, stop: asyncio.Event) -> int:
    slow = json.dumps({"type": "step", "data": {"command": "\ufdfa" * 1000}})
    padding = " " * (WS_MESSAGE_BYTES - 40)  # deflates to a few hundred bytes
    message = '{"type": "step", "data": {"command": "' + padding + '"}}'

    async def one() -> int:
        try:
            _, writer, compressed, slow_frame, frame = await _ws_frames(port, [slow, message], True)
            count = 1000 if compressed else 24
            writer.write(slow_frame + frame * count)  # 2.4 MB for eight when deflated
            await writer.drain()
            await stop.wait()  # read nothing, hold it
            writer.close()
        except OSError:
            return 0
        return len(frame) * count

    return sum(await asyncio.gather(*(one() for _ in range(8))))


async def _fill_sessions(port: int, token: str) -> None:
    """Creates sessions until the client's limit refuses one (its next creates are 429s)."""
    body = json.dumps({"env": ENV}).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for _ in range(100):
        status, _ = await exchange(reader, writer, request("POST", "/v1/sessions", body, token))
        if status == 429:
            break
    writer.close()


@attack(
    "pipelining",
    "32 connections, each 250 KB of pipelined GET /v1/health behind a refused create",
    "--client-max-sessions", "2",
)  # fmt: skip
async def pipelining(port: int, stop: asyncio.Event) -> int:
    token = TOKENS["flooder"]
    await _fill_sessions(port, token)
    refused = request("POST", "/v1/sessions", json.dumps({"env": ENV}).encode(), token)
    health = request("GET", "/v1/health")
    burst = health * (250_000 // len(health))

    async def one() -> int:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(refused)
            await asyncio.sleep(0.2)  # it waits out its refusal: pipeline behind it
            writer.write(burst)  # and never read an answer
            await writer.drain()
            await stop.wait()
            writer.close()
        except OSError:
            return 0
        return 1

    return sum(await asyncio.gather(*(one() for _ in range(32))))


@attack(
    "parked-429s",
    "the whole connection cap (256) held by creates refused with 429",
    "--client-max-sessions", "2", "--max-connections", "256",
)  # fmt: skip
async def parked_429s(port: int, stop: asyncio.Event) -> int:
    token = TOKENS["flooder"]
    await _fill_sessions(port, token)
    refused = request("POST", "/v1/sessions", json.dumps({"env": ENV}).encode(), token)
    return await answered_until(stop, port, refused, 300)


def _flood(body: bytes, token: str, connections: int = 8) -> Attacker:
    async def run(port: int, stop: asyncio.Event) -> int:
        raw = request("POST", "/v1/sessions", body, token)
        return await answered_until(stop, port, raw, connections)

    return run


WRONG_TOKEN = "not-a-token-0123456789"
FLOATS = json.dumps({"env": ENV, "options": {"x": [0.5] * 9000}}).encode()
FIELDS = json.dumps({"env": ENV, **{f"f{i}": 0 for i in range(20_000)}}).encode()
attack("wrong-token-floats", "8 connections: creates of 9,000 floats, wrong token")(
    _flood(FLOATS, WRONG_TOKEN)
)
attack("wrong-token-fields", "8 connections: creates of 20,000 unknown fields, wrong token")(
    _flood(FIELDS, WRONG_TOKEN)
)
attack("invalid-fields", "8 connections: creates of 20,000 unknown fields, valid token")(
    _flood(FIELDS, TOKENS["flooder"])
)


@attack("reads", "64 connections: GET /v1/envs (every scenario's rules), valid token")
async def reads(port: int, stop: asyncio.Event) -> int:
    raw = request("GET", "/v1/envs", token=TOKENS["flooder"])
    return await answered_until(stop, port, raw, 64)


# the default reset limit (a lower one would refuse the bystander's own resets too)
@attack("ws-over-limit", "4 WebSockets sending resets past the reset limit (answers counted)")
async def ws_over_limit(port: int, stop: asyncio.Event) -> int:
    from websockets.asyncio.client import connect

    uri = f"ws://flooder:{TOKENS['flooder']}@127.0.0.1:{port}/openenv/{ENV}/ws"
    answered = 0

    async def one() -> None:
        nonlocal answered
        async with connect(uri, open_timeout=30) as ws:
            while True:
                await ws.send('{"type": "reset", "data": {}}')
                await ws.recv()
                answered += 1

    await until_stopped(stop, [one() for _ in range(4)])
    return answered


@attack(
    "large-bodies",
    "2 connections: steps padded to 64-250 KB (under --max-body-bytes), each head and body "
    "in one write, 2 a second each (under the body-byte allowance)",
)
async def large_bodies(port: int, stop: asyncio.Event) -> int:
    """A legitimate client, not an attacker: its answers other than 200 are refusals of
    legitimate bodies (431 was the header guard counting body bytes)."""
    token = TOKENS["flooder"]
    sid = await create_session(port, token)
    sizes = random.Random(0)
    sent = 0

    async def one() -> None:
        nonlocal sent
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while True:
            padding = b" " * sizes.randrange(64 * 1024, 250 * 1024)
            body = b'{"command": "wait"' + padding + b"}"
            status, _ = await exchange(
                reader, writer, request("POST", f"/v1/sessions/{sid}/step", body, token)
            )
            if status == 409:  # the episode ended
                await exchange(
                    reader, writer, request("POST", f"/v1/sessions/{sid}/reset", b"{}", token)
                )
            sent += 1
            await asyncio.sleep(0.5)

    await until_stopped(stop, [one() for _ in range(2)])
    return sent
