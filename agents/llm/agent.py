"""The `llm` agent: plays any scenario through an OpenAI-compatible chat endpoint.

One turn: the rules are the system message, then the history (`history.py`: by default
append-only until the prompt budget, then one large cut, so model servers can reuse the
previous prompt), then the new observation as a user message. The reply is read either
as free text (the scenario's own parser) or as a function call with the scenario's action
schema. An unreadable reply is re-asked up to `reasks` times with the parser's message,
then stepped anyway (the env wastes the turn). API faults follow `faults.py`. Nothing
here raises out of `act`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import random
import re
import ssl
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import openai
from pydantic import ValidationError

from textenvs.agents.base import (
    AGENT_ERROR,
    CONTEXT_OVERFLOW,
    Agent,
    Decision,
    EpisodeContext,
    EpisodeEnd,
)
from textenvs.agents.llm import endpoints, faults
from textenvs.agents.llm.base_url import client_options
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.history import (
    History,
    PastTurn,
    TokenGauge,
    prompt_text,
    shared_prefix_chars,
)
from textenvs.core.parsing import ParseError

log = logging.getLogger("textenvs.agents.llm")

TOOL_NAME = "act"
LOCAL_MAX_TOKENS = 96  # reply limit for the embedded model when none is given
TOOLS_NOTE = (
    "\n\nAnswer every turn by calling the function `act` exactly once with your command; "
    "do not write the command as text."
)
_MARKED = re.compile(r"^\W*(?:final\s+)?(?:action|command)\s*[:=]\s*(.+?)\s*$", re.I | re.M)

Message = dict[str, Any]


@dataclass
class _Reading:
    """One reply, read: a command, or why there is none."""

    command: str | None
    raw: str
    assistant: Message
    problem: str | None = None  # parse error or reply-fault text, sent back on a re-ask
    fault: str | None = None  # reply_fault() class
    tool_ids: list[str] = field(default_factory=list)


class LLMAgent(Agent):
    name = "llm"

    def __init__(self, config: LLMConfig | None = None, **options: Any) -> None:
        if config is not None and options:
            config = config.model_copy(update=options)
            config = LLMConfig.model_validate(config.model_dump())
        self.cfg = config if config is not None else LLMConfig(**options)
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._secret = ""  # the key in use, kept only to redact it from anything we emit
        self._history = self._new_history()
        self._system = ""
        self._last_prompt = ""  # the previous request's messages as text (cacheable share)
        self._turn = 0
        self._rng = random.Random(0)
        #: trial mode: the last episode's end, and what the next episode's first message
        #: opens with (that end, if any, and the new-episode marker)
        self._ending = ""
        self._opening = ("", "")

    # ----- Agent protocol ---------------------------------------------------------------

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        from textenvs.prompts import system_prompt

        try:
            system = system_prompt(context.prompt or context.env_name)
        except FileNotFoundError:
            system = context.rules
        self._system = system + (TOOLS_NOTE if self.cfg.action_mode == "tools" else "")
        # jitter only: seeded so runs are repeatable, never the global `random`
        self._rng = random.Random(f"{context.seed}:{self.cfg.seed}")
        if context.trial > 1 and self._ending:
            # trial mode: the conversation goes on; the new episode's first message opens
            # with how the last one ended and a marker
            self._opening = (self._ending, new_episode_marker(context))
            self._ending = ""
            return
        self._history = self._new_history()
        self._last_prompt = ""
        self._turn = 0
        self._ending = ""
        self._opening = ("", new_episode_marker(context) if context.trials > 1 else "")

    def end_episode(self, observation: str, info: dict[str, Any], end: EpisodeEnd) -> None:
        """Note the last command's result (nothing else calls the agent after the final
        step) and keep the episode's end for the next trial's first message."""
        self._history.note_result(info)
        if self.context.trials > 1:
            self._ending = episode_ending(self.context, observation, end)

    def _new_history(self) -> History:
        cfg = self.cfg
        return History(
            budget=cfg.resolved_prompt_budget,
            policy=cfg.history_policy,
            keep_fraction=cfg.history_keep,
            window=cfg.history,
            gauge=TokenGauge(),
        )

    def config(self) -> dict[str, Any]:
        return {"name": self.name, **self.cfg.public()}

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        started = time.perf_counter()
        self._turn += 1
        record: dict[str, Any] = {"turn": self._turn, "attempts": 0, "request_errors": []}
        usage: dict[str, int] = {}
        try:
            decision = await self._play_turn(observation, info, record, usage)
        except faults.AgentFault as exc:
            decision = Decision("", outcome=exc.outcome, error=exc.message)
        except Exception as exc:  # a bug or an odd server must not end the batch
            log.error("llm agent failed:\n%s", self._redact(traceback.format_exc()))
            decision = Decision("", outcome=AGENT_ERROR, error=f"{type(exc).__name__}: {exc}")
        usage["requests"] = record["attempts"]  # every HTTP attempt, failed ones included
        decision.usage = usage
        decision.reasks = record.get("reasks", 0)
        decision.latency_s = time.perf_counter() - started
        # everything that leaves the agent is scrubbed of the key
        decision.record = self._redact(record)
        decision.command = self._redact(decision.command)
        if decision.raw is not None:
            decision.raw = self._redact(decision.raw)
        if decision.error is not None:
            decision.error = self._redact(decision.error)
        return decision

    # ----- one turn ----------------------------------------------------------------------

    async def _play_turn(
        self, observation: str, info: dict[str, Any], record: dict[str, Any], usage: dict[str, int]
    ) -> Decision:
        (ending, marker), self._opening = self._opening, ("", "")
        content = "\n\n".join(part for part in (ending, marker, observation) if part)
        turn: list[Message] = [{"role": "user", "content": content}]
        if self._turn == 1:
            record["system"] = self._system
        record.update(replies=[], parse_errors=[], reply_faults=[], reasks=0, prompts=[])
        self._history.note_result(info)
        reading: _Reading | None = None
        for ask in range(self.cfg.reasks + 1):
            messages, cut = self._history.request({"role": "system", "content": self._system}, turn)
            record["history_turns"] = len(self._history.turns)
            record["context_messages"] = len(messages)
            completion = await self._complete(messages, record)
            reading = self._read(completion, record, usage)
            self._measure(messages, cut, completion, record, usage)
            turn.append(reading.assistant)
            if reading.command is not None:
                turn += self._tool_replies(reading, f"Command sent: {reading.command}")
                break
            if ask < self.cfg.reasks:
                record["reasks"] += 1
                turn += self._reask(reading, info)
            else:
                turn += self._tool_replies(reading, f"Not read: {reading.problem}")
        assert reading is not None
        record["messages"] = turn
        # stepped anyway when never read: the env records a wasted turn
        command = reading.command if reading.command is not None else _visible(reading.raw)
        self._history.add(
            PastTurn(self._turn, turn, command, episode=self.context.trial, opening=ending)
        )
        record["command"] = command
        return Decision(command, raw=reading.raw)

    def _measure(
        self,
        messages: list[Message],
        cut: bool,
        completion: Any,
        record: dict[str, Any],
        usage: dict[str, int],
    ) -> None:
        """How much of this request repeats the previous one verbatim (what a prefix cache
        can reuse, whatever the server), and what the server says it reused."""
        text = prompt_text(messages)
        prefix = shared_prefix_chars(self._last_prompt, text)
        extended = bool(self._last_prompt) and prefix == len(self._last_prompt) - 1  # to its "]"
        self._last_prompt = text
        reported = _prompt_usage(completion)
        self._history.gauge.calibrate(len(text), reported["prompt_tokens"], extended=extended)
        for key, value in (("prompt_chars", len(text)), ("prefix_chars", prefix)):
            usage[key] = usage.get(key, 0) + value
        prompt = {"chars": len(text), "prefix_chars": prefix, "cut": cut, **reported}
        record["prompts"].append(prompt)

    def _reask(self, reading: _Reading, info: dict[str, Any]) -> list[Message]:
        forms = "; ".join(str(c) for c in info.get("valid_commands", []))
        text = f"{reading.problem}\nValid commands: {forms}\nReply again with one command."
        if reading.tool_ids:
            return self._tool_replies(reading, text)
        return [{"role": "user", "content": text}]

    @staticmethod
    def _tool_replies(reading: _Reading, text: str) -> list[Message]:
        # every tool call must be answered, or the next request is malformed
        return [{"role": "tool", "tool_call_id": i, "content": text} for i in reading.tool_ids]

    # ----- reading a reply ------------------------------------------------------------

    def _read(self, completion: Any, record: dict[str, Any], usage: dict[str, int]) -> _Reading:
        _add_usage(usage, completion)
        choice = completion.choices[0] if getattr(completion, "choices", None) else None
        message = choice.message if choice is not None else None
        content = (message.content if message is not None else None) or ""
        visible, thoughts = faults.split_think(content)
        extra = (message.model_extra or {}) if message is not None else {}
        for key in ("reasoning_content", "reasoning"):
            if isinstance(extra.get(key), str) and extra[key].strip():
                thoughts.insert(0, extra[key].strip())
        calls = list((message.tool_calls if message is not None else None) or [])
        calls = [c for c in calls if getattr(c, "function", None) is not None]
        finish = choice.finish_reason if choice is not None else None
        reasoning_tokens = _reasoning_tokens(completion)
        fault = faults.reply_fault(
            visible=visible,
            has_tool_call=bool(calls),
            refusal=getattr(message, "refusal", None),
            finish_reason=finish,
            reasoning=bool(thoughts) or reasoning_tokens > 0,
        )
        assistant: Message = {"role": "assistant", "content": visible}
        tool_ids = [c.id for c in calls]
        if calls:
            assistant["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in calls
            ]
        raw = content or (calls[0].function.arguments if calls else "")
        reading = _Reading(None, raw, assistant, fault=fault, tool_ids=tool_ids)
        if fault is not None:
            reading.problem = faults.REASK_FOR_FAULT[fault]
            record["reply_faults"].append(fault)
            usage[f"reply_{fault}"] = usage.get(f"reply_{fault}", 0) + 1
        elif calls:
            reading.command, reading.problem = self._read_tools(calls)
        else:
            reading.command, reading.problem = self._read_text(visible)
        if reading.problem is not None and fault is None:
            record["parse_errors"].append(reading.problem)
        record["replies"].append(
            {
                "content": content,
                "reasoning": "\n\n".join(thoughts) or None,
                "tool_calls": assistant.get("tool_calls"),
                "finish_reason": finish,
                "fault": fault,
                "error": reading.problem,
            }
        )
        return reading

    def _read_text(self, visible: str) -> tuple[str | None, str | None]:
        try:
            action = self.context.parse(visible)
        except ParseError as exc:
            return None, f"Your command could not be read: {exc.message}"
        return _short_command(visible, action, self.context.parse), None

    def _read_tools(self, calls: list[Any]) -> tuple[str | None, str | None]:
        commands = []
        for call in calls:
            if call.function.name != TOOL_NAME:
                return None, f"Unknown function {call.function.name!r}: call {TOOL_NAME!r}."
            try:
                arguments = json.loads(call.function.arguments or "{}")
                command = self.context.command_for(arguments)
                self.context.parse(command)
            except (json.JSONDecodeError, TypeError) as exc:
                return None, f"The function arguments are not a JSON object: {exc}"
            except ValidationError as exc:
                return None, f"The function arguments do not match the schema: {_brief(exc)}"
            except ParseError as exc:
                return None, f"Your command could not be read: {exc.message}"
            commands.append(command)
        if len(set(commands)) > 1:
            return None, f"Call {TOOL_NAME!r} once per reply, not with {len(commands)} commands."
        return commands[0], None

    # ----- the API call with retries --------------------------------------------------

    async def _complete(self, messages: list[Message], record: dict[str, Any]) -> Any:
        client = await self._client_for_loop()
        request: dict[str, Any] = {"model": self.cfg.model, "messages": messages}
        cfg = self.cfg
        if cfg.temperature is not None:
            request["temperature"] = cfg.temperature
        max_tokens = cfg.max_tokens
        if max_tokens is None and cfg.is_local:
            # llama.cpp's server lets a chat reply run to the end of the context: a small
            # local model that rambles would take minutes a turn.
            max_tokens = LOCAL_MAX_TOKENS
        if max_tokens is not None:
            request[cfg.max_tokens_field] = max_tokens
        if cfg.seed is not None:
            request["seed"] = cfg.seed
        if cfg.reasoning_effort:
            request["reasoning_effort"] = cfg.reasoning_effort
        if cfg.extra_body:
            request.update(cfg.extra_body)  # merged into the body, as the SDK's extra_body
        if cfg.action_mode == "tools":
            request["tools"] = [self._tool()]
            request["tool_choice"] = cfg.tool_choice
        for attempt in range(1, cfg.max_attempts + 1):
            record["attempts"] += 1
            try:
                return await endpoints.complete(client, request, cfg)  # one or several URLs
            except Exception as exc:
                fault = faults.classify(exc)
            text = self._redact(fault.message)
            if fault.kind == CONTEXT_OVERFLOW:
                raise faults.AgentFault(CONTEXT_OVERFLOW, text)
            if fault.kind == "fatal" or attempt == cfg.max_attempts:
                raise faults.AgentFault(
                    AGENT_ERROR, f"{text} (after {attempt} attempt{'s' * (attempt > 1)})"
                )
            wait = faults.backoff_s(
                attempt,
                base=cfg.backoff_base_s,
                cap=cfg.backoff_max_s,
                rng=self._rng,
                retry_after_s=fault.retry_after_s,
                retry_after_cap=cfg.retry_after_max_s,
            )
            record["request_errors"].append({"attempt": attempt, "error": text, "wait_s": wait})
            log.warning("llm request attempt %d failed: %s; retrying in %.2fs", attempt, text, wait)
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _tool(self) -> dict[str, Any]:
        schema = self.context.action_schema.model_json_schema()
        schema.pop("title", None)
        return {
            "type": "function",
            "function": {
                "name": TOOL_NAME,
                "description": "Send one command to the environment.",
                "parameters": schema,
            },
        }

    async def _client_for_loop(self) -> openai.AsyncOpenAI:
        """A client bound to the running event loop (httpx pools cannot cross loops)."""
        loop = asyncio.get_running_loop()
        if self._client is not None and self._client_loop is loop:
            return self._client
        base_url = self.cfg.resolved_base_url()
        if self.cfg.is_local:
            from textenvs.agents.llm import local

            reply = self.cfg.max_tokens or LOCAL_MAX_TOKENS
            n_ctx = local.context_size(self.cfg.resolved_prompt_budget, reply)
            base_url = await asyncio.to_thread(local.ensure_server, n_ctx)
        try:
            key = self.cfg.api_key(required=base_url is None)
        except ValueError as exc:
            raise faults.AgentFault(AGENT_ERROR, str(exc)) from None
        self._secret = key if key != "EMPTY" else ""
        self._client = openai.AsyncOpenAI(
            **client_options(base_url, self._secret or None),  # user info, query: base_url.py
            max_retries=0,  # the agent's own loop counts every attempt
            timeout=openai.Timeout(self.cfg.read_timeout_s, connect=self.cfg.connect_timeout_s),
            # one agent per episode: share the TLS context (~25 ms of CPU to build each)
            http_client=openai.DefaultAsyncHttpxClient(verify=_ssl_context()),
        )
        self._client_loop = loop
        return self._client

    def _redact(self, value: Any) -> Any:
        """The same value with the API key masked in every string (belt and braces: a
        server may echo headers in an error body)."""
        if not self._secret or len(self._secret) < 4:
            return value
        if isinstance(value, str):
            return value.replace(self._secret, "[redacted]")
        blob = json.dumps(value, default=str)
        if self._secret not in blob:
            return value
        return json.loads(blob.replace(json.dumps(self._secret)[1:-1], "[redacted]"))


# ----- helpers -----------------------------------------------------------------------


def new_episode_marker(context: EpisodeContext) -> str:
    """The line that starts each episode of a trial group."""
    if context.trial == 1:
        return (
            f"=== EPISODE 1 OF {context.trials} === You will play {context.trials} episodes "
            "of this scenario in this one conversation, each in a new world; the rules stay "
            "the same, and what the end of an episode shows is yours to use in the next."
        )
    return (
        f"=== NEW EPISODE: {context.trial} OF {context.trials} === Same scenario and rules, "
        "a new world. Its first observation follows."
    )


def episode_ending(context: EpisodeContext, observation: str, end: EpisodeEnd) -> str:
    """An episode's end as the next trial is told it: the outcome line, then the final
    observation (what the scenario reveals at the end)."""
    return (
        f"EPISODE {context.trial} OF {context.trials} OVER: {end.outcome}, return "
        f"{end.total_reward:g}, {end.steps} steps. Its final observation:\n{observation}"
    )


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One client TLS context per process, with the CA bundle the SDK's HTTP client uses
    by default (certifi's): building one costs ~25 ms of CPU, and there is an agent per
    episode."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def _add_usage(usage: dict[str, int], completion: Any) -> None:
    data = getattr(completion, "usage", None)
    if data is None:
        return
    for key in ("prompt_tokens", "completion_tokens"):
        usage[key] = usage.get(key, 0) + int(getattr(data, key, 0) or 0)
    usage["reasoning_tokens"] = usage.get("reasoning_tokens", 0) + _reasoning_tokens(completion)
    cached = _prompt_usage(completion)["cached_tokens"]
    usage["cached_tokens"] = usage.get("cached_tokens", 0) + cached


def _prompt_usage(completion: Any) -> dict[str, int]:
    """The server's prompt count and the part it served from its cache (0 when a server
    does not say; `prompt_tokens_details.cached_tokens` is OpenAI's field, which vLLM,
    SGLang and llama.cpp's own server also send)."""
    data = getattr(completion, "usage", None)
    details = getattr(data, "prompt_tokens_details", None)
    return {
        "prompt_tokens": int(getattr(data, "prompt_tokens", 0) or 0),
        "cached_tokens": int(getattr(details, "cached_tokens", 0) or 0),
    }


def _reasoning_tokens(completion: Any) -> int:
    details = getattr(getattr(completion, "usage", None), "completion_tokens_details", None)
    return int(getattr(details, "reasoning_tokens", 0) or 0)


def _short_command(text: str, action: Any, parse: Any) -> str:
    """The shortest part of a reply that reads as the same action (for transcripts): the
    `Action:` line or the last line, else the whole reply."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    candidates = [m.group(1) for m in _MARKED.finditer(text)][::-1] + lines[-1:]
    for candidate in candidates:
        try:
            if parse(candidate) == action:
                return candidate
        except ParseError:
            continue
    return text.strip()


def _visible(raw: str) -> str:
    return faults.split_think(raw)[0]


def _brief(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors())
