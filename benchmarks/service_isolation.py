"""Tenant isolation: one client floods, how much slower does another client get?

Starts `textenvs serve` with two clients (a token file). The victim steps its session at a
fixed rate over one keep-alive connection (open loop: latency counts from each request's
scheduled time); meanwhile the flooder, over several connections of its own, sends as fast
as the server answers one of:

- `long-commands`: steps of 1,000 U+FDFA (NFKC makes each 18 characters; the question
  pattern of today's parsers was quadratic in that), read in a worker process;
- `letter-runs`: steps of 20,000 `n`;
- `resets`: resets, past its rate limit (429s);
- `creates`: session creations, past its rate and session limits.

Prints the victim's p50/p99 per flood and the ratio to the quiet run (targets: p99 within
50 ms under adversarial commands; at most 2x the quiet p99 under a reset flood).

Then the attacks of `ATTACKS` (issue 35), each on a server of its own with default limits
unless it says otherwise, the victim measured quiet and then under attack on that same
server (ratios within one run), with the server's RSS and the recording disk it grew:

- `progress-polling`: `GET /play/api/progress` from 8 connections on a recorded run of
  5,000 episodes (targets: victim p50 at most 10x quiet);
- `full-server-creates`: creations from 8 connections against a server holding its
  10,000 sessions (target: p99 at most 10x quiet);
- `reset-burst`: Squad Recon resets from 8 connections at the default reset allowance;
- `record-disk`: recorded Megacity episodes from 8 connections (what one client writes
  to the recording disk), `unrecorded-steps`, the same flood on a server that does not
  record (what recording adds), and `record-disk-5mb`, with `--record-client-max-mb 5`.

And `--kills N`: N recording servers killed with SIGKILL while 4 players finish episodes;
prints how many episodes whose last answer a player saw are not recorded (target: 0).

    python -m benchmarks.service_isolation                  # 10 s per flood, 100 steps/s
    python -m benchmarks.service_isolation --duration 2 --floods resets --attacks "" \
        --kills 0                                           # smoke
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks import isolation_stored_data as stored
from benchmarks._common import table
from benchmarks.service_load import ROOT, _cpu_s, _exchange, _rss_kb, serving

TOKENS = {"victim": "victim-token-0123456789", "flooder": stored.FLOODER}
FLOODS = ("long-commands", "letter-runs", "resets", "creates")
ENV = "treasure-hunt"


def _request(path: str, body: bytes, token: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _session(port: int, token: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps({"env": ENV, "seed": 1}).encode()
    status, data = await _exchange(reader, writer, _request("/v1/sessions", body, token))
    if status != 201:
        raise RuntimeError(f"create failed: {status} {data[:200]!r}")
    return reader, writer, json.loads(data)["session_id"]


async def _victim(port: int, rate: float, duration: float) -> list[float]:
    reader, writer, sid = await _session(port, TOKENS["victim"])
    latencies = await _steps(reader, writer, sid, rate, duration)
    writer.close()
    return latencies


async def _steps(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    sid: str,
    rate: float,
    duration: float,
) -> list[float]:
    """The victim's steps at `rate` a second (open loop): each one's latency in seconds.
    A victim still stepping at three times `duration` stops there, and each step it has
    not sent counts as late as it is then (a lower bound: a stalled server ends the row)."""
    step = _request(f"/v1/sessions/{sid}/step", b'{"command":"wait"}', TOKENS["victim"])
    reset = _request(f"/v1/sessions/{sid}/reset", b"{}", TOKENS["victim"])
    latencies: list[float] = []
    start = time.perf_counter() + 0.5
    for i in range(int(rate * duration)):
        scheduled = start + i / rate
        if (now := time.perf_counter()) > start + 3 * duration:
            latencies += [now - (start + j / rate) for j in range(i, int(rate * duration))]
            break
        await asyncio.sleep(max(0.0, scheduled - now))
        status, _ = await _exchange(reader, writer, step)
        if status == 409:  # the episode ended: a new one (not timed)
            status, _ = await _exchange(reader, writer, reset)
        elif status != 200:
            raise RuntimeError(f"the victim's step failed: {status}")
        latencies.append(time.perf_counter() - scheduled)
    return latencies


async def _flooder(port: int, flood: str, stop: asyncio.Event) -> int:
    token = TOKENS["flooder"]
    reader, writer, sid = await _session(port, token)
    if flood == "long-commands":
        request = _request(f"/v1/sessions/{sid}/step",
                           json.dumps({"command": "\ufdfa" * 1000}).encode(), token)  # fmt: skip
    elif flood == "letter-runs":
        request = _request(f"/v1/sessions/{sid}/step",
                           json.dumps({"command": "n" * 20_000}).encode(), token)  # fmt: skip
    elif flood == "resets":
        request = _request(f"/v1/sessions/{sid}/reset", b"{}", token)
    else:
        request = _request("/v1/sessions", json.dumps({"env": ENV}).encode(), token)
    sent = 0
    while not stop.is_set():
        status, _ = await _exchange(reader, writer, request)
        sent += 1
        if status == 409:  # its episode ended
            await _exchange(reader, writer, _request(f"/v1/sessions/{sid}/reset", b"{}", token))
    writer.close()
    return sent


async def _run(port: int, flood: str, args: argparse.Namespace) -> dict[str, float]:
    stop = asyncio.Event()
    floods = (
        [] if flood == "none" else [_flooder(port, flood, stop) for _ in range(args.connections)]
    )
    flooding = asyncio.gather(*floods)
    latencies = sorted(await _victim(port, args.rate, args.duration))
    stop.set()
    sent = sum(await flooding)
    pick = lambda q: 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    return {"p50_ms": pick(0.5), "p99_ms": pick(0.99), "flood_requests": sent}


@dataclass(frozen=True)
class Attack:
    """A flood measured against the victim's quiet baseline on one server."""

    flood: Callable[[int, asyncio.Event], Awaitable[int]]  # (port, stop) -> requests sent
    options: tuple[str, ...] = ()  # `textenvs serve` options beyond the token file
    clients: tuple[tuple[str, str], ...] = ()  # more (name, token) clients
    record: Callable[[Path], None] | None = None  # serve with --record DIR, filled by this
    setup: Callable[[int], Awaitable[None]] | None = None  # once the victim has its session


# creations unlimited: the fillers fill at once, and the flooder meets only the full
# server (each refusal paced), never its own rate limit
FULL_SERVER = ("--max-sessions", "10000", "--client-max-sessions", "1000")
FULL_SERVER += ("--creates-per-minute", "0")

ATTACKS: dict[str, Attack] = {
    "progress-polling": Attack(stored.poll_progress, record=stored.fill_recorded_run),
    "full-server-creates": Attack(
        stored.create_when_full,
        options=FULL_SERVER,
        clients=tuple(stored.FILLERS.items()),
        setup=stored.fill_sessions,
    ),
    "reset-burst": Attack(stored.reset_burst),
    "record-disk": Attack(stored.record_disk, record=lambda folder: None),
    # the same flood on a server that does not record: what recording adds to it
    "unrecorded-steps": Attack(stored.record_disk),
    # and with a bound of 5 MB a client, which the attack reaches within seconds
    "record-disk-5mb": Attack(
        stored.record_disk, options=("--record-client-max-mb", "5"), record=lambda folder: None
    ),
}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _attacked(
    port: int, pid: int, name: str, record: Path | None, args: argparse.Namespace
) -> list[str]:
    attack = ATTACKS[name]
    reader, writer, sid = await _session(port, TOKENS["victim"])
    if attack.setup is not None:
        writer.close()  # the setup may take longer than the keep-alive timeout
        await attack.setup(port)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    cpu = _cpu_s(pid)
    quiet = await _steps(reader, writer, sid, args.rate, args.duration)
    quiet_cpu = _cpu_s(pid) - cpu
    rss, disk = _rss_kb(pid), stored.disk_bytes(record) if record else 0
    # The flood runs in a process of its own: in this one it would slow the victim's own
    # measurements (most of all on a loaded machine).
    flood_only = ["-m", "benchmarks.service_isolation", "--flood-only", name, str(port)]
    flooding = await asyncio.create_subprocess_exec(
        sys.executable, *flood_only, cwd=ROOT, stdout=asyncio.subprocess.PIPE
    )
    assert flooding.stdout is not None
    await flooding.stdout.readline()  # started (its imports would count against the victim)
    cpu = _cpu_s(pid)
    loud = await _steps(reader, writer, sid, args.rate, args.duration)
    loud_cpu = _cpu_s(pid) - cpu
    rss_growth = (_rss_kb(pid) - rss) / 1024
    disk_growth = ((stored.disk_bytes(record) if record else 0) - disk) / 1e6
    flooding.send_signal(signal.SIGINT)
    sent = int((await flooding.communicate())[0] or 0)
    writer.close()
    p50, p99 = [_percentile(quiet, q) for q in (0.5, 0.99)]
    a50, a99 = [_percentile(loud, q) for q in (0.5, 0.99)]
    figures = [p50, p99, a50, a99]
    # server CPU while the victim stepped, as a share of one core (the load each phase
    # put on the server, which the machine's other work does not change much)
    load = f"{quiet_cpu / args.duration:.0%} / {loud_cpu / args.duration:.0%}"
    return [*(f"{f:.1f}" for f in figures), f"{a50 / p50:.1f}x", f"{a99 / p99:.1f}x",
            load, str(sent), f"{rss_growth:+.0f}", f"{disk_growth:+.1f}"]  # fmt: skip


async def _flood_until_interrupted(attack: Attack, port: int) -> int:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
    print("started", flush=True)
    return await attack.flood(port, stop)


def measure_attack(name: str, args: argparse.Namespace) -> list[str]:
    attack = ATTACKS[name]
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens"
        clients = [*TOKENS.items(), *attack.clients]
        tokens.write_text("".join(f"{name} {token}\n" for name, token in clients))
        options = ["--token-file", str(tokens), *attack.options]
        record = None
        if attack.record is not None:
            record = Path(tmp) / "runs"
            record.mkdir()
            attack.record(record)
            options += ["--record", str(record)]
        with serving(*options) as (url, pid):
            return asyncio.run(_attacked(int(url.rsplit(":", 1)[1]), pid, name, record, args))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--floods", default=",".join(FLOODS), help="comma list of " + ", ".join(FLOODS))
    p.add_argument(
        "--attacks", default=",".join(ATTACKS), help="comma list of " + ", ".join(ATTACKS)
    )
    p.add_argument("--kills", type=int, default=6, help="recording servers to kill -9 (6)")
    p.add_argument("--rate", type=float, default=100.0, help="victim steps/s (100)")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per flood (10)")
    p.add_argument("--connections", type=int, default=4, help="flooder connections (4)")
    p.add_argument("--flood-only", nargs=2, metavar=("ATTACK", "PORT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.flood_only:  # an attack's own process: floods until SIGINT, prints its requests
        name, port = args.flood_only
        print(asyncio.run(_flood_until_interrupted(ATTACKS[name], int(port))))
        return 0
    floods = [f for f in args.floods.split(",") if f]
    if floods:
        _floods(floods, args)
    names = [name for name in args.attacks.split(",") if name]
    rows = [[name, *measure_attack(name, args)] for name in names]
    if rows:
        header = ["attack", "quiet p50 ms", "quiet p99 ms", "attacked p50 ms", "attacked p99 ms",
                  "p50 x", "p99 x", "server CPU", "attack requests", "RSS MB",
                  "disk MB"]  # fmt: skip
        print(table(header, rows))
    if args.kills:
        lost, seen = stored.lost_episodes(args.kills)
        print(f"kill -9 x {args.kills}: {lost} of {seen} episodes the players saw finish are lost")
    return 0


def _floods(floods: list[str], args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens"
        tokens.write_text("".join(f"{name} {token}\n" for name, token in TOKENS.items()))
        options = ["--token-file", str(tokens), "--creates-per-minute", "60"]
        options += ["--resets-per-minute", "60", "--max-sessions", "100"]
        rows: dict[str, dict[str, float]] = {}
        for flood in ["none", *floods]:
            # a server per row: the victim's own resets (one per finished episode) count
            # against its reset limit too, so rows sharing a server would measure the
            # victim's 429s from earlier rows, not the flood's effect
            with serving(*options) as (url, _):
                rows[flood] = asyncio.run(_run(int(url.rsplit(":", 1)[1]), flood, args))
    quiet = rows["none"]["p99_ms"]
    cells = [[flood, f"{r['p50_ms']:.1f}", f"{r['p99_ms']:.1f}", f"{r['p99_ms'] / quiet:.1f}x",
              f"{r['flood_requests']:.0f}"] for flood, r in rows.items()]  # fmt: skip
    print(
        table(["flood", "victim p50 ms", "victim p99 ms", "p99 / quiet", "flood requests"], cells)
    )


if __name__ == "__main__":
    raise SystemExit(main())
