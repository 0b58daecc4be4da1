"""Function calling on the checkpoint server: a request's `tools` are rendered by the
model's own chat template, and the `<tool_call>` blocks of its reply are returned as
OpenAI `tool_calls`.

The form is the one ChatML templates that render tools write (Qwen2.5's, TRL's
`qwen2_5_chat_template`, which `textenvs.adapters.trl` trains with, Hermes): a call is
`<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`. A template that does
not render tools would hide them from the model, so such a model is refused tools.
`tool_choice` is not enforced (no reply is held to a call): only "auto" is accepted.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from typing import Any

from textenvs.core.json_text import RepeatedKey, load_json
from textenvs.inference.chat import ChatTokens, Message, TemplateError

CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_PROBE_TOOL = {"type": "function", "function": {"name": "probe", "parameters": {}}}


class ToolRequestError(ValueError):
    """A request's tools cannot be served (a 400 that says why)."""


def renders_tools(chat: ChatTokens) -> bool:
    """Whether the chat template shows the model the tools a request declares."""
    probe = [{"role": "user", "content": "u"}]
    plain = chat.render(probe, reply_next=True)
    return chat.render(probe, reply_next=True, tools=[_PROBE_TOOL]) != plain


def call_text(
    chat: ChatTokens, name: str, arguments: dict[str, Any], tools: list[Message] | None = None
) -> str:
    """The text of a reply that calls `name(**arguments)` and nothing else, as the chat
    template writes it in an earlier turn (Qwen 2.5's: `<tool_call>\\n{"name": ...,
    "arguments": {...}}\\n</tool_call>`): what a model that calls the tool writes."""
    user = {"role": "user", "content": "u"}
    call = {"type": "function", "function": {"name": name, "arguments": arguments}}
    assistant = {"role": "assistant", "content": "", "tool_calls": [call]}
    opening = chat.render([user], reply_next=True, tools=tools)
    rendered = chat.render([user, assistant], reply_next=False, tools=tools)
    closer = chat.reply_closer
    if not rendered.startswith(opening) or not rendered.endswith(closer):
        raise TemplateError("the chat template does not write a tool call where the reply starts")
    text = rendered[len(opening) : len(rendered) - len(closer)]
    if name not in text:
        raise TemplateError("the chat template does not render tool calls")
    return text


def requested(body: dict[str, Any], *, rendered: bool) -> list[dict[str, Any]] | None:
    """The `tools` a request body declares (None: none), checked to be functions with
    names, for a template that renders them (`rendered`)."""
    tools, tool_choice = body.get("tools"), body.get("tool_choice")
    if not tools:
        return None
    if not rendered:
        raise ToolRequestError("tools: this model's chat template does not render tools")
    if tool_choice not in (None, "auto"):
        raise ToolRequestError(f"tool_choice {tool_choice!r}: only 'auto' (not enforced here)")
    if not isinstance(tools, list) or not all(
        isinstance(tool, dict)
        and tool.get("type") == "function"
        and isinstance((tool.get("function") or {}).get("name"), str)
        for tool in tools
    ):
        raise ToolRequestError("tools: a list of {'type': 'function', 'function': {'name': ...}}")
    return tools


def template_messages(messages: list[Message]) -> list[Message]:
    """The messages as chat templates read them: a call's `arguments` is a JSON string
    in OpenAI's protocol and a dict in templates (which write it with `tojson`)."""
    return [_with_argument_dicts(m) if m.get("tool_calls") else m for m in messages]


def _with_argument_dicts(message: Message) -> Message:
    calls = []
    for call in message["tool_calls"]:
        function = dict(call.get("function") or {})
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            # else shown as the text sent (a key given twice too: a dict would keep one)
            with contextlib.suppress(json.JSONDecodeError, RepeatedKey):
                function["arguments"] = load_json(arguments or "{}")
        calls.append({**call, "function": function})
    return {**message, "tool_calls": calls}


def reply_message(
    text: str, finish_reason: str, tools: list[dict[str, Any]] | None
) -> tuple[Message, str]:
    """The assistant message of a reply and why it ended: with tools, its calls apart
    from its text, and "tool_calls" when it ended after calling."""
    content, calls = split_reply(text) if tools else (text, [])
    if not calls:
        return {"role": "assistant", "content": text}, finish_reason
    ended = "tool_calls" if finish_reason == "stop" else finish_reason
    return {"role": "assistant", "content": content, "tool_calls": calls}, ended


def split_reply(text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """A reply's text outside its calls (None if there is none) and its calls, in
    OpenAI's form. A block that is not a JSON object with a `name`, or that gives a key
    twice with different values, stays in the text, for the client to read as it would
    any unreadable reply."""
    calls: list[dict[str, Any]] = []
    kept: list[str] = []
    last = 0
    for match in CALL.finditer(text):
        call = _call(match.group(1))
        if call is None:
            continue
        kept.append(text[last : match.start()])
        last = match.end()
        calls.append(call)
    kept.append(text[last:])
    content = "".join(kept).strip()
    return (content or None), calls


def _call(body: str) -> dict[str, Any] | None:
    try:
        parsed = load_json(body)
    except (json.JSONDecodeError, RepeatedKey):
        # a key given twice would lose a value once re-serialised: the block stays in
        # the text, where the client's reader rejects it naming the key
        return None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("name"), str):
        return None
    arguments = parsed.get("arguments", {})
    return {
        "id": f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {
            "name": parsed["name"],
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        },
    }
