"""Worst-case reading time: every scenario's parser on adversarial replies (NFKC-expanding
characters, long runs of one letter, nested brackets, repeated separators, ...; see
`adversarial_replies`) at a quarter, half and all of the length limit.

Per scenario it prints the slowest family at the limit (milliseconds, best of
`--repeats`) and the largest growth from a quarter of the limit to the limit among the
families that take at least 20 ms there: about 4x for a reader linear in the reply, 16x
for a quadratic one (timings under load are noisy; small ones most).

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


def _ms(parse: Callable[[str], Any], text: str) -> float:
    started = time.perf_counter()
    with contextlib.suppress(ParseError):
        parse(text)
    return (time.perf_counter() - started) * 1000


def measure(env_name: str, limit: int, repeats: int) -> dict[str, tuple[float, ...]]:
    """Family -> milliseconds at a quarter, half and all of `limit` (best of `repeats`;
    the sizes take turns within each repeat, so a burst of load hits all of them)."""
    parse = _unmemoised(env_name)
    sizes = (limit // 4, limit // 2, limit)
    out = {}
    for family in FAMILIES:
        texts = [adversarial(family, size) for size in sizes]
        best = [float("inf")] * len(sizes)
        for _ in range(repeats):
            best = [min(b, _ms(parse, text)) for b, text in zip(best, texts, strict=True)]
        out[family] = tuple(best)
    return out


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
        slow = [t for t in times.values() if t[2] >= 20] or list(times.values())
        growth = max(t[2] / max(t[0], 1e-3) for t in slow)
        rows.append(
            [env_name, slowest, f"{times[slowest][2]:.1f}", f"{growth:.1f}x", str(len(times))]
        )
        print(f"measured {env_name}", flush=True)
    print(f"reply length: {args.limit:,} characters after unicode folding")
    header = ["scenario", "slowest family", "ms at limit", "max growth 1/4->1", "families"]
    print(table(header, rows))


if __name__ == "__main__":
    main()
