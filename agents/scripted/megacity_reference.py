"""Megacity's reference runs at one level: how often each baseline policy wins, and what
the planner's victories need.

Policies (`textenvs.agents.scripted.megacity_baselines`): the fixed `recipe` and
`recipe-no-damping`, the `naive` surface builder, the `fixed` command list, `wait`, and
the two reward farmers. The planner and `random` are the band's own runs
(`textenvs.evals.bands`), so they are not played twice.

A victory *needs* a mechanism when the planner wins the seed with every capability and
loses it with that one taken away: its action removed from the planner's repertoire
(`relief dig`: no seam cell dug for the relief it brings; `shaft`: no ventilation shaft;
`research`: no research, so no mycelium or lodestone), or its effect switched off in a
variant of the physics that the world and the planner's model both run on (`seam flow`:
no stress moves along the seams).

The episodes are played by the caller's `PlayEpisode` (the bands use the eval loop), so
this module needs nothing above the agents.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

from textenvs.agents.scripted.megacity import MegacityPolicy
from textenvs.agents.scripted.megacity_baselines import BASELINES
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext
from textenvs.scenarios.megacity.env import MegacityEnv
from textenvs.scenarios.megacity.parameters import PHYSICS, Physics

#: mechanism -> (what the planner must do without, the physics the world runs on)
NEEDS: dict[str, tuple[frozenset[str], Physics]] = {
    "relief dig": (frozenset({"relief"}), PHYSICS),
    "seam flow": (frozenset(), replace(PHYSICS, seam_flow_pct=0)),
    "shaft": (frozenset({"vent"}), PHYSICS),
    "research": (frozenset({"research"}), PHYSICS),
}
#: the baselines every level publishes besides the band's random and planner
POLICIES = ("naive", "recipe", "recipe-no-damping", "fixed", "wait", "farm-swap", "farm-dig")

#: (env, agent, seed, reset options) -> (success, return) of one episode
PlayEpisode = Callable[[MegacityEnv, Agent, int, dict[str, Any] | None], tuple[bool, float]]


class PolicyAgent(Agent):
    """A Megacity policy as an agent: the planner without some capabilities (planning for
    `physics`), or one of the baselines."""

    def __init__(
        self, policy: str, without: frozenset[str] = frozenset(), physics: Physics = PHYSICS
    ) -> None:
        self.name = policy
        self.policy_name = policy
        self.without = without
        self.physics = physics

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        if self.policy_name == "planner":
            self.policy: Any = MegacityPolicy(context, self.without, self.physics)
        else:
            self.policy = BASELINES[self.policy_name](context)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        return Decision(self.policy.choose(info["observation"]))


Task = tuple[str, frozenset[str], Physics, int, int | None]


def play(task: Task, play_episode: PlayEpisode) -> tuple[bool, float]:
    """One episode of (policy, without, physics, seed, level): (victory, return)."""
    policy, without, physics, seed, level = task
    options = None if level is None else {"level": level}
    agent = PolicyAgent(policy, without, physics)
    return play_episode(MegacityEnv(physics=physics), agent, seed, options)


def play_all(
    tasks: Sequence[Task], play_episode: PlayEpisode, workers: int = 1
) -> list[tuple[bool, float]]:
    """Every task, on `workers` processes (in this one when 1)."""
    one = functools.partial(play, play_episode=play_episode)
    if workers <= 1:
        return [one(task) for task in tasks]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, tasks, chunksize=4))


def measure(
    level: int | None,
    seeds: Sequence[int],
    planner_wins: dict[int, bool],
    play_episode: PlayEpisode,
    workers: int = 1,
    note: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The baselines' victories and returns, and what the planner's victories need, on
    `seeds` at `level`; `planner_wins` is the full planner's result per seed."""
    tasks: list[Task] = [(p, frozenset(), PHYSICS, s, level) for p in POLICIES for s in seeds]
    tasks += [("planner", w, c, s, level) for w, c in NEEDS.values() for s in seeds]
    if note:
        note(f"{len(tasks)} reference episodes on {workers} process(es)")
    results = iter(play_all(tasks, play_episode, workers))
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
