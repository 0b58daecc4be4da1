"""Count, per scenario, the corpus replies a parser misreads silently (executes, but not as
the reply says) and the ones it rejects although they have one clear reading, in the
expected-reading corpora (`corpus/<env>.json`) and the corpus of honest replies in the
taught format (`corpus/honest/<env>.json`).

    python -m tests.parsing.misreads                          # this checkout's parser
    python -m tests.parsing.misreads --parser /path/to/other  # another checkout's parser

(`git archive <commit> textenvs | tar -x -C /tmp/other` makes one of any commit.)
"""

from __future__ import annotations

import argparse
import sys


def count(name: str, folder: str = "") -> tuple[int, int, int]:
    """(replies, misread, rejected wrongly) for one scenario's corpus in `folder`."""
    import textenvs
    from tests.parsing.corpora import load_corpus, reading_of

    env = textenvs.make(name)
    entries = load_corpus(name, folder)
    misread = rejected = 0
    for entry in entries:
        got = reading_of(env, name, entry["reply"])
        if got is not None and got != entry["expect"]:
            misread += 1
        elif got is None and entry["expect"] is not None:
            rejected += 1
    return len(entries), misread, rejected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parser", help="a folder holding another checkout's textenvs/")
    args = parser.parse_args()
    if args.parser:
        sys.path.insert(0, args.parser)  # before textenvs is first imported
    import textenvs
    from tests.parsing.corpora import ENVS

    print(f"parser: {textenvs.__file__}")
    for folder, title in (("", "expected readings"), ("honest", "honest replies")):
        print(f"\n{title}:")
        print(f"{'scenario':<16}{'replies':>8}{'misread':>9}{'rejected wrongly':>18}")
        totals = [0, 0, 0]
        for name in ENVS:
            figures = count(name, folder)
            totals = [t + f for t, f in zip(totals, figures, strict=True)]
            print(f"{name:<16}{figures[0]:>8}{figures[1]:>9}{figures[2]:>18}")
        share = 100 * totals[2] / totals[0]
        print(f"{'all':<16}{totals[0]:>8}{totals[1]:>9}{totals[2]:>11} ({share:.1f}%)")


if __name__ == "__main__":
    main()
