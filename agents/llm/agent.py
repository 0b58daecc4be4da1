"""The `llm` agent: plays any scenario through an OpenAI-compatible chat endpoint.

One turn: the rules are the system message, then the history (`history.py`: by default
append-only until the prompt budget, then one large cut, so model servers can reuse the
previous prompt), then the new observation as a user message. The reply is read
(`reading.py`) as free text (the scenario's own parser), as a function call with the
scenario's action schema, or as a JSON object the server constrains to that schema
(`json_mode.py`). A prompt over the server's context shrinks the budget and cuts the
history once (`context.py`). Requests go through `transport.py` (faults: `faults.py`).
An unreadable reply is re-asked up to `reasks` times with the parser's message, then
stepped anyway (the env wastes the turn). Nothing here raises out of `act`.
"""

from __future__ import annotations

import logging
import random
import time
import traceback
from typing import Any

from textenvs.agents.base import (
    AGENT_ERROR,
    Agent,
    Decision,
    EpisodeContext,
    EpisodeEnd,
)
from textenvs.agents.llm import context, faults, json_mode
from textenvs.agents.llm.config import LOCAL_MAX_TOKENS, LLMConfig
from textenvs.agents.llm.history import (
    History,
    PastTurn,
    prompt_chars,
    prompt_text,
    shared_prefix_chars,
)
from textenvs.agents.llm.reading import (
    TOOL_NAME,
    Reading,
    add_usage,
    prompt_usage,
    read_reply,
    visible,
)
from textenvs.agents.llm.transport import Transport
from textenvs.core.parsing import ParseError

log = logging.getLogger("textenvs.agents.llm")

Message = dict[str, Any]


class LLMAgent(Agent):
    name = "llm"

    def __init__(self, config: LLMConfig | None = None, **options: Any) -> None:
        if config is not None and options:
            config = config.model_copy(update=options)
            config = LLMConfig.model_validate(config.model_dump())
        self.cfg = config if config is not None else LLMConfig(**options)
        self._transport = Transport(self.cfg)
        self._json_schema: dict[str, Any] = {}
        self._history = self._new_history()
        self._system = ""
        self._last_prompt = ""  # the previous request's messages as text (cacheable share)
        self._turn = 0
        #: trial mode: the last episode's end, and what the next episode's first message
        #: opens with (that end, if any, and the new-episode marker)
        self._ending = ""
        self._opening = ("", "")

    # ----- Agent protocol ---------------------------------------------------------------

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        from textenvs.prompts import system_prompt

        # the rules as they hold for this agent: its re-asks, action mode, and in trial
        # mode the episodes that follow one another in this conversation
        mode = self.cfg.prompt_mode(context.action_schema, continued=context.trials > 1)
        try:
            self._system = system_prompt(context.prompt or context.env_name, mode)
        except FileNotFoundError:  # a scenario this install has no text for (a service's)
            self._system = context.rules
        if self.cfg.mode == "json":
            self._json_schema = json_mode.response_schema(
                context.action_schema, self.cfg.reasoning_chars
            )
        # jitter only: seeded so runs are repeatable, never the global `random`
        self._transport.rng = random.Random(f"{context.seed}:{self.cfg.seed}")
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
        return History.for_settings(self.cfg)

    def first_prompt(self, observation: str) -> list[Message]:
        """The messages of an episode's first request (nothing is sent)."""
        return [
            {"role": "system", "content": self._system},
            {"role": "user", "content": observation},
        ]

    def config(self) -> dict[str, Any]:
        return {"name": self.name, **self.cfg.public()}

    async def aclose(self) -> None:
        await self._transport.aclose()

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
            log.error("llm agent failed:\n%s", self._transport.redact(traceback.format_exc()))
            decision = Decision("", outcome=AGENT_ERROR, error=f"{type(exc).__name__}: {exc}")
        usage["requests"] = record["attempts"]  # every HTTP attempt, failed ones included
        decision.usage = usage
        decision.reasks = record.get("reasks", 0)
        decision.latency_s = time.perf_counter() - started
        # everything that leaves the agent is scrubbed of the key
        decision.record = self._transport.redact(record)
        decision.command = self._transport.redact(decision.command)
        if decision.raw is not None:
            decision.raw = self._transport.redact(decision.raw)
        if decision.error is not None:
            decision.error = self._transport.redact(decision.error)
        return decision

    # ----- one turn ----------------------------------------------------------------------

    async def _play_turn(
        self, observation: str, info: dict[str, Any], record: dict[str, Any], usage: dict[str, int]
    ) -> Decision:
        (ending, marker), self._opening = self._opening, ("", "")
        opening = "\n\n".join(part for part in (ending, marker) if part)
        turn: list[Message] = [self._history.observation_message(observation, opening)]
        if self._turn == 1:
            record["system"] = self._system
        record.update(replies=[], parse_errors=[], reply_faults=[], reasks=0, prompts=[])
        self._history.note_result(info)
        reading: Reading | None = None
        for ask in range(self.cfg.reasks + 1):
            messages, cut, completion = await self._ask(turn, record, usage)
            reading = read_reply(completion, self.cfg.mode, self.context)
            add_usage(usage, completion)
            self._note_reading(reading, record, usage)
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
        command = reading.command if reading.command is not None else self._unread(reading)
        self._history.add(
            PastTurn(self._turn, turn, command, episode=self.context.trial, opening=ending)
        )
        record["command"] = command
        return Decision(command, raw=reading.raw)

    async def _ask(
        self, turn: list[Message], record: dict[str, Any], usage: dict[str, int]
    ) -> tuple[list[Message], bool, Any]:
        """One completion for the turn in progress. When the server says the prompt
        exceeds its context, the budget shrinks to fit, the history is cut once and the
        request goes again; only a prompt with nothing left to cut ends the episode."""
        system = {"role": "system", "content": self._system}
        while True:
            messages, cut = self._history.request(system, turn)
            record["history_turns"] = len(self._history.turns)
            record["context_messages"] = len(messages)
            try:
                completion = await self._transport.complete(self._request(messages), record)
                return messages, cut, completion
            except faults.ContextOverflow as exc:
                if not self._history.turns:
                    raise
                self._shrink_budget(messages, exc.fault, record, usage)

    def _shrink_budget(
        self,
        messages: list[Message],
        fault: faults.Fault,
        record: dict[str, Any],
        usage: dict[str, int],
    ) -> None:
        """Fit the history under what a context-length error says the server holds."""
        limit, tokens = context.numbers_in_error(fault.message, fault.body)
        if tokens:  # the server counted this prompt: estimate the next ones by it
            self._history.gauge.calibrate(prompt_chars(messages), tokens, extended=False)
        budget = context.budget_after_overflow(
            budget=self._history.budget,
            estimate=self._history.gauge.estimate(messages),
            limit=limit,
            reply_tokens=self._reply_limit() or context.DEFAULT_REPLY_ROOM,
        )
        self._history.budget = budget
        event = {"error": self._transport.redact(fault.message), "limit": limit, "budget": budget}
        record.setdefault("context_cuts", []).append(event)
        usage["context_cuts"] = usage.get("context_cuts", 0) + 1
        log.warning("llm prompt over the server's context; budget now %d tokens", budget)

    def _note_reading(
        self, reading: Reading, record: dict[str, Any], usage: dict[str, int]
    ) -> None:
        if reading.fault is not None:
            record["reply_faults"].append(reading.fault)
            usage[f"reply_{reading.fault}"] = usage.get(f"reply_{reading.fault}", 0) + 1
        elif reading.problem is not None:
            record["parse_errors"].append(reading.problem)
        record["replies"].append(reading.entry)

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
        reported = prompt_usage(completion)
        if not reported["cached_tokens"]:
            # llama-cpp-python reports no cached tokens: the embedded model's log says
            reported.update(self._transport.local_counts())
        self._history.gauge.calibrate(len(text), reported["prompt_tokens"], extended=extended)
        for key, value in (
            ("prompt_chars", len(text)),
            ("prefix_chars", prefix),
            ("cached_tokens", reported["cached_tokens"]),
        ):
            usage[key] = usage.get(key, 0) + value
        prompt = {"chars": len(text), "prefix_chars": prefix, "cut": cut, **reported}
        record["prompts"].append(prompt)

    def _unread(self, reading: Reading) -> str:
        """What is stepped for a reply never read, so the env records a wasted turn: its
        visible text, unless the mode rejected a reply the text parser would accept (a
        json-mode reply in prose): then an empty command, which no parser reads."""
        text = visible(reading.raw)
        if self.cfg.mode == "text":
            return text
        try:
            self.context.parse(text)
        except ParseError:
            return text
        return ""

    def _reask(self, reading: Reading, info: dict[str, Any]) -> list[Message]:
        forms = "; ".join(str(c) for c in info.get("valid_commands", []))
        text = f"{reading.problem}\nValid commands: {forms}\nReply again with one command."
        if reading.tool_ids:
            return self._tool_replies(reading, text)
        return [{"role": "user", "content": text}]

    @staticmethod
    def _tool_replies(reading: Reading, text: str) -> list[Message]:
        # every tool call must be answered, or the next request is malformed
        return [{"role": "tool", "tool_call_id": i, "content": text} for i in reading.tool_ids]

    # ----- the request ----------------------------------------------------------------

    def _reply_limit(self) -> int | None:
        """The reply token limit sent: the configured one, else in json mode one sized to
        the schema, else the embedded model's (llama.cpp's server otherwise lets a chat
        reply run to the end of the context: a small model that rambles takes minutes)."""
        if self.cfg.max_tokens is not None:
            return self.cfg.max_tokens
        if self.cfg.mode == "json":
            return json_mode.reply_tokens(self._json_schema)
        return LOCAL_MAX_TOKENS if self.cfg.is_local else None

    def _request(self, messages: list[Message]) -> dict[str, Any]:
        cfg = self.cfg
        request: dict[str, Any] = {"model": cfg.model, "messages": messages}
        if cfg.temperature is not None:
            request["temperature"] = cfg.temperature
        max_tokens = self._reply_limit()
        if max_tokens is not None:
            request[cfg.max_tokens_field] = max_tokens
        if cfg.seed is not None:
            request["seed"] = cfg.seed
        if cfg.reasoning_effort:
            request["reasoning_effort"] = cfg.reasoning_effort
        if cfg.extra_body:
            request.update(cfg.extra_body)  # merged into the body, as the SDK's extra_body
        if cfg.mode == "tools":
            request["tools"] = [self._tool()]
            request["tool_choice"] = cfg.tool_choice
        if cfg.mode == "json":
            form = self._transport.json_form()
            request["response_format"] = json_mode.response_format(self._json_schema, form)
        return request

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
