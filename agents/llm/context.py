"""Any context window: the prompt budget under what the server holds, and a way out when
a prompt still does not fit.

- **Learned at preflight** (`window_from_models`, `window_from_props`): vLLM and SGLang
  give `max_model_len` in `/v1/models`; llama.cpp's `llama-server` gives its context per
  slot in `/props` (`default_generation_settings.n_ctx`) and may give `meta.n_ctx` in
  `/v1/models`; `--context-window` says it outright. The prompt budget is then set under
  it with room for the reply (`budget_under`).
- **Adapted on an error**: when a server still answers that the prompt exceeds its
  context (a 400 of the context-length class, `faults.is_context_overflow`), the agent
  shrinks the budget to what the error says fits (`budget_after_overflow`), cuts the
  history once, records the event and sends the turn again. Only when nothing is left to
  cut (the rules and the observation alone do not fit) does the episode end, with outcome
  `context_overflow`; preflight says so before any episode starts (`fits`).
"""

from __future__ import annotations

import re
from typing import Any

#: room left for the agent's estimate of a new turn's tokens (it learns the ratio from
#: the previous prompt): the budget is at most 8/9 of what the window holds after the
#: reply (`local.context_size` leaves the embedded model's server more room still)
ESTIMATE_HEADROOM = 9 / 8
#: reply room when no reply limit is set and the server's context is known
DEFAULT_REPLY_ROOM = 1024
#: the budget after an overflow that named no numbers: this share of the prompt that
#: failed
SHRINK = 0.75
#: tokens per character assumed when checking that the rules and one observation fit
#: (SmolLM2's tokenizer makes 0.26-0.34 of the first prompts of the five scenarios)
FIT_TOKENS_PER_CHAR = 0.35

_LIMIT = re.compile(
    r"(?:maximum context length|context (?:window|length|size)|n_ctx)\D{0,40}?(\d{3,9})", re.I
)
_REQUESTED = re.compile(
    r"(?:resulted in|requested|request has|prompt (?:has|is)|you sent)\D{0,12}?(\d{2,9})"
    r"(?:\s*tokens?)?(?:\s*\((\d+) in the messages)?",
    re.I,
)


def budget_under(window: int, reply_tokens: int) -> int:
    """The prompt budget for a server context of `window` tokens and replies of up to
    `reply_tokens` (at least 1)."""
    return max(1, int((window - reply_tokens) / ESTIMATE_HEADROOM))


def window_from_models(models: list[Any], model: str) -> int | None:
    """The context length a `/v1/models` listing states for `model` (vLLM/SGLang
    `max_model_len`, llama.cpp `meta.n_ctx`); None when it says nothing."""
    entries = [_as_dict(m) for m in models]
    chosen = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1 else [])
    for entry in chosen:
        for value in (entry.get("max_model_len"), (entry.get("meta") or {}).get("n_ctx")):
            if isinstance(value, int) and value > 0:
                return value
    return None


def window_from_props(props: Any) -> int | None:
    """llama.cpp's `/props`: the context of one slot (the server's context divided among
    its parallel slots), which is what one request may fill."""
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    for value in ((settings or {}).get("n_ctx") if isinstance(settings, dict) else None,
                  props.get("n_ctx")):  # fmt: skip
        if isinstance(value, int) and value > 0:
            return value
    return None


def props_urls(base_url: str) -> list[str]:
    """Where llama.cpp serves `/props`: at the server's root (the base URL without its
    `/v1`), and under the base URL."""
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    return list(dict.fromkeys([f"{root}/props", f"{base}/props"]))


def numbers_in_error(message: str, body: Any = None) -> tuple[int | None, int | None]:
    """(the context limit, the prompt's tokens) an overflow error names, each None when
    absent: llama.cpp's fields `n_ctx` / `n_prompt_tokens`, else the OpenAI/vLLM wording
    ("maximum context length is 8192 tokens. However, you requested 8384 tokens (8288 in
    the messages, 96 in the completion)")."""
    error = body.get("error", body) if isinstance(body, dict) else None
    limit = prompt = None
    if isinstance(error, dict):
        limit = _int(error.get("n_ctx"))
        prompt = _int(error.get("n_prompt_tokens"))
    if limit is None and (match := _LIMIT.search(message)):
        limit = int(match.group(1))
    if prompt is None and (match := _REQUESTED.search(message)):
        prompt = int(match.group(2) or match.group(1))
    return limit, prompt


def budget_after_overflow(
    *, budget: int, estimate: int, limit: int | None, reply_tokens: int
) -> int:
    """The prompt budget after a prompt estimated at `estimate` tokens overflowed: under
    the limit the server named, else a share of the failed prompt; never above `budget`."""
    fitted = budget_under(limit, reply_tokens) if limit else int(estimate * SHRINK)
    return max(1, min(budget, fitted, int(estimate * 0.95)))


def fits(first_prompt_chars: int, budget: int) -> bool:
    """Whether a prompt of the rules and one observation (`first_prompt_chars`, as
    compact JSON) fits the budget at a dense tokenizer's rate."""
    return first_prompt_chars * FIT_TOKENS_PER_CHAR <= budget


def _as_dict(entry: Any) -> dict[str, Any]:
    if isinstance(entry, dict):
        return entry
    data = {"id": getattr(entry, "id", None)}
    data.update(getattr(entry, "model_extra", None) or {})
    return data


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and value > 0 else None
