"""The `llm` agent's conversation, for harnesses that call the model themselves.

Inspect's solver and the verifiers environment send the model exactly what `textenvs
eval --agent llm` sends for the same replies: the same system prompt, history
(`agents/llm/history.py`, the append policy by default, or a window), re-ask messages
and reply reading. Their options are the `llm` agent's own settings (`LLMConfig`):
`history_policy`, `prompt_budget`, `history`, `history_keep`, `observations` and
`reasks`, with the
same defaults and validation, so a model's prompts do not depend on where it runs.

One `Conversation` is one episode (no trial groups), and its system prompt says so
(`episode_system_prompt`: no promise of what a next episode shows). Replies are text, or
in json action mode JSON objects read through the scenario's action schema, for a harness
that holds the model to `response_schema` itself (training does; Inspect and verifiers
play text):

    conversation = Conversation.for_episode("treasure-hunt", options, env.parse, settings)
    conversation.observe(observation, info)      # each turn
    while True:
        reply, prompt_tokens = ask_model(conversation.request())
        conversation.sent(prompt_tokens)
        if (command := conversation.read(reply)) is not None:
            break                                # else a re-ask: ask again
    ...
    conversation.finish(final_info)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from textenvs.agents.llm import faults, json_mode
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.history import (
    History,
    Message,
    PastTurn,
    prompt_text,
    recap_command,
    shared_prefix_chars,
)
from textenvs.core import registry
from textenvs.core.parsing import ParseError
from textenvs.prompts import prompt_name, system_prompt

#: the `llm` agent settings a harness may set (the rest concern the API call)
CONVERSATION_SETTINGS = (
    "history_policy",
    "prompt_budget",
    "history",
    "history_keep",
    "observations",
    "reasks",
)


def conversation_settings(
    action_mode: str = "text", json_reasoning: int | None = None, **settings: Any
) -> LLMConfig:
    """The `llm` agent's settings with `settings` (None values: the default), validated
    as `textenvs eval` validates them (`history=K` alone selects the window policy), in
    `action_mode` "text" or "json" (with up to `json_reasoning` characters of reasoning
    before the action, as `--json-reasoning` sets)."""
    unknown = set(settings) - set(CONVERSATION_SETTINGS)
    if unknown:
        raise ValueError(f"unknown conversation settings: {', '.join(sorted(unknown))}")
    if action_mode not in ("text", "json"):
        raise ValueError(f"a conversation's action mode is text or json, not {action_mode!r}")
    given = {key: value for key, value in settings.items() if value is not None}
    if json_reasoning is not None:
        given["json_reasoning_chars"] = json_reasoning
    return LLMConfig(model="harness", action_mode=action_mode, **given)


def episode_system_prompt(
    name: str, settings: LLMConfig, action_schema: type[BaseModel] | None = None
) -> str:
    """The system prompt of one episode played through a `Conversation` with `settings`
    (its re-asks and action mode; nothing carried to a next episode), for the rules prompt
    `name` (a scenario, or a variant as `prompt_name` names it)."""
    return system_prompt(name, settings.prompt_mode(action_schema))


@dataclass(frozen=True)
class JsonReading:
    """What json mode reads a reply with (`json_mode.read`): the scenario's action schema,
    how an action becomes its command, and the parser that then reads the command."""

    action_schema: type[BaseModel]
    command_for: Callable[[dict[str, Any]], str]
    parse: Callable[[str], Any]


class Conversation:
    """One episode's messages, built and read as the `llm` agent builds and reads them."""

    def __init__(
        self,
        system: str,
        parse: Callable[[str], Any],
        settings: LLMConfig,
        json_reading: JsonReading | None = None,
    ) -> None:
        self.system: Message = {"role": "system", "content": system}
        self.parse = parse
        #: json mode (`settings.action_mode == "json"`): replies are JSON objects
        self.json_reading = json_reading
        #: json mode: the schema a reply must meet, as `response_format` sends it
        self.response_schema = (
            json_mode.response_schema(json_reading.action_schema, settings.reasoning_chars)
            if json_reading is not None
            else None
        )
        self.reasks = settings.reasks
        self.history = History.for_settings(settings)
        self.turn_number = 0
        self.asked = 0  # re-asks so far in this turn
        self.pending: list[Message] = []
        #: every message of the episode, none cut: the conversation as a reader sees it
        self.transcript: list[Message] = [self.system]
        self._valid_commands: list[str] = []
        self._last_prompt = ""
        self._requested: list[Message] = []

    @classmethod
    def for_episode(
        cls,
        env: str,
        options: Mapping[str, Any] | None,
        parse: Callable[[str], Any],
        settings: LLMConfig,
    ) -> Conversation:
        """The conversation of `env` with reset `options` (the rules prompt follows the
        options, e.g. a magnetic-field level, as in `textenvs eval`). In json mode
        (`settings.action_mode`), replies are read through the scenario's action schema."""
        reading = None
        if settings.mode == "json":
            scenario = registry.get(env).load()()
            reading = JsonReading(scenario.action_schema, scenario.command_for, parse)
        name = prompt_name(env, dict(options or {}))
        schema = reading.action_schema if reading is not None else None
        return cls(episode_system_prompt(name, settings, schema), parse, settings, reading)

    def observe(self, observation: str, info: dict[str, Any]) -> None:
        """Start a turn on `observation` (and note what the last command did)."""
        self.history.note_result(info)
        self.turn_number += 1
        self.asked = 0
        self.pending = [self.history.observation_message(observation)]
        self.transcript.append(self.pending[0])
        self._valid_commands = [str(c) for c in info.get("valid_commands", [])]

    def request(self) -> list[Message]:
        """The messages to send now (history cut to the prompt budget if needed)."""
        messages, _ = self.history.request(self.system, self.pending)
        self._requested = messages
        return messages

    def sent(self, prompt_tokens: int) -> None:
        """Learn tokens per character from the count the server reported for the last
        `request()` (0 when it reported none), as the `llm` agent does."""
        text = prompt_text(self._requested)
        prefix = shared_prefix_chars(self._last_prompt, text)
        extended = bool(self._last_prompt) and prefix == len(self._last_prompt) - 1
        self._last_prompt = text
        self.history.gauge.calibrate(len(text), prompt_tokens, extended=extended)

    def read(
        self, content: str, *, finish_reason: str | None = None, refusal: str | None = None
    ) -> str | None:
        """Take the model's reply: the command to step, or None when the reply could not
        be read and a re-ask was added (send `request()` again). After `reasks` re-asks
        an unreadable reply is stepped anyway (the env wastes the turn)."""
        visible, thoughts = faults.split_think(content)
        self.pending.append({"role": "assistant", "content": visible})
        self.transcript.append(self.pending[-1])
        fault = faults.reply_fault(
            visible=visible,
            has_tool_call=False,
            refusal=refusal,
            finish_reason=finish_reason,
            reasoning=bool(thoughts),
        )
        if fault is not None:
            problem = faults.REASK_FOR_FAULT[fault]
        elif self.json_reading is not None:
            command, problem, _ = json_mode.read(visible, self.json_reading)
            if command is not None:
                return self._close(command)
        else:
            try:
                action = self.parse(visible)
            except ParseError as exc:
                problem = f"Your command could not be read: {exc.message}"
            else:
                return self._close(recap_command(visible, action, self.parse))
        if self.asked < self.reasks:
            self.asked += 1
            forms = "; ".join(self._valid_commands)
            text = f"{problem}\nValid commands: {forms}\nReply again with one command."
            self.pending.append({"role": "user", "content": text})
            self.transcript.append(self.pending[-1])
            return None
        return self._close(self._unread(visible))

    def finish(self, info: dict[str, Any]) -> None:
        """The episode ended: note what the last command did."""
        self.history.note_result(info)

    def _unread(self, visible: str) -> str:
        """What is stepped for a reply never read, so the env wastes the turn: its text,
        unless json mode refused a reply the text parser would accept (then nothing, as
        the `llm` agent steps)."""
        if self.json_reading is None:
            return visible
        try:
            self.parse(visible)
        except ParseError:
            return visible
        return ""

    def _close(self, command: str) -> str:
        self.history.add(PastTurn(self.turn_number, self.pending, command))
        self.pending = []
        return command
