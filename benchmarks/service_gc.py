"""Garbage-collector pauses with 10,000 open sessions, with and without `SessionFreezer`.

In one process (no HTTP: the pauses are the collector's, whatever carries the requests),
opens N sessions through the service's own `Operations`, then steps them round-robin,
and records every collection's duration (`gc.callbacks`). Prints the longest pause while
opening and while stepping, the full collections while stepping and the step latency
p99, for the default collector and for the frozen one `textenvs serve` uses
(`textenvs/service/memory.py`). Each mode runs in a fresh subprocess.

    python -m benchmarks.service_gc                      # 10,000 sessions, 50,000 steps
    python -m benchmarks.service_gc --sessions 500 --steps 2000    # smoke
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import time

from benchmarks._common import table
from benchmarks.service_load import ROOT


async def _measure(sessions: int, steps: int, freeze: bool) -> dict[str, float]:
    from textenvs.service.memory import SessionFreezer
    from textenvs.service.operations import Operations
    from textenvs.service.sessions import SessionStore
    from textenvs.service.tenancy import ClientLimits

    limits = ClientLimits(creates_per_minute=0, resets_per_minute=0, steps_per_second=0)
    ops = Operations(SessionStore(max_sessions=sessions + 1, idle_timeout=0), limits)
    ops.freezer = SessionFreezer() if freeze else None
    if ops.freezer is not None:
        ops.freezer.start()
    pauses: list[tuple[int, float]] = []
    started: dict[str, float] = {}

    def timing(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started["t"] = time.perf_counter()
        else:
            pauses.append((info["generation"], time.perf_counter() - started["t"]))

    gc.callbacks.append(timing)
    ids = [ops.create("anonymous", "treasure-hunt", i, None).id for i in range(sessions)]
    opening = pauses[:]
    pauses.clear()  # from here on: the pauses a stepping client meets
    latencies = []
    for i in range(steps):
        sid = ids[i % sessions]
        t = time.perf_counter()
        try:
            await ops.step("anonymous", sid, "wait", None)
        except Exception:  # the episode ended: a new one
            await ops.reset("anonymous", sid, None, None)
        latencies.append(time.perf_counter() - t)
    gc.callbacks.remove(timing)
    ops.reader.close()
    latencies.sort()
    return {
        "opening_pause_ms": 1000 * max((p for _, p in opening), default=0.0),
        "longest_pause_ms": 1000 * max((p for _, p in pauses), default=0.0),
        "full_collections": sum(1 for g, _ in pauses if g == 2),
        "step_p99_ms": 1000 * latencies[int(0.99 * len(latencies))],
        "step_max_ms": 1000 * latencies[-1],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=10_000, help="open sessions (10,000)")
    p.add_argument("--steps", type=int, default=50_000, help="steps measured (50,000)")
    p.add_argument("--mode", choices=["default", "frozen"], help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.mode:
        result = asyncio.run(_measure(args.sessions, args.steps, args.mode == "frozen"))
        print(json.dumps(result))
        return 0
    rows = []
    for mode in ("default", "frozen"):
        cmd = [sys.executable, "-m", "benchmarks.service_gc", "--mode", mode]
        cmd += ["--sessions", str(args.sessions), "--steps", str(args.steps)]
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
        r = json.loads(out.stdout)
        rows.append([mode, f"{r['opening_pause_ms']:.1f}", f"{r['full_collections']:.0f}",
                     f"{r['longest_pause_ms']:.1f}",
                     f"{r['step_p99_ms']:.2f}", f"{r['step_max_ms']:.1f}"])  # fmt: skip
    header = ["collector", "longest pause opening ms", "full collections stepping",
              "longest pause stepping ms", "step p99 ms", "step max ms"]  # fmt: skip
    print(table(header, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
