"""A recorded episode played again: its commands, in turn, through the episode loop.

`ReplayedAgent` sends the commands an episode recorded (with the time each took, when
known). `replay_episode` plays them with `run_episode` on a fresh env, so the result is
built by the same code as any episode's; given the readings recorded with the commands
(what the parser read from each, as `TextEnv.step_read` takes it), each step takes its
reading through `step_read` and nothing is parsed again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from textenvs.core.env import TextEnv
from textenvs.core.parsing import ParseError
from textenvs.episodes.loop import run_episode
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext
from textenvs.episodes.record import EpisodeResult


class ReplayedAgent(Agent):
    """Plays recorded `commands` in turn; with `latencies` (seconds per command), each
    turn is the recorded reply with the time it took. `name` and `settings` say whose
    commands they are in results (`config`)."""

    name = "replayed"

    def __init__(
        self,
        commands: Sequence[str],
        latencies: Sequence[float] | None = None,
        *,
        name: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> None:
        self.commands = list(commands)
        self.latencies = None if latencies is None else list(latencies)
        if name is not None:
            self.name = name
        self.settings = dict(settings or {})
        self.turn = 0

    def config(self) -> dict[str, Any]:
        return {"name": self.name, **self.settings}

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        self.turn = 0

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        self.turn += 1
        command = self.commands[self.turn - 1]
        if self.latencies is None:
            return Decision(command)
        return Decision(command, raw=command, latency_s=self.latencies[self.turn - 1])


class ReadAsRecorded:
    """An env whose steps take the recorded readings, in order, through `step_read`
    (the command each came with is not read again). Everything else is the env's."""

    def __init__(self, env: TextEnv[Any, Any], readings: Sequence[Any | ParseError]) -> None:
        self.env = env
        self._readings: Iterator[Any | ParseError] = iter(readings)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def step(self, command: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return self.env.step_read(next(self._readings))


async def replay_episode(
    env: TextEnv[Any, Any],
    agent: ReplayedAgent,
    seed: int | None,
    *,
    readings: Sequence[Any | ParseError] | None = None,
    options: dict[str, Any] | None = None,
) -> EpisodeResult:
    """`agent`'s recorded commands played on `env` from `seed`; with `readings` (one per
    command: the action its parser read, or the `ParseError` it raised), each step takes
    its reading instead of parsing the command."""
    played: Any = env if readings is None else ReadAsRecorded(env, readings)
    return await run_episode(played, agent, seed, options=options)
