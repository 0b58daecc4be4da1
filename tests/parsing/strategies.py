"""Hypothesis strategies of canonical commands, per scenario, for the parsing tests."""

from __future__ import annotations

from hypothesis import strategies as st

import textenvs
from tests.parsing.corpora import canonical
from textenvs.scenarios.megacity.state import MATERIALS

_CELLS = [f"{col}{row}" for col in "ABCDE" for row in range(1, 6)]


def _megacity_commands() -> st.SearchStrategy[str]:
    cell = st.sampled_from(_CELLS)
    direction = st.sampled_from(["north", "south", "east", "west"])
    return st.one_of(
        st.sampled_from(["research", "scan", "wait"]),
        st.builds("excavate {}".format, cell),
        st.builds("district {}".format, cell),
        st.builds("support {} {}".format, cell, st.sampled_from(MATERIALS)),
        st.builds("vent {} {}".format, cell, direction),
        st.builds(lambda c: f"conduit {c}", st.sampled_from(["B2", "B2 B3", "B2 B3 C3", "E5 E4"])),
    )


def _squad_commands() -> st.SearchStrategy[str]:
    orders = ["north", "south", "east", "west", "hold", "attack"]
    groups = ["A", "B", "C", "A+B", "A and B", "B, C", "all"]
    one = st.builds("{} {}".format, st.sampled_from(groups), st.sampled_from(orders))
    return st.one_of(one, st.sampled_from(["A north; B east; C attack", "A west; C hold"]))


def commands(env_name: str) -> st.SearchStrategy[str]:
    """Canonical commands of `env_name`, as its parser writes them back."""
    if env_name == "megacity":
        return _megacity_commands()
    if env_name == "squad-recon":
        return _squad_commands()
    env = textenvs.make(env_name)
    actions = list(type(env.parse("north" if env_name != "magnetic-field" else "submit")))
    return st.sampled_from([canonical(env_name)(a) for a in actions])
