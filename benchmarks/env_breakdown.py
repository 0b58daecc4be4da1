"""Where a step's time goes: microseconds per part, every scenario.

An episode stream is recorded first (random well-formed commands, the `env_throughput`
workload), then each part is timed alone over the recorded inputs:

- `parse`: `env.parse(command)`           - `transition`: `env.transition(state, action, i)`
- `observe`: `env.observe(state, used)`    - `render`: `env.render_text(obs)` + `narrate`
- `valid`: `env.valid_commands(state)`     - `reset`: `env.reset(seed=...)` (per episode)
- `sample`: the benchmark's own command sampler (`random_command`)
- `step`: the unwrapped `env.step` (all of the above plus the base class' bookkeeping)
- `wrappers`: `gymnasium.make`'s wrappers (wrapped step minus unwrapped step)

`reset/step` is the reset cost spread over the episode's steps.

    python -m benchmarks.env_breakdown [--steps 5000]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import textenvs
from benchmarks._common import table
from textenvs.core.parsing import ParseError

PARTS = ["parse", "transition", "observe", "render", "valid", "sample", "step", "wrappers"]


def _per_call_us(calls: list[Callable[[], Any]], repeats: int = 3) -> float:
    """Median over `repeats` passes of the mean microseconds per call."""
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        for call in calls:
            call()
        runs.append((time.perf_counter() - started) / len(calls) * 1e6)
    return statistics.median(runs)


def _record(env_id: str, steps: int) -> tuple[Any, list[tuple[Any, ...]], list[int]]:
    """Play `steps` random steps; keep (state, command, step_index, steps_used, info)."""
    env = gym.make(env_id).unwrapped
    rng = np.random.default_rng(0)
    records: list[tuple[Any, ...]] = []
    seeds: list[int] = []
    done, seed = True, 0
    while len(records) < steps:
        if done:
            _, info = env.reset(seed=seed)
            seeds.append(seed)
            seed += 1
        command = env.random_command(info, rng)
        records.append((env._state, command, env.steps_used, info))
        _, _, terminated, truncated, info = env.step(command)
        done = terminated or truncated
    return env, records, seeds


def breakdown(env_id: str, steps: int) -> dict[str, float]:
    env, records, seeds = _record(env_id, steps)
    parsed = []
    for state, command, used, _info in records:
        with contextlib.suppress(ParseError):
            parsed.append((state, env.parse(command), used))
    observations = [(env.observe(s, used), used) for s, _c, used, _i in records]
    events = [tuple(i["events"]) for *_rest, i in records]
    rng = np.random.default_rng(1)
    figures = {
        "parse": _per_call_us([lambda c=c: env.parse(c) for _s, c, _u, _i in records]),
        "transition": _per_call_us([lambda a=a: env.transition(*a) for a in parsed]),
        "observe": _per_call_us([lambda s=s, u=u: env.observe(s, u) for s, _c, u, _i in records]),
        "render": _per_call_us(
            [
                lambda o=o, e=e: (env.render_text(o), env.narrate(e))
                for (o, _u), e in zip(observations, events, strict=True)
            ]
        ),
        "valid": _per_call_us([lambda s=s: env.valid_commands(s) for s, *_rest in records]),
        "sample": _per_call_us([lambda i=i: env.random_command(i, rng) for *_rest, i in records]),
        "reset/step": _per_call_us([lambda s=s: env.reset(seed=s) for s in seeds])
        / (len(records) / len(seeds)),
    }
    figures["step"] = _stepping_us(env, records, seeds)
    figures["wrappers"] = max(0.0, _stepping_us(gym.make(env_id), records, seeds) - figures["step"])
    return figures


def _stepping_us(env: Any, records: list[tuple[Any, ...]], seeds: list[int]) -> float:
    """Mean microseconds of `env.step` replaying the recorded commands (resets excluded)."""
    total, count = 0.0, 0
    index = 0
    for seed in seeds:
        env.reset(seed=seed)
        while index < len(records):
            command = records[index][1]
            started = time.perf_counter()
            _, _, terminated, truncated, _ = env.step(command)
            total += time.perf_counter() - started
            count += 1
            index += 1
            if terminated or truncated:
                break
    return total / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5_000, help="recorded steps per scenario")
    args = parser.parse_args()
    header = ["env (us per call)", *PARTS, "reset/step"]
    rows = []
    for scenario in textenvs.SCENARIOS:
        figures = breakdown(scenario.env_id, args.steps)
        rows.append([scenario.env_id, *(f"{figures[p]:.1f}" for p in [*PARTS, "reset/step"])])
    print(table(header, rows))


if __name__ == "__main__":
    main()
