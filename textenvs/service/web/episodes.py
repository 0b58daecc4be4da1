"""What a recorded session remembers of the episode it plays, and its replay.

A session's env is wrapped in `RecordedEnv`, which remembers each command, what the
parser read and how long the player took over it. When the episode ends, the recorder
(`record.py`) replays the commands through `run_episode` with `ReplayAgent` and the
readings (`replayed`), so nothing is parsed again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from textenvs.core.parsing import ParseError
from textenvs.episodes.protocol import Agent, Decision
from textenvs.service.reading import Outcome, parsed_of, read

if TYPE_CHECKING:
    from textenvs.service.web.record import HumanRecorder, Player


class ReplayAgent(Agent):
    """The human's recorded commands, played back (with the time each one took)."""

    name = "human"

    def __init__(self, player: Player, moves: list[tuple[str, float]] | None = None) -> None:
        self.player = player
        self._moves: Iterator[tuple[str, float]] = iter(moves or [])

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "player": self.player.name, "client": self.player.client}

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        command, thinking = next(self._moves)
        return Decision(command, raw=command, latency_s=thinking)


@dataclass
class Episode:
    player: Player
    env_name: str
    seed: int
    moves: list[tuple[str, float]] = field(default_factory=list)
    readings: list[Outcome] = field(default_factory=list)  # what the parser read, per move
    started: float = field(default_factory=time.monotonic)
    last_shown: float = field(default_factory=time.monotonic)


def replayed(readings: list[Outcome]) -> Callable[[str], Any]:
    """A parser that gives back what was read, in order: the replay parses nothing on the
    event loop (the service read each command off it, within its time limit)."""
    outcomes = iter(readings)

    def parse(_: str) -> Any:
        parsed = parsed_of(next(outcomes))
        if isinstance(parsed, ParseError):
            raise parsed
        return parsed

    return parse


class RecordedEnv:
    """A session's env that remembers the episode it plays; everything else is the env's."""

    def __init__(self, env: Any, recorder: HumanRecorder, episode: Episode) -> None:
        self.env = env
        self._recorder = recorder
        self._episode: Episode | None = episode
        self._player: Player | None = episode.player  # holds the run until `close`
        self._writing: asyncio.Task[None] | None = None  # the ended episode's record

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def step(self, command: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return self.step_recorded(command, read(self.env.unwrapped.parse, command))

    def step_recorded(
        self, command: str, outcome: Outcome
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Step on `outcome`, what the parser read from `command` (the service has read it
        already), and note both for the episode's record."""
        episode = self._episode
        if episode is not None:
            episode.readings.append(outcome)
        stepped = self.env.unwrapped.step_read(parsed_of(outcome))
        if episode is not None:
            now = time.monotonic()
            episode.moves.append((command, now - episode.last_shown))
            episode.last_shown = now
            if stepped[2] or stepped[3]:
                self._episode = None
                self._writing = self._recorder.finish(episode, stepped[0])
        return stepped

    async def written(self) -> None:
        """Wait until the episode that just ended is recorded: the step that ended it
        answers only then, so a player who saw the end has it on disk (even if the
        server is killed next). The write goes on if the request is cancelled."""
        writing, self._writing = self._writing, None
        if writing is not None:
            await asyncio.shield(writing)

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        self._episode = None  # an episode the player restarts by hand is not a baseline one
        return self.env.reset(*args, **kwargs)

    def close(self) -> None:
        """The session ended: its hold on the run folder ends too."""
        if self._player is not None:
            self._recorder.release_run(self._player)
            self._player = None
        self.env.close()
