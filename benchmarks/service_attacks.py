"""Attacks on a shared `textenvs serve` by one tenant (or anyone who reaches the port), for
`python -m benchmarks.service_isolation --attacks ...` (issue 35).

Each attack is one function run in a process of its own (its CPU does not slow the
measuring client) until it is told to stop, registered in `ATTACKS` with the server
options it needs: `service_attacks_transport.py` registers the attacks on connections,
bodies and limits, `service_attacks_stored.py` those through stored data (recorded runs,
a full session table, resets, the recording disk). For each, a fresh server (a
subprocess, two clients from a token file) is measured four ways:

- memory: the server's RSS before the attack, its peak during it (sampled every 20 ms)
  and one second after the attacker's connections closed;
- a bystander's latency: the `victim` client steps its session at a fixed rate over one
  keep-alive connection (open loop), first with nobody else on the server (quiet), then
  during the attack; the ratio of the two p50s and p99s comes from the same server;
- lockout: the bystander also makes fresh requests (a new connection each, 5 a second,
  `/v1/health` and an authenticated `GET /v1/envs/{env}` in turn); served is the share
  answered 200 within 5 s;
- server errors: every 5xx answer the attacker or the bystander got, but `503
  at_capacity` (and the recording disk the attack grew, for a recording server).
"""

from __future__ import annotations

import asyncio
import json
import math
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import service_load
from benchmarks.service_load import ROOT, rss_kb, serving

TOKENS = {"victim": "victim-token-0123456789", "flooder": "flooder-token-0123456789"}
ENV = "treasure-hunt"
FRESH_TIMEOUT_S = 5.0
#: the statuses of the answers this process received (the attacker's, the bystander's)
STATUSES: Counter[int] = Counter()


async def exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes
) -> tuple[int, bytes]:
    """One request and its answer, (status, body); its status is counted."""
    status, body = await service_load.exchange(reader, writer, raw)
    STATUSES[status] += 1
    return status, body


def server_errors(statuses: Counter[int]) -> int:
    """5xx answers but a full server's 503 (a documented refusal, not an error)."""
    return sum(n for status, n in statuses.items() if status >= 500 and status != 503)


def size_refusals(statuses: Counter[int]) -> int:
    """Bodies refused as too large (413) and heads as too large (431)."""
    return statuses[413] + statuses[431]


def request(method: str, path: str, body: bytes = b"", token: str | None = None) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}"
    if body or method == "POST":
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return (head + "\r\n").encode() + body


#: an attacker: (port, stop) -> requests or messages it got answered (or sent) by `stop`
Attacker = Callable[[int, asyncio.Event], Awaitable[int]]


@dataclass(frozen=True)
class Attack:
    about: str
    run: Attacker
    #: `textenvs serve` options besides the token file
    options: tuple[str, ...] = ()
    clients: tuple[tuple[str, str], ...] = ()  # more (name, token) clients
    record: Callable[[Path], None] | None = None  # serve with --record DIR, filled by this
    setup: Callable[[int], Awaitable[None]] | None = None  # before the quiet run


ATTACKS: dict[str, Attack] = {}


async def open_websocket(
    port: int, user: str, token: str, path: str, *, compress: bool = False
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, Any]:
    """Opens a WebSocket as `user`, sans-I/O, so that a frame can be built once and sent
    raw many times (the attacker spends nothing); returns (reader, writer, the websockets
    protocol after the handshake). `compress` offers permessage-deflate."""
    from websockets.client import ClientProtocol
    from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
    from websockets.http11 import Response
    from websockets.uri import parse_uri

    uri = parse_uri(f"ws://{user}:{token}@127.0.0.1:{port}{path}")
    deflate = [ClientPerMessageDeflateFactory(client_no_context_takeover=True)]
    protocol = ClientProtocol(uri, extensions=deflate if compress else None, max_size=None)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    protocol.send_request(protocol.connect())
    writer.write(b"".join(protocol.data_to_send()))
    while True:
        events = protocol.events_received()
        response = next((e for e in events if isinstance(e, Response)), None)
        if response is not None:
            if response.status_code != 101:
                raise ConnectionError(f"the server refused the WebSocket ({response.status_code})")
            return reader, writer, protocol
        data = await reader.read(65536)
        if not data:
            raise ConnectionError("the server closed the WebSocket handshake")
        protocol.receive_data(data)


def attack(name: str, about: str, *options: str, **more: Any) -> Callable:
    def register(run: Attacker) -> Attacker:
        ATTACKS[name] = Attack(about, run, options, **more)
        return run

    return register


# ----- the bystander ---------------------------------------------------------------------


async def create_session(port: int, token: str) -> str:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        body = json.dumps({"env": ENV, "seed": 1}).encode()
        status, data = await exchange(reader, writer, request("POST", "/v1/sessions", body, token))
    finally:
        writer.close()
    if status != 201:
        raise RuntimeError(f"the bystander could not create its session: {status} {data[:200]!r}")
    return str(json.loads(data)["session_id"])


async def _steps(port: int, sid: str, rate: float, duration: float) -> tuple[list[float], int]:
    """Open-loop steps over one keep-alive connection (a new one after an error):
    (latencies, failures). A step not answered within `FRESH_TIMEOUT_S` fails and counts
    as late as it was then; past three times `duration` the steps not yet sent count as
    late as they are then (lower bounds: a stalled server ends the run)."""
    token = TOKENS["victim"]
    step = request("POST", f"/v1/sessions/{sid}/step", b'{"command":"wait"}', token)
    reset = request("POST", f"/v1/sessions/{sid}/reset", b"{}", token)
    latencies: list[float] = []
    failures = 0
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    start = time.perf_counter() + 0.2
    steps = int(rate * duration)
    for i in range(steps):
        scheduled = start + i / rate
        if (now := time.perf_counter()) > start + 3 * duration:
            latencies += [now - (start + j / rate) for j in range(i, steps)]
            failures += steps - i
            break
        await asyncio.sleep(max(0.0, scheduled - now))
        try:
            if connection is None:
                connection = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", port), FRESH_TIMEOUT_S
                )
            status, _ = await asyncio.wait_for(exchange(*connection, step), FRESH_TIMEOUT_S)
            if status == 409:  # the episode ended: a new one (not timed)
                status, _ = await asyncio.wait_for(exchange(*connection, reset), FRESH_TIMEOUT_S)
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as exc:
            status = -1 if isinstance(exc, TimeoutError) else 0
            if connection is not None:
                connection[1].close()
            connection = None
        if status in (200, -1):
            latencies.append(time.perf_counter() - scheduled)
        if status != 200:
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
            status, _ = await asyncio.wait_for(exchange(reader, writer, raw), FRESH_TIMEOUT_S)
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


async def bystander(port: int, sid: str, rate: float, duration: float) -> dict[str, float]:
    """The victim steps its session `sid` and makes fresh requests for `duration` s."""
    (latencies, failures), (served, tried) = await asyncio.gather(
        _steps(port, sid, rate, duration), _fresh(port, duration)
    )
    latencies.sort()
    pick = lambda q: 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    return {
        "p50_ms": pick(0.5) if latencies else math.nan,
        "p99_ms": pick(0.99) if latencies else math.nan,
        "step_failures": failures,
        "served": served / max(1, tried),
    }


class PeakRss:
    """The highest RSS of a process, sampled every 20 ms in a thread (KB)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, rss_kb(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss_kb(self.pid))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def measure(name: str, duration: float, rate: float, root: Path = ROOT) -> dict[str, float]:
    """One attack against a fresh server (of checkout `root`): memory, the bystander's
    latency (quiet, then under attack), the share of its fresh requests served, 5xx
    answers, and the recording disk the attack grew."""
    spec = ATTACKS[name]
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens"
        clients = [*TOKENS.items(), *spec.clients]
        tokens.write_text("".join(f"{n} {t}\n" for n, t in clients))
        options = ["--token-file", str(tokens), *spec.options]
        record = Path(tmp) / "runs"
        if spec.record is not None:
            record.mkdir()
            spec.record(record)
            options += ["--record", str(record)]
        with serving(*options, root=root) as (url, pid):
            port = int(url.rsplit(":", 1)[1])
            sid = asyncio.run(create_session(port, TOKENS["victim"]))
            if spec.setup is not None:  # after the victim's session: it may fill the server
                asyncio.run(spec.setup(port))
            STATUSES.clear()
            quiet = asyncio.run(bystander(port, sid, rate, duration))
            before, disk = rss_kb(pid), disk_bytes(record)
            peak = PeakRss(pid)
            with attacking(name, port) as attacker:
                loud = asyncio.run(bystander(port, sid, rate, duration))
            high = peak.stop()
            grown = disk_bytes(record) - disk
            time.sleep(1.0)
            after = rss_kb(pid)
    return {
        "peak_mb": (high - before) / 1024,
        "after_mb": (after - before) / 1024,
        "quiet_p50": quiet["p50_ms"],
        "p50": loud["p50_ms"],
        "p50_ratio": loud["p50_ms"] / quiet["p50_ms"],
        "p99_ratio": loud["p99_ms"] / quiet["p99_ms"],
        "failures": loud["step_failures"],
        "served_quiet": quiet["served"],
        "served": loud["served"],
        "sent": attacker["sent"],
        "server_errors": server_errors(STATUSES + attacker["statuses"]),
        "size_refused": size_refusals(attacker["statuses"]),
        "disk_mb": grown / 1e6,
    }


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@contextmanager
def attacking(name: str, port: int) -> Iterator[dict[str, Any]]:
    """Attack `name` on `port` from a process of its own while the block runs; the dict
    it yields then holds what the attacker counted (`sent`, `statuses`)."""
    counted: dict[str, Any] = {"sent": -1, "statuses": Counter()}
    attacker = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.service_isolation", "--attack-only", name, str(port)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert attacker.stdout is not None
        if attacker.stdout.readline().strip() != "started":
            raise RuntimeError(f"the attacker {name} did not start")
        time.sleep(1.5)  # the attack under way
        yield counted
    finally:
        attacker.send_signal(signal.SIGINT)
        out, _ = attacker.communicate(timeout=120)
        if out.strip():
            report = json.loads(out.strip().splitlines()[-1])
            counted["sent"] = report["sent"]
            counted["statuses"] = Counter({int(k): n for k, n in report["statuses"].items()})


def run_attacker(name: str, port: int) -> dict[str, Any]:
    """The attacker process: says "started", then attacks until SIGINT."""

    async def until_interrupted() -> int:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
        print("started", flush=True)
        return await ATTACKS[name].run(port, stop)

    sent = asyncio.run(until_interrupted())
    return {"sent": sent, "statuses": STATUSES}


async def until_stopped(stop: asyncio.Event, tasks: list[Awaitable[Any]]) -> None:
    """Runs `tasks` until `stop` is set, then cancels what still runs."""
    running = [asyncio.ensure_future(task) for task in tasks]
    await stop.wait()
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)


async def answered_until(stop: asyncio.Event, port: int, raw: bytes, connections: int) -> int:
    """`connections` connections sending `raw` again and again, each as soon as the last
    one was answered, until `stop`; a closed connection is reopened. Returns the answers
    received."""
    answered = 0

    async def one() -> None:
        nonlocal answered
        while True:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                try:
                    while True:
                        await exchange(reader, writer, raw)
                        answered += 1
                finally:
                    writer.close()
            except (OSError, asyncio.IncompleteReadError, ValueError):
                await asyncio.sleep(0.01)

    await until_stopped(stop, [one() for _ in range(connections)])
    return answered
