"""Replies held to a JSON schema: `--action-mode json`, as model servers with constrained
decoding (llama.cpp, vLLM, SGLang) answer a `response_format`.

`llguidance` (the constrained-decoding library of llama.cpp and vLLM) compiles the schema
and, token by token, says which tokens keep the reply inside it. Compact JSON (no
whitespace between tokens of the object) keeps replies short.
"""

from __future__ import annotations

import json
from typing import Any

import llguidance
import llguidance.hf
import torch
from transformers.tokenization_utils_base import PreTrainedTokenizerBase


class JsonGrammar:
    """One reply's progress through a JSON schema (a `generation.Grammar`)."""

    def __init__(self, matcher: llguidance.LLMatcher) -> None:
        self.matcher = matcher

    def allowed(self, vocabulary: int) -> torch.Tensor:
        per_token = self._allowed_by_tokenizer()
        mask = torch.zeros(vocabulary, dtype=torch.bool)
        size = min(vocabulary, len(per_token))
        mask[:size] = per_token[:size]
        return mask

    def consume(self, token: int) -> None:
        if not self.matcher.consume_token(token):
            raise ValueError(f"token {token} is outside the schema: {self.matcher.get_error()}")

    def forced(self) -> list[int]:
        """The tokens the schema leaves no choice about from here (the `{"action":"`
        before a command, the `"}` and end of turn after it), consumed."""
        taken: list[int] = []
        while ids := list(self.matcher.compute_ff_tokens()):
            for token in ids:
                self.consume(token)
            taken += ids
        if self.matcher.is_stopped():  # the object is complete: the end of turn is all
            (ends,) = self._allowed_by_tokenizer().nonzero(as_tuple=True)
            if len(ends) == 1:
                self.consume(int(ends[0]))
                taken.append(int(ends[0]))
        return taken

    def _allowed_by_tokenizer(self) -> torch.Tensor:
        # one byte per token of the tokenizer: 0 (not allowed) or 200 (allowed)
        bias = bytearray(self.matcher.compute_logit_bias())
        return torch.frombuffer(bias, dtype=torch.uint8) > 0


class JsonGrammars:
    """Makes `JsonGrammar`s for one tokenizer (reading its vocabulary once)."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        self.tokenizer = llguidance.hf.from_tokenizer(tokenizer)
        self._compiled: dict[str, str] = {}

    def for_schema(self, schema: dict[str, Any]) -> JsonGrammar:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._compiled:
            grammar = llguidance.LLMatcher.grammar_from_json_schema(
                schema, defaults={"whitespace_flexible": False}
            )
            failed, problems = llguidance.LLMatcher.validate_grammar_with_warnings(
                grammar, self.tokenizer
            )
            if failed:
                raise ValueError(f"the JSON schema cannot be used: {problems[0]}")
            self._compiled[key] = grammar
        matcher = llguidance.LLMatcher(self.tokenizer, self._compiled[key])
        return JsonGrammar(matcher)
