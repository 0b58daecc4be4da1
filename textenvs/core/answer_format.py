"""The answer format: which part of a reply is the command, before any grammar is applied.

- The reply is cleaned (`clean`): `<think>` blocks dropped, control characters turned into
  spaces, unicode folded (NFKC, curly quotes, look-alike letters), and a dash between
  clauses ("Not north — east") turned into a clause break.
- It is bounded (`prepare`): longer than `MAX_COMMAND_CHARS`, before or after unicode
  folding (which can make text up to 18 times longer), it is rejected before any pattern
  runs.
- A marked command is authoritative (`marked_commands`): a line `<label>: <command>` with
  one of the labels `Action`, `Command`, `Now`, `Final answer` (also `Answer`, `Orders`,
  `Move`), at the start of a line, after the end of a sentence ("Last turn I moved east.
  Now: north") or after an interjection ("Wait, Action: north"); or a JSON object with an
  action (`{"reasoning": "...", "action": "north"}`), also inside a `<tool_call>` wrapper
  or as the tool's own schema (`{"action": "support", "cells": ["C2"], "material": ...}`,
  whose keys beyond the action each scenario names: `JsonFields`). A key the object
  gives twice with different values rejects the reply (`core.json_text.RepeatedKey`).
  When a reply has one, nothing else in it is read (`marked_commands` also gives the
  parser what is written after each marked part, so an order or a withdrawal there
  rejects the reply rather than being dropped).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from textenvs.core.json_text import RepeatedKey, load_json
from textenvs.core.parse_error import ParseError

# Replies longer than this (before or after unicode folding) are rejected before any
# pattern runs: no legitimate reply needs more, and it bounds the cost of reading.
MAX_COMMAND_CHARS = 20_000

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_LABEL = (
    r"(?P<label>(?:(?:final|my|next|chosen|best)[ \t]+){0,2}"
    r"(?:action|command|answer|orders?|move|now))"
)
# Labels models also put on a line of reasoning ("Now: I am at (2,2)", "Answer: the
# safest way is north"): below a reply's `Action:` line they are read only when they
# hold exactly one command (which must then agree with it).
_REASONING_LABELS = frozenset({"now", "answer", "my answer"})
_INTERJECTION = r"(?:wait|ok|okay|so|hmm+|alright|actually|well|fine|right|sorry)"
_ACTION_LINE = re.compile(
    rf"(?:^|(?<=[.!?])[ \t]|^[ \t*_]*{_INTERJECTION}[ \t]*[,.!])"
    rf"(?P<lead>[ \t>*#_`{{\"'-]*){_LABEL}[\"'*_` \t]*"
    r"(?:[:=][*_` \t]*(?P<content>.*)$|$)",
    re.IGNORECASE | re.MULTILINE,
)
# The opening line of a code fence names its language ("```text"): not part of the reply.
_FENCE = re.compile(r"^([ \t]*```)[\w+-]*[ \t]*$", re.MULTILINE)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_TOOL_TAGS = re.compile(r"</?(?:tool_call|function_call|tool_use)>", re.IGNORECASE)
# JSON keys: the command, and reasoning that is never read.
ACTION_KEYS = ("action", "command", "move", "orders", "answer")
REASONING_KEYS = frozenset({
    "reasoning", "reason", "thought", "thoughts", "thinking", "analysis", "explanation",
    "rationale", "observation", "plan", "notes_to_self",
})  # fmt: skip
_EDGE_NOISE = " \t\n.,;:!?\"'`*_#>()[]{}<>~"
_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "→": "->"})
# Cyrillic and Greek letters that look like Latin ones: "nоt north" with a Cyrillic "о"
# is read as the reader sees it ("not north"), never as a bare "north".
_LOOKALIKES = str.maketrans(
    "АВЕКМНОРСТХаеорсухіјѕԁһӏΑΒΕΖΗΙΚΜΝΟΡΤΥΧοιν",
    "ABEKMHOPCTXaeopcyxijsdhlABEZHIKMNOPTYXoiv",
)
# Chat-template tokens a model leaks ("north<|im_end|>", "</s>"): a space, so whatever a
# model goes on to write after one is read with the rest, never dropped.
_SPECIAL_TOKEN = re.compile(
    r"<\|[a-z_]{1,20}\|>|</?s>|<(?:end|start)_of_turn>|<eos>|<bos>", re.IGNORECASE
)
# LaTeX wrappers around an answer ("\boxed{north}", "$\text{east}$"): the words inside
# are read, the wrapper is punctuation.
_LATEX_WRAPPER = re.compile(r"\\(?:boxed|fbox|text(?:bf|tt|rm)?|mathrm|mathbf|texttt)\b|\$")
# A dash between clauses ("Not north — east", "north - the east is a wall") ends the clause.
_CLAUSE_DASH = re.compile(r"(?<=\S)(?:[ \t]*—|[ \t]+–[ \t]|[ \t]+-{1,2}[ \t])")


def clean(text: str) -> str:
    """Drop reasoning blocks and format characters (zero-width spaces and joiners, soft
    hyphens: "i<ZWSP>f" reads as the "if" it shows), blank other control characters;
    fold unicode (NFKC, curly quotes, Cyrillic and Greek look-alikes of Latin letters)
    towards ASCII; a dash between clauses becomes `;`."""
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    text = _THINK.sub(" ", text)
    text = _SPECIAL_TOKEN.sub(" ", text)
    text = _LATEX_WRAPPER.sub(" ", text)
    text = unicodedata.normalize("NFKC", text)
    text = _CLAUSE_DASH.sub(" ; ", text)
    text = _FENCE.sub(r"\1", text)
    text = text.translate(_QUOTES).translate(_LOOKALIKES)
    return "".join(ch if ch in "\n\t" or unicodedata.category(ch)[0] != "C" else " " for ch in text)


def normalise(text: str) -> str:
    """Lower-case, `_`/`-` as spaces, single spaces, no markdown or punctuation at the edges."""
    text = re.sub(r"[_\-]+", " ", text.lower())
    text = re.sub(r"\s+", " ", text)
    return text.strip(_EDGE_NOISE)


def fold(text: str) -> str:
    """Lower case with `_`/`-` as spaces, keeping every character where it was (so
    positions found in the folded text point into the original)."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters lower-case to two
        lowered = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)
    return lowered.replace("_", " ").replace("-", " ")


def _too_long(length: int, valid: Sequence[str], what: str) -> ParseError:
    return ParseError(
        f"the reply is {length:,} characters long{what}; the limit is "
        f"{MAX_COMMAND_CHARS:,}. Send one short command.",
        valid,
    )


def prepare(text: str, valid: Sequence[str]) -> tuple[str, str]:
    """The checks every parser starts with: text, not too long, not empty. Returns the
    cleaned reply and its normalised form."""
    if not isinstance(text, str):
        raise ParseError(f"a command must be text, not {type(text).__name__}.", valid)
    if len(text) > MAX_COMMAND_CHARS:
        raise _too_long(len(text), valid, "")
    if not text.isascii() and len(unicodedata.normalize("NFKC", text)) > MAX_COMMAND_CHARS:
        raise _too_long(len(unicodedata.normalize("NFKC", text)), valid, " once unicode is folded")
    cleaned = clean(text)
    whole = normalise(cleaned)
    if not whole:
        raise ParseError("the command is empty.", valid)
    return cleaned, whole


@dataclass
class Marked:
    """The command parts a reply marks and what is written after them."""

    #: the contents of the marked parts, in order
    parts: list[str] = field(default_factory=list)
    #: whether each part is labelled as reasoning may be (`Now:`, `Answer:`)
    reasoning: list[bool] = field(default_factory=list)
    #: the lines right below a marked line, up to a blank line (where a model may go on
    #: listing orders, "Action: A north" then "B east")
    below: list[str] = field(default_factory=list)
    #: the lines of later paragraphs, up to the next label (where a model may take the
    #: order back: "Action: north", a blank line, "Wait, I meant east")
    after: list[str] = field(default_factory=list)

    def add_after(self, text: str) -> None:
        """Text after a marked part: its first paragraph is `below`, the rest `after`."""
        first, *rest = _BLANK_LINE.split(text, maxsplit=1)
        self.below += first.splitlines()
        self.after += "".join(rest).splitlines()


def _labels(text: str, start: int = 0) -> Iterator[re.Match[str]]:
    """The `Action:` labels of `text` from `start` on; a label with no colon only as a
    markdown heading ("### Action", the command below)."""
    for match in _ACTION_LINE.finditer(text, start):
        if match.group("content") is not None or "#" in match.group("lead"):
            yield match


def action_lines(text: str) -> Marked:
    """The `Action: <command>` lines of `text` and what is written after each, up to the
    next label (`Marked`). Under an empty `Action:` the lines that follow, up to a blank
    line, are its content."""
    marked = Marked()
    matches = list(_labels(text))
    for match, following in itertools.zip_longest(matches, matches[1:]):
        content = match.group("content") or ""
        stop = following.start() if following else len(text)  # each stretch read once
        if content.strip(_EDGE_NOISE):
            marked.add_after(text[match.end() : stop])
        else:
            start = match.end()
            while text.startswith("\n", start):
                start += 1
            blank = _BLANK_LINE.search(text, start, stop)
            content = text[start : blank.start() if blank else stop]
            marked.add_after(text[blank.start() : stop] if blank else "")
        marked.parts.append(content)
        label = " ".join(match.group("label").lower().split())
        marked.reasoning.append(label in _REASONING_LABELS)
    return marked


def _words(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(value)
    return None


@dataclass(frozen=True)
class JsonFields:
    """How a scenario's JSON action names its parts beyond the action key: `arguments`,
    keys whose values follow the action's word (`{"action": "support", "cells": ["C2"]}`
    is `support C2`), and `units`, whether a one-letter key is a unit given its own order
    (`{"a": "north"}` is `a north`)."""

    arguments: tuple[str, ...] = ()
    units: bool = False


PLAIN_JSON = JsonFields()


def command_of_json(data: Any, fields: JsonFields) -> str | None:
    """The command a JSON object gives, as command text; None if it names no action.

    Reasoning keys are not read; the scenario's argument keys follow the action; where a
    scenario has units, a one-letter key is one; any other key is kept with its value, so
    the command is rejected rather than read without it. An `arguments` (or `parameters`)
    object is read as the command only where the object names no action or unit itself
    (a tool call's shape, `tool_call`); beside one it is such a key."""
    data = tool_call(data, fields)
    if not isinstance(data, dict):
        return None
    action = next((key for key in ACTION_KEYS if key in data), None)
    units = _units(data, fields)
    if action is None and not units:
        return None
    parts: list[str] = []
    for key in sorted(data, key=lambda k: (k != action, k not in fields.arguments)):
        if key in REASONING_KEYS:
            continue
        words = _words(data[key])
        if words is None:
            words = f"{key} unreadable"  # never a word of any grammar: the reply is rejected
        elif key in units:
            words = f"; {key} {words}"
        elif key != action and key not in fields.arguments:
            words = f"{key} {words}"
        parts.append(words)
    return " ".join(parts).lstrip("; ")


def _arguments(data: dict[Any, Any]) -> dict[Any, Any] | None:
    """A tool call's `arguments` (or `parameters`) object, also written as a JSON string."""
    arguments = data.get("arguments", data.get("parameters"))
    if isinstance(arguments, str):
        try:
            arguments = load_json(arguments)
        except RepeatedKey:
            raise  # two values for one key: rejected, not read as text
        except (ValueError, RecursionError):
            return None
    return arguments if isinstance(arguments, dict) else None


def tool_call(data: Any, fields: JsonFields) -> Any:
    """A tool call as the object it calls with: the one call of `{"tool_calls": [...]}`
    (several are a word no grammar reads, so the reply is rejected), the `function` of
    an OpenAI call, and `{"name": ..., "arguments": {...}}` as its arguments, where the
    tool's name is the action unless they name one (`act`, `take_action`: a wrapper;
    `{"name": "move", "arguments": {"direction": "north"}}` is `move north`). Any other
    object is returned as it is."""
    if not isinstance(data, dict):
        return data
    calls = data.get("tool_calls")
    if isinstance(calls, list) and len(data) == 1:
        return tool_call(calls[0], fields) if len(calls) == 1 else {"action": "several tool calls"}
    if isinstance(data.get("function"), dict) and set(data) <= {"id", "type", "function"}:
        return tool_call(data["function"], fields)
    arguments = _arguments(data)
    if arguments is None or any(key in data for key in ACTION_KEYS) or _units(data, fields):
        return data
    if any(key in arguments for key in ACTION_KEYS) or _units(arguments, fields):
        return arguments
    name = data.get("name")
    return {"action": name, **arguments} if isinstance(name, str) else arguments


def _units(data: dict[Any, Any], fields: JsonFields) -> list[str]:
    """The keys of an object that are units given their own orders (`{"a": "north"}`),
    where the scenario has units: its one-letter keys."""
    return [key for key in data if fields.units and isinstance(key, str) and len(key) == 1]


def afterthoughts(data: Any, fields: JsonFields) -> list[str]:
    """Reasoning a JSON object writes after its action (`{"action": "north", "reasoning":
    "wait, I meant east"}`): what follows the command, read as a later paragraph is."""
    data = tool_call(data, fields)
    if not isinstance(data, dict):
        return []
    keys = list(data)
    first = next(
        (i for i, key in enumerate(keys) if key in ACTION_KEYS or key in _units(data, fields)), None
    )
    if first is None:
        return []
    return [
        data[key]
        for key in keys[first + 1 :]
        if key in REASONING_KEYS and isinstance(data[key], str)
    ]


def json_command(text: str, fields: JsonFields) -> tuple[str, int, int, list[str]] | None:
    """The command of the one JSON object in `text` (outside tool-call tags), with the
    object's span and its `afterthoughts`; None if there is none or it names no action.
    Raises `RepeatedKey` for a key the object (or its arguments) gives twice with
    different values."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None
    body = _TOOL_TAGS.sub(" ", text[start : end + 1])
    try:
        # strict=False: a raw line break inside a string (models write them in
        # `reasoning`) leaves the object readable, so its action is what is read
        data = load_json(body, strict=False)
    except RepeatedKey:
        raise  # two values for one key: rejected, not read as text
    except (ValueError, RecursionError):
        return None
    command = command_of_json(data, fields)
    return None if command is None else (command, start, end + 1, afterthoughts(data, fields))


def marked_commands(cleaned: str, fields: JsonFields, valid: Sequence[str] = ()) -> Marked:
    """The command parts a reply marks (module docstring; empty if it marks none) and
    what is written after them (`Marked`). After a JSON action, its `afterthoughts` and
    the text up to the next label are what follows it. A JSON key given twice with
    different values raises `ParseError` (with `valid`, the scenario's commands)."""
    try:
        found = json_command(cleaned, fields)
    except RepeatedKey as exc:
        raise ParseError(exc.reason, valid) from None
    if found is None:
        return action_lines(cleaned)
    command, start, end, thoughts = found
    labels = action_lines(cleaned[:start] + "\n" + cleaned[end:])
    first_label = next(_labels(cleaned, end), None)
    marked = Marked([command], [False], after=[line for t in thoughts for line in t.splitlines()])
    marked.add_after(
        _TOOL_TAGS.sub(" ", cleaned[end : first_label.start() if first_label else None])
    )
    marked.parts += labels.parts
    marked.reasoning += labels.reasoning
    marked.below += labels.below
    marked.after += labels.after
    return marked
