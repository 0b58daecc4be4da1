"""Service scale: 10,000 open sessions, stepped at a fixed rate by many clients at once.

Starts `textenvs serve` (a subprocess, limits lifted) and, in other processes: one that
opens N sessions (of `--envs`, round-robin, seeds 0..N-1) over 32 connections; then a
load generator with C keep-alive clients that send steps at a fixed total rate (open
loop: each request has a scheduled time, and its latency counts from that time, so a
server that falls behind shows it), each step to the next of the N sessions in turn (an
ended episode is reset). Prints steps/s, p50/p99 latency, server CPU per request, and
memory per open session (server RSS growth over the N sessions / N).

    python -m benchmarks.service_scale                   # 10,000 sessions, 2,000 steps/s
    python -m benchmarks.service_scale --rates 1000,2000,3000 --duration 20
    python -m benchmarks.service_scale --envs all --rates 500,1000   # every scenario
    python -m benchmarks.service_scale --sessions 50 --rates 100 --duration 0.5  # smoke
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks._common import table
from benchmarks.service_load import ROOT, cpu_s, exchange, post, rss_kb, serving
from textenvs.core import registry

COMMANDS = (b"north", b"east", b"south", b"west")


# ----- the client processes -------------------------------------------------------------


async def _open_sessions(
    port: int, count: int, names: list[str], connections: int = 32
) -> list[str]:
    ids: list[str] = [""] * count

    async def worker(k: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for i in range(k, count, connections):
            body = json.dumps({"env": names[i % len(names)], "seed": i}).encode()
            status, data = await exchange(reader, writer, post("/v1/sessions", body))
            if status != 201:
                raise RuntimeError(f"create failed: {status} {data[:200]!r}")
            ids[i] = json.loads(data)["session_id"]
        writer.close()

    await asyncio.gather(*(worker(k) for k in range(min(connections, count))))
    return ids


async def _paced_client(
    k: int, port: int, ids: list[str], rate: float, clients: int, start: float, end: float
) -> tuple[list[float], int]:
    """Client k sends every clients/rate seconds; returns (latencies, requests made)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    interval = clients / rate
    latencies: list[float] = []
    requests, n = 0, k
    scheduled = start + k / rate
    while scheduled < end:
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        sid = ids[n % len(ids)]
        step = post(f"/v1/sessions/{sid}/step", b'{"command":"' + COMMANDS[n % 4] + b'"}')
        status, data = await exchange(reader, writer, step)
        requests += 1
        if status == 409 or b'"terminated":true' in data or b'"truncated":true' in data:
            await exchange(reader, writer, post(f"/v1/sessions/{sid}/reset", b"{}"))
            requests += 1
        elif status != 200:
            raise RuntimeError(f"step failed: {status} {data[:200]!r}")
        if status == 200:
            latencies.append(time.perf_counter() - scheduled)
        n += clients
        scheduled += interval
    writer.close()
    return latencies, requests


async def _load(port: int, ids: list[str], rate: float, clients: int, duration: float) -> dict:
    start = time.perf_counter() + 0.5  # every client connected before the clock starts
    results = await asyncio.gather(
        *(
            _paced_client(k, port, ids, rate, clients, start, start + duration)
            for k in range(clients)
        )
    )
    latencies = sorted(lat for lats, _ in results for lat in lats)
    # A server that falls behind takes longer than `duration` to answer them all.
    elapsed = max(duration, time.perf_counter() - start)
    return {
        "steps_per_s": len(latencies) / elapsed,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "requests": sum(r for _, r in results),
    }


# ----- the driver ------------------------------------------------------------------------


def _client_process(*args: str) -> str:
    cmd = [sys.executable, "-m", "benchmarks.service_scale", *args]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"the client process failed:\n{out.stderr}")
    return out.stdout


def run(args: argparse.Namespace) -> tuple[dict[str, float], list[dict[str, float]]]:
    options = ["--max-sessions", str(args.sessions + 100), "--idle-timeout", "0"]
    options += ["--max-lifetime", "0", "--creates-per-minute", "0", "--steps-per-second", "0"]
    options += ["--max-connections", str(args.clients + 200)]
    with serving(*options) as (url, pid):
        port = url.rsplit(":", 1)[1]
        # Warm up (every scenario's code and catalogue loaded), then open the sessions.
        envs = ["--envs", ",".join(args.envs)]
        _client_process("--open-only", port, "--sessions", "50", "--envs", "all")
        httpx.get(f"{url}/v1/health")
        before = rss_kb(pid)
        with tempfile.TemporaryDirectory() as tmp:
            ids_file = Path(tmp) / "ids.json"
            ids_file.write_text(
                _client_process("--open-only", port, "--sessions", str(args.sessions), *envs)
            )
            after = rss_kb(pid)
            memory = {
                "sessions": float(httpx.get(f"{url}/v1/health").json()["sessions"]),
                "rss_mb": after / 1024,
                "kb_per_session": (after - before) / args.sessions,
            }
            rows = []
            for rate in args.rates:
                cpu0 = cpu_s(pid)
                out = _client_process(
                    "--load-only", port, "--ids", str(ids_file), "--rate", str(rate),
                    "--clients", str(args.clients), "--duration", str(args.duration),
                )  # fmt: skip
                result = {"rate": rate, **json.loads(out)}
                result["server_cpu_ms"] = 1000 * (cpu_s(pid) - cpu0) / result["requests"]
                rows.append(result)
        return memory, rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=10_000, help="open sessions (10,000)")
    p.add_argument(
        "--rates",
        type=lambda s: [float(r) for r in s.split(",")],
        default=[2000.0],
        help="target steps/s, comma list (2000)",
    )
    p.add_argument("--clients", type=int, default=100, help="keep-alive clients (100)")
    p.add_argument("--duration", type=float, default=10.0, help="measured seconds (10)")
    p.add_argument(
        "--envs",
        type=lambda s: registry.names() if s == "all" else s.split(","),
        default=["treasure-hunt"],
        help="scenarios of the sessions, comma list or 'all' (treasure-hunt: the HTTP "
        "stack's cost, as in service_load; 'all' adds the heavier scenarios' steps)",
    )
    p.add_argument("--open-only", type=int, metavar="PORT", help=argparse.SUPPRESS)
    p.add_argument("--load-only", type=int, metavar="PORT", help=argparse.SUPPRESS)
    p.add_argument("--ids", help=argparse.SUPPRESS)
    p.add_argument("--rate", type=float, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.open_only:
        ids = asyncio.run(_open_sessions(args.open_only, args.sessions, args.envs))
        print(json.dumps(ids))
        return 0
    if args.load_only:
        ids = json.loads(Path(args.ids).read_text())
        result = asyncio.run(_load(args.load_only, ids, args.rate, args.clients, args.duration))
        print(json.dumps(result))
        return 0
    memory, rows = run(args)
    print(
        f"{args.sessions} sessions opened ({memory['sessions']:.0f} open): server RSS "
        f"{memory['rss_mb']:.0f} MB, {memory['kb_per_session']:.1f} KB per session (target < 60)"
    )
    print()
    header = ["target/s", "steps/s", "p50 ms", "p99 ms", "server CPU ms/req"]
    keys = [("rate", ".0f"), ("steps_per_s", ".0f"), ("p50_ms", ".1f"), ("p99_ms", ".1f")]
    keys.append(("server_cpu_ms", ".2f"))
    cells = [[format(r[key], spec) for key, spec in keys] for r in rows]
    print(table(header, cells))
    print("\ntarget: p99 < 50 ms at 2,000 steps/s with 10,000 sessions open")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
