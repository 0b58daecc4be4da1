"""Helpers for attacks on the service over real loopback sockets: a `textenvs serve`
process (its RSS can be measured), raw HTTP requests, WebSocket frames built once and
sent as they are (as an attacker would, without a client library's manners), and the
benchmark's attacks (`benchmarks/service_attacks*.py`) run from a process of their own
against a bystander tenant, whose latency is compared with its quiet baseline measured
in the same test (never an absolute time)."""

from __future__ import annotations

import asyncio
import json
import re
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks import service_attacks
from benchmarks.service_attacks import PeakRss, request  # noqa: F401 (for the tests)
from benchmarks.service_load import ROOT, exchange, free_port, rss_kb  # noqa: F401 (for the tests)

TOKENS = {
    "alice": "alice-token-0123456789",
    "bob": "bob-token-0123456789ab",
    "carol": "carol-token-0123456789",
}
ENV = "treasure-hunt"


#: the clients the benchmark's attacks use: `flooder` attacks, `victim` is the bystander
ATTACK_TOKENS = service_attacks.TOKENS


def token_file(folder: Path, clients: dict[str, str]) -> Path:
    """A `--token-file` of `clients` (name: token) in `folder`."""
    path = folder / "tokens"
    path.write_text("".join(f"{name} {token}\n" for name, token in clients.items()))
    return path


@contextmanager
def serve_process(tmp: Path, *options: str, log: Path | None = None) -> Iterator[tuple[str, int]]:
    """`textenvs serve` (tokens of alice, bob and carol) in a process of its own; yields
    (base URL, pid). Its log goes to `log` when given."""
    tokens = token_file(tmp, TOKENS)
    port = free_port()
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [sys.executable, "-m", "textenvs.cli", "serve", "--port", str(port),
         "--token-file", str(tokens), "--log-level", "info" if log else "warning", *options],
        stdout=out, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not answers(port):
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        if log:
            out.close()  # type: ignore[union-attr]


def every_route(routes: list[Any]) -> Iterator[Any]:
    """Every route of an app, included routers and mounts opened (FastAPI keeps an
    included router whole, as `original_router`)."""
    for route in routes:
        inner = getattr(route, "original_router", None) or getattr(route, "routes", None)
        if inner is None:
            yield route
        else:
            yield from every_route(getattr(inner, "routes", inner))


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            return sock.recv(12).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def read_answers(sock: socket.socket, timeout: float = 10.0) -> bytes:
    """Everything the server sends until it closes the connection (or `timeout`)."""
    return read_all([sock], timeout)[0]


def read_response(sock: socket.socket, timeout: float = 10.0) -> bytes:
    """One HTTP response (head and Content-Length body) from `sock`."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a whole answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"(?i)content-length: *(\d+)", head)
    while length and len(body) < int(length.group(1)):
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def read_all(socks: list[socket.socket], seconds: float) -> list[bytes]:
    """What the server sends on each socket until it closes it or `seconds` pass."""
    answers = {sock: b"" for sock in socks}
    open_ = set(socks)
    deadline = time.monotonic() + seconds
    with selectors.DefaultSelector() as selector:
        for sock in socks:
            selector.register(sock, selectors.EVENT_READ)
        while open_ and (left := deadline - time.monotonic()) > 0:
            for key, _ in selector.select(left):
                sock = key.fileobj
                try:
                    chunk = sock.recv(65536)  # type: ignore[union-attr]
                except (BlockingIOError, InterruptedError):
                    continue
                except ConnectionResetError:
                    chunk = b""
                if chunk:
                    answers[sock] += chunk  # type: ignore[index]
                else:
                    selector.unregister(sock)
                    open_.discard(sock)  # type: ignore[arg-type]
    return [answers[sock] for sock in socks]


async def websocket(
    port: int, name: str, *, offer_deflate: bool = False, path: str = f"/openenv/{ENV}/ws"
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, object]:
    """Opens a WebSocket as `name` (`service_attacks.open_websocket`: frames can be built
    once and sent raw); returns (reader, writer, the websockets protocol)."""
    return await service_attacks.open_websocket(
        port, name, TOKENS[name], path, compress=offer_deflate
    )


def fresh_requests(url: str, count: int) -> float:
    """The share of `count` requests on new connections (health and an authenticated
    read in turn) answered 200."""
    served = 0
    for i in range(count):
        headers = {"Authorization": f"Bearer {TOKENS['bob']}"}
        path = "/v1/health" if i % 2 else f"/v1/envs/{ENV}"
        try:
            with httpx.Client(base_url=url, timeout=5) as http:
                served += http.get(path, headers=headers).status_code == 200
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    return served / count


class Flood:
    """`connections` connections sending `raw` again and again, each as soon as its last
    one is answered (a closed one is opened again), in a thread of its own."""

    def __init__(self, url: str, raw: bytes, connections: int) -> None:
        self.port = int(url.rsplit(":", 1)[1])
        self.raw, self.connections = raw, connections
        self.answers: list[int] = []  # statuses
        self.codes: set[bytes] = set()  # error codes
        self.stopping = False
        self.thread = threading.Thread(target=asyncio.run, args=(self._run(),), daemon=True)

    def __enter__(self) -> Flood:
        self.thread.start()
        time.sleep(1.5)  # under way: every connection has sent its first request
        return self

    def __exit__(self, *_: object) -> None:
        self.stopping = True
        self.thread.join(timeout=30)

    async def _run(self) -> None:
        await asyncio.gather(*(self._connection() for _ in range(self.connections)))

    async def _connection(self) -> None:
        while not self.stopping:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
                try:
                    while not self.stopping:
                        status, body = await exchange(reader, writer, self.raw)
                        self.answers.append(status)
                        self.codes.update(re.findall(rb'"code":"(\w+)"', body))
                finally:
                    writer.close()
            except (OSError, asyncio.IncompleteReadError):
                await asyncio.sleep(0.01)


def text_frame(protocol: object, text: str) -> bytes:
    """`text` as the client frame `protocol` would send (compressed if it negotiated it)."""
    protocol.send_text(text.encode())  # type: ignore[attr-defined]
    return b"".join(protocol.data_to_send())  # type: ignore[attr-defined]


# ----- the benchmark's attacks, against a bystander ---------------------------------------


@dataclass
class Attacked:
    requests: int = 0  # answered or sent by the attacker (known once it stopped)


@contextmanager
def attacking(attack: str, url: str) -> Iterator[Attacked]:
    """One of `benchmarks.service_attacks.ATTACKS` against `url`, from its own process,
    for as long as the block runs."""
    port = url.rsplit(":", 1)[1]
    attacked = Attacked()
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.service_isolation", "--attack-only", attack, port],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "started"
        yield attacked
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=60)
        attacked.requests = json.loads(out.strip().splitlines()[-1])["sent"]


@dataclass
class Bystander:
    """Another tenant: steps its own Treasure Hunt session, one request at a time, with a
    short pause between (closed loop: one slow answer does not pile up the next ones)."""

    url: str
    token: str = ATTACK_TOKENS["victim"]
    http: httpx.Client = field(init=False)
    session: str = field(init=False)

    def __post_init__(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=60)
        create = self.http.post("/v1/sessions", json={"env": ENV, "seed": 1})
        assert create.status_code == 201, create.text
        self.session = create.json()["session_id"]

    def latencies(self, steps: int = 200) -> list[float]:
        timed = []
        for _ in range(steps):
            started = time.perf_counter()
            answer = self.http.post(f"/v1/sessions/{self.session}/step", json={"command": "wait"})
            timed.append(time.perf_counter() - started)
            if answer.status_code == 409:  # the episode ended: a new one, not timed
                answer = self.http.post(f"/v1/sessions/{self.session}/reset", json={})
            assert answer.status_code == 200, answer.text
            time.sleep(0.005)
        return timed

    def close(self) -> None:
        self.http.close()


@dataclass
class Measured:
    quiet: list[float]  # the bystander's latencies before the attack
    loud: list[float]  # and during it
    attack: Attacked
    seconds: float  # how long the attack ran


def under_attack(bystander: Bystander, attack: str, url: str, steps: int = 200) -> Measured:
    quiet = bystander.latencies(steps)
    started = time.monotonic()
    with attacking(attack, url) as attacked:
        loud = bystander.latencies(steps)
    return Measured(quiet, loud, attacked, time.monotonic() - started)


def attacked(
    bystander: Bystander, attack: str, url: str, holds: Callable[[Measured], bool], tries: int = 2
) -> list[Measured]:
    """`under_attack` until `holds` says the bystander fared well enough, at most `tries`
    times (a loaded machine can spoil one measurement; an attack that works spoils all)."""
    measured = [under_attack(bystander, attack, url)]
    while not holds(measured[-1]) and len(measured) < tries:
        measured.append(under_attack(bystander, attack, url))
    return measured


def p50(values: list[float]) -> float:
    return statistics.median(values)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
