"""Eval harness efficiency: `textenvs eval --agent llm` against a slow loopback model.

A loopback OpenAI-compatible server (benchmarks/support/openai_server.py, in its own process
so its CPU is not ours) answers every request after a fixed latency with a valid command
(`wait` for treasure-hunt: every episode uses its whole 30-step budget). The eval runs
in this process through `textenvs.evals.runner` exactly as `textenvs eval` drives it
(trajectory files, fsynced episode log, summary). For each concurrency C it reports
episodes/s against the ideal C / (latency x steps per episode) and this process's CPU
time per step (the harness's own cost: agent, env, storage, HTTP client).

    python -m benchmarks.eval_harness                  # C = 1, 8, 32 at 200 ms
    python -m benchmarks.eval_harness --rounds 1 --concurrency 1,4 --latency 0.01   # tiny
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import table

ENV = "treasure-hunt"
ROOT = Path(__file__).resolve().parent.parent  # benchmarks.support lives there
COMMAND = "wait"  # valid in every state; the episode runs to its step budget


def serve(latency: float) -> None:
    """The child process: serve until stdin closes, after printing the port."""
    from benchmarks.support.openai_server import OpenAIServer, text

    with OpenAIServer(default=text(COMMAND, latency_s=latency)) as server:
        print(server.port, flush=True)
        sys.stdin.read()


class ModelServer:
    """The loopback model server in a child process, as a context yielding its base URL."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> str:
        code = f"from benchmarks.eval_harness import serve; serve({self.latency!r})"
        self._proc = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert self._proc.stdout is not None
        port = self._proc.stdout.readline().strip()
        if not port.isdigit():
            self.__exit__()
            raise RuntimeError("the model server did not start")
        return f"http://127.0.0.1:{port}/v1"

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.communicate(timeout=10)  # closing stdin ends the server
            self._proc = None


def run_once(base_url: str, concurrency: int, episodes: int, out: Path) -> dict[str, float]:
    """One eval of `episodes` episodes at `concurrency`; wall and CPU seconds, steps."""
    from textenvs.agents.llm.agent import LLMAgent
    from textenvs.evals import runner
    from textenvs.evals.plan import EvalPlan, build_config

    plan = EvalPlan(envs=[ENV], seeds=list(range(episodes)), concurrency=concurrency)

    def factory() -> LLMAgent:
        return LLMAgent(model="bench", base_url=base_url, api_key_env="TEXTENVS_BENCH_KEY")

    config = build_config(
        plan, factory(), agent_options={}, prices=None, seeds_spec=f"0-{episodes - 1}"
    )
    cpu0, wall0 = time.process_time(), time.perf_counter()
    summary = asyncio.run(runner.run_eval(plan, out, factory, config))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    stats = summary["by_env"][ENV]
    if stats["agent_errors"]:
        raise SystemExit(f"{stats['agent_errors']} episodes failed: the benchmark is invalid")
    steps = stats["mean_steps"] * stats["episodes"]
    return {"wall": wall, "cpu": cpu, "steps": steps, "episodes": stats["episodes"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--concurrency", default="1,8,32", help="comma list (1,8,32)")
    p.add_argument("--latency", type=float, default=0.2, help="model latency, s (0.2)")
    p.add_argument(
        "--rounds", type=int, default=2, help="episodes per run = rounds x concurrency (2)"
    )
    args = p.parse_args(argv)
    os.environ.setdefault("TEXTENVS_BENCH_KEY", "bench-key")
    levels = [int(c) for c in args.concurrency.split(",")]
    rows = []
    with ModelServer(args.latency) as base_url, tempfile.TemporaryDirectory() as tmp:
        for c in levels:
            r = run_once(base_url, c, c * args.rounds, Path(tmp) / f"c{c}")
            steps_per_ep = r["steps"] / r["episodes"]
            ideal = c / (args.latency * steps_per_ep)
            rate = r["episodes"] / r["wall"]
            rows.append(
                [
                    str(c),
                    f"{r['episodes']:.0f}",
                    f"{steps_per_ep:.0f}",
                    f"{rate:.3f}",
                    f"{ideal:.3f}",
                    f"{rate / ideal:.1%}",
                    f"{1000 * r['cpu'] / r['steps']:.2f}",
                ]
            )
    print(f"textenvs eval --agent llm on {ENV}, model latency {1000 * args.latency:.0f} ms")
    header = ["C", "episodes", "steps/ep", "episodes/s", "ideal/s", "of ideal", "CPU ms/step"]
    print(table(header, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
