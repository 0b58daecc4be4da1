"""A typed OpenEnv client for `textenvs serve` (`pip install 'textenvs[openenv]'`).

OpenEnv's `EnvClient` with textenvs' action, observation and state models, so code
written for OpenEnv environments plays textenvs scenarios with types:

    from textenvs.service.openenv_client import TextenvsAction, TextenvsEnv

    with TextenvsEnv.for_scenario("http://127.0.0.1:8000", "treasure-hunt").sync() as env:
        result = env.reset(seed=3)
        print(result.observation.text)
        result = env.step(TextenvsAction(command="north"))
        print(result.reward, result.done, env.state().step_count)

An action is a command as a person would type it (`command`), or a structured action
that matches the scenario's action schema (`action`); exactly one of the two.
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field, model_validator


class TextenvsAction(Action):
    """One command (free text) or one structured action (the scenario's action schema)."""

    command: str | None = Field(default=None, description="a command, e.g. 'north'")
    action: dict[str, Any] | None = Field(
        default=None, description="a structured action matching the scenario's action schema"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> TextenvsAction:
        if (self.command is None) == (self.action is None):
            raise ValueError("give exactly one of 'command' or 'action'")
        return self


class TextenvsObservation(Observation):
    """What the agent sees: the text, its data form and the step's flags (`info` holds
    `observation`, `valid_commands`, `invalid_action`, `events`, `success`, ...)."""

    text: str = ""
    info: dict[str, Any] = Field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False


class TextenvsState(State):
    """The session's episode: which scenario and seed, steps taken, whether it ended."""

    env: str = ""
    seed: int | None = None
    done: bool = False


class TextenvsEnv(EnvClient[TextenvsAction, TextenvsObservation, TextenvsState]):
    """One scenario on a textenvs service, as an OpenEnv environment (one WebSocket
    session; the session ends when the client closes)."""

    @classmethod
    def for_scenario(cls, service_url: str, scenario: str, **kwargs: Any) -> TextenvsEnv:
        """The client of `scenario` on the service at `service_url` (its root URL)."""
        return cls(base_url=f"{service_url.rstrip('/')}/openenv/{scenario}", **kwargs)

    def _step_payload(self, action: TextenvsAction) -> dict[str, Any]:
        return action.model_dump(include={"command", "action"}, exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TextenvsObservation]:
        done = bool(payload.get("done", False))
        observation = TextenvsObservation(
            **payload.get("observation", {}), done=done, reward=payload.get("reward")
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=done)

    def _parse_state(self, payload: dict[str, Any]) -> TextenvsState:
        return TextenvsState(**payload)
