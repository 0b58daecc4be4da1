"""Service load: `textenvs serve` under 32 keep-alive clients stepping sessions.

Starts `textenvs serve` (a subprocess) and a load generator in another process: C
asyncio clients on raw keep-alive sockets, each with its own session, stepping as fast
as the server answers (a reset when an episode ends). Prints step requests/s, p50/p99
step latency, the server's CPU time per request, and memory per open session (server RSS
growth over N idle open sessions / N).

    python -m benchmarks.service_load                        # 32 clients, 5 s, 1000 sessions,
    # uvicorn's default stack next to its pure-Python one (h11 + asyncio)
    python -m benchmarks.service_load --clients 2 --duration 0.5 --warmup 0.2 --sessions 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from benchmarks._common import table

ENV = "treasure-hunt"
COMMANDS = (b"north", b"east", b"south", b"west", b"wait")
ROOT = Path(__file__).resolve().parent.parent


# ----- the load generator (its own process) --------------------------------------------


async def exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bytes]:
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, await reader.readexactly(length) if length else b""


def post(path: str, body: bytes) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _client(
    i: int,
    host: str,
    port: int,
    measure_from: float,
    stop_at: float,
    samples: list[tuple[float, float]],
) -> int:
    """One client: its own connection and session. Returns the requests it made."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = json.dumps({"env": ENV, "seed": i}).encode()
    status, data = await exchange(reader, writer, post("/v1/sessions", body))
    if status != 201:
        raise RuntimeError(f"create failed: {status} {data[:200]!r}")
    sid = json.loads(data)["session_id"]
    steps = [post(f"/v1/sessions/{sid}/step", b'{"command":"' + c + b'"}') for c in COMMANDS]
    reset = post(f"/v1/sessions/{sid}/reset", b"{}")
    requests, n = 1, i
    # Until the end, and at least one step after the warm-up: on a loaded machine a client
    # may connect late, and an empty window has no percentiles.
    measured = False
    while (now := time.perf_counter()) < stop_at or not measured:
        n += 1
        status, data = await exchange(reader, writer, steps[n % len(steps)])
        done = time.perf_counter()
        requests += 1
        if status != 200:
            raise RuntimeError(f"step failed: {status} {data[:200]!r}")
        samples.append((done, done - now))
        measured = measured or done >= measure_from
        if b'"terminated":true' in data or b'"truncated":true' in data:
            status, data = await exchange(reader, writer, reset)
            requests += 1
            if status != 200:
                raise RuntimeError(f"reset failed: {status} {data[:200]!r}")
    writer.close()
    return requests


async def _load(host: str, port: int, clients: int, duration: float, warmup: float) -> dict:
    start = time.perf_counter()
    measure_from, stop_at = start + warmup, start + warmup + duration
    samples: list[tuple[float, float]] = []
    counts = await asyncio.gather(
        *(_client(i, host, port, measure_from, stop_at, samples) for i in range(clients))
    )
    window = sorted(lat for end, lat in samples if end >= measure_from)
    elapsed = max(duration, max(end for end, _ in samples) - measure_from)
    return {
        "steps_per_s": len(window) / elapsed,
        "p50_ms": 1000 * window[len(window) // 2],
        "p99_ms": 1000 * window[min(len(window) - 1, int(len(window) * 0.99))],
        "requests": sum(counts),
    }


# ----- the driver ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def wait_until_serving(url: str, proc: subprocess.Popen) -> None:
    """Return once the server `proc` at `url` answers its health check (60 s at most)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{url}/v1/health", timeout=1).raise_for_status()
            return
        except httpx.HTTPError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("textenvs serve did not start") from None
            time.sleep(0.1)


@contextmanager
def serving(*options: str, root: Path = ROOT) -> Any:
    """`textenvs serve OPTIONS` in a subprocess on a free port (the `textenvs` of checkout
    `root`); yields (base URL, pid) once it answers, and stops it afterwards."""
    port = free_port()
    cmd = [sys.executable, "-m", "textenvs.cli", "serve", "--port", str(port)]
    cmd += ["--log-level", "warning", *options]
    proc = subprocess.Popen(cmd, cwd=root)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, proc)
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure(stack: str, args: argparse.Namespace) -> dict[str, float]:
    http, _, loop = stack.partition(":")
    max_sessions = max(1000, args.sessions + args.clients + 10)
    options = ["--idle-timeout", "0", "--max-sessions", str(max_sessions)]
    options += ["--creates-per-minute", "0"]  # the sessions for memory come at once
    with serving(*options, "--http", http, "--loop", loop or "auto") as (url, pid):
        port = int(url.rsplit(":", 1)[1])
        cpu0 = cpu_s(pid)
        load = [sys.executable, "-m", "benchmarks.service_load", "--load-only", str(port)]
        load += ["--clients", str(args.clients), "--duration", str(args.duration)]
        load += ["--warmup", str(args.warmup)]
        out = subprocess.run(load, cwd=ROOT, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"the load generator failed:\n{out.stderr}")
        result = json.loads(out.stdout)
        result["server_cpu_ms"] = 1000 * (cpu_s(pid) - cpu0) / result["requests"]
        # memory: N more idle sessions, RSS growth / N
        with httpx.Client(base_url=url) as client:
            before = rss_kb(pid)
            for seed in range(args.sessions):
                client.post("/v1/sessions", json={"env": ENV, "seed": seed}).raise_for_status()
            result["kb_per_session"] = (rss_kb(pid) - before) / max(1, args.sessions)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=32, help="concurrent clients (32)")
    p.add_argument("--duration", type=float, default=5.0, help="measured seconds (5)")
    p.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds first (1)")
    p.add_argument("--sessions", type=int, default=1000, help="sessions for memory (1000)")
    p.add_argument(
        "--stacks",
        default="auto,h11:asyncio",
        help="server stacks to compare, HTTP[:LOOP] for uvicorn, comma list "
        "(auto = httptools + uvloop when installed; h11:asyncio = pure Python)",
    )
    p.add_argument("--load-only", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.load_only:  # the load generator process
        result = asyncio.run(
            _load("127.0.0.1", args.load_only, args.clients, args.duration, args.warmup)
        )
        print(json.dumps(result))
        return 0
    rows = []
    for stack in args.stacks.split(","):
        r = measure(stack, args)
        rows.append(
            [
                stack,
                f"{r['steps_per_s']:.0f}",
                f"{r['steps_per_s'] / 1500:.2f}x",
                f"{r['p50_ms']:.2f}",
                f"{r['p99_ms']:.2f}",
                f"{r['server_cpu_ms']:.3f}",
                f"{r['kb_per_session']:.1f}",
            ]
        )
    print(f"textenvs serve, {args.clients} keep-alive clients stepping {ENV} sessions")
    header = ["stack", "steps/s", "vs 1500", "p50 ms", "p99 ms", "server CPU ms/req", "KB/session"]
    print(table(header, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
