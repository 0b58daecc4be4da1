"""`python -m tools.docs_outputs --check | --write | --measure setup|tests`."""

from __future__ import annotations

import argparse
import sys

from tools.docs_outputs import ROOT, problems, write, write_measured
from tools.docs_outputs.measured import MEASUREMENTS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.docs_outputs",
        description="Write, or check, the command output that README.md and docs/ show "
        "(the README's set-up commands take about a minute).",
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--check", action="store_true", help="exit 1 where the docs differ")
    what.add_argument("--write", action="store_true", help="regenerate the generated regions")
    what.add_argument(
        "--measure",
        choices=sorted(MEASUREMENTS),
        help="measure machine figures on a fresh clone of the last commit and write them "
        "(setup: a few minutes; tests: the whole suite)",
    )
    args = parser.parse_args(argv)
    if args.check:
        found = list(problems())
        for problem in found:
            print(problem)
        print(f"{len(found)} problem(s)" if found else "the docs show what the commands print")
        return 1 if found else 0
    changed = write() if args.write else write_measured(MEASUREMENTS[args.measure](ROOT))
    for path in changed:
        print(f"wrote {path.relative_to(ROOT)}")
    if not changed:
        print("nothing to change")
    return 0


if __name__ == "__main__":
    sys.exit(main())
