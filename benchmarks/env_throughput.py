"""Env engine throughput: reset + step + render, steps/s, every scenario vs TextArena.

Each scenario is created through `gymnasium.make` and played with uniformly random
well-formed commands (the `random` agent's sampler) episode after episode; TextArena's
`FrozenLake-v0-raw` is stepped the same way in the same run with random `[up]`-style
actions. Figures are medians of several runs; the ratio is what to read, not the absolute.

    python -m benchmarks.env_throughput [--steps 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

import textenvs
from benchmarks._common import median_rate, table

TEXTARENA_ID = "FrozenLake-v0-raw"
TEXTARENA_ACTIONS = ["[up]", "[down]", "[left]", "[right]"]


def textenvs_steps(env_id: str, steps: int) -> int:
    env = gym.make(env_id)
    inner = env.unwrapped
    rng = np.random.default_rng(0)
    done, seed, count = True, 0, 0
    while count < steps:
        if done:
            _, info = env.reset(seed=seed)
            seed += 1
        command = inner.random_command(info, rng)
        _, _, terminated, truncated, info = env.step(command)
        done = terminated or truncated
        count += 1
    return count


def textarena_steps(steps: int) -> int:
    import textarena as ta

    env = ta.make(TEXTARENA_ID)
    rng = np.random.default_rng(0)
    done, seed, count = True, 0, 0
    while count < steps:
        if done:
            env.reset(num_players=1, seed=seed)
            seed += 1
        env.get_observation()
        done, _ = env.step(TEXTARENA_ACTIONS[int(rng.integers(4))])
        count += 1
        if done:
            env.close()
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="steps per run")
    parser.add_argument("--repeats", type=int, default=5, help="runs per figure (median)")
    args = parser.parse_args()

    baseline = median_rate(lambda: textarena_steps(args.steps), args.repeats)
    rows = [[f"TextArena {TEXTARENA_ID}", f"{baseline:,.0f}", "1.00x"]]
    for scenario in textenvs.SCENARIOS:
        rate = median_rate(lambda s=scenario: textenvs_steps(s.env_id, args.steps), args.repeats)
        rows.append([scenario.env_id, f"{rate:,.0f}", f"{rate / baseline:.2f}x"])
    print(table(["env", "steps/s (median)", "vs TextArena"], rows))


if __name__ == "__main__":
    main()
