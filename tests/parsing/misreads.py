"""Count, per scenario, the corpus replies a parser misreads silently (executes, but not as
the reply says) and the ones it rejects although they have one clear reading.

    python -m tests.parsing.misreads              # this checkout
    PYTHONPATH=/path/to/other/checkout:. python -m tests.parsing.misreads   # another one
"""

from __future__ import annotations

import textenvs
from tests.parsing.test_corpora import ENVS, load_corpus, reading_of


def main() -> None:
    print(f"parser: {textenvs.__file__}")
    print(f"{'scenario':<16}{'replies':>8}{'misread':>9}{'rejected wrongly':>18}")
    for name in ENVS:
        env = textenvs.make(name)
        misread = rejected = 0
        entries = load_corpus(name)
        for entry in entries:
            got = reading_of(env, name, entry["reply"])
            if got is not None and got != entry["expect"]:
                misread += 1
            elif got is None and entry["expect"] is not None:
                rejected += 1
        print(f"{name:<16}{len(entries):>8}{misread:>9}{rejected:>18}")


if __name__ == "__main__":
    main()
