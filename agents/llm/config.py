"""Settings of the `llm` agent: one pydantic model, loadable from a TOML file.

The API key itself is never a setting: only the *name* of the environment variable that
holds it (`api_key_env`), so a config can be printed, logged and saved with results.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from textenvs.agents.llm.base_url import parse_base_url
from textenvs.core.redact import redact_data
from textenvs.prompts import Mode

#: `--model local` (with no base URL) starts the embedded llama.cpp server (agents/llm/local.py)
LOCAL_MODEL = "local"
#: in a base URL, replaced where the agent runs by its node's address (see endpoints.py)
NODE_IP = "{node_ip}"
NODE_IP_ENV = "TEXTENVS_NODE_IP"
#: prompt budget (tokens) when none is given: fits models with a 32k context and leaves
#: room for the reply
DEFAULT_PROMPT_BUDGET = 24_000
#: the embedded model's budget; its server's context is sized from it (local.py). On a
#: CPU a turn's prompt processing slows as the context grows (a 180-token Megacity turn
#: takes 1.5 s at 2,500 tokens, 3.4 s at 9,500), and SmolLM2-135M makes little use of a
#: long context: a smaller budget keeps turns fast and each server's cache half the size
LOCAL_PROMPT_BUDGET = 6_000
#: the embedded model's reply limit when none is given (llama.cpp's server otherwise lets
#: a chat reply run to the end of the context)
LOCAL_MAX_TOKENS = 96
#: json mode: the `reasoning` field's limit (characters) when none is given
DEFAULT_REASONING_CHARS = 240
#: the embedded model writes no reasoning by default: SmolLM2-135M's was never about the
#: game ("The answer is a JSON object with...") and took 40 of its 55 reply tokens
LOCAL_REASONING_CHARS = 0


class LLMConfig(BaseModel):
    """Everything that identifies an LLM agent run (all JSON-able, no secrets)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    #: None: `OPENAI_BASE_URL` when set, else the OpenAI API (or the local server for
    #: model "local")
    base_url: str | None = None
    #: several endpoints serving the model: least-loaded dispatch with fail-over
    #: (agents/llm/endpoints.py); instead of `base_url`
    base_urls: list[str] = Field(default_factory=list)
    #: the environment variable holding the API key
    api_key_env: str = "OPENAI_API_KEY"

    # ----- sampling (None: not sent, the server's default applies) ---------------------
    temperature: float | None = Field(default=None, ge=0, le=2)  # NaN fails both
    max_tokens: int | None = Field(default=None, gt=0)
    #: OpenAI reasoning models want `max_completion_tokens`; most servers take `max_tokens`
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    seed: int | None = None
    reasoning_effort: str | None = None
    #: extra JSON fields merged into the request body (e.g. {"top_k": 20})
    extra_body: dict[str, Any] = Field(default_factory=dict)

    # ----- conversation ----------------------------------------------------------------
    #: "text": free-text commands read by the scenario's parser; "tools": function
    #: calling; "json": a JSON object constrained by the server to the action schema
    #: (json_mode.py). None: "text", but "json" for the embedded model
    action_mode: Literal["text", "tools", "json"] | None = None
    #: json mode: the `response_format` form ("auto": json_schema, or what preflight or
    #: the first refusal naming response_format showed the server takes)
    response_format: Literal["auto", "json_schema", "json_object"] = "auto"
    #: json mode: most characters of the `reasoning` field before the action (0: none;
    #: None: 240, 0 for the embedded model)
    json_reasoning_chars: int | None = Field(default=None, ge=0)
    #: tool_choice sent in tools mode ("auto" is the most widely supported)
    tool_choice: Literal["auto", "required"] = "auto"
    #: "append": each request extends the previous one until the prompt budget, then one
    #: large cut (cache-friendly); "window": the last `history` turns (see history.py)
    history_policy: Literal["append", "window"] = "append"
    #: most tokens a prompt may have (None: DEFAULT_PROMPT_BUDGET, LOCAL_PROMPT_BUDGET for
    #: the embedded model)
    prompt_budget: int | None = Field(default=None, gt=0)
    #: the server's context in tokens (None: learned at preflight where the server says
    #: it); the prompt budget is kept under it with room for the reply (context.py)
    context_window: int | None = Field(default=None, gt=0)
    #: "full": every observation whole; "changes": after an episode's first, what changed
    #: since the last one (observation_view.py). None: "full", but "changes" for the
    #: embedded model (prefill is most of its turn)
    observations: Literal["full", "changes"] | None = None
    #: share of the budget the newest turns may fill after a cut (append policy)
    history_keep: float = Field(default=0.5, ge=0, lt=1)
    #: past turns kept by the window policy (0: only the current observation); giving it
    #: without `history_policy` selects the window policy
    history: int = Field(default=8, ge=0)
    #: re-asks per turn after an unparseable reply, before stepping anyway
    reasks: int = Field(default=1, ge=0)
    #: the embedded model: CPU threads in all (None: every core), shared by its servers
    local_threads: int | None = Field(default=None, gt=0)

    # ----- faults ------------------------------------------------------------------
    #: HTTP attempts per request, the first included (transient faults only are retried)
    max_attempts: int = Field(default=5, ge=1)
    backoff_base_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    #: a longer Retry-After is cut to this (the attempt budget still applies)
    retry_after_max_s: float = Field(default=60.0, ge=0)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    #: longest silence while waiting for the response
    read_timeout_s: float = Field(default=120.0, gt=0)
    #: longest one attempt may take in all
    total_timeout_s: float = Field(default=300.0, gt=0)

    @field_validator("base_url", mode="before")
    @classmethod
    def _no_empty_url(cls, value: Any) -> Any:
        return value or None

    @field_validator("base_url", "base_urls")
    @classmethod
    def _urls_parse(cls, value: Any) -> Any:
        for url in value if isinstance(value, list) else [value] if value else []:
            parse_base_url(expand_node_ip(url))  # a one-line ValueError naming no secret
        return value

    @model_validator(mode="before")
    @classmethod
    def _history_implies_window(cls, data: Any) -> Any:
        # `history = K` (older configs, `--history K`) has always meant a sliding window
        if isinstance(data, dict) and "history" in data and "history_policy" not in data:
            data = {**data, "history_policy": "window"}
        return data

    @model_validator(mode="after")
    def _check(self) -> LLMConfig:
        if not self.model.strip():
            raise ValueError("model must not be empty")
        if not self.api_key_env.strip():
            raise ValueError("api_key_env must name an environment variable")
        if self.base_url and self.base_urls:
            raise ValueError("give base_url (one endpoint) or base_urls (several), not both")
        return self

    # ----- loading ------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> LLMConfig:
        """Read a TOML agent file (keys at the top level or under `[agent]`), then apply
        `overrides` (None values are ignored, so unset CLI flags keep the file's values)."""
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        if isinstance(data.get("agent"), dict):
            data = data["agent"]
        data.pop("name", None)  # `name = "llm"` is allowed, it names the agent
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(data)

    # ----- derived --------------------------------------------------------------------

    @property
    def is_local(self) -> bool:
        return self.model == LOCAL_MODEL and self.resolved_base_url() is None

    @property
    def mode(self) -> Literal["text", "tools", "json"]:
        """The action mode in use."""
        if self.action_mode is not None:
            return self.action_mode
        return "json" if self.is_local else "text"

    @property
    def observation_view(self) -> Literal["full", "changes"]:
        """How observations are sent (`observations`, resolved)."""
        if self.observations is not None:
            return self.observations
        return "changes" if self.is_local else "full"

    @property
    def reasoning_chars(self) -> int:
        """json mode: the `reasoning` field's limit in characters."""
        if self.json_reasoning_chars is not None:
            return self.json_reasoning_chars
        return LOCAL_REASONING_CHARS if self.is_local else DEFAULT_REASONING_CHARS

    @property
    def resolved_prompt_budget(self) -> int:
        """The prompt budget as set, else the default, under the context window when one
        is known (with room for a reply of `reply_room` tokens)."""
        from textenvs.agents.llm.context import budget_under

        budget = self.prompt_budget
        if budget is None:
            budget = LOCAL_PROMPT_BUDGET if self.is_local else DEFAULT_PROMPT_BUDGET
        if self.context_window is not None:
            budget = min(budget, budget_under(self.context_window, self.reply_room))
        return budget

    @property
    def reply_room(self) -> int:
        """Tokens kept free for the reply when sizing the budget under a context window:
        the reply limit when one is set or implied, else a default."""
        from textenvs.agents.llm.context import DEFAULT_REPLY_ROOM

        return self.max_tokens or (LOCAL_MAX_TOKENS if self.is_local else DEFAULT_REPLY_ROOM)

    def prompt_mode(
        self, action_schema: type[BaseModel] | None = None, *, continued: bool = False
    ) -> Mode:
        """How this agent plays, as its rules must describe it (`textenvs.prompts.Mode`):
        its re-asks and action mode; `continued` in trial mode. json mode's answer format
        shows a sample reply of `action_schema`."""
        if self.mode != "json" or action_schema is None:
            return Mode(continued=continued, reasks=self.reasks, answer=self.mode)
        from textenvs.agents.llm import json_mode

        reasoning = json_mode.thinks_first(action_schema, self.reasoning_chars)
        example = json_mode.example(action_schema, reasoning)
        return Mode(continued=continued, reasks=self.reasks, answer="json", example=example,
                    reasoning=reasoning)  # fmt: skip

    def resolved_base_url(self) -> str | None:
        """The endpoint to call (the first of `base_urls`), `{node_ip}` filled in."""
        url = self.configured_base_url()
        return expand_node_ip(url) if url else None

    def configured_base_url(self) -> str | None:
        """`base_url`, else the first of `base_urls`, else `$OPENAI_BASE_URL`, as written."""
        first = self.base_urls[0] if self.base_urls else None
        return self.base_url or first or os.environ.get("OPENAI_BASE_URL") or None

    def api_key(self, *, required: bool) -> str:
        """The key from the environment. Servers that need none (vLLM, llama.cpp, Ollama)
        get the placeholder "EMPTY" when the variable is unset."""
        key = os.environ.get(self.api_key_env, "")
        if key:
            return key
        if required:
            raise ValueError(
                f"no API key: set the environment variable {self.api_key_env} "
                "(or give --base-url for a server that needs none)"
            )
        return "EMPTY"

    def public(self) -> dict[str, Any]:
        """JSON-able settings for results files: no key, no credentials in URLs or in
        key-like `extra_body` fields."""
        data = self.model_dump(mode="json")
        data["action_mode"] = self.mode  # named, so runs in different modes never mix
        data["observations"] = self.observation_view
        data["base_url"] = strip_credentials(self.configured_base_url())
        data["base_urls"] = [strip_credentials(url) for url in self.base_urls]
        if not self.base_urls:  # runs recorded before the field existed still resume
            del data["base_urls"]
        data["extra_body"] = redact_data(data["extra_body"])  # e.g. {"api_key": "***"}
        return data


def expand_node_ip(url: str) -> str:
    """`url` with `{node_ip}` replaced by `$TEXTENVS_NODE_IP` (set on Ray actors to their
    node's address), else 127.0.0.1."""
    return url.replace(NODE_IP, os.environ.get(NODE_IP_ENV) or "127.0.0.1")


def strip_credentials(url: str | None) -> str | None:
    """`https://user:pass@host/v1` -> `https://host/v1`; query strings dropped too."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
