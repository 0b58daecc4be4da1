"""What an episode needs of an environment, and the one way to ask for one by name.

An episode is played on an in-process env (`textenvs.make`) or on one behind a
`textenvs serve` service (`service.client.RemoteEnv`); the eval runner, training's
rollouts and demonstrations, and the adapters take either through an `EnvFactory`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel


class EpisodeEnv(Protocol):
    """An env an episode plays, with the parts its context reads (`loop.context_for`)."""

    name: str
    rules: str
    max_steps: int
    action_schema: type[BaseModel]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]: ...

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]: ...

    def parse(self, text: str) -> Any: ...

    def command_for(self, arguments: dict[str, Any]) -> str: ...

    def random_command(self, info: dict[str, Any], rng: np.random.Generator) -> str: ...

    def close(self) -> None: ...


#: `make(scenario name) -> env`: `textenvs.make`, or `service.client.remote_env_factory(url)`
EnvFactory = Callable[[str], EpisodeEnv]
