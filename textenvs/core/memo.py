"""Memoised parsing: agents repeat the same few short replies."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TypeVar

from textenvs.core.parse_error import ParseError

A = TypeVar("A", bound=Hashable)


@dataclass(frozen=True)
class _Rejected:
    """A memoised parse failure (a fresh ParseError is raised from it each time)."""

    reason: str
    valid: list[str]
    suggestions: list[str]


_CACHED_TEXT_CHARS = 200
_CACHE_ENTRIES = 4096


def memoise_parse(parse: Callable[..., A]) -> Callable[..., A]:
    """Memoise a pure parse function of (text, *hashable args): agents repeat the same few
    short replies, so short texts are remembered, failures included (a fresh ParseError is
    raised from a remembered one each time). Bounded: the memo is dropped when full."""
    memo: dict[tuple[object, ...], A | _Rejected] = {}

    def memoised(text: str, *args: Hashable) -> A:
        key = (text, *args)
        cached = memo.get(key) if isinstance(text, str) else None
        if cached is None:
            try:
                cached = parse(text, *args)
            except ParseError as exc:
                cached = _Rejected(exc.reason, exc.valid, exc.suggestions)
            if isinstance(text, str) and len(text) <= _CACHED_TEXT_CHARS:
                if len(memo) >= _CACHE_ENTRIES:
                    memo.clear()
                memo[key] = cached
        if isinstance(cached, _Rejected):
            raise ParseError(cached.reason, cached.valid, cached.suggestions)
        return cached

    memoised.__doc__ = parse.__doc__
    memoised.__wrapped__ = parse  # type: ignore[attr-defined]
    return memoised
