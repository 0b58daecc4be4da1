"""Fault policy of the `llm` agent: which API errors are retried, how long to wait, and
how to classify replies that carry no usable command.

Transient (retried with backoff, bounded): 408, 429, 5xx, connection errors, timeouts.
A 400 that says the prompt exceeds the context window ends the episode with
`context_overflow`. Everything else (401, 403, 404, other 400s, malformed responses) is
fatal for the episode: retrying cannot fix it.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import re
import time
from dataclasses import dataclass
from typing import Any, Literal

import openai

TRANSIENT_STATUS = frozenset({408, 429})
_CONTEXT_WORDS = re.compile(
    r"context[_ ](?:length|size)|context window|maximum context|too many tokens|prompt is too long"
    r"|exceeds? (?:the )?(?:available )?context|longer than the (?:model'?s? )?context"
    r"|exceeds? the (?:model'?s? )?(?:maximum )?context|input is too long|reduce the length",
    re.IGNORECASE,
)
_THINK_BLOCK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL | re.IGNORECASE)

FaultKind = Literal["transient", "context_overflow", "fatal"]


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    message: str
    status: int | None = None
    retry_after_s: float | None = None
    #: the error's JSON body (context overflows: the numbers it may name)
    body: Any = None


class AgentFault(Exception):
    """Raised inside the agent when a turn cannot be completed; `act` turns it into a
    Decision with `outcome` (never raised out of the agent)."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message


class ContextOverflow(AgentFault):
    """A request's prompt exceeded the server's context (the agent may cut and retry)."""

    def __init__(self, fault: Fault) -> None:
        super().__init__("context_overflow", fault.message)
        self.fault = fault


def classify(exc: BaseException) -> Fault:
    """What an exception from one API attempt means for the retry loop."""
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return Fault("transient", "timed out (total timeout)")
    if isinstance(exc, openai.APITimeoutError):
        return Fault("transient", "timed out")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        detail = f" ({type(cause).__name__}: {cause})" if cause else ""
        return Fault("transient", f"connection error{detail}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        message = f"HTTP {status}: {_error_text(exc)}"
        if status == 400 and is_context_overflow(exc):
            return Fault("context_overflow", message, status, body=exc.body)
        if status in TRANSIENT_STATUS or status >= 500:
            return Fault("transient", message, status, retry_after(exc.response.headers))
        return Fault("fatal", message, status)
    return Fault("fatal", f"{type(exc).__name__}: {exc}")


def is_context_overflow(exc: openai.APIStatusError) -> bool:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    code = error.get("code") if isinstance(error, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    if code == "context_length_exceeded" or kind == "exceed_context_size_error":
        return True
    return bool(_CONTEXT_WORDS.search(_error_text(exc)))


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
        if isinstance(error, str):
            return error[:500]
    return str(exc.message)[:500]


def retry_after(headers: Any, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


def backoff_s(
    attempt: int,
    *,
    base: float,
    cap: float,
    rng: random.Random,
    retry_after_s: float | None = None,
    retry_after_cap: float = 60.0,
) -> float:
    """Wait before attempt `attempt + 1`: the server's Retry-After when it gave one,
    else exponential backoff with "equal jitter" (half fixed, half random) so clients that
    failed together do not retry together, yet never retry at once."""
    if retry_after_s is not None:
        return min(retry_after_s, retry_after_cap)
    ceiling = min(cap, base * 2 ** (attempt - 1))
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


# ----- replies -----------------------------------------------------------------------


def split_think(content: str) -> tuple[str, list[str]]:
    """(content without `<think>` blocks, the blocks' text). An unclosed block (the
    token budget ran out while thinking) runs to the end."""
    thoughts = [m.group(1).strip() for m in _THINK_BLOCK.finditer(content)]
    visible = _THINK_BLOCK.sub("", content)
    # a reply may also start mid-thought, with only the closing tag (some templates)
    if "</think>" in visible.lower():
        head, _, tail = re.split(r"(</think>)", visible, maxsplit=1, flags=re.IGNORECASE)
        thoughts.insert(0, head.strip())
        visible = tail
    return visible.strip(), [t for t in thoughts if t]


def reply_fault(
    *,
    visible: str,
    has_tool_call: bool,
    refusal: str | None,
    finish_reason: str | None,
    reasoning: bool,
) -> str | None:
    """Why a reply carries no command, or None when it has something to parse.

    "refusal", "content_filter", "reasoning_exhausted" (the token budget ran out while
    thinking), "truncated" (ran out before saying anything), "empty".
    """
    if refusal:
        return "refusal"
    if visible or has_tool_call:
        return None
    if finish_reason == "content_filter":
        return "content_filter"
    if finish_reason == "length":
        return "reasoning_exhausted" if reasoning else "truncated"
    return "empty"


REASK_FOR_FAULT = {
    "refusal": "You declined to answer. This is a game; reply with one command.",
    "content_filter": "Your reply was filtered. Reply with one command.",
    "reasoning_exhausted": "You ran out of tokens while thinking. Think less and reply with "
    "one command.",
    "truncated": "Your reply was cut off. Reply with one short command.",
    "empty": "Your reply was empty. Reply with one command.",
}
