"""The `llm` agent's conversation: one turn's messages, the re-ask, the reading, the
prefix accounting and the history, written once for every harness that talks to a model.

`LLMAgent` plays through it with its own transport (tools mode, trial mode, context
cuts); Inspect's solver, the verifiers harness and training's rollouts call the model
themselves and hand the conversation the reply's text, so a model is sent the same
messages, byte for byte, wherever it plays:

    conversation = Conversation(system_for(context, settings), settings, context)
    conversation.observe(observation, info)      # each turn
    while True:
        reply, prompt_tokens = ask_model(conversation.request())
        conversation.sent(prompt_tokens)
        if (command := conversation.read(reply)) is not None:
            break                                # else a re-ask: ask again
    ...
    conversation.finish(final_info)

A harness's options are the `llm` agent's own settings (`LLMConfig`), those named in
`CONVERSATION_SETTINGS`, with the same defaults and validation (`conversation_settings`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from textenvs.agents.llm import json_mode
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.history import History, Message, PastTurn, prompt_text, shared_prefix_chars
from textenvs.agents.llm.reading import Reading, read_message, visible
from textenvs.core.parsing import ParseError
from textenvs.episodes.protocol import EpisodeContext

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
    name: str,
    settings: LLMConfig,
    action_schema: type[BaseModel] | None = None,
    *,
    continued: bool = False,
) -> str:
    """The system prompt for the rules prompt `name` (a scenario, or a variant as
    `prompt_name` names it) played with `settings` (its re-asks and action mode), and
    `continued` in trial mode (episodes that follow one another)."""
    from textenvs.prompts import system_prompt

    return system_prompt(name, settings.prompt_mode(action_schema, continued=continued))


def system_for(context: EpisodeContext, settings: LLMConfig) -> str:
    """The system prompt of `context`'s episode played with `settings`; the env's own
    rules for a scenario this install has no text for (a service's)."""
    name = context.prompt or context.env_name
    try:
        return episode_system_prompt(
            name, settings, context.action_schema, continued=context.trials > 1
        )
    except FileNotFoundError:
        return context.rules


class Conversation:
    """One conversation with a model: an episode's turns, or in trial mode several
    episodes' (`start_episode`), built and read as the `llm` agent builds and reads them."""

    def __init__(self, system: str, settings: LLMConfig, context: EpisodeContext) -> None:
        self.settings = settings
        self.history = History.for_settings(settings)
        self.turn_number = 0
        self.asked = 0  # re-asks so far in this turn
        #: the turn in progress's messages (once it is read: the whole turn, until the
        #: next observation)
        self.pending: list[Message] = []
        #: every message, none cut: the conversation as a reader sees it
        self.transcript: list[Message] = []
        #: whether the last `request()` cut history to fit the prompt budget
        self.cut = False
        self._valid_commands: list[str] = []
        self._last_prompt = ""  # the previous request's messages as text (cacheable share)
        self._requested: list[Message] = []
        self._opening = ""  # the turn in progress's: the last episode's end it opens with
        self.start_episode(system, context)

    @classmethod
    def for_context(cls, context: EpisodeContext, settings: LLMConfig) -> Conversation:
        """The conversation of `context`'s episode, with its system prompt (`system_for`)."""
        return cls(system_for(context, settings), settings, context)

    def start_episode(
        self,
        system: str,
        context: EpisodeContext,
        *,
        episode: int = 1,
        ending: str = "",
        marker: str = "",
    ) -> None:
        """The episode the next observation starts (`context`: its parser and action
        schema read the replies). Trial mode: the same conversation goes on with episode
        `episode`, whose first message opens with how the last one ended (`ending`) and
        the new-episode `marker`."""
        self.system: Message = {"role": "system", "content": system}
        if not self.transcript:
            self.transcript.append(self.system)
        self.context = context
        #: json mode: the schema a reply must meet, as `response_format` sends it
        self.response_schema = (
            json_mode.response_schema(context.action_schema, self.settings.reasoning_chars)
            if self.settings.mode == "json"
            else None
        )
        self.episode = episode
        self._ending, self._marker = ending, marker

    # ----- one turn ----------------------------------------------------------------------

    def observe(self, observation: str, info: dict[str, Any]) -> None:
        """Start a turn on `observation` (and note what the last command did)."""
        self.history.note_result(info)
        self.turn_number += 1
        self.asked = 0
        # trial mode: an episode's first message opens with the last one's end and a marker
        self._opening, marker = self._ending, self._marker
        self._ending = self._marker = ""
        opening = "\n\n".join(part for part in (self._opening, marker) if part)
        self.pending = [self.history.observation_message(observation, opening)]
        self.transcript.append(self.pending[0])
        self._valid_commands = [str(c) for c in info.get("valid_commands", [])]

    def request(self) -> list[Message]:
        """The messages to send now (history cut to the prompt budget if needed)."""
        messages, self.cut = self.history.request(self.system, self.pending)
        self._requested = messages
        return messages

    def sent(self, prompt_tokens: int) -> dict[str, Any]:
        """Learn tokens per character from the count the server reported for the last
        `request()` (0 when it reported none); that request's measure: its characters,
        how many repeat the previous request's verbatim (what a prefix cache can reuse,
        whatever the server), and whether history was cut."""
        text = prompt_text(self._requested)
        prefix = shared_prefix_chars(self._last_prompt, text)
        extended = bool(self._last_prompt) and prefix == len(self._last_prompt) - 1  # to "]"
        self._last_prompt = text
        self.history.gauge.calibrate(len(text), prompt_tokens, extended=extended)
        return {"chars": len(text), "prefix_chars": prefix, "cut": self.cut}

    def read(
        self, content: str, *, finish_reason: str | None = None, refusal: str | None = None
    ) -> str | None:
        """Take the model's reply text (see `take`)."""
        reading = read_message(
            content,
            self.settings.mode,
            self.context,
            finish_reason=finish_reason,
            refusal=refusal,
        )
        return self.take(reading)

    def take(self, reading: Reading) -> str | None:
        """Take a reply, read: the command to step, or None when it could not be read and
        a re-ask was added (send `request()` again). After `reasks` re-asks an unreadable
        reply is stepped anyway (the env wastes the turn)."""
        self._add(reading.assistant)
        if reading.command is not None:
            self._answer_tools(reading, f"Command sent: {reading.command}")
            return self._close(reading.command)
        if self.asked < self.settings.reasks:
            self.asked += 1
            forms = "; ".join(self._valid_commands)
            text = f"{reading.problem}\nValid commands: {forms}\nReply again with one command."
            if reading.tool_ids:
                self._answer_tools(reading, text)
            else:
                self._add({"role": "user", "content": text})
            return None
        self._answer_tools(reading, f"Not read: {reading.problem}")
        return self._close(self._unread(reading))

    def finish(self, info: dict[str, Any]) -> None:
        """The episode ended: note what the last command did."""
        self.history.note_result(info)

    # ----- inside ------------------------------------------------------------------------

    def _add(self, message: Message) -> None:
        self.pending.append(message)
        self.transcript.append(message)

    def _answer_tools(self, reading: Reading, text: str) -> None:
        # every tool call must be answered, or the next request is malformed
        for call_id in reading.tool_ids:
            self._add({"role": "tool", "tool_call_id": call_id, "content": text})

    def _unread(self, reading: Reading) -> str:
        """What is stepped for a reply never read, so the env records a wasted turn: its
        visible text, unless the mode rejected a reply the text parser would accept (a
        json-mode reply in prose): then an empty command, which no parser reads."""
        text = visible(reading.raw)
        if self.settings.mode == "text":
            return text
        try:
            self.context.parse(text)
        except ParseError:
            return text
        return ""

    def _close(self, command: str) -> str:
        turn = PastTurn(
            self.turn_number, self.pending, command, episode=self.episode, opening=self._opening
        )
        self.history.add(turn)
        return command
