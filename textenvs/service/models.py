"""Request and response bodies of the HTTP service (`/v1`).

Requests forbid unknown fields, so a typo is a 422 rather than a silently ignored option.
Command text is checked before it reaches an env: no NUL bytes or other control characters
(newline and tab are fine), no lone surrogates, and at most `MAX_COMMAND_CHARS` characters.
Seeds are strict integers (`"7"`, `true` and `7.0` are rejected), and every number inside
`options` or a structured `action` must be finite and within 64 bits: Python's JSON reader
turns `Infinity`, `NaN` and `1e400` into floats that would otherwise reach an env.
"""

from __future__ import annotations

import math
import unicodedata
from enum import Enum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from textenvs.core import registry
from textenvs.core.parsing import MAX_COMMAND_CHARS
from textenvs.service.versions import OLDEST_CLIENT_API, SERVICE_API

MAX_SEED = 2**63 - 1
MAX_JSON_DEPTH = 32
DEFAULT_MAX_HEADER_BYTES = 64 * 1024  # request line and headers together
#: how long work over a client's rate waits its turn by default (OpenEnv's client waits 60
#: s for an answer, and `ServiceClient` as long for its retries); here rather than in
#: `tenancy` so that the CLI's parser does not import FastAPI
DEFAULT_PATIENCE_S = 10.0
SESSION_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _few_fields(cls, data: Any) -> Any:
        """More fields than the model has is one error, not one per field (20,000 unknown
        fields made 20,000 errors, 50 ms of server time for one request)."""
        if isinstance(data, dict) and len(data) > len(cls.model_fields):
            raise ValueError(f"at most {len(cls.model_fields)} fields ({len(data)} given)")
        return data


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


def check_numbers(value: Any, path: str = "", depth: int = 0) -> Any:
    """Reject non-finite floats, integers beyond 64 bits and absurd nesting, anywhere."""
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"{path or 'value'} is nested more than {MAX_JSON_DEPTH} levels deep")
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{path or 'value'} is not a finite number ({value})")
    if isinstance(value, int) and not -MAX_SEED - 1 <= value <= MAX_SEED:
        raise ValueError(f"{path or 'value'} is out of range (integers are limited to 64 bits)")
    if isinstance(value, dict):
        for key, item in value.items():
            check_numbers(item, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_numbers(item, f"{path}[{index}]", depth + 1)
    return value


# Every spelling `POST /v1/sessions` accepts, as an enum so that clients (and schema-driven
# fuzzers) can see them: short names and gymnasium ids, read from the registry.
EnvName = Enum(  # type: ignore[misc]
    "EnvName",
    {name: name for s in registry.SCENARIOS for name in (s.name, s.env_id)},
    type=str,
)
Seed = Annotated[
    int | None,
    Field(
        default=None,
        strict=True,
        ge=0,
        le=MAX_SEED,
        description="episode seed (an integer); a random one is chosen (and returned) when omitted",
    ),
]
JsonObject = Annotated[dict[str, Any], AfterValidator(check_numbers)]


class CreateSession(Request):
    env: EnvName = Field(description="scenario name (or gymnasium id), e.g. 'treasure-hunt'")
    seed: Seed = None
    options: JsonObject | None = Field(
        default=None, description="scenario options passed to reset (most take none)"
    )
    label: str | None = Field(
        default=None,
        pattern=SESSION_ID_PATTERN,
        description="a name for the session, shared by sessions its client may later delete "
        "together with DELETE /v1/sessions?label=... (an eval names its run's sessions)",
    )


class ResetSession(Request):
    seed: Seed = None
    options: JsonObject | None = None


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class StepRequest(Request):
    """Exactly one of `command` (free text, as an agent would type it) or `action` (a
    structured action matching the scenario's `action_schema`)."""

    # Exactly one field, stated in the schema too (unknown fields are forbidden).
    model_config = ConfigDict(json_schema_extra={"minProperties": 1, "maxProperties": 1})

    # Omitted means absent, but an explicit null is refused (the schema has no null).
    command: str = Field(  # type: ignore[assignment]
        default=None, max_length=MAX_COMMAND_CHARS, json_schema_extra=_no_default
    )
    action: JsonObject = Field(default=None, json_schema_extra=_no_default)  # type: ignore[assignment]

    _check_command = field_validator("command")(check_text)

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
    #: difficulty levels the reset option `level` takes (empty: none), and the default
    levels: list[int] = Field(default_factory=list)
    default_level: int | None = None
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


class LabelledSessions(Request):
    label: str = Field(
        pattern=SESSION_ID_PATTERN, description="the label the sessions were created with"
    )


class SessionsDeleted(BaseModel):
    deleted: int = Field(description="how many sessions were deleted")


class Health(BaseModel):
    status: str
    version: str
    api: int = Field(
        default=SERVICE_API, description="the protocol version of the service (its API)"
    )
    oldest_client_api: int = Field(
        default=OLDEST_CLIENT_API, description="the oldest client protocol version it serves"
    )
    sessions: int | None = Field(
        default=None, description="the caller's open sessions (only with a valid token)"
    )
    max_sessions: int | None = Field(
        default=None, description="how many sessions the caller may hold (with a valid token)"
    )


class ErrorBody(BaseModel):
    code: str
    message: str
    details: list[dict[str, Any]] = Field(default_factory=list)


class ErrorResponse(BaseModel):
    error: ErrorBody


# Statuses any route may answer with (the guard answers 400, 413 and 431 before routing),
# documented in the OpenAPI schema.
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 404, 409, 413, 422, 429, 503)
}
