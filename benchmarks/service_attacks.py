"""Attacks on a shared `textenvs serve` by one tenant (or anyone who reaches the port), for
`python -m benchmarks.service_isolation --attacks ...` (issue 35).

Each attack is one function run in a process of its own (its CPU does not slow the
measuring client), registered in `ATTACKS` with the server options it needs. For each, a
fresh server (a subprocess, two clients from a token file) is measured three ways:

- memory: the server's RSS before the attack, its peak during it (sampled every 20 ms)
  and one second after the attacker's connections closed;
- a bystander's latency: the `victim` client steps its session at a fixed rate over one
  keep-alive connection (open loop), first with nobody else on the server (quiet), then
  during the attack; the ratio of the two p50s and p99s comes from the same server;
- lockout: the bystander also makes fresh requests (a new connection each, 5 a second,
  `/v1/health` and an authenticated `GET /v1/envs/{env}` in turn); served is the share
  answered 200 within 5 s.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.service_load import ROOT, _exchange, _rss_kb, serving

TOKENS = {"victim": "victim-token-0123456789", "flooder": "flooder-token-0123456789"}
ENV = "treasure-hunt"
FRESH_TIMEOUT_S = 5.0


def request(method: str, path: str, body: bytes = b"", token: str | None = None) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}"
    if body or method == "POST":
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return (head + "\r\n").encode() + body


@dataclass(frozen=True)
class Attack:
    about: str
    #: the attacker: (port, seconds) -> requests or messages it got answered (or sent)
    run: Callable[[int, float], Awaitable[int]]
    #: `textenvs serve` options besides the token file
    options: tuple[str, ...] = ()


ATTACKS: dict[str, Attack] = {}


def attack(name: str, about: str, *options: str) -> Callable:
    def register(run: Callable[[int, float], Awaitable[int]]) -> Callable:
        ATTACKS[name] = Attack(about, run, options)
        return run

    return register


# ----- the bystander ---------------------------------------------------------------------


async def _create(port: int, token: str) -> str:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        body = json.dumps({"env": ENV, "seed": 1}).encode()
        status, data = await _exchange(reader, writer, request("POST", "/v1/sessions", body, token))
    finally:
        writer.close()
    if status != 201:
        raise RuntimeError(f"the bystander could not create its session: {status} {data[:200]!r}")
    return str(json.loads(data)["session_id"])


async def _steps(port: int, sid: str, rate: float, duration: float) -> tuple[list[float], int]:
    """Open-loop steps over one keep-alive connection (a new one after an error):
    (latencies of the answered steps, failures)."""
    token = TOKENS["victim"]
    step = request("POST", f"/v1/sessions/{sid}/step", b'{"command":"wait"}', token)
    reset = request("POST", f"/v1/sessions/{sid}/reset", b"{}", token)
    latencies: list[float] = []
    failures = 0
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    start = time.perf_counter() + 0.2
    for i in range(int(rate * duration)):
        scheduled = start + i / rate
        await asyncio.sleep(max(0.0, scheduled - time.perf_counter()))
        try:
            if connection is None:
                connection = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", port), FRESH_TIMEOUT_S
                )
            status, _ = await asyncio.wait_for(_exchange(*connection, step), FRESH_TIMEOUT_S)
            if status == 409:  # the episode ended: a new one (not timed)
                status, _ = await asyncio.wait_for(_exchange(*connection, reset), FRESH_TIMEOUT_S)
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError):
            status = 0
            if connection is not None:
                connection[1].close()
            connection = None
        if status == 200:
            latencies.append(time.perf_counter() - scheduled)
        else:
            failures += 1
    if connection is not None:
        connection[1].close()
    return latencies, failures


async def _fresh(port: int, duration: float, per_second: float = 5.0) -> tuple[int, int]:
    """Requests on new connections: (answered 200, attempted)."""
    paths = ["/v1/health", f"/v1/envs/{ENV}"]

    async def one(i: int) -> bool:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port), FRESH_TIMEOUT_S
            )
        except (OSError, TimeoutError):
            return False
        try:
            raw = request("GET", paths[i % 2], token=TOKENS["victim"])
            status, _ = await asyncio.wait_for(_exchange(reader, writer, raw), FRESH_TIMEOUT_S)
            return status == 200
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError):
            return False
        finally:
            writer.close()

    tries = []
    for i in range(int(per_second * duration)):
        tries.append(asyncio.create_task(one(i)))
        await asyncio.sleep(1 / per_second)
    served = await asyncio.gather(*tries)
    return sum(served), len(served)


async def bystander(port: int, rate: float, duration: float) -> dict[str, float]:
    sid = await _create(port, TOKENS["victim"])
    (latencies, failures), (served, tried) = await asyncio.gather(
        _steps(port, sid, rate, duration), _fresh(port, duration)
    )
    latencies.sort()
    pick = lambda q: 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    return {
        "p50_ms": pick(0.5) if latencies else float("nan"),
        "p99_ms": pick(0.99) if latencies else float("nan"),
        "step_failures": failures,
        "served": served / max(1, tried),
    }


class PeakRss:
    """The highest RSS of a process, sampled every 20 ms in a thread (KB)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, _rss_kb(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _rss_kb(self.pid))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def measure(
    name: str, duration: float, rate: float, token_file: str, root: Path = ROOT
) -> dict[str, float]:
    """One attack against a fresh server (of checkout `root`): memory, the bystander's
    latency (quiet, then under attack) and the share of its fresh requests served."""
    spec = ATTACKS[name]
    with serving("--token-file", token_file, *spec.options, root=root) as (url, pid):
        port = int(url.rsplit(":", 1)[1])
        quiet = asyncio.run(bystander(port, rate, duration))
        before = _rss_kb(pid)
        peak = PeakRss(pid)
        attacker = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.service_isolation", "--attack-only", name,
             "--port", str(port), "--duration", str(duration + 2)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(1.5)  # the attack under way
        loud = asyncio.run(bystander(port, rate, duration))
        out, _ = attacker.communicate(timeout=duration + 120)
        high = peak.stop()
        time.sleep(1.0)
        after = _rss_kb(pid)
    sent = json.loads(out.strip().splitlines()[-1])["sent"] if out.strip() else -1
    return {
        "peak_mb": (high - before) / 1024,
        "after_mb": (after - before) / 1024,
        "quiet_p50": quiet["p50_ms"],
        "p50": loud["p50_ms"],
        "p99_ratio": loud["p99_ms"] / quiet["p99_ms"],
        "failures": loud["step_failures"],
        "served_quiet": quiet["served"],
        "served": loud["served"],
        "sent": sent,
    }


def run_attacker(name: str, port: int, duration: float) -> int:
    """The attacker process: runs one attack for `duration` seconds."""
    return asyncio.run(ATTACKS[name].run(port, duration))


async def _answered_until(deadline: float, port: int, raw: bytes, connections: int) -> int:
    """`connections` connections sending `raw` again and again, each as soon as the last
    one was answered, until `deadline` (perf_counter); a closed connection is reopened.
    Returns the answers received."""
    answered = 0

    async def connection() -> None:
        nonlocal answered
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while True:
                await _exchange(reader, writer, raw)
                answered += 1
        finally:
            writer.close()

    async def one() -> None:
        while (left := deadline - time.perf_counter()) > 0:
            try:
                await asyncio.wait_for(connection(), left)
            except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError):
                await asyncio.sleep(0.01)

    await asyncio.gather(*(one() for _ in range(connections)))
    return answered


# ----- the attacks -----------------------------------------------------------------------


WS_MESSAGE_BYTES = 256 * 1024 - 64  # just under the default --max-body-bytes


async def _ws_frames(port: int, messages: list[str], compress: bool) -> tuple[Any, ...]:
    """Opens an OpenEnv WebSocket (sans-I/O, so that a frame is built once and sent many
    times: the attacker spends nothing); returns the connection, whether the server took
    compression, and each message as a frame ready to send (deflated on its own if so)."""
    from websockets.client import ClientProtocol
    from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
    from websockets.http11 import Response
    from websockets.uri import parse_uri

    uri = parse_uri(f"ws://flooder:{TOKENS['flooder']}@127.0.0.1:{port}/openenv/{ENV}/ws")
    deflate = [ClientPerMessageDeflateFactory(client_no_context_takeover=True)]
    protocol = ClientProtocol(uri, extensions=deflate if compress else None, max_size=None)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    protocol.send_request(protocol.connect())
    writer.write(b"".join(protocol.data_to_send()))
    while not any(isinstance(e, Response) for e in protocol.events_received()):
        data = await reader.read(65536)
        if not data:
            raise ConnectionError("the server refused the WebSocket")
        protocol.receive_data(data)
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
async def ws_deflate(port: int, duration: float) -> int:
    slow = json.dumps({"type": "step", "data": {"command": "\ufdfa" * 1000}})
    padding = " " * (WS_MESSAGE_BYTES - 40)  # deflates to a few hundred bytes
    message = '{"type": "step", "data": {"command": "' + padding + '"}}'
    deadline = time.perf_counter() + duration

    async def one() -> int:
        try:
            _, writer, compressed, slow_frame, frame = await _ws_frames(port, [slow, message], True)
            count = 1000 if compressed else 24
            writer.write(slow_frame + frame * count)  # 2.4 MB for eight when deflated
            await writer.drain()
            await asyncio.sleep(deadline - time.perf_counter())  # read nothing, hold it
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
        status, _ = await _exchange(reader, writer, request("POST", "/v1/sessions", body, token))
        if status == 429:
            break
    writer.close()


@attack(
    "pipelining",
    "32 connections, each 250 KB of pipelined GET /v1/health behind a refused create",
    "--client-max-sessions", "2",
)  # fmt: skip
async def pipelining(port: int, duration: float) -> int:
    token = TOKENS["flooder"]
    await _fill_sessions(port, token)
    refused = request("POST", "/v1/sessions", json.dumps({"env": ENV}).encode(), token)
    health = request("GET", "/v1/health")
    burst = health * (250_000 // len(health))
    deadline = time.perf_counter() + duration

    async def one() -> int:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(refused)
            await asyncio.sleep(0.2)  # it waits out its refusal: pipeline behind it
            writer.write(burst)  # and never read an answer
            await writer.drain()
            await asyncio.sleep(deadline - time.perf_counter())
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
async def parked_429s(port: int, duration: float) -> int:
    token = TOKENS["flooder"]
    await _fill_sessions(port, token)
    refused = request("POST", "/v1/sessions", json.dumps({"env": ENV}).encode(), token)
    return await _answered_until(time.perf_counter() + duration, port, refused, 300)


def _flood(body: bytes, token: str, connections: int = 8) -> Callable:
    async def run(port: int, duration: float) -> int:
        raw = request("POST", "/v1/sessions", body, token)
        return await _answered_until(time.perf_counter() + duration, port, raw, connections)

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
async def reads(port: int, duration: float) -> int:
    raw = request("GET", "/v1/envs", token=TOKENS["flooder"])
    return await _answered_until(time.perf_counter() + duration, port, raw, 64)


@attack(
    "ws-over-limit",
    "4 WebSockets sending resets past the reset limit (answers counted)",
    "--resets-per-minute", "60",
)  # fmt: skip
async def ws_over_limit(port: int, duration: float) -> int:
    from websockets.asyncio.client import connect

    uri = f"ws://flooder:{TOKENS['flooder']}@127.0.0.1:{port}/openenv/{ENV}/ws"
    deadline = time.perf_counter() + duration

    async def one() -> int:
        answered = 0
        try:
            async with connect(uri, open_timeout=30) as ws:
                while time.perf_counter() < deadline:
                    await ws.send('{"type": "reset", "data": {}}')
                    await asyncio.wait_for(ws.recv(), deadline - time.perf_counter())
                    answered += 1
        except Exception:  # the time is up
            pass
        return answered

    return sum(await asyncio.gather(*(one() for _ in range(4))))
