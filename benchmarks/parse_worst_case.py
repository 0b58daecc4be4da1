"""Worst-case reading time: every scenario's parser on adversarial replies (NFKC-expanding
characters, long runs of one letter, nested brackets, repeated separators, ...; see
`adversarial_replies`) at a quarter, half and all of the length limit.

Per scenario it prints the slowest family at the limit (milliseconds, best of
`--repeats`) and the largest growth from half the limit to the limit: about 2x for a
reader linear in the reply, 4x for a quadratic one. Memoisation is bypassed.

    python -m benchmarks.parse_worst_case [--repeats 3] [--limit 20000]
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable
from typing import Any

import textenvs
from benchmarks._common import table
from benchmarks.adversarial_replies import FAMILIES, adversarial
from textenvs.core.parsing import MAX_COMMAND_CHARS, ParseError

SCENARIOS = ["treasure-hunt", "em-anomaly", "magnetic-field", "squad-recon", "megacity"]


def _unmemoised(env_name: str) -> Callable[[str], Any]:
    parse = textenvs.make(env_name).parse
    return getattr(parse, "__wrapped__", parse)


def _best_ms(parse: Callable[[str], Any], text: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        with contextlib.suppress(ParseError):
            parse(text)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def measure(env_name: str, limit: int, repeats: int) -> dict[str, tuple[float, float, float]]:
    """Family -> milliseconds at a quarter, half and all of `limit`."""
    parse = _unmemoised(env_name)
    return {
        family: tuple(  # type: ignore[misc]
            _best_ms(parse, adversarial(family, size), repeats)
            for size in (limit // 4, limit // 2, limit)
        )
        for family in FAMILIES
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=MAX_COMMAND_CHARS)
    args = parser.parse_args()
    if not 0 < args.limit <= MAX_COMMAND_CHARS or args.repeats < 1:
        parser.error(f"--limit must be 1-{MAX_COMMAND_CHARS} and --repeats at least 1")
    rows = []
    for env_name in SCENARIOS:
        times = measure(env_name, args.limit, args.repeats)
        slowest = max(times, key=lambda f: times[f][2])
        growth = max(t[2] / max(t[1], 1e-3) for t in times.values() if t[2] >= 5)
        rows.append(
            [env_name, slowest, f"{times[slowest][2]:.1f}", f"{growth:.1f}x", str(len(times))]
        )
        print(f"measured {env_name}", flush=True)
    print(f"reply length: {args.limit:,} characters after unicode folding")
    header = ["scenario", "slowest family", "ms at limit", "max growth 1/2->1", "families"]
    print(table(header, rows))


if __name__ == "__main__":
    main()
