"""argparse types for numbers: a value out of range is one line from argparse (exit 2),
never a traceback or a silently wrapped value (`--port 70000` once bound port 4464)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def _number(text: str, kind: type[int] | type[float]) -> float:
    try:
        value = kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, not {text!r}")
    return value


def bounded(
    kind: type[int] | type[float], low: float, high: float = math.inf, *, above: bool = False
) -> Callable[[str], float]:
    """A type for numbers in [low, high] ((low, high] with `above`), finite."""

    def check(text: str) -> float:
        value = _number(text, kind)
        if value > high or value < low or (above and value == low):
            side = f"more than {low:g}" if above else f"at least {low:g}"
            limit = f"{side} and at most {high:g}" if math.isfinite(high) else side
            raise argparse.ArgumentTypeError(f"must be {limit}, not {text!r}")
        return value

    check.__name__ = kind.__name__  # argparse names the type in its messages
    return check


port = bounded(int, 0, 65535)
positive_int = bounded(int, 1)
non_negative_float = bounded(float, 0)
positive_float = bounded(float, 0, above=True)
