"""Megacity's reference runs at one level: how often each baseline policy wins, and what
the planner's victories need.

Policies (`textenvs.agents.scripted.megacity_baselines`): the fixed `recipe` and
`recipe-no-damping`, the `naive` surface builder, the `fixed` command list, `wait`, and
the two reward farmers. The planner and `random` are the band's own runs
(`textenvs.evals.bands`), so they are not played twice.

A victory *needs* a mechanism when the planner wins the seed with every capability and
loses it with that one taken away: its action removed from the planner's repertoire
(`relief dig`: no seam cell dug for the relief it brings; `shaft`: no ventilation shaft;
`research`: no research, so no mycelium or lodestone), or its effect switched off in the
world and in the planner's model alike (`seam flow`: no stress moves along the seams).
"""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from textenvs.agents.scripted.megacity import MegacityPolicy
from textenvs.agents.scripted.megacity_baselines import BASELINES
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext
from textenvs.evals.metrics import wilson
from textenvs.scenarios.megacity import physics

#: mechanism -> (what the planner must do without, physics constants switched off)
NEEDS: dict[str, tuple[frozenset[str], dict[str, int]]] = {
    "relief dig": (frozenset({"relief"}), {}),
    "seam flow": (frozenset(), {"SEAM_FLOW_PCT": 0}),
    "shaft": (frozenset({"vent"}), {}),
    "research": (frozenset({"research"}), {}),
}
#: the baselines every level publishes besides the band's random and planner
POLICIES = ("naive", "recipe", "recipe-no-damping", "fixed", "wait", "farm-swap", "farm-dig")
CACHED = (physics.pull_of, physics.relief_from, physics._field, physics._power_flows)


@contextmanager
def switched_off(constants: dict[str, int]) -> Iterator[None]:
    """Physics constants changed for the duration (in the world and in the planner's
    model, which reads the same module), then restored."""
    saved = {name: getattr(physics, name) for name in constants}
    try:
        for name, value in constants.items():
            setattr(physics, name, value)
        for cached in CACHED:
            cached.cache_clear()
        yield
    finally:
        for name, value in saved.items():
            setattr(physics, name, value)
        for cached in CACHED:
            cached.cache_clear()


class PolicyAgent(Agent):
    """A Megacity policy as an agent: the planner without some capabilities, or one of
    the baselines."""

    def __init__(self, policy: str, without: frozenset[str] = frozenset()) -> None:
        self.name = policy
        self.policy_name = policy
        self.without = without

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        if self.policy_name == "planner":
            self.policy: Any = MegacityPolicy(context, self.without)
        else:
            self.policy = BASELINES[self.policy_name](context)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        return Decision(self.policy.choose(info["observation"]))


Task = tuple[str, frozenset[str], dict[str, int], int, int | None]


def play(task: Task) -> tuple[bool, float]:
    """One episode of (policy, without, constants switched off, seed, level):
    (victory, return)."""
    import textenvs
    from textenvs.episodes.loop import run_episode

    policy, without, constants, seed, level = task
    options = None if level is None else {"level": level}
    agent = PolicyAgent(policy, without)
    with switched_off(constants):
        result = asyncio.run(run_episode(textenvs.make("megacity"), agent, seed, options=options))
    return result.success, result.total_reward


def play_all(tasks: Sequence[Task], workers: int = 1) -> list[tuple[bool, float]]:
    """Every task, on `workers` processes (in this one when 1)."""
    if workers <= 1:
        return [play(task) for task in tasks]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(play, tasks, chunksize=4))


def measure(
    level: int | None,
    seeds: Sequence[int],
    planner_wins: dict[int, bool],
    workers: int = 1,
    note: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The baselines' victories and returns, and what the planner's victories need, on
    `seeds` at `level`; `planner_wins` is the full planner's result per seed."""
    tasks: list[Task] = [(p, frozenset(), {}, s, level) for p in POLICIES for s in seeds]
    tasks += [("planner", w, c, s, level) for w, c in NEEDS.values() for s in seeds]
    if note:
        note(f"{len(tasks)} reference episodes on {workers} process(es)")
    results = iter(play_all(tasks, workers))
    policies = {}
    for policy in POLICIES:
        played = [next(results) for _ in seeds]
        policies[policy] = {
            "victories": sum(won for won, _ret in played),
            "success_rate": sum(won for won, _ret in played) / len(seeds),
            "mean_return": round(sum(ret for _won, ret in played) / len(seeds), 2),
            "max_return": round(max(ret for _won, ret in played), 2),
        }
    wins = [s for s in seeds if planner_wins[s]]
    needs = {}
    for mechanism in NEEDS:
        kept = {seed: next(results)[0] for seed in seeds}
        lost = sum(1 for s in wins if not kept[s])
        needs[mechanism] = {
            "planner_victories_without": sum(kept.values()),
            "victories_lost": lost,
            "share": lost / len(wins) if wins else 0.0,
        }
    return {"planner_victories": len(wins), "policies": policies, "needs": needs}


# ----- the scenario page's tables, from the published bands ---------------------------

POLICY_LABELS = {"scripted": "planner (`scripted`)", "random": "random"}


def tables(bands: dict[str, Any]) -> str:
    """Markdown tables of Megacity's published reference runs per level (victories,
    mean returns, and what the planner's victories need), as its scenario page shows
    them; `python -m textenvs.evals.megacity_reference` prints them."""
    entry = bands["scenarios"]["megacity"]
    levels = sorted(entry["levels"].items(), key=lambda item: int(item[0]))
    head = "| policy | " + " | ".join(f"level {k}" for k, _band in levels) + " |"
    rule = "|---|" + "---|" * len(levels)

    def rate(wins: int, n: int) -> str:
        return f"{wins} / {n} ({100 * wins / n:.1f}%)"

    wins, returns = [head, rule], [head, rule]
    for name in ("scripted", "random", *POLICIES):
        label = POLICY_LABELS.get(name, name)
        cells_w, cells_r = [], []
        for _k, band in levels:
            n = band["episodes"]
            if name in ("scripted", "random"):
                cells_w.append(rate(round(band["success_rate"][name] * n), n))
                cells_r.append(f"{band['mean_return'][name]:.1f}")
            else:
                policy = band["policies"][name]
                cells_w.append(rate(policy["victories"], n))
                cells_r.append(f"{policy['mean_return']:.1f}")
        wins.append(f"| {label} | " + " | ".join(cells_w) + " |")
        returns.append(f"| {label} | " + " | ".join(cells_r) + " |")
    needs = [head.replace("| policy |", "| taken away |"), rule]
    for mechanism in NEEDS:
        cells = []
        for _k, band in levels:
            need = band["needs"][mechanism]
            cells.append(
                f"{need['victories_lost']} of {band['planner_victories']} "
                f"({100 * need['share']:.1f}%)"
            )
        needs.append(f"| {mechanism} | " + " | ".join(cells) + " |")
    intervals = []
    for k, band in levels:
        n = band["episodes"]
        low, high = wilson(round(band["success_rate"]["scripted"] * n), n)
        intervals.append(f"level {k} {100 * low:.1f}-{100 * high:.1f}%")
    seeds = {band["seeds"] for _k, band in levels}
    return "\n".join(
        [
            f"Victories (seeds {', '.join(sorted(seeds))}, one episode per seed and level):",
            "",
            *wins,
            "",
            textwrap.fill(
                "The planner's success rate, 95% Wilson intervals: " + ", ".join(intervals) + ".",
                width=88,
            ),
            "",
            "Mean return:",
            "",
            *returns,
            "",
            "Victories of the planner lost when one mechanism is taken away (share of its "
            "victories at that level):",
            "",
            *needs,
        ]
    )


def main() -> None:
    from textenvs.evals.bands import load_bands

    print(tables(load_bands()))


if __name__ == "__main__":
    main()
