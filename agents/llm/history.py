"""The conversation the `llm` agent keeps, and how it stays cheap for model servers.

Model servers with prefix caching (llama.cpp, vLLM, SGLang, Ollama, and the hosted APIs
that discount cached input) reuse the work for the longest prefix a request shares with
an earlier one, so a prompt that only grows at its end costs little more than its new
part. Two policies:

- `append` (default): every request extends the previous one until the next would exceed
  the prompt budget (in tokens); then the oldest turns are cut in one step, down to
  `keep_fraction` of the budget. The cut turns are replaced by a
  recap (one line per cut turn: the command sent and what happened), merged into the
  first kept message. Between cuts nothing before the new turn changes.
- `window`: the last `window` turns, and fewer when they exceed the budget (the oldest
  dropped one at a time). Every turn past the window moves the prompt's start, so a
  server re-evaluates nearly the whole prompt each turn.

In trial mode (`--trials K`) one conversation spans K episodes: the first turn of each
later episode opens with the previous episode's end (outcome and final observation) and
a new-episode marker. Once a cut reaches earlier episodes, the recap keeps what they
taught rather than their turns: each cut episode end (the newest in full, up to a fifth
of the budget; older ones by their outcome line), and one line per cut turn of the
newest cut episode only.

Observations are sent whole (`full`, default) or, after an episode's first, as what
changed since the one before (`changes`, see `observation_view.py`). Whatever turn opens
the prompt (the first kept after a cut, or in a window) is sent with its whole
observation, so every changes view refers to an observation the prompt holds.

Prompt sizes are measured in characters of the messages as compact JSON, the same text
for every server; tokens are estimated from characters with the ratio the server itself
reported for the previous request (`TokenGauge`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from textenvs.agents.llm.observation_view import changes_view
from textenvs.core.parsing import ParseError

if TYPE_CHECKING:
    from textenvs.agents.llm.config import LLMConfig

Message = dict[str, Any]
Policy = Literal["append", "window"]
Observations = Literal["full", "changes"]

#: tokens per character assumed until a server reports a count (generous: grids and
#: digits tokenise densely, and a short first guess costs only a slightly early cut)
DEFAULT_TOKENS_PER_CHAR = 0.5
#: recap lines kept; older cut turns are counted, not listed
RECAP_LINES = 40
RECAP_LINE_CHARS = 120
#: trial mode: the share of the budget that cut episode ends may fill in the recap, the
#: characters kept of each, and how many older ones are listed by their outcome line
RECAP_ENDINGS_SHARE = 0.2
RECAP_ENDING_CHARS = 2000
RECAP_OUTCOME_LINES = 30


def serialise(message: Message) -> str:
    """A message as compact JSON: the text whose shared prefix a server can reuse."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))


def prompt_chars(messages: Sequence[Message]) -> int:
    """Characters of `messages` as one compact JSON array."""
    return len(prompt_text(messages))


def prompt_text(messages: Sequence[Message]) -> str:
    return "[" + ",".join(serialise(m) for m in messages) + "]"


def shared_prefix_chars(previous: str, current: str) -> int:
    """Characters at the start of `current` (a prompt's text) that equal `previous`'s:
    the part of the prompt a server that saw `previous` can reuse."""
    low, high = 0, min(len(previous), len(current))
    while low < high:  # binary search: slice comparisons run in C
        middle = (low + high + 1) // 2
        if previous[:middle] == current[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class TokenGauge:
    """Estimates a prompt's tokens from its characters, with the tokens-per-character
    ratio the server's own counts show (servers count differently: a grid may be one
    token per cell for one tokenizer and one per three cells for another).

    The ratio is the larger of the last prompt's and, when that prompt extended the one
    before, of what it added: history turns are often denser than the system prompt, and
    an estimate on the high side only cuts a little early."""

    def __init__(self, tokens_per_char: float = DEFAULT_TOKENS_PER_CHAR) -> None:
        self.tokens_per_char = tokens_per_char
        self._last = (0, 0)  # (characters, tokens) of the last prompt counted

    def estimate(self, messages: Sequence[Message]) -> int:
        return math.ceil(prompt_chars(messages) * self.tokens_per_char)

    def calibrate(self, chars: int, prompt_tokens: int, *, extended: bool) -> None:
        """Learn from the server's count of a prompt of `chars` characters it was sent,
        `extended` if it began with the whole previous prompt (a server that reports no
        count leaves the estimate as it was)."""
        if prompt_tokens <= 0 or chars <= 0:
            return
        ratio = prompt_tokens / chars
        last_chars, last_tokens = self._last
        if extended and chars > last_chars and prompt_tokens > last_tokens > 0:
            ratio = max(ratio, (prompt_tokens - last_tokens) / (chars - last_chars))
        self.tokens_per_char = ratio
        self._last = (chars, prompt_tokens)


@dataclass
class PastTurn:
    """One turn as the conversation replays it."""

    number: int
    messages: list[Message]
    command: str
    #: what followed, from the next observation's info (filled in one turn later)
    result: str = ""
    #: trial mode: the episode (trial) this turn belongs to, and on an episode's first
    #: turn the previous episode's end that its first message opens with
    episode: int = 1
    opening: str = ""
    #: the first message with the whole observation, when `messages[0]` shows only its
    #: changes (sent instead when this turn opens the prompt)
    whole: Message | None = None


@dataclass
class History:
    """Past turns of one conversation and the rule that keeps its prompts in budget."""

    budget: int
    policy: Policy = "append"
    keep_fraction: float = 0.5
    window: int = 8
    observations: Observations = "full"
    gauge: TokenGauge = field(default_factory=TokenGauge)
    turns: list[PastTurn] = field(default_factory=list)
    #: every turn cut so far (append policy); the recap is a function of these alone
    cut_turns: list[PastTurn] = field(default_factory=list)
    #: (cut turns, text) of the last recap built, so an unchanged recap is not rebuilt
    _recap: tuple[int, str] = field(default=(0, ""), init=False, repr=False)
    #: the last observation shown, and the turn in progress's whole first message when
    #: it shows only the changes
    _last_observation: str = field(default="", init=False, repr=False)
    _whole: Message | None = field(default=None, init=False, repr=False)

    @classmethod
    def for_settings(cls, settings: LLMConfig) -> History:
        """A new conversation's history with the `llm` agent's settings."""
        return cls(
            budget=settings.resolved_prompt_budget,
            policy=settings.history_policy,
            keep_fraction=settings.history_keep,
            window=settings.history,
            observations=settings.observation_view,
            gauge=TokenGauge(),
        )

    def observation_message(self, observation: str, opening: str = "") -> Message:
        """The user message that starts a turn: `opening` (trial mode: the last
        episode's end and a marker; it starts an episode) and the observation, whole or
        as its changes since the last one."""
        previous, self._last_observation = self._last_observation, observation
        self._whole = None
        if opening:
            return {"role": "user", "content": f"{opening}\n\n{observation}"}
        if self.observations == "changes" and previous:
            shown = changes_view(previous, observation)
            if shown != observation:
                self._whole = {"role": "user", "content": observation}
                return {"role": "user", "content": shown}
        return {"role": "user", "content": observation}

    def request(self, system: Message, pending: list[Message]) -> tuple[list[Message], bool]:
        """The messages to send for the turn in progress (`pending`: its observation and
        any replies and re-asks so far), and whether history was cut to make them fit."""
        messages = self.render(system, pending)
        if self.gauge.estimate(messages) <= self.budget or not self.turns:
            return messages, False
        if self.policy == "window":
            while self.turns and self.gauge.estimate(messages) > self.budget:
                self.turns.pop(0)
                messages = self.render(system, pending)
            return messages, True
        # one large cut: the oldest turns go (into the recap) until the prompt is down to
        # the kept share of the budget, so the next cut is many turns away
        target = self.keep_fraction * self.budget
        while self.turns and self.gauge.estimate(messages) > target:
            self.cut_turns.append(self.turns.pop(0))
            messages = self.render(system, pending)
        return messages, True

    def add(self, turn: PastTurn) -> None:
        turn.whole, self._whole = self._whole, None
        self.turns.append(turn)
        if self.policy == "window" and len(self.turns) > self.window:
            self.turns.pop(0)

    def note_result(self, info: dict[str, Any]) -> None:
        """Record what the last turn's command did (the info of the observation after it)."""
        if self.turns and not self.turns[-1].result:
            self.turns[-1].result = describe_result(info)

    def render(self, system: Message, pending: list[Message]) -> list[Message]:
        body = [m for turn in self.turns for m in turn.messages] + pending
        whole = self.turns[0].whole if self.turns else self._whole
        if whole is not None and body:
            body[0] = whole  # the prompt opens with a whole observation
        recap = self.recap()
        if recap and body and body[0].get("role") == "user":
            body[0] = {**body[0], "content": f"{recap}\n\n{body[0]['content']}"}
        return [system, *body]

    def recap(self) -> str:
        """What the conversation no longer shows: one line per cut turn (the newest
        `RECAP_LINES`) and, in trial mode, the ends of cut episodes. It changes only when
        turns are cut."""
        count = len(self.cut_turns)
        if count == 0:
            return ""
        if self._recap[0] != count:
            endings = [turn.opening for turn in self.cut_turns if turn.opening]
            newest = self.cut_turns[-1].episode
            turns = [turn for turn in self.cut_turns if turn.episode == newest]
            parts = [self._endings_recap(endings)] if endings else []
            self._recap = (count, "\n".join([*parts, _turns_recap(turns)]))
        return self._recap[1]

    def _endings_recap(self, endings: list[str]) -> str:
        """Cut episode ends, newest first in full while they fit a share of the budget,
        then older ones by their first (outcome) line."""
        room = RECAP_ENDINGS_SHARE * self.budget / self.gauge.tokens_per_char
        full: list[str] = []
        for ending in reversed(endings):
            text = _clip(ending, RECAP_ENDING_CHARS)
            if full and sum(map(len, full)) + len(text) > room:
                break
            full.insert(0, text)
        older = [ending.split("\n", 1)[0] for ending in endings[: len(endings) - len(full)]]
        lines = ["Recap of earlier episodes (removed from this conversation; same rules):"]
        if len(older) > RECAP_OUTCOME_LINES:
            lines.append(f"({len(older) - RECAP_OUTCOME_LINES} earlier episodes not listed)")
        lines += [_clip(line, RECAP_LINE_CHARS) for line in older[-RECAP_OUTCOME_LINES:]]
        return "\n".join(lines + full)


_MARKED = re.compile(r"^\W*(?:final\s+)?(?:action|command)\s*[:=]\s*(.+?)\s*$", re.I | re.M)


def recap_command(text: str, action: Any, parse: Callable[[str], Any]) -> str:
    """The command a turn's recap line shows: the shortest part of a read reply that
    reads as the same action (its `Action:` line or last line), else the whole reply."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    candidates = [m.group(1) for m in _MARKED.finditer(text)][::-1] + lines[-1:]
    for candidate in candidates:
        try:
            if parse(candidate) == action:
                return candidate
        except ParseError:
            continue
    return text.strip()


def describe_result(info: dict[str, Any]) -> str:
    """A command's outcome in one short line, from the env's info after it."""
    if info.get("invalid_action"):
        return f"invalid: {info.get('error') or 'not read'}"
    events = info.get("events") or []
    return "; ".join(_event_text(e) for e in events if isinstance(e, dict)) or "no change"


def _event_text(event: dict[str, Any]) -> str:
    parts = [str(event.get("type", "event"))]
    for key, value in event.items():
        if key == "type" or value is None:
            continue
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        parts.append(f"{key}={text.replace(chr(34), '')}")
    return " ".join(parts)


def _turns_recap(turns: list[PastTurn]) -> str:
    shown = turns[-RECAP_LINES:]
    lines = [
        f"Recap of turns {turns[0].number}-{turns[-1].number}, "
        "removed from this conversation to keep it short (command -> what happened):"
    ]
    if len(turns) > len(shown):
        lines.append(f"({len(turns) - len(shown)} earlier turns not listed)")
    lines += [_recap_line(turn) for turn in shown]
    lines.append("The conversation continues below.")
    return "\n".join(lines)


def _recap_line(turn: PastTurn) -> str:
    line = f"{turn.number}. {turn.command or '(no command)'} -> {turn.result or 'unknown'}"
    return _clip(line, RECAP_LINE_CHARS)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
