"""Megacity levels: the option, determinism per level, the same physics at every level,
the maps each level draws, and simple policies losing at every level."""

from __future__ import annotations

import hashlib
import itertools
import os
import subprocess
import sys
from typing import Any

import gymnasium
import numpy as np
import pytest

import textenvs
from tests.conftest import assert_golden, render_transcript
from tests.conftest import play as play_episode
from textenvs.agents.scripted.megacity import MegacityPolicy
from textenvs.agents.scripted.megacity_baselines import BASELINES
from textenvs.agents.scripted.megacity_reference import NEEDS, play
from textenvs.episodes.loop import context_for
from textenvs.evals.bands import load_bands
from textenvs.evals.measure_bands import play_agent
from textenvs.scenarios.megacity import maps
from textenvs.scenarios.megacity import physics as p
from textenvs.scenarios.megacity.parameters import PHYSICS
from textenvs.scenarios.megacity.state import SIZE, MegacityState, all_cells, cell_name

LEVELS = maps.LEVELS
#: sha256 of repr() of v3's initial states for seeds 0-99, computed with v3's generator
V3_MAPS = "facd5b05c83c193a1137f105d25c2db4a8d60e702d5a7959679f93cbaeb0bef8"


def state_at(seed: int, level: int) -> MegacityState:
    env = textenvs.make("megacity")
    env.reset(seed=seed, options={"level": level})
    return env._state


def test_level_is_a_reset_option_a_make_argument_and_a_gymnasium_kwarg() -> None:
    for level in LEVELS:
        expected = state_at(5, level)
        made = textenvs.make("megacity", level=level)
        made.reset(seed=5)
        assert made._state == expected
        wrapped = gymnasium.make(textenvs.get("megacity").env_id, level=level)
        wrapped.reset(seed=5)
        assert wrapped.unwrapped._state == expected  # type: ignore[attr-defined]
        made.reset(seed=5, options={"level": (level + 1) % 4})  # the option wins
        assert made._state == state_at(5, (level + 1) % 4)
    plain = textenvs.make("megacity")
    plain.reset(seed=5)
    assert plain._state == state_at(5, maps.DEFAULT_LEVEL) and maps.DEFAULT_LEVEL == 2
    assert textenvs.make("megacity").default_level == 2 and plain.levels == (0, 1, 2, 3)


@pytest.mark.parametrize("bad", [4, -1, "2", 1.5, True, None])
def test_a_level_that_does_not_exist_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"level must be one of \(0, 1, 2, 3\)"):
        textenvs.make("megacity").reset(seed=0, options={"level": bad})
    with pytest.raises(ValueError, match=r"level must be one of \(0, 1, 2, 3\)"):
        textenvs.make("megacity", level=bad)
    with pytest.raises(ValueError, match="only the options 'level' and 'withheld'"):
        textenvs.make("megacity").reset(seed=0, options={"levle": 1})


def test_the_default_level_draws_the_maps_v3_drew() -> None:
    """Published baselines and figures measured on v3 stay valid at the default level."""
    blob = repr([maps.initial_state(np.random.default_rng(s)) for s in range(100)])
    assert hashlib.sha256(blob.encode()).hexdigest() == V3_MAPS


def maps_digest(level: int) -> str:
    states = [state_at(seed, level) for seed in range(20)]
    return hashlib.sha256(repr(states).encode()).hexdigest()


def test_same_seed_and_level_same_maps_in_another_process() -> None:
    code = (
        "from tests.scenarios.test_megacity_levels import maps_digest; "
        "print(*(maps_digest(level) for level in range(4)))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split() == [maps_digest(level) for level in LEVELS]
    assert len(set(done.stdout.split())) == len(LEVELS)  # each level draws its own maps


@pytest.mark.parametrize("level", LEVELS)
def test_each_level_draws_its_maps(level: int) -> None:
    spec = maps.LEVEL_SPECS[level]
    for seed in range(40):
        state = state_at(seed, level)
        on_seam = p.seam_cells(state)
        assert len(state.faults) == spec.faults and not set(state.faults) & on_seam
        clear = [c for c in all_cells() if p.pull_of(PHYSICS, state.seams, c) == 0]
        assert len(clear) == 4  # two inner seams at every level: research always matters
        for c, r in all_cells():
            base = state.stress[r][c] - maps.SEAM_STRESS * ((c, r) in on_seam)
            base -= maps.FAULT_STRESS * ((c, r) in state.faults)
            assert spec.stress[0] <= base < spec.stress[1] or state.stress[r][c] == 95
            dx, dy = state.base_flow[r][c]
            along, across = sorted((abs(dx), abs(dy)), reverse=True)
            assert spec.flow[0] <= along < spec.flow[1] and across <= 1
        assert (state.integrity, state.air, state.power) == (100, 85, 50)


def test_harder_levels_draw_harder_rock() -> None:
    mean_stress = [
        np.mean([state_at(seed, level).stress for seed in range(60)]) for level in LEVELS
    ]
    assert mean_stress == sorted(mean_stress)
    assert [maps.LEVEL_SPECS[level].faults for level in LEVELS] == sorted(
        maps.LEVEL_SPECS[level].faults for level in LEVELS
    )


def test_the_physics_do_not_depend_on_the_level() -> None:
    """The same state and the same command give the same outcome whatever level the env
    was made at: a level only changes how the maps are drawn. Played from each level's
    maps with the planner's commands (a city that gets built) and with random ones."""
    for level, chooser in itertools.product(LEVELS, ("planner", "random")):
        source = textenvs.make("megacity")
        _text, info = source.reset(seed=1, options={"level": level})
        planner = MegacityPolicy(context_for(source, 1))
        rng = np.random.default_rng(level)
        twins = []
        for other in LEVELS:
            twin = textenvs.make("megacity", level=other)
            twin.reset(seed=1)
            twin._state = source._state
            twins.append(twin)
        while not source.done:
            if chooser == "planner":
                command = planner.choose(info["observation"])
            else:
                command = source.random_command(info, rng)
            expected = source.step(command)
            info = expected[-1]
            for twin in twins:
                assert twin.step(command) == expected


@pytest.mark.parametrize("level", [0, 1, 3])
def test_golden_transcripts_per_level(level: int) -> None:
    """Level 2's are test_megacity's goldens (v3's, unchanged)."""
    transcript = render_transcript(play_episode("megacity", "scripted", 0, level=level))
    assert_golden(f"megacity-scripted-seed0-level{level}", transcript)


# ----- simple policies lose at every level ---------------------------------------------


class Repeat:
    """The same command every turn."""

    def __init__(self, command: str) -> None:
        self.command = command

    def choose(self, observation: dict[str, Any]) -> str:
        return self.command


class DistrictSpam:
    """`district` on every cell in turn, forever."""

    def __init__(self) -> None:
        self.cells = itertools.cycle(cell_name(c) for c in all_cells())

    def choose(self, observation: dict[str, Any]) -> str:
        return f"district {next(self.cells)}"


class BlindBuilder:
    """A fixed build order that never reads the map: research up to lodestone, a shaft
    east along every row, mycelium columns on six spread cells, districts from step 30."""

    SITES = ("B2", "D2", "B4", "D4", "A1", "E5")

    def __init__(self) -> None:
        self.commands = (
            ["scan", *["research"] * 4]
            + [f"vent A{row} east" for row in range(1, SIZE + 1)]
            + [c for site in self.SITES for c in (f"support {site} mycelium", f"excavate {site}")]
        )

    def choose(self, observation: dict[str, Any]) -> str:
        if self.commands:
            return self.commands.pop(0)
        if observation["step"] >= 30:
            for site in self.SITES:
                if site not in observation["district_cells"]:
                    return f"district {site}"
        return "wait"


class BuildEverywhere:
    """Props, digs and opens a district on every cell in turn, with mycelium after two
    research points: expansion without looking at the map."""

    def __init__(self) -> None:
        self.commands = ["research", "research"]
        for cell in map(cell_name, all_cells()):
            self.commands += [f"support {cell} mycelium", f"excavate {cell}", f"district {cell}"]

    def choose(self, observation: dict[str, Any]) -> str:
        return self.commands.pop(0) if self.commands else "wait"


REPEATED = ("wait", "scan", "research", "excavate C3", "support C3 mycelium", "vent A1 east",
            "conduit B2 B3 B4", "district C3")  # fmt: skip
SIMPLE = {
    **{f"repeat {c}": (lambda c=c: Repeat(c)) for c in REPEATED},
    "district-spam": DistrictSpam,
    "blind-builder": BlindBuilder,
    "build-everywhere": BuildEverywhere,
}


def victory(policy: Any, seed: int, level: int) -> bool:
    env = textenvs.make("megacity", level=level)
    _text, info = env.reset(seed=seed)
    while not env.done:
        *_rest, info = env.step(policy.choose(info["observation"]))
    return bool(info["success"])


@pytest.mark.parametrize("level", LEVELS)
def test_simple_and_baseline_policies_lose_at_every_level(level: int) -> None:
    """The published baselines (full counts in evals/bands.json) and a few more simple
    policies of our own: none wins a seed here."""
    for seed in range(12):
        for name, make in SIMPLE.items():
            assert not victory(make(), seed, level), (name, seed)
        for name, cls in BASELINES.items():
            env = textenvs.make("megacity", level=level)
            assert not victory(cls(context_for(env, seed)), seed, level), (name, seed)


# ----- what the planner's victories need, on pinned seeds -------------------------------


def planner_wins(seed: int, level: int, mechanism: str | None = None) -> bool:
    without, physics = NEEDS[mechanism] if mechanism else (frozenset(), PHYSICS)
    return play(("planner", without, physics, seed, level), play_agent)[0]


@pytest.mark.slow
def test_at_level_3_every_mechanism_decides_a_victory() -> None:
    """Seed 1 at level 3 is won with every capability and lost without any one of them
    (evals/bands.json holds the shares over 500 seeds per level)."""
    assert planner_wins(1, 3)
    for mechanism in NEEDS:
        assert not planner_wins(1, 3, mechanism), mechanism


@pytest.mark.slow
def test_level_0_is_won_without_relief_digs_or_seam_flow() -> None:
    """The easiest level asks for research, columns and shafts: the planner wins these
    seeds without any relief dig and with stress never moving along the seams."""
    for seed in range(3):
        assert planner_wins(seed, 0, "relief dig") and planner_wins(seed, 0, "seam flow")


@pytest.mark.slow
def test_the_planner_wins_fewer_seeds_at_each_harder_level() -> None:
    """Difficulty progresses, measured here: the planner's victories on seeds 30-49 fall
    strictly from level 0 to level 3 (20, 19, 18, 12 when written). Levels 0 and 1 are
    close (level 1 loses seed 45 alone of 0-199), so the range holds one of its losses;
    the published bands compare the levels over 500 seeds."""
    seeds = range(30, 50)
    wins = [sum(planner_wins(seed, level) for seed in seeds) for level in LEVELS]
    assert wins == sorted(wins, reverse=True) and len(set(wins)) == len(wins), wins
    assert wins[0] == len(seeds) and wins[-1] >= 0.4 * len(seeds), wins


# ----- the published reference runs (evals/bands.json) ----------------------------------


def published() -> dict[str, dict[str, Any]]:
    return load_bands()["scenarios"]["megacity"]["levels"]


def test_the_published_bands_meet_the_level_targets() -> None:
    """Over at least 500 seeds per level: the planner's success falls with the level and
    stays at least 40% at level 3; no naive, recipe or farm policy wins more than 5% at
    any level; every mechanism decides at least 10% of the planner's wins from level 2."""
    levels = published()
    assert sorted(levels) == [str(level) for level in LEVELS]
    rates = [levels[str(level)]["success_rate"]["scripted"] for level in LEVELS]
    assert rates == sorted(rates, reverse=True) and len(set(rates)) == len(rates)
    assert rates[-1] >= 0.40
    version = textenvs.make("megacity").version
    for level in LEVELS:
        band = levels[str(level)]
        assert band["version"] == version and band["level"] == level
        assert band["episodes"] >= 500
        for name in ("naive", "recipe", "recipe-no-damping", "farm-swap", "farm-dig"):
            assert band["policies"][name]["success_rate"] <= 0.05, (level, name)
        if level >= 2:
            for mechanism, need in band["needs"].items():
                assert need["share"] >= 0.10, (level, mechanism)
