"""What a scenario says about itself, once, in its own package (`declaration.py`).

The registry gathers the declarations; the env class, gymnasium, the adapters, the
scripted agents and the rules text all read these facts from here, so adding a scenario
edits no shared module. Entry points are "module:attribute" strings, imported on demand,
so a scenario's package imports nothing above it (its scripted baseline lives in agents).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textenvs.core.env import TextEnv
    from textenvs.core.scoring import Scoring


def load_entry_point(entry_point: str) -> Any:
    """What a "module:attribute" entry point names (the module imported on demand)."""
    module, _, attr = entry_point.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Scenario:
    #: short CLI name, e.g. "treasure-hunt"
    name: str
    #: human title
    title: str
    #: moves with every rules or reading change; the gymnasium id ends in `-v<version>`
    version: str
    #: the gymnasium id without its version: `textenvs/<gym_name>-v<version>`
    gym_name: str
    #: its place among the scenarios (listed, played and reported in this order): the
    #: number of the specification it implements
    order: int
    #: its package, `textenvs.scenarios.<package>` (the declaration passes `__package__`);
    #: its env, scoring and scripted baseline are found from it and `gym_name`, below
    package: str
    #: "module:function" of its reference runs beyond random and scripted, which the bands
    #: publish: `measure(level, seeds, planner_wins, play_episode, workers, note)`
    reference_entry_point: str | None = None

    @property
    def env_id(self) -> str:
        """The gymnasium id, e.g. `textenvs/TreasureHunt-v6`."""
        return f"textenvs/{self.gym_name}-v{self.version}"

    @property
    def entry_point(self) -> str:
        """ "module:Class" of its env: `<package>.env:<gym_name>Env`."""
        return f"{self.package}.env:{self.gym_name}Env"

    @property
    def scoring_entry_point(self) -> str:
        """ "module:Class" of its `core.scoring.Scoring`: `<package>.scoring:<gym_name>Scoring`."""
        return f"{self.package}.scoring:{self.gym_name}Scoring"

    @property
    def scripted_entry_point(self) -> str:
        """ "module:Class" of its scripted baseline (a `textenvs.agents.scripted.ScriptedPolicy`),
        beside the other scripted agents under its package's name:
        `textenvs.agents.scripted.<package>:<gym_name>Policy`."""
        return f"textenvs.agents.scripted.{self.package.rpartition('.')[2]}:{self.gym_name}Policy"

    @property
    def rules_prompt(self) -> str:
        """The name of its rules text in `textenvs.prompts`: the file `prompts/<name>.md`
        (a variant's, such as `<name>-withheld.md`, beside it). The prompt files stay
        together so every harness resolves their modes in one place."""
        return self.name

    def load(self) -> type[TextEnv[Any, Any]]:
        return load_entry_point(self.entry_point)

    def scoring(self) -> Scoring:
        """What the scenario scores: its headline, skill metrics and ceiling."""
        return load_entry_point(self.scoring_entry_point)()
