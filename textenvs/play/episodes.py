"""What a recorded session remembers of the episode it plays.

A session's env is wrapped in `RecordedEnv`, which remembers each command, what the
parser read and how long the player took over it. When the episode ends, the recorder
(`record.py`) replays the commands with those readings (`textenvs.episodes.replay`), so
nothing is parsed again. `RecordedEnv` knows the recorder only as an `EpisodeSink`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from textenvs.episodes.replay import ReplayedAgent
from textenvs.play.players import Player
from textenvs.service.reading import Outcome, parsed_of, read


def player_agent(
    player: Player, commands: Sequence[str] = (), latencies: Sequence[float] = ()
) -> ReplayedAgent:
    """The human's recorded commands played back (with the time each one took), as the
    agent `human` of the player's run."""
    settings = {"player": player.name, "client": player.client}
    return ReplayedAgent(commands, latencies, name="human", settings=settings)


@dataclass
class Episode:
    player: Player
    env_name: str
    seed: int
    moves: list[tuple[str, float]] = field(default_factory=list)
    readings: list[Outcome] = field(default_factory=list)  # what the parser read, per move
    started: float = field(default_factory=time.monotonic)
    last_shown: float = field(default_factory=time.monotonic)


class EpisodeSink(Protocol):
    """Where a recorded session's episode goes (the recorder)."""

    def finish(self, episode: Episode, final_observation: str) -> asyncio.Task[None]: ...

    def release_run(self, player: Player) -> None: ...


class RecordedEnv:
    """A session's env that remembers the episode it plays; everything else is the env's."""

    def __init__(self, env: Any, recorder: EpisodeSink, episode: Episode) -> None:
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
