"""Attacks on the service through what it stores (issue 35): recorded runs, a full session
table, reset bursts, the recording disk, and kill -9 of a recording server.

Each attack is registered in `benchmarks.service_attacks.ATTACKS` (which runs it from a
process of its own and measures the bystander); `lost_episodes` starts its own servers
and kills them.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from benchmarks.service_attacks import TOKENS, attack, exchange
from benchmarks.service_load import ROOT, free_port, wait_until_serving
from textenvs.evals import run_folder

FLOODER = TOKENS["flooder"]
FILLERS = {f"filler{i}": f"filler{i}-token-0123456789" for i in range(10)}
PLAYER = "mallory"
RECORDED_EPISODES = 5_000
CONNECTIONS = 8


def _get(path: str, token: str) -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n"
    ).encode()


def post(path: str, body: dict, token: str) -> bytes:
    data = json.dumps(body).encode()
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    ).encode() + data


class _Connection:
    """A keep-alive connection, opened again when the server has closed it (as it does
    after refusing a request with a body)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def exchange(self, request: bytes) -> tuple[int, bytes]:
        for last in (False, True):
            if self.streams is None:
                self.streams = await asyncio.open_connection("127.0.0.1", self.port)
            try:
                return await exchange(*self.streams, request)
            except (asyncio.IncompleteReadError, ConnectionError):
                self.close()
                if last:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


async def _repeat(port: int, request: bytes, stop: asyncio.Event) -> int:
    """Send `request` over one keep-alive connection as fast as it is answered."""
    connection = _Connection(port)
    sent = 0
    while not stop.is_set():
        await connection.exchange(request)
        sent += 1
    connection.close()
    return sent


Flood = Callable[[int, asyncio.Event, int], Awaitable[int]]  # (port, stop, connection)


async def _on_connections(flood: Flood, stop: asyncio.Event, port: int) -> int:
    return sum(await asyncio.gather(*(flood(port, stop, i) for i in range(CONNECTIONS))))


# ----- progress polling on a big recorded run ------------------------------------------


def fill_recorded_run(
    record_dir: Path, episodes: int = RECORDED_EPISODES, trajectories: bool = True
) -> None:
    """The flooder's free-play run holding `episodes` recorded episodes: one episode
    played for real on a recording server, then its record cloned under other seeds
    (reaching 5,000 by playing takes minutes; the files are the same). Without
    `trajectories`, the clones' lines name trajectory files that are not there."""
    from textenvs.play.page import create_app
    from textenvs.play.record import HumanRecorder
    from textenvs.service.background import serve_in_thread

    app = create_app(tokens={"flooder": FLOODER}, recorder=HumanRecorder(record_dir))
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        http.headers["Authorization"] = f"Bearer {FLOODER}"
        body = {"env": "treasure-hunt", "player": PLAYER, "seed": 0}
        sid = http.post("/play/api/sessions", json=body).json()["session_id"]
        while True:
            step = http.post(f"/v1/sessions/{sid}/step", json={"command": "wait"}).json()
            if step["terminated"] or step["truncated"]:
                break
        http.get("/play/api/progress", params={"player": PLAYER})  # after the write
    run = record_dir / "flooder" / f"free-{PLAYER}"
    line = json.loads((run / run_folder.EPISODES).read_text().splitlines()[0])
    trajectory = (run / line["trajectory"]).read_bytes()
    with open(run / run_folder.EPISODES, "w", encoding="utf-8") as out:
        for seed in range(episodes):
            rel = f"{run_folder.TRAJECTORIES}/treasure-hunt-{seed}-0.json"
            if trajectories:
                (run / rel).write_bytes(trajectory)
            record = {**line, "seed": seed, "trajectory": rel}
            out.write(json.dumps(record, separators=(",", ":")) + "\n")


@attack(
    "progress-polling",
    "8 connections: GET /play/api/progress of a recorded run of 5,000 episodes",
    record=fill_recorded_run,
)
async def poll_progress(port: int, stop: asyncio.Event) -> int:
    request = _get(f"/play/api/progress?player={PLAYER}", FLOODER)
    return await _on_connections(lambda p, s, i: _repeat(p, request, s), stop, port)


# ----- creations against a full server --------------------------------------------------


async def fill_sessions(port: int) -> None:
    """The fillers take every free session place (32 connections creating until refused)."""

    async def fill(token: str) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        request = post("/v1/sessions", {"env": "treasure-hunt", "seed": 1}, token)
        while (await exchange(reader, writer, request))[0] == 201:
            pass
        writer.close()

    await asyncio.gather(*(fill(t) for t in FILLERS.values() for _ in range(3)))


# creations unlimited: the fillers fill at once, and the flooder meets only the full
# server (each refusal paced), never its own rate limit
FULL_SERVER = ("--max-sessions", "10000", "--client-max-sessions", "1000")
FULL_SERVER += ("--creates-per-minute", "0")


@attack(
    "full-server-creates",
    "8 connections: creates against a server holding its 10,000 sessions",
    *FULL_SERVER,
    clients=tuple(FILLERS.items()),
    setup=fill_sessions,
)
async def create_when_full(port: int, stop: asyncio.Event) -> int:
    request = post("/v1/sessions", {"env": "treasure-hunt"}, FLOODER)
    return await _on_connections(lambda p, s, i: _repeat(p, request, s), stop, port)


# ----- a burst of resets at the default allowance ---------------------------------------


@attack("reset-burst", "8 connections: Squad Recon resets at the default allowance")
async def reset_burst(port: int, stop: asyncio.Event) -> int:
    """Resets of Squad Recon sessions (the dearest reset) as fast as answered."""

    async def flood(p: int, s: asyncio.Event, i: int) -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", p)
        create = post("/v1/sessions", {"env": "squad-recon", "seed": i}, FLOODER)
        _, data = await exchange(reader, writer, create)
        sid = json.loads(data)["session_id"]
        writer.close()
        return await _repeat(p, post(f"/v1/sessions/{sid}/reset", {}, FLOODER), s)

    return await _on_connections(flood, stop, port)


# ----- the recording disk -----------------------------------------------------------------


def _recording(folder: Path) -> None:
    """An empty recording folder: the attack fills it."""


@attack(
    "record-disk",
    "8 connections: recorded Megacity episodes (what one client writes to the disk)",
    record=_recording,
)
async def record_disk(port: int, stop: asyncio.Event) -> int:
    """Recorded Megacity episodes of `wait` (the longest trajectories, 40 turns of the
    whole city), one player per connection and a new session for each episode."""

    async def flood(p: int, s: asyncio.Event, i: int) -> int:
        connection = _Connection(p)
        sent = 0
        while not s.is_set():
            create = post("/play/api/sessions", {"env": "megacity", "player": f"p{i}"}, FLOODER)
            status, data = await connection.exchange(create)
            sent += 1
            if status != 201:
                continue  # refused (paced by the server)
            sid = json.loads(data)["session_id"]
            step = post(f"/v1/sessions/{sid}/step", {"command": "wait"}, FLOODER)
            while not s.is_set():
                status, data = await connection.exchange(step)
                sent += 1
                if status != 200 or b'"terminated":true' in data or b'"truncated":true' in data:
                    break
            await connection.exchange(_delete(sid))
        connection.close()
        return sent

    return await _on_connections(flood, stop, port)


def _delete(sid: str) -> bytes:
    return (
        f"DELETE /v1/sessions/{sid} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {FLOODER}\r\n\r\n"
    ).encode()


# ----- kill -9 of a recording server ------------------------------------------------------


def lost_episodes(kills: int, connections: int = 4) -> tuple[int, int]:
    """(episodes whose last answer a player received but which are not recorded, episodes
    whose last answer was received), over `kills` servers killed with SIGKILL while
    `connections` players finish episodes."""
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"textenvs-kill9-{os.getpid()}"
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(0)
    seen: set[tuple[str, int]] = set()
    for kill in range(kills):
        port = free_port()
        cmd = [sys.executable, "-m", "textenvs.cli", "serve", "--port", str(port)]
        cmd += ["--log-level", "critical", "--record", str(root)]
        server = subprocess.Popen(cmd, cwd=ROOT)
        wait_until_serving(f"http://127.0.0.1:{port}", server)
        first_seed = kill * 10**6  # seeds of their own: every episode is a key of its own
        seen |= asyncio.run(_play_until_killed(server, port, first_seed, connections, rng))
        server.wait()
    recorded = set()
    path = root / f"free-{PLAYER}" / run_folder.EPISODES
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        recorded.add((record["env"], record["seed"]))
    shutil.rmtree(root, ignore_errors=True)
    return len(seen - recorded), len(seen)


async def _play_until_killed(
    server: subprocess.Popen, port: int, first_seed: int, players: int, rng: random.Random
) -> set[tuple[str, int]]:
    """Players finish episodes until the server is killed 2-4 s in; the (env, seed) of
    each episode whose last answer arrived."""
    finished: set[tuple[str, int]] = set()

    async def play(http: httpx.AsyncClient, seed: int) -> None:
        while True:
            body = {"env": "treasure-hunt", "player": PLAYER, "seed": seed}
            sid = (await http.post("/play/api/sessions", json=body)).json()["session_id"]
            while True:
                step = await http.post(f"/v1/sessions/{sid}/step", json={"command": "wait"})
                if step.json()["terminated"] or step.json()["truncated"]:
                    finished.add(("treasure-hunt", seed))
                    break
            seed += players

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        tasks = [asyncio.create_task(play(http, first_seed + i)) for i in range(players)]
        await asyncio.sleep(rng.uniform(2.0, 4.0))
        server.send_signal(signal.SIGKILL)
        await asyncio.gather(*tasks, return_exceptions=True)
    return finished


# the same flood with a bound of 5 MB a client, which the attack reaches within seconds
attack(
    "record-disk-5mb",
    "record-disk with --record-client-max-mb 5",
    "--record-client-max-mb",
    "5",
    record=_recording,
)(record_disk)
# the same flood on a server that does not record: what recording adds to it
attack("unrecorded-steps", "record-disk on a server that does not record")(record_disk)
