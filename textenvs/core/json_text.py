"""Loading JSON that a model wrote: a key given twice is two values.

`json.loads` keeps the last value of a key an object gives twice, so `{"action":
"east", "action": "mark"}` would run `mark` although the reply also says `east`. Every
place that reads JSON from a reply (`core.answer_format`, the `llm` agent's json and
tools modes, the checkpoint server's tool calls) loads it with `load_json`, which
rejects a key repeated with a different value, at any depth, naming the key; the same
value written twice says one thing and is kept.
"""

from __future__ import annotations

import json
from typing import Any

from textenvs.core.parse_error import ParseError, excerpt


class RepeatedKey(ParseError):
    """A JSON object gives one key two different values. A `ParseError`, so its reason
    reaches the agent as the reason its reply was not read."""

    def __init__(self, key: str, first: Any, second: Any) -> None:
        self.key = key
        super().__init__(
            f"the JSON gives the key '{excerpt(key)}' twice, with different values "
            f"({excerpt(_shown(first))} and {excerpt(_shown(second))}), so it says two "
            "things: give each key once, with the one value you mean."
        )


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, sort_keys=True)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict, refusing a key given twice with different values."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out and _shown(out[key]) != _shown(value):  # true is not 1 here
            raise RepeatedKey(key, out[key], value)
        out[key] = value
    return out


def load_json(text: str | bytes, *, strict: bool = True) -> Any:
    """`json.loads(text, strict=strict)`, but a key given twice with different values
    raises `RepeatedKey` (a `ParseError`, and so a `ValueError`: a caller that treats
    unreadable JSON as no JSON must catch it first). Other errors are json's own."""
    return json.loads(text, strict=strict, object_pairs_hook=_unique_keys)
