"""Magnetic Field without the hints: try a few natural rules, keep the one whose reading
passes the observation's own check (bits 17-32 repeat bits 1-16, bits 33-36 are the sum of
the four digits mod 16) other than trivially (all zeros), submit it. The true rule is
tried last; when several guesses pass, the first that passes is kept.

The policy never looks at the hints, so it scores the same at every level: a measure of
how much the level's fewer hints make the scenario harder for an agent that tests
hypotheses against the check bits (an adversarial baseline, not a reference agent).

    nice python -m benchmarks.magnetic_field_shortcut [--seeds 300] [--level 3]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from itertools import product

import textenvs
from benchmarks._common import table
from textenvs.scenarios.magnetic_field import rules

Row = Callable[[int, int], int]  # the two cells of one window row (0/1/2) -> a bit
# Rules a person would try first, on each row of a 2x2 window.
GUESSES: dict[str, Row] = {
    "a cell on a line": lambda a, b: a > 0 or b > 0,
    "both cells on a line": lambda a, b: a > 0 and b > 0,
    "one intersection": lambda a, b: (a == 2) != (b == 2),
    "a plain segment": lambda a, b: a == 1 or b == 1,
    "odd sum": lambda a, b: (a + b) % 2 == 1,
    "one cell on a line": lambda a, b: (a > 0) != (b > 0),
}


def reading(grid: rules.Grid, row_rule: Row) -> tuple[int, ...]:
    """Nine hex digits: the message, its repeat and the checksum, under a guessed rule."""
    table_ = {
        p: 2 * row_rule(p[0], p[1]) + row_rule(p[2], p[3]) for p in product(range(3), repeat=4)
    }
    bits = rules.decode(grid, table_)
    return tuple(int("".join(map(str, bits[i : i + 4])), 2) for i in range(0, 36, 4))


def passes_check(digits: tuple[int, ...]) -> bool:
    """The repeat and the checksum agree, and not trivially (all zeros passes any check)."""
    return any(digits) and digits[:4] == digits[4:8] and sum(digits[:4]) % 16 == digits[8]


def play(seed: int, level: int) -> tuple[float, str, int]:
    """Score of the first guess that passes the check (or 0000), its name, and how many
    guesses passed."""
    env = textenvs.make("magnetic-field", level=level)
    _text, info = env.reset(seed=seed)
    grid = info["observation"]["grid"]
    passing = [(n, d) for n, rule in GUESSES.items() if passes_check(d := reading(grid, rule))]
    name, digits = passing[0] if passing else ("none", (0, 0, 0, 0))
    for slot, digit in enumerate(digits[:4]):
        env.step(f"enter {digit:X}")
        if slot < 3:
            env.step("right")
    reward = env.step("submit")[1]
    return reward, name, len(passing)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=300, help="seeds 0..N-1 (default 300)")
    parser.add_argument("--level", type=int, default=3, choices=range(4))
    args = parser.parse_args()
    results = [play(seed, args.level) for seed in range(args.seeds)]
    rows = [[n, str(sum(1 for _r, kept, _k in results if kept == n))] for n in [*GUESSES, "none"]]
    alone = sum(1 for _r, _n, k in results if k == 1)
    perfect = sum(1 for r, _n, _k in results if r == 1.0)
    rows += [
        ["(seeds where exactly one guess passes)", str(alone)],
        ["mean score", f"{sum(r for r, _n, _k in results) / len(results):.3f}"],
        ["episodes at 1.0", f"{perfect}/{len(results)}"],
    ]
    print(f"Magnetic Field level {args.level}, seeds 0-{args.seeds - 1}, hints never read")
    print(table(["guess kept", "seeds"], rows))


if __name__ == "__main__":
    main()
