"""Episodes that start from a chosen state: each seed's opening commands, then the agent.

`OpeningAgent` plays a seed's given opening (commands recorded elsewhere, e.g. the moves
random play took to first see a field) without asking its agent, then hands every turn
to it. All the episodes of a seed (`eval --episodes-per-seed K`) then share one state and
differ only in what the agent did from it: the branches `train --credit turn` compares,
where a sampled full episode would mostly be spent before its choices matter. The opening
turns are recorded as turns of the episode (the trainer replays them to reach the state;
all of a seed's branches share them, so they change no value and `--credit turn` never
feeds them), each with `record["opening"]` set, so a count can leave them out. The agent
itself starts at the branch: its conversation (and `--history`) holds no opening turn.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import textenvs
from textenvs.core.parsing import ParseError
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext, EpisodeEnd
from textenvs.episodes.specs import seed_ranges

Openings = dict[int, list[str]]

#: the key set in an opening turn's `record` (the turn was the file's, not the agent's)
OPENING = "opening"


def opening_turn(turn: Mapping[str, Any]) -> bool:
    """Whether a recorded turn (a trajectory's) was an opening's, not the agent's."""
    return bool((turn.get("record") or {}).get(OPENING))


def read_openings(path: Path) -> Openings:
    """The JSON file's openings, `{"seed": ["command", ...], ...}`; ValueError (one line)
    for a file that is missing or not of that form."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read openings {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"openings {path} is not JSON ({exc.msg}, line {exc.lineno})") from None
    form = 'an object of seed -> list of commands, e.g. {"7": ["west", "north"]}'
    if not isinstance(data, dict) or not data:
        raise ValueError(f"openings {path} must be {form}")
    openings: Openings = {}
    for seed, commands in data.items():
        if not (seed.isdigit() and isinstance(commands, list)):
            raise ValueError(f"openings {path}: entry {seed!r} is not {form}")
        if not all(isinstance(command, str) and command.strip() for command in commands):
            raise ValueError(f"openings {path}: seed {seed}'s commands must be non-empty text")
        openings[int(seed)] = list(commands)
    return openings


def opening_seeds(path: Path) -> str:
    """The file's seeds as `--seeds` takes them ("0-99" where it cannot be read: the
    error is told where the file is read for the run)."""
    try:
        return seed_ranges(sorted(read_openings(path)))
    except ValueError:
        return "0-99"


def openings_digest(openings: Mapping[int, Sequence[str]]) -> str:
    """What identifies a set of openings in a run's config (compared on resume)."""
    text = json.dumps({str(seed): list(openings[seed]) for seed in sorted(openings)})
    return hashlib.sha256(text.encode()).hexdigest()


def planned_openings(
    path: Path | None, envs: Sequence[str], seeds: Sequence[int], trials: int
) -> Openings | None:
    """`eval --openings`' file for a run of `envs` x `seeds` (None without one); ValueError
    (one line) where it cannot be read, a seed has no opening, a command is not one the
    scenario reads, or the run is in trial mode."""
    if path is None:
        return None
    if trials > 1:
        raise ValueError("--openings starts single episodes: drop --trials")
    openings = read_openings(path)
    for name in envs:
        parse = textenvs.make(name).parse
        for seed, commands in openings.items():
            for command in commands:
                try:
                    parse(command)
                except ParseError as exc:
                    raise ValueError(
                        f"openings {path}: seed {seed}'s {command!r} is not a command "
                        f"{name} reads ({str(exc).rstrip('.')})"
                    ) from None
    missing = [seed for seed in seeds if seed not in openings]
    if missing:
        shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
        raise ValueError(
            f"{len(missing)} of the seeds have no opening ({shown}): play the file's seeds ({path})"
        )
    return openings


class OpeningAgent(Agent):
    """`agent` after each seed's opening commands (`openings`, read from `source`)."""

    def __init__(self, agent: Agent, openings: Mapping[int, Sequence[str]], source: str) -> None:
        self.agent = agent
        self.name = agent.name
        self.openings = openings
        self.source = source
        self.pending: list[str] = []

    def __getattr__(self, name: str) -> Any:
        # the wrapped agent's own settings (an LLM agent's `cfg`, read by preflight)
        if name == "agent":
            raise AttributeError(name)
        return getattr(self.agent, name)

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        if context.seed not in self.openings:
            raise ValueError(f"seed {context.seed} has no opening in {self.source}")
        self.pending = list(self.openings[context.seed])
        self.agent.reset(context)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        if self.pending:
            command = self.pending.pop(0)
            return Decision(command, raw=command, record={OPENING: True})
        return await self.agent.act(observation, info)

    def end_episode(self, observation: str, info: dict[str, Any], end: EpisodeEnd) -> None:
        self.agent.end_episode(observation, info, end)

    def config(self) -> dict[str, Any]:
        return {
            **self.agent.config(),
            "openings": {
                "file": Path(self.source).name,
                "seeds": len(self.openings),
                "sha256": openings_digest(self.openings),
            },
        }

    async def aclose(self) -> None:
        await self.agent.aclose()


def with_openings(
    make: Callable[[], Agent], openings: Mapping[int, Sequence[str]] | None, path: Path | None
) -> Callable[[], Agent]:
    """`make`'s agents after the openings (`make` itself without any): picklable, so Ray's
    actors build them too."""
    if openings is None:
        return make
    return functools.partial(_opening_agent, make, openings, str(path))


def _opening_agent(
    make: Callable[[], Agent], openings: Mapping[int, Sequence[str]], source: str
) -> Agent:
    return OpeningAgent(make(), openings, source)
