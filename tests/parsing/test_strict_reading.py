"""Strict consumption, as an adversary would test it (issue 26): a canonical command with
one unknown word inserted anywhere in its command part is rejected, never executed.

The inserted word is a random non-word, a one-edit typo of a command word, or a word
that schedules an order for later. A word counts as unknown only if it appears nowhere in
the reading code (grammar tables, fillers, clause markers), so it can never be one the
grammar accounts for.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import textenvs
from tests.parsing.corpora import ENVS
from tests.parsing.strategies import commands
from textenvs.core.parsing import ParseError

CORE = Path(textenvs.__file__).parent / "core"
SCENARIOS = Path(textenvs.__file__).parent / "scenarios"
TEMPORAL = ["then", "later", "next turn", "eventually", "once", "when", "after", "afterwards"]
FORMS = ["{}", "Action: {}", "**Action:** {}", "I'll {}."]


def _known_words(env_name: str) -> frozenset[str]:
    """Every word the reading code of this scenario mentions."""
    package = SCENARIOS / env_name.replace("-", "_")
    sources = [*CORE.glob("*.py"), package / "parse.py", package / "state.py"]
    text = " ".join(path.read_text(encoding="utf-8").lower() for path in sources)
    return frozenset(re.findall(r"[a-z]+", text))


def _typos(word: str) -> list[str]:
    """One-edit misspellings of a word: a letter dropped, doubled, swapped or replaced."""
    out = set()
    for i in range(len(word)):
        out.add(word[:i] + word[i + 1 :])
        out.add(word[:i] + word[i] + word[i:])
        out.add(word[:i] + "x" + word[i + 1 :])
        if i + 1 < len(word):
            out.add(word[:i] + word[i + 1] + word[i] + word[i + 2 :])
    return sorted(out)


def _unknown_words(env_name: str, command: str) -> st.SearchStrategy[str]:
    known = _known_words(env_name)
    command_words = [w for w in re.findall(r"[a-z]+", command.lower()) if len(w) >= 4]
    typos = [t for w in command_words for t in _typos(w) if t not in known and len(t) >= 3]
    random_word = st.text("bcdfghjklmpqrstvwxz", min_size=4, max_size=9).filter(
        lambda w: w not in known
    )
    choices = [random_word, st.sampled_from(TEMPORAL)]
    if typos:
        choices.append(st.sampled_from(typos))
    return st.one_of(choices)


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=250, deadline=None)
@given(data=st.data())
def test_a_command_with_an_unknown_word_inserted_is_rejected(
    env_name: str, data: st.DataObject
) -> None:
    env = textenvs.make(env_name)
    command = data.draw(commands(env_name))
    env.parse(command)  # the command alone is read
    word = data.draw(_unknown_words(env_name, command))
    words = command.split()
    at = data.draw(st.integers(0, len(words)))
    altered = " ".join([*words[:at], word, *words[at:]])
    assume(altered.lower() != command.lower())
    reply = data.draw(st.sampled_from(FORMS)).format(altered)
    with pytest.raises(ParseError):
        env.parse(reply)
