"""`TextEnv`: the gymnasium base class every textenvs scenario builds on.

A scenario supplies pure pieces (initial state, transition, observation, text rendering,
command parsing); this class owns the episode: the step budget, the wasted-turn policy
for unparseable commands, terminated vs truncated, and the `info` dictionary.
"""

from __future__ import annotations

import string
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pydantic import BaseModel, ConfigDict

from textenvs.core.parsing import MAX_COMMAND_CHARS, ParseError

if TYPE_CHECKING:
    from textenvs.core.declaration import Scenario

S = TypeVar("S")
A = TypeVar("A")

# Everything an observation may contain and a person may type: printable ASCII, newline, tab.
TEXT_CHARSET = frozenset(string.printable) - frozenset("\r\x0b\x0c")
MAX_OBSERVATION_CHARS = 16_384
#: the lines an observation opens with after a command that could not be read
INVALID_COMMAND, VALID_COMMANDS = "Invalid command:", "Valid commands:"

Event = dict[str, Any]


@dataclass(frozen=True)
class Transition(Generic[S]):
    """What one step did: the new state, its reward, whether it ended the episode, events."""

    state: S
    reward: float = 0.0
    terminated: bool = False
    success: bool = False
    events: tuple[Event, ...] = ()


class ActionSchema(BaseModel):
    """Base of each scenario's structured action (for OpenAI function calling).

    A structured action is turned into the scenario's canonical command text and then goes
    through the same parser as free text, so both modes share one path.
    """

    model_config = ConfigDict(extra="forbid")

    def to_command(self) -> str:
        raise NotImplementedError

    @classmethod
    def decoding_schema(cls) -> dict[str, Any]:
        """The JSON schema a constrained decoder writes to (`--action-mode json`): the
        model's own schema, unless a scenario narrows it so that every object a decoder can
        write is an action its validator accepts."""
        return cls.model_json_schema()


def canonical_command(action: Any) -> str:
    """The canonical command text of a parsed action (what `info["read_as"]` records)."""
    for name in ("to_command", "command"):
        attribute = getattr(action, name, None)
        if callable(attribute):
            return str(attribute())
        if isinstance(attribute, str):
            return attribute
    return str(getattr(action, "value", action))


class TextEnv(gym.Env[str, str], ABC, Generic[S, A]):
    """Base for text scenarios. Subclasses set the class attributes and implement the hooks."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "render_fps": 4}
    #: short CLI name, e.g. "treasure-hunt"
    name: ClassVar[str]
    #: human title
    title: ClassVar[str]
    #: bumped whenever rules, rendering or parsing change what an episode looks like
    version: ClassVar[str] = "0"
    #: step budget: steps used reaching this ends the episode (truncated unless the last
    #: step itself terminated it)
    max_steps: ClassVar[int]
    #: pydantic model of one structured action (function calling)
    action_schema: ClassVar[type[ActionSchema]]
    #: pydantic model of `info["observation"]`, when `observe` returns a plain dict
    observation_model: ClassVar[type[BaseModel] | None] = None
    #: difficulty levels, chosen with the reset option `level` (empty: no levels)
    levels: ClassVar[tuple[int, ...]] = ()
    #: the level played when none is given (None: no levels)
    default_level: ClassVar[int | None] = None
    #: openings of the observation text's lines that report what the last command did,
    #: not the world it left (a critic of the observation leaves them out): the notice
    #: after an unreadable reply, and a scenario's own report lines
    report_lines: ClassVar[tuple[str, ...]] = (INVALID_COMMAND, VALID_COMMANDS)

    def __init_subclass__(cls, scenario: Scenario | None = None, **kwargs: Any) -> None:
        """`class XEnv(TextEnv[S, A], scenario=SCENARIO)`: the name, title and version are
        read from the scenario's declaration, so the env class does not restate them."""
        super().__init_subclass__(**kwargs)
        if scenario is not None:
            cls.name, cls.title, cls.version = scenario.name, scenario.title, scenario.version

    def __init__(self, render_mode: str | None = None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']}, not {render_mode!r}"
            )
        self.render_mode = render_mode
        self.observation_space = spaces.Text(
            max_length=MAX_OBSERVATION_CHARS, min_length=1, charset=TEXT_CHARSET
        )
        self.action_space = spaces.Text(
            max_length=MAX_COMMAND_CHARS, min_length=0, charset=TEXT_CHARSET
        )
        self._state: S | None = None
        self._steps_used = 0
        self._done = True
        self._text = ""
        self._read_as: str | None = None

    # ----- scenario hooks -------------------------------------------------------------

    @abstractmethod
    def initial_state(self, rng: np.random.Generator, options: dict[str, Any]) -> S:
        """A new world, drawn only from `rng`."""

    @abstractmethod
    def transition(self, state: S, action: A, step_index: int) -> Transition[S]:
        """Apply one parsed action; `step_index` counts from 0."""

    @abstractmethod
    def observe(self, state: S, steps_used: int) -> BaseModel | dict[str, Any]:
        """Exactly what the agent may see (no hidden state): a pydantic model, or on hot
        paths the equivalent JSON-able dict (the model then documents it)."""

    @abstractmethod
    def render_text(self, observation: Any) -> str:
        """The observation as the text an agent reads."""

    @abstractmethod
    def parse(self, text: str) -> A:
        """Read one command or raise `ParseError`. Public so agent loops can re-ask."""

    @abstractmethod
    def valid_commands(self, state: S) -> list[str]:
        """The command forms accepted now."""

    def narrate(self, events: tuple[Event, ...]) -> str:
        """A line on what the last step did (e.g. a blocked move), put above the
        observation text; empty for nothing worth saying."""
        return ""

    def on_wasted_turn(self, state: S, step_index: int) -> Transition[S]:
        """The turn of an unreadable reply (the budget goes down by one either way).

        By default the world does not change. A scenario whose world keeps its own clock
        overrides this so that clock still advances (e.g. a turn in which nothing is
        built), so the world's time and the turn budget never drift apart."""
        return Transition(state)

    def on_budget_exhausted(self, state: S) -> Transition[S]:
        """Called once when the budget runs out without termination (final scoring)."""
        return Transition(state)

    def random_command(self, info: dict[str, Any], rng: np.random.Generator) -> str:
        """A uniformly random well-formed command, for the `random` baseline agent."""
        forms = info["valid_commands"]
        return str(forms[int(rng.integers(len(forms)))]).split(" (")[0]

    # ----- gymnasium API --------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._state = self.initial_state(self.np_random, dict(options or {}))
        self._steps_used = 0
        self._done = False
        self._read_as = None
        return self._emit((), error=None, success=False)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        try:
            parsed: A | ParseError = self.parse(action)
        except ParseError as exc:
            parsed = exc
        return self.step_read(parsed)

    def step_read(self, parsed: A | ParseError) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """`step` with the reply already read: the action `parse` returned, or the
        `ParseError` it raised (a wasted turn). For callers that read a reply elsewhere
        (the service reads off its event loop)."""
        if self._state is None or self._done:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        step_index = self._steps_used
        error = parsed if isinstance(parsed, ParseError) else None
        if isinstance(parsed, ParseError):
            self._read_as = None
            # A wasted turn: the budget goes down; the scenario says what time does.
            wasted = self.on_wasted_turn(self._state, step_index)
            result = replace(wasted, events=({"type": "invalid_command"}, *wasted.events))
        else:
            self._read_as = canonical_command(parsed)
            result = self.transition(self._state, parsed, step_index)
        self._steps_used += 1
        reward, terminated, success = result.reward, result.terminated, result.success
        events = result.events
        self._state = result.state
        truncated = False
        if not terminated and self._steps_used >= self.max_steps:
            final = self.on_budget_exhausted(self._state)
            self._state = final.state
            reward += final.reward
            success = final.success
            events = (*events, *final.events, {"type": "budget_exhausted"})
            truncated = True
        self._done = terminated or truncated
        info = self._emit(events, error=error, success=success)[1]
        return self._text, float(reward), terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._text
        if self.render_mode == "human":
            print(self._text)
        return None

    # ----- helpers --------------------------------------------------------------------

    def world_for(self, seed: int, options: dict[str, Any] | None = None) -> S:
        """The world `reset(seed=seed, options=options)` starts in, drawn afresh: this
        env's episode is untouched. For facts about a seed (ceilings, skill metrics),
        never an agent's input."""
        rng, _ = seeding.np_random(seed)
        return self.initial_state(rng, dict(options or {}))

    @property
    def steps_used(self) -> int:
        return self._steps_used

    @property
    def steps_left(self) -> int:
        return self.max_steps - self._steps_used

    @property
    def done(self) -> bool:
        return self._done

    @property
    def rules(self) -> str:
        """The rules text an agent is given (from `textenvs.prompts`)."""
        from textenvs.prompts import rules_text

        return rules_text(self.name)

    def command_for(self, arguments: dict[str, Any]) -> str:
        """The command text for a structured action (validated against `action_schema`)."""
        return self.action_schema.model_validate(arguments).to_command()

    def _emit(
        self, events: tuple[Event, ...], *, error: ParseError | None, success: bool
    ) -> tuple[str, dict[str, Any]]:
        assert self._state is not None
        observation = self.observe(self._state, self._steps_used)
        valid = self.valid_commands(self._state)
        text = self.render_text(observation)
        narration = self.narrate(events)
        if narration:
            text = f"{narration}\n{text}"
        if error is not None:
            forms = "; ".join(error.valid or valid)
            text = f"{INVALID_COMMAND} {error.message}\n{VALID_COMMANDS} {forms}\n\n{text}"
        self._text = text
        info = {
            "observation": observation
            if isinstance(observation, dict)
            else observation.model_dump(mode="json"),
            "valid_commands": valid,
            "invalid_action": error is not None,
            "error": error.message if error is not None else None,
            # the canonical command the reply was executed as (None: rejected, or a reset)
            "read_as": self._read_as if error is None else None,
            "events": list(events),
            "success": bool(success),
            "steps_used": self._steps_used,
            "steps_left": self.max_steps - self._steps_used,
        }
        return text, info
