"""Throughput for trainers: steps per second and the p50/p99 of a step through OpenEnv
WebSockets (OpenEnv's own client, `textenvs.service.openenv_client.TextenvsEnv`) at 64
and 256 concurrent clients, for each scenario, against the in-process env on the same
machine in the same run (issue 42).

`textenvs serve` runs with its defaults in a subprocess, but for resets: the default
allowance (1,200 a minute, 20 a second once a burst the size of the session allowance is
spent) would cap every row at 20 episodes a second, so the server runs with
`--resets-per-minute 0` (`--default-resets` keeps it). The clients run in another
process (`--load-only`), each with its own WebSocket session, stepping random well-formed
commands as fast as answers come and resetting when an episode ends (resets are not
timed). In process: as many envs as clients, stepped round-robin in this process with the
same commands. Overhead is the in-process steps/s over the service's, and the service's
p50 over the in-process p50; episodes/s counts the episodes the clients finished (and
reset) in the measured window. `--serve=OPTION` passes options to `textenvs serve` (with
`--serve=--max-sessions=128` the reset allowance's burst, the client's session allowance,
is spent within seconds). Every process shares the machine's cores.

    python -m benchmarks.service_throughput                  # every scenario, 64 and 256
    python -m benchmarks.service_throughput --envs treasure-hunt --clients 8 --duration 0.5
    python -m benchmarks.service_throughput --envs treasure-hunt --clients 64 --duration 10 \
        --serve=--max-sessions=128 --default-resets     # what the reset allowance costs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

import textenvs
from benchmarks._common import table
from benchmarks.service_load import ROOT, serving


def percentiles(seconds: list[float]) -> tuple[float, float]:
    """(p50, p99) in milliseconds."""
    if len(seconds) < 2:
        return (1000 * seconds[0], 1000 * seconds[0]) if seconds else (float("nan"),) * 2
    cuts = statistics.quantiles(seconds, n=100)
    return 1000 * statistics.median(seconds), 1000 * cuts[98]


def in_process(scenario: str, envs: int, duration: float) -> dict[str, float]:
    """`envs` local envs stepped round-robin for `duration` seconds."""
    players = []
    for seed in range(envs):
        env = textenvs.make(scenario)
        _, info = env.reset(seed=seed)
        players.append([env, info, np.random.default_rng(seed), seed])
    times: list[float] = []
    stop = time.perf_counter() + duration
    while time.perf_counter() < stop:
        for player in players:
            env, info, rng, seed = player
            command = env.random_command(info, rng)
            started = time.perf_counter()
            _, _, terminated, truncated, info = env.step(command)
            times.append(time.perf_counter() - started)
            if terminated or truncated:
                player[3] = seed = seed + envs
                _, info = env.reset(seed=seed)
            player[1] = info
    p50, p99 = percentiles(times)
    return {"steps_per_s": len(times) / duration, "p50_ms": p50, "p99_ms": p99}


async def _client(
    url: str,
    scenario: str,
    seed: int,
    clients: int,
    window: tuple[float, float],
    times: list[float],
    episodes: list[int],
) -> None:
    from textenvs.service.openenv_client import TextenvsAction, TextenvsEnv

    local = textenvs.make(scenario)  # for its random commands only
    rng = np.random.default_rng(seed)
    measure_from, stop = window
    async with TextenvsEnv.for_scenario(url, scenario, message_timeout_s=120) as env:
        info = (await env.reset(seed=seed)).observation.info
        while time.perf_counter() < stop:
            action = TextenvsAction(command=local.random_command(info, rng))
            started = time.perf_counter()
            result = await env.step(action)
            if started >= measure_from:
                times.append(time.perf_counter() - started)
            info = result.observation.info
            if result.done:
                seed += clients
                info = (await env.reset(seed=seed)).observation.info
                episodes[0] += started >= measure_from


async def through_service(
    url: str, scenario: str, clients: int, duration: float, warmup: float
) -> dict[str, float]:
    """`clients` OpenEnv clients stepping for `warmup` + `duration` seconds; steps
    started after the warm-up are counted and timed."""
    import textenvs.service.openenv_client  # noqa: F401  (imported before the clock starts)

    times: list[float] = []
    episodes = [0]  # finished (and reset) in the window
    start = time.perf_counter() + warmup
    window = (start, start + duration)
    await asyncio.gather(
        *(_client(url, scenario, seed, clients, window, times, episodes) for seed in range(clients))
    )
    p50, p99 = percentiles(times)
    return {
        "steps_per_s": len(times) / duration,
        "p50_ms": p50,
        "p99_ms": p99,
        "episodes_per_s": episodes[0] / duration,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--envs", default=",".join(textenvs.names()), help="comma list (all)")
    p.add_argument("--clients", default="64,256", help="comma list of concurrencies (64,256)")
    p.add_argument("--duration", type=float, default=3.0, help="measured seconds a row (3)")
    p.add_argument("--warmup", type=float, default=1.0, help="seconds before measuring (1)")
    p.add_argument("--default-resets", action="store_true", help="keep the default reset allowance")
    p.add_argument(
        "--serve",
        action="append",
        default=[],
        metavar="OPTION",
        help="an option for textenvs serve, repeatable (--serve=--max-sessions=128)",
    )
    # the load generator's own process: URL, then one JSON line per row
    p.add_argument("--load-only", metavar="URL", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    rows = [(env, int(n)) for env in args.envs.split(",") for n in args.clients.split(",")]
    if args.load_only:
        for env, clients in rows:
            result = through_service(args.load_only, env, clients, args.duration, args.warmup)
            print(json.dumps(asyncio.run(result)), flush=True)
        return 0
    local = {row: in_process(*row, args.duration) for row in rows}
    load = [sys.executable, "-m", "benchmarks.service_throughput", *(argv or sys.argv[1:])]
    loads = [os.getloadavg()[0]]
    options = [*([] if args.default_resets else ["--resets-per-minute", "0"]), *args.serve]
    with serving(*options) as (url, _):
        loads.append(os.getloadavg()[0])
        done = subprocess.run(
            [*load, "--load-only", url], cwd=ROOT, capture_output=True, text=True, check=False
        )
        loads.append(os.getloadavg()[0])
    if done.returncode != 0:
        raise RuntimeError(f"the load generator failed:\n{done.stderr[-3000:]}")
    served = dict(zip(rows, map(json.loads, done.stdout.splitlines()), strict=True))
    cells = [
        _cells(env, clients, local[env, clients], served[env, clients]) for env, clients in rows
    ]
    print(f"load average (1 min) {' / '.join(f'{x:.1f}' for x in loads)} (start, serving, end)")
    header = ["scenario", "clients", "in-process steps/s", "p50 ms", "p99 ms"]
    header += ["service steps/s", "p50 ms", "p99 ms", "overhead (steps/s, p50)", "episodes/s"]
    print(table(header, cells))
    return 0


def _cells(env: str, clients: int, local: dict[str, Any], served: dict[str, Any]) -> list[str]:
    slower = local["steps_per_s"] / max(served["steps_per_s"], 1e-9)
    later = served["p50_ms"] / max(local["p50_ms"], 1e-9)
    return [
        env,
        str(clients),
        f"{local['steps_per_s']:,.0f}",
        f"{local['p50_ms']:.3f}",
        f"{local['p99_ms']:.3f}",
        f"{served['steps_per_s']:,.0f}",
        f"{served['p50_ms']:.1f}",
        f"{served['p99_ms']:.1f}",
        f"x{slower:,.0f}, x{later:,.0f}",
        f"{served['episodes_per_s']:,.0f}",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
