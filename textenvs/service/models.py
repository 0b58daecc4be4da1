"""Request and response bodies of the HTTP service (`/v1`).

Requests forbid unknown fields, so a typo is a 422 rather than a silently ignored option.
Command text is checked before it reaches an env: no NUL bytes or other control characters
(newline and tab are fine), no lone surrogates, and at most `MAX_COMMAND_CHARS` characters.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from textenvs.core.parsing import MAX_COMMAND_CHARS

MAX_SEED = 2**63 - 1
SESSION_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


def check_text(value: str) -> str:
    """Reject characters that no typed command contains (see the module docstring)."""
    for ch in value:
        if ch in "\n\t":
            continue
        category = unicodedata.category(ch)
        if category == "Cs":
            raise ValueError("text contains a lone surrogate (invalid unicode)")
        if category == "Cc":
            raise ValueError(f"text contains control character U+{ord(ch):04X}")
    return value


class CreateSession(Request):
    env: str = Field(
        min_length=1, max_length=100, description="scenario name, e.g. 'treasure-hunt'"
    )
    seed: int | None = Field(
        default=None,
        ge=0,
        le=MAX_SEED,
        description="episode seed; a random one is chosen (and returned) when omitted",
    )
    options: dict[str, Any] | None = Field(
        default=None, description="scenario options passed to reset (most take none)"
    )

    _check_env = field_validator("env")(check_text)


class ResetSession(Request):
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED)
    options: dict[str, Any] | None = None


class StepRequest(Request):
    """Exactly one of `command` (free text, as an agent would type it) or `action` (a
    structured action matching the scenario's `action_schema`)."""

    command: str | None = Field(default=None, max_length=MAX_COMMAND_CHARS)
    action: dict[str, Any] | None = None

    _check_command = field_validator("command")(
        lambda value: check_text(value) if value is not None else None
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> StepRequest:
        if (self.command is None) == (self.action is None):
            raise ValueError("give exactly one of 'command' or 'action'")
        return self


class ScenarioInfo(BaseModel):
    name: str
    env_id: str
    title: str
    version: str
    max_steps: int
    rules: str
    action_schema: dict[str, Any]


class ScenarioList(BaseModel):
    envs: list[ScenarioInfo]


class SessionCreated(BaseModel):
    session_id: str
    env: str
    seed: int
    observation: str
    info: dict[str, Any]


class StepResult(BaseModel):
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


class SessionView(BaseModel):
    session_id: str
    env: str
    seed: int
    observation: str
    info: dict[str, Any]
    done: bool
    steps_used: int


class Health(BaseModel):
    status: str
    version: str
    sessions: int
    max_sessions: int


class ErrorBody(BaseModel):
    code: str
    message: str
    details: list[dict[str, Any]] = Field(default_factory=list)


class ErrorResponse(BaseModel):
    error: ErrorBody
