"""Prompt texts: the shared system prompt, each scenario's rules (`<cli-name>.md`) and the
answer format they all end with (`answer-format.md`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from typing import Any


@cache
def _read(filename: str) -> str:
    resource = files(__name__) / filename
    if not resource.is_file():
        raise FileNotFoundError(f"no prompt file {filename!r} in textenvs.prompts")
    return resource.read_text(encoding="utf-8").strip() + "\n"


def rules_text(env_name: str) -> str:
    """The rules of one scenario (or of a variant, named as `prompt_name` names it), as a
    player (person or LLM) is told them, ending with the answer format every scenario
    shares (`answer-format.md`)."""
    return _read(f"{env_name}.md") + "\n" + _read("answer-format.md")


def prompt_name(env_name: str, options: Mapping[str, Any] | None = None) -> str:
    """The rules prompt of an episode: `<env>-withheld` for a scenario's withheld-knowledge
    variant (reset option `withheld`) when it has its own rules text, else `<env>`."""
    variant = f"{env_name}-withheld"
    asked = bool(options) and options.get("withheld") is True  # type: ignore[union-attr]
    if asked and (files(__name__) / f"{variant}.md").is_file():
        return variant
    return env_name


def system_prompt(env_name: str) -> str:
    """The system message for an LLM agent: how to play, then the scenario's rules."""
    return _read("system.md").replace("{rules}", rules_text(env_name).strip())
