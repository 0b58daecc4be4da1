"""Prompt texts: the shared system prompt, each scenario's rules (`<cli-name>.md`) and the
answer format they all end with (`answer-format*.md`).

What an agent is told must be true where it plays, so part of a text depends on how it
plays (`Mode`): whether episodes follow one another in one conversation (`--trials K`),
whether an unreadable reply is sent back before it is stepped, and how replies are
written. A text marks such parts with lines of their own:

    <!-- if continued -->        kept only when the condition holds
    ...
    <!-- end -->
    <!-- if not continued -->    kept only when it does not
    ...
    <!-- end -->

Conditions: `continued` (episodes continue in one conversation, each after the first
opening with how the last one ended), `reasks` (an unreadable reply is sent back with
the reason first) and `reasoning` (json mode: a `reasoning` field before the command).
Placeholders: `{reasks}` ("once", "twice", "up to 3 times") and `{example}` (json mode).
`rules_text` and `system_prompt` are the only way a text leaves this package, so every
harness gets the text of its own mode.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any, Literal

Answer = Literal["text", "tools", "json"]
CONDITIONS = ("continued", "reasks", "reasoning")
_MARKER = re.compile(r"<!-- (?:if (?P<negated>not )?(?P<condition>[a-z]+)|(?P<end>end)) -->")


@dataclass(frozen=True)
class Mode:
    """How an agent plays, as far as what it is told depends on it. The default is one
    episode per conversation, replies stepped as they come, in text."""

    #: episodes follow one another in one conversation (`--trials K`, K > 1), each after
    #: the first opening with how the last one ended
    continued: bool = False
    #: times an unreadable reply is sent back with the reason before one is stepped
    reasks: int = 0
    #: how a reply carries its command: an `Action:` line, a function call, a JSON object
    answer: Answer = "text"
    #: json mode: a sample reply, and whether it starts with a `reasoning` field
    example: str = ""
    reasoning: bool = False

    def conditions(self) -> frozenset[str]:
        held = {
            "continued": self.continued,
            "reasks": self.reasks > 0,
            "reasoning": self.answer == "json" and self.reasoning,
        }
        return frozenset(name for name, holds in held.items() if holds)


@cache
def _read(filename: str) -> str:
    resource = files(__name__) / filename
    if not resource.is_file():
        raise FileNotFoundError(f"no prompt file {filename!r} in textenvs.prompts")
    return resource.read_text(encoding="utf-8").strip() + "\n"


def resolve(text: str, mode: Mode) -> str:
    """`text` with its marked parts kept or dropped for `mode` and its placeholders
    filled in. A marker that is unknown, unclosed or not on a line of its own is a
    `ValueError` (a prompt file's mistake, found by the tests on every file)."""
    held = mode.conditions()
    kept: list[str] = []
    open_blocks: list[bool] = []
    for line in text.splitlines():
        marker = _MARKER.fullmatch(line.strip())
        if marker is None:
            if "<!--" in line:
                raise ValueError(f"a prompt marker must stand on a line of its own: {line!r}")
            if all(open_blocks):
                kept.append(line)
        elif marker["end"]:
            if not open_blocks:
                raise ValueError("a prompt text closes a block it never opened")
            open_blocks.pop()
        else:
            if marker["condition"] not in CONDITIONS:
                raise ValueError(f"unknown prompt condition {marker['condition']!r}")
            open_blocks.append((marker["condition"] in held) != bool(marker["negated"]))
    if open_blocks:
        raise ValueError("a prompt text leaves a block open")
    times = {1: "once", 2: "twice"}.get(mode.reasks, f"up to {mode.reasks} times")
    return "\n".join(kept).replace("{reasks}", times).replace("{example}", mode.example)


def answer_format(mode: Mode) -> str:
    """The paragraph every rules text ends with: how a reply carries its command."""
    name = "answer-format.md" if mode.answer == "text" else f"answer-format-{mode.answer}.md"
    return resolve(_read(name), mode).strip() + "\n"


def rules_text(name: str, mode: Mode = Mode()) -> str:
    """The rules of one scenario (or of a variant, named as `prompt_name` names it) as a
    player (person or LLM) playing in `mode` is told them, ending with the answer format.
    Without a mode: one episode, replies stepped as they come, in text (what `textenvs
    rules`, the service and a person at `textenvs play` get)."""
    return resolve(_read(f"{name}.md"), mode).strip() + "\n\n" + answer_format(mode)


def prompt_name(env_name: str, options: Mapping[str, Any] | None = None) -> str:
    """The rules prompt of an episode: `<env>-withheld` for a scenario's withheld-knowledge
    variant (reset option `withheld`) when it has its own rules text, else `<env>`."""
    variant = f"{env_name}-withheld"
    asked = bool(options) and options.get("withheld") is True  # type: ignore[union-attr]
    if asked and (files(__name__) / f"{variant}.md").is_file():
        return variant
    return env_name


def system_prompt(name: str, mode: Mode = Mode()) -> str:
    """The system message for an LLM agent playing in `mode`: how to play, then the rules
    (`rules_text`) of the scenario or variant `name`."""
    frame = resolve(_read("system.md"), mode)
    return frame.replace("{rules}", rules_text(name, mode).strip()).strip() + "\n"
