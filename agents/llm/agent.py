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

import hashlib
import logging
import random
import time
import traceback
from typing import Any

from textenvs.agents.llm import context, faults, json_mode
from textenvs.agents.llm.config import LOCAL_MAX_TOKENS, LLMConfig
from textenvs.agents.llm.conversation import Conversation, system_for
from textenvs.agents.llm.history import prompt_chars
from textenvs.agents.llm.reading import TOOL_NAME, Reading, add_usage, prompt_usage, read_reply
from textenvs.agents.llm.transport import Transport
from textenvs.episodes.protocol import AGENT_ERROR, Agent, Decision, EpisodeContext, EpisodeEnd

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
        self._conversation: Conversation | None = None
        #: trial mode: the last episode's end, which the next episode's first message
        #: opens with
        self._ending = ""
        #: requests sent this episode (each carries a seed of its own)
        self._requests = 0

    # ----- Agent protocol ---------------------------------------------------------------

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        # the rules as they hold for this agent: its re-asks, action mode, and in trial
        # mode the episodes that follow one another in this conversation
        system = system_for(context, self.cfg)
        # jitter only: seeded so runs are repeatable, never the global `random`
        self._transport.rng = random.Random(f"{context.seed}:{self.cfg.seed}")
        self._requests = 0
        # trial mode: the conversation goes on; the new episode's first message opens with
        # how the last one ended and a marker
        ending = self._ending if context.trial > 1 else ""
        if not ending or self._conversation is None:
            self._conversation = Conversation(system, self.cfg, context)
        marker = new_episode_marker(context) if context.trials > 1 else ""
        self._conversation.start_episode(
            system, context, episode=context.trial, ending=ending, marker=marker
        )
        self._ending = ""

    def end_episode(self, observation: str, info: dict[str, Any], end: EpisodeEnd) -> None:
        """Note the last command's result (nothing else calls the agent after the final
        step) and keep the episode's end for the next trial's first message."""
        self.conversation.finish(info)
        if self.context.trials > 1:
            self._ending = episode_ending(self.context, observation, end)

    @property
    def conversation(self) -> Conversation:
        """This episode's conversation (after `reset`)."""
        assert self._conversation is not None, "reset() starts an episode"
        return self._conversation

    def first_prompt(self, observation: str) -> list[Message]:
        """The messages of an episode's first request (nothing is sent)."""
        return [self.conversation.system, {"role": "user", "content": observation}]

    def config(self) -> dict[str, Any]:
        return {"name": self.name, **self.cfg.public()}

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        started = time.perf_counter()
        turn = self.conversation.turn_number + 1
        record: dict[str, Any] = {"turn": turn, "attempts": 0, "request_errors": []}
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
        conversation = self.conversation
        conversation.observe(observation, info)
        if conversation.turn_number == 1:
            record["system"] = conversation.system["content"]
        record.update(replies=[], parse_errors=[], reply_faults=[], reasks=0, prompts=[])
        while True:
            completion = await self._ask(record, usage)
            reading = read_reply(completion, self.cfg.mode, self.context)
            add_usage(usage, completion)
            self._note_reading(reading, record, usage)
            self._measure(completion, record, usage)
            command = conversation.take(reading)
            if command is not None:
                break
            record["reasks"] += 1
        record["messages"] = conversation.pending
        record["command"] = command
        return Decision(command, raw=reading.raw)

    async def _ask(self, record: dict[str, Any], usage: dict[str, int]) -> Any:
        """One completion for the turn in progress. When the server says the prompt
        exceeds its context, the budget shrinks to fit, the history is cut once and the
        request goes again; only a prompt with nothing left to cut ends the episode."""
        history = self.conversation.history
        while True:
            messages = self.conversation.request()
            record["history_turns"] = len(history.turns)
            record["context_messages"] = len(messages)
            request = self._request(messages, self._requests)
            self._requests += 1
            try:
                return await self._transport.complete(request, record)
            except faults.ContextOverflow as exc:
                if not history.turns:
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
        history = self.conversation.history
        limit, tokens = context.numbers_in_error(fault.message, fault.body)
        if tokens:  # the server counted this prompt: estimate the next ones by it
            history.gauge.calibrate(prompt_chars(messages), tokens, extended=False)
        budget = context.budget_after_overflow(
            budget=history.budget,
            estimate=history.gauge.estimate(messages),
            limit=limit,
            reply_tokens=self._reply_limit() or context.DEFAULT_REPLY_ROOM,
        )
        history.budget = budget
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

    def _measure(self, completion: Any, record: dict[str, Any], usage: dict[str, int]) -> None:
        """The request's measure (`Conversation.sent`) and what the server says it reused."""
        reported = prompt_usage(completion)
        if not reported["cached_tokens"]:
            # llama-cpp-python reports no cached tokens: the embedded model's log says
            reported.update(self._transport.local_counts())
        prompt = self.conversation.sent(reported["prompt_tokens"])
        for key, value in (
            ("prompt_chars", prompt["chars"]),
            ("prefix_chars", prompt["prefix_chars"]),
            ("cached_tokens", reported["cached_tokens"]),
        ):
            usage[key] = usage.get(key, 0) + value
        record["prompts"].append({**prompt, **reported})

    # ----- the request ----------------------------------------------------------------

    def _reply_limit(self) -> int | None:
        """The reply token limit sent: the configured one, else in json mode one sized to
        the schema, else the embedded model's (llama.cpp's server otherwise lets a chat
        reply run to the end of the context: a small model that rambles takes minutes)."""
        if self.cfg.max_tokens is not None:
            return self.cfg.max_tokens
        if self.cfg.mode == "json":
            return json_mode.reply_tokens(self._json_schema())
        return LOCAL_MAX_TOKENS if self.cfg.is_local else None

    def _request(self, messages: list[Message], index: int) -> dict[str, Any]:
        """The body of the episode's `index`-th request (a retry sends the same body)."""
        cfg = self.cfg
        request: dict[str, Any] = {"model": cfg.model, "messages": messages}
        if cfg.temperature is not None:
            request["temperature"] = cfg.temperature
        max_tokens = self._reply_limit()
        if max_tokens is not None:
            request[cfg.max_tokens_field] = max_tokens
        if cfg.seed is not None:
            request["seed"] = request_seed(cfg.seed, self.context, index)
        if cfg.reasoning_effort:
            request["reasoning_effort"] = cfg.reasoning_effort
        if cfg.extra_body:
            request.update(cfg.extra_body)  # merged into the body, as the SDK's extra_body
        if cfg.mode == "tools":
            request["tools"] = [act_tool(self.context)]
            request["tool_choice"] = cfg.tool_choice
        if cfg.mode == "json":
            form = self._transport.json_form()
            request["response_format"] = json_mode.response_format(self._json_schema(), form)
        return request

    def _json_schema(self) -> dict[str, Any]:
        schema = self.conversation.response_schema
        assert schema is not None  # json mode
        return schema


# ----- helpers -----------------------------------------------------------------------


def act_tool(context: EpisodeContext) -> dict[str, Any]:
    """The one tool a tools-mode request declares: `act`, its parameters the episode's
    action schema (a call of `act(command)` with one text command is read too)."""
    schema = context.action_schema.model_json_schema()
    schema.pop("title", None)
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Send one command to the environment.",
            "parameters": schema,
        },
    }


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


def request_seed(seed: int, context: EpisodeContext, index: int) -> int:
    """The sampling seed of an episode's `index`-th request under `--llm-seed seed`: one
    of its own for each (seed, scenario, episode seed, trial, repeat, request), so a
    server that honours it draws each reply the same whatever order the episodes run in,
    how many run at once, or where a resumed run starts, and a seed's K episodes
    (`--episodes-per-seed K`) differently. A first episode's key has no repeat, as
    before repeats counted: its replies stay those published."""
    key = f"{seed}:{context.env_name}:{context.seed}:{context.trial}:{index}"
    if context.repeat:
        key += f":{context.repeat}"
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest()) >> 1
