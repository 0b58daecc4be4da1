"""`--backend ray` against the local backend on this machine: episodes/s of the same eval.

Two workloads, each played once by the local backend (one process, one event loop) and
once by the Ray backend (actors on a Ray cluster, the driver recording every episode):

- scripted: the scripted agent on treasure-hunt (CPU-bound, episodes of a few ms);
- llm: the LLM agent against a loopback model answering after a fixed latency with
  `wait` (every episode plays its whole 30-step budget), at each concurrency C.

The Ray rate counts from the moment the actors are up (their start, a one-off per run
of a few seconds, is reported apart): the per-episode overhead is what a long eval pays.
By default a Ray head is started on loopback with 2 CPUs (`benchmarks/support/ray_cluster.py`) and
stopped after; `--ray-address` uses a running cluster instead.

    python -m benchmarks.ray_backend                     # scripted + llm at C = 32, 128
    python -m benchmarks.ray_backend --rounds 1 --concurrency 4 --scripted 40   # tiny
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import table
from benchmarks.eval_harness import ModelServer

ENV = "treasure-hunt"


def run_once(
    out: Path, factory: Any, episodes: int, concurrency: int, ray_address: str | None
) -> dict[str, float]:
    """One eval; its wall seconds (from the actors' start for Ray) and episodes."""
    from textenvs.evals import runner
    from textenvs.evals.plan import EvalPlan, build_config

    plan = EvalPlan(envs=[ENV], seeds=list(range(episodes)), concurrency=concurrency)
    config = build_config(plan, factory(), agent_options={}, prices=None, seeds_spec="b")
    backend = None
    started = time.perf_counter()
    if ray_address is not None:
        from textenvs.evals.ray_backend import RayBackend

        backend = RayBackend(plan, factory, address=ray_address)
        backend.start()
    ready = time.perf_counter()
    summary = asyncio.run(runner.run_eval(plan, out, factory, config, backend=backend))
    wall = time.perf_counter() - ready
    stats = summary["by_env"][ENV]
    if stats["agent_errors"] or stats["episodes"] != episodes:
        raise SystemExit(f"{stats['agent_errors']} episodes failed: the benchmark is invalid")
    return {"wall": wall, "start": ready - started, "episodes": episodes}


def compare(
    name: str, factory: Any, episodes: int, concurrency: int, address: str, tmp: Path
) -> list[str]:
    local = run_once(tmp / f"{name}-{concurrency}-local", factory, episodes, concurrency, None)
    on_ray = run_once(tmp / f"{name}-{concurrency}-ray", factory, episodes, concurrency, address)
    local_rate = episodes / local["wall"]
    ray_rate = episodes / on_ray["wall"]
    return [name, str(concurrency), str(episodes), f"{local_rate:.2f}", f"{ray_rate:.2f}",
            f"{ray_rate / local_rate:.0%}", f"{on_ray['start']:.1f}"]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--concurrency", default="32,128", help="LLM eval levels, comma list")
    p.add_argument("--latency", type=float, default=0.2, help="model latency, s (0.2)")
    p.add_argument("--rounds", type=int, default=2, help="LLM episodes = rounds x C (2)")
    p.add_argument("--scripted", type=int, default=400, help="scripted episodes (400)")
    p.add_argument("--scripted-concurrency", type=int, default=8, help="(8)")
    p.add_argument("--ray-address", default=None, help="a running cluster (default: start one)")
    args = p.parse_args(argv)
    os.environ.setdefault("TEXTENVS_BENCH_KEY", "bench-key")
    from textenvs.agents import make_agent
    from textenvs.agents.llm.config import LLMConfig

    cluster = None
    if args.ray_address is None:
        from benchmarks.support.ray_cluster import LocalCluster

        # a cluster of this machine only: Ray on loopback (read when Ray is imported)
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        cluster = LocalCluster(cpus=2).start()
    address = args.ray_address or cluster.address  # type: ignore[union-attr]
    rows = []
    try:
        with ModelServer(args.latency) as base_url, tempfile.TemporaryDirectory() as tmp:
            scripted = functools.partial(make_agent, "scripted")
            rows.append(compare("scripted", scripted, args.scripted, args.scripted_concurrency,
                                address, Path(tmp)))  # fmt: skip
            config = LLMConfig(model="bench", base_url=base_url, api_key_env="TEXTENVS_BENCH_KEY")
            llm = functools.partial(make_agent, "llm", config=config)
            for c in (int(level) for level in args.concurrency.split(",")):
                rows.append(compare("llm", llm, c * args.rounds, c, address, Path(tmp)))
    finally:
        if cluster is not None:
            cluster.stop()
    print(f"textenvs eval on {ENV}: local backend vs Ray backend (llm: model latency "
          f"{1000 * args.latency:.0f} ms, 30 steps an episode)")  # fmt: skip
    header = ["agent", "C", "episodes", "local ep/s", "ray ep/s", "ray/local", "actor start s"]
    print(table(header, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
