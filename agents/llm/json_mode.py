"""The constrained action mode (`action_mode = "json"`): the reply is a JSON object that
the server must write to the scenario's action schema.

The request carries the schema as a `response_format`, so a server with constrained
decoding (llama.cpp, vLLM, SGLang, OpenAI) can only produce a well-formed action: even a
135M model then answers every turn with something the env can read. The object is the
action's own fields with a `reasoning` string first (bounded in length), so a model may
still think before it commits:

    {"reasoning": "the signal rose to the east", "action": "east"}

Servers take one of two forms of `response_format`:

- `{"type": "json_schema", "json_schema": {"name": ..., "schema": ...}}`: OpenAI, vLLM,
  SGLang, llama.cpp's own `llama-server`;
- `{"type": "json_object", "schema": ...}`: llama-cpp-python's server (the `[local]` extra),
  which answers the first form with a 500 naming `response_format`.

`FormMemory` holds which form an endpoint takes (set by preflight, or learned from the
first 4xx/5xx whose message names `response_format`), per base URL for the process, so
one agent's discovery spares the others the failed request.

The reply is read by the same invariant as text: the JSON is validated against the
action schema (a value the schema cannot hold, or a field it does not have, is a
rejection with a re-ask, never dropped), then turned into the command text and read by the
scenario's parser.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from textenvs.core.json_text import RepeatedKey, load_json
from textenvs.core.parsing import ParseError

Form = Literal["json_schema", "json_object"]
FORMS: tuple[Form, ...] = ("json_schema", "json_object")
REASONING = "reasoning"
SCHEMA_NAME = "action"


def response_schema(action_schema: type[BaseModel], reasoning_chars: int) -> dict[str, Any]:
    """The action schema a decoder writes to (`decoding_schema`: one object, or one variant
    per kind of action), with a bounded `reasoning` string first in each object (none when
    `reasoning_chars` is 0, or when the action has a field of that name)."""
    decoding = getattr(action_schema, "decoding_schema", action_schema.model_json_schema)
    schema = decoding()
    schema.pop("title", None)
    if not thinks_first(action_schema, reasoning_chars):
        return schema
    for variant in schema.get("anyOf", [schema]):
        _think_first(variant, reasoning_chars)
    return schema


def thinks_first(action_schema: type[BaseModel], reasoning_chars: int) -> bool:
    """Whether the reply object starts with a `reasoning` field (`response_schema`)."""
    declared = action_schema.model_json_schema().get("properties", {})
    return reasoning_chars > 0 and REASONING not in declared


def _think_first(schema: dict[str, Any], reasoning_chars: int) -> None:
    # required and first: grammar converters emit required properties first, so the
    # thought comes before the action (an empty string is allowed: thinking is optional)
    thought = {"type": "string", "maxLength": reasoning_chars}
    schema["properties"] = {REASONING: thought, **schema.get("properties", {})}
    schema["required"] = [REASONING, *schema.get("required", [])]
    schema["additionalProperties"] = False


def response_format(schema: dict[str, Any], form: Form) -> dict[str, Any]:
    """`schema` as the `response_format` field of a request in the given form."""
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema}}


def example(action_schema: type[BaseModel], reasoning: bool = True) -> str:
    """A sample reply for the rules' answer format: the first value of the schema's first
    field, after a `reasoning` field when the reply has one (the answer format tells the
    format; the observation says which commands are valid)."""
    schema = action_schema.model_json_schema()
    fields: dict[str, Any] = {REASONING: "..."} if reasoning else {}
    for name, spec in schema.get("properties", {}).items():
        options = spec.get("enum") or next(
            (s.get("enum") for s in spec.get("anyOf", []) if s.get("enum")), None
        )
        if options:
            fields[name] = options[0]
            break
    return json.dumps(fields)


def reply_tokens(schema: dict[str, Any]) -> int:
    """A reply limit sized to the schema: the longest object it allows (the `reasoning`
    field at its limit) at one token per two characters, and some slack for spacing
    (constrained decoding ends at the closing brace: this caps only a model that fills
    every field)."""
    text = json.dumps(_longest(schema, schema.get("$defs", {})))
    return 16 + math.ceil(len(text) / 2)


def _longest(spec: dict[str, Any], defs: dict[str, Any]) -> Any:
    """A value of the longest form `spec` allows (enough for a size estimate)."""
    if "$ref" in spec:
        return _longest(defs.get(spec["$ref"].rsplit("/", 1)[-1], {}), defs)
    if "anyOf" in spec:
        return max((_longest(s, defs) for s in spec["anyOf"]), key=lambda v: len(json.dumps(v)))
    if "enum" in spec:
        return max(spec["enum"], key=lambda v: len(json.dumps(v)))
    kind = spec.get("type")
    if kind == "object":
        return {k: _longest(v, defs) for k, v in spec.get("properties", {}).items()}
    if kind == "array":
        return [_longest(spec.get("items", {}), defs)] * int(spec.get("maxItems", 4))
    if kind == "string":
        return "x" * int(spec.get("maxLength", 8)) if spec.get("maxLength") else "xxxxxxxx"
    return 0


def read(content: str, context: Any) -> tuple[str | None, str | None, str]:
    """(command, problem, reasoning) of a JSON reply: the command when the object holds an
    action the schema and the scenario's parser accept, else why not."""
    try:
        # strict=False: a raw line break inside a string (llama-cpp-python's grammar lets
        # one into `reasoning`) is still the same object; the values meet the schema below
        data = load_json(content, strict=False)
    except RepeatedKey as exc:
        return None, f"Your JSON cannot be read as an action: {exc.message}", ""
    except json.JSONDecodeError as exc:
        return None, f"Your reply is not one JSON object: {exc}", ""
    if not isinstance(data, dict):
        return None, "Your reply is not one JSON object.", ""
    # a reasoning written after the action may take it back ("wait, I meant east"): it is
    # read as a paragraph below an `Action:` line is
    afterwards = REASONING in data and next(iter(data)) != REASONING
    thought = data.pop(REASONING, "") if REASONING not in _fields(context) else ""
    thought = thought if isinstance(thought, str) else json.dumps(thought)
    try:
        command = context.command_for(data)
        context.parse(f"Action: {command}\n\n{thought}" if afterwards else command)
    except ValidationError as exc:
        return None, f"Your JSON does not match the action schema: {brief(exc)}", thought
    except (TypeError, ValueError) as exc:
        return None, f"Your JSON cannot be read as an action: {exc}", thought
    except ParseError as exc:
        return None, f"Your command could not be read: {exc.message}", thought
    return command, None, thought


def _fields(context: Any) -> set[str]:
    return set(context.action_schema.model_json_schema().get("properties", {}))


def brief(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors())


def names_response_format(message: str) -> bool:
    """A server error that is about the `response_format` field (the other form may work)."""
    lowered = message.lower()
    return "response_format" in lowered or "json_schema" in lowered


class FormMemory:
    """Which `response_format` form each endpoint takes, for this process (thread-safe).
    Unknown endpoints start with `json_schema`, the form most servers take."""

    def __init__(self) -> None:
        self._forms: dict[str, Form] = {}
        self._lock = threading.Lock()

    def get(self, url: str) -> Form:
        with self._lock:
            return self._forms.get(url.rstrip("/"), "json_schema")

    def set(self, url: str, form: Form) -> None:
        with self._lock:
            self._forms[url.rstrip("/")] = form

    def other(self, url: str, failed: Form) -> Form | None:
        """After `failed` was refused: the form to try next, or None when both failed."""
        url = url.rstrip("/")
        with self._lock:
            if self._forms.get(url) not in (None, failed):
                return self._forms[url]  # another agent already learned it
            if failed == "json_schema":
                self._forms[url] = "json_object"
                return "json_object"
            return None


forms = FormMemory()


def schema_of(response_format_field: dict[str, Any]) -> dict[str, Any]:
    """The schema inside a `response_format` field of either form."""
    if response_format_field.get("type") == "json_object":
        return dict(response_format_field.get("schema", {}))
    return dict(response_format_field.get("json_schema", {}).get("schema", {}))
