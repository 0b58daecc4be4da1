"""Reading one reply of the `llm` agent: a command, or why there is none.

Text mode reads the visible reply with the scenario's parser; tools mode reads the `act`
call's arguments through the action schema, or a single `command` text with the parser
(the `act(command)` tool of `textenvs.adapters.trl`, which a model trained with TRL
calls); json mode reads the JSON object through the action schema (`json_mode.py`). A
reply that carries nothing to read is classified as a fault (`faults.reply_fault`). Also
here: the token figures a server reports for a reply.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from textenvs.agents.llm import faults, json_mode
from textenvs.agents.llm.history import recap_command
from textenvs.core.json_text import RepeatedKey, load_json
from textenvs.core.parsing import ParseError
from textenvs.episodes.protocol import EpisodeContext

TOOL_NAME = "act"
#: the one argument of `textenvs.adapters.trl`'s `act(command)` (no action schema has it)
COMMAND_ARGUMENT = "command"

Message = dict[str, Any]


@dataclass
class Reading:
    """One reply, read: a command, or why there is none."""

    command: str | None
    raw: str
    assistant: Message
    problem: str | None = None  # parse error or reply-fault text, sent back on a re-ask
    fault: str | None = None  # faults.reply_fault() class
    tool_ids: list[str] = field(default_factory=list)
    #: the reply as the trajectory records it
    entry: dict[str, Any] = field(default_factory=dict)


def read_reply(completion: Any, mode: str, context: EpisodeContext) -> Reading:
    """Read one completion (an OpenAI SDK object) in the agent's action mode."""
    choice = completion.choices[0] if getattr(completion, "choices", None) else None
    message = choice.message if choice is not None else None
    extra = (message.model_extra or {}) if message is not None else {}
    reasoning: list[str] = []
    for key in ("reasoning_content", "reasoning"):
        if isinstance(extra.get(key), str) and extra[key].strip():
            reasoning.insert(0, extra[key].strip())
    calls = list((message.tool_calls if message is not None else None) or [])
    return read_message(
        (message.content if message is not None else None) or "",
        mode,
        context,
        calls=[c for c in calls if getattr(c, "function", None) is not None],
        finish_reason=choice.finish_reason if choice is not None else None,
        refusal=getattr(message, "refusal", None),
        reasoning=reasoning,
        reasoning_tokens=reasoning_tokens(completion),
    )


def read_message(
    content: str,
    mode: str,
    context: EpisodeContext,
    *,
    calls: Sequence[Any] = (),
    finish_reason: str | None = None,
    refusal: str | None = None,
    reasoning: Sequence[str] = (),
    reasoning_tokens: int = 0,
) -> Reading:
    """Read one reply from its parts: its text `content` (with any `<think>` part), its
    tool calls, why it stopped, a refusal, and reasoning the server sent apart."""
    visible, thoughts = faults.split_think(content)
    thoughts = [*reasoning, *thoughts]
    fault = faults.reply_fault(
        visible=visible,
        has_tool_call=bool(calls),
        refusal=refusal,
        finish_reason=finish_reason,
        reasoning=bool(thoughts) or reasoning_tokens > 0,
    )
    assistant: Message = {"role": "assistant", "content": visible}
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
    reading = Reading(None, raw, assistant, fault=fault, tool_ids=[c.id for c in calls])
    if fault is not None:
        reading.problem = faults.REASK_FOR_FAULT[fault]
    elif calls:
        reading.command, reading.problem = read_tools(calls, context)
    elif mode == "json":
        reading.command, reading.problem, thought = json_mode.read(visible, context)
        thoughts += [thought] if thought.strip() else []
    else:
        reading.command, reading.problem = read_text(visible, context)
    reading.entry = {
        "content": content,
        "reasoning": "\n\n".join(thoughts) or None,
        "tool_calls": assistant.get("tool_calls"),
        "finish_reason": finish_reason,
        "fault": fault,
        "error": reading.problem,
    }
    return reading


def read_text(visible: str, context: EpisodeContext) -> tuple[str | None, str | None]:
    try:
        action = context.parse(visible)
    except ParseError as exc:
        return None, f"Your command could not be read: {exc.message}"
    return recap_command(visible, action, context.parse), None


def read_tools(calls: Sequence[Any], context: EpisodeContext) -> tuple[str | None, str | None]:
    commands = []
    for call in calls:
        if call.function.name != TOOL_NAME:
            return None, f"Unknown function {call.function.name!r}: call {TOOL_NAME!r}."
        try:
            arguments = load_json(call.function.arguments or "{}")
            if _is_command_call(arguments):
                command, problem = read_text(arguments[COMMAND_ARGUMENT], context)
                if command is None:
                    return None, problem
            else:
                command = context.command_for(arguments)
                context.parse(command)
        except RepeatedKey as exc:
            return None, f"The function arguments cannot be read as an action: {exc.message}"
        except (json.JSONDecodeError, TypeError) as exc:
            return None, f"The function arguments are not a JSON object: {exc}"
        except ValidationError as exc:
            return None, f"The function arguments do not match the schema: {json_mode.brief(exc)}"
        except ParseError as exc:
            return None, f"Your command could not be read: {exc.message}"
        commands.append(command)
    if len(set(commands)) > 1:
        return None, f"Call {TOOL_NAME!r} once per reply, not with {len(commands)} commands."
    return commands[0], None


def _is_command_call(arguments: Any) -> bool:
    return (
        isinstance(arguments, dict)
        and set(arguments) == {COMMAND_ARGUMENT}
        and isinstance(arguments[COMMAND_ARGUMENT], str)
    )


def visible(raw: str) -> str:
    return faults.split_think(raw)[0]


# ----- what the server says a reply cost ------------------------------------------------


def add_usage(usage: dict[str, int], completion: Any) -> None:
    data = getattr(completion, "usage", None)
    if data is None:
        return
    for key in ("prompt_tokens", "completion_tokens"):
        usage[key] = usage.get(key, 0) + int(getattr(data, key, 0) or 0)
    usage["reasoning_tokens"] = usage.get("reasoning_tokens", 0) + reasoning_tokens(completion)


def prompt_usage(completion: Any) -> dict[str, int]:
    """The server's prompt count and the part it served from its cache (0 when a server
    does not say): OpenAI's `prompt_tokens_details.cached_tokens` (vLLM, SGLang), else
    llama.cpp's `timings.cache_n`."""
    data = getattr(completion, "usage", None)
    details = getattr(data, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0)
    timings = (getattr(completion, "model_extra", None) or {}).get("timings")
    if not cached and isinstance(timings, dict):
        cached = int(timings.get("cache_n") or 0)
    return {"prompt_tokens": int(getattr(data, "prompt_tokens", 0) or 0), "cached_tokens": cached}


def reasoning_tokens(completion: Any) -> int:
    details = getattr(getattr(completion, "usage", None), "completion_tokens_details", None)
    return int(getattr(details, "reasoning_tokens", 0) or 0)
