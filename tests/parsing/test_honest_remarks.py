"""Honest replies that were rejected: a remark or a reason beside the command that
changes nothing is read as one, while the same words that give a second argument, a
second order or take the order back still reject the reply.

- A Megacity remark that starts with a cell, a material or an ordinal ("support C2
  basalt (C2 is clear of both seams)", "research (2nd point: unlocks mycelium)").
- A Magnetic Field remark that lists windows and their bits ("enter 1 - windows 1 and
  2 read 00 and 01").
- An article before a hex character in a short prose order ("I will type a C.").
- A labelled reason line right below the Action: line ("Reason: ...").
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import textenvs
from tests.parsing.corpora import ENVS, reading_of
from tests.parsing.strategies import commands
from textenvs.scenarios.megacity.state import MATERIALS

CELLS = [f"{col}{row}" for col in "ABCDE" for row in range(1, 6)]
HEX = "0123456789ABCDEF"
AROUND = ["Action: {c} ({r})", "Action: {c} — {r}", "Action: {c}, {r}", "Action: {c} - {r}"]


def _megacity_order(data: st.DataObject) -> str:
    cell = data.draw(st.sampled_from(CELLS))
    return data.draw(
        st.sampled_from([
            f"excavate {cell}", f"district {cell}", f"support {cell} basalt",
            f"vent {cell} east", "research", "scan",
        ])
    )  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_megacity_remark_that_starts_with_a_cell_or_a_material_is_read(
    data: st.DataObject,
) -> None:
    env = textenvs.make("megacity")
    c = _megacity_order(data)
    subject = data.draw(st.sampled_from([*CELLS, *MATERIALS, "east"]))
    said = data.draw(st.sampled_from(["is clear of both seams", "sits on the seam",
                                      "is off the seam", "holds the load"]))  # fmt: skip
    reply = data.draw(st.sampled_from(AROUND)).format(c=c, r=f"{subject} {said}")
    assert reading_of(env, "megacity", reply) == c, reply


@pytest.mark.parametrize(
    "reply",
    [
        "Action: excavate B3 (C3)", "Action: excavate B3, C3", "Action: excavate B3 (and C3)",
        "Action: excavate B3 (C3 too)", "Action: support C2 basalt (timber)",
        "Action: vent A1 east (north)", "Action: excavate B3, C3 next",
        "Action: excavate B3 (C3 is next)", "Action: excavate B3 (C3 as well)",
    ],
)  # fmt: skip
def test_a_second_megacity_argument_in_a_remark_is_still_rejected(reply: str) -> None:
    assert reading_of(textenvs.make("megacity"), "megacity", reply) is None, reply


@pytest.mark.parametrize(
    "remark",
    ["2nd point: unlocks mycelium", "first point", "the 3rd research point",
     "1st of 4 points", "second point, the clue for gravity"],
)  # fmt: skip
def test_a_megacity_remark_that_starts_with_an_ordinal_is_read(remark: str) -> None:
    env = textenvs.make("megacity")
    for form in AROUND:
        reply = form.format(c="research", r=remark)
        assert reading_of(env, "megacity", reply) == "research", reply


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_magnetic_field_remark_listing_windows_is_read(data: st.DataObject) -> None:
    env = textenvs.make("magnetic-field")
    c = data.draw(commands("magnetic-field"))
    first = data.draw(st.integers(1, 17))
    bits = data.draw(st.lists(st.sampled_from(["00", "01", "10", "11"]), min_size=2, max_size=2))
    remark = data.draw(
        st.sampled_from([
            f"windows {first} and {first + 1} read {bits[0]} and {bits[1]}",
            f"windows {first} and {first + 1} give {bits[0]} and {bits[1]}",
            f"window {first} reads {bits[0]} and window {first + 1} reads {bits[1]}",
            f"windows {first}-{first + 1} read {bits[0]}{bits[1]}",
        ])
    )  # fmt: skip
    reply = data.draw(st.sampled_from(AROUND)).format(c=c, r=remark)
    assert reading_of(env, "magnetic-field", reply) == reading_of(env, "magnetic-field", c), reply


@pytest.mark.parametrize(
    "reply",
    ["Action: enter 1 (and 2)", "Action: enter 1 — and 2", "Action: enter 1 (1 and 2)",
     "Action: right (2 and 3)", "Action: enter 1 (windows 1 and 2 twice)"],
)  # fmt: skip
def test_a_magnetic_field_remark_that_adds_an_order_is_still_rejected(reply: str) -> None:
    assert reading_of(textenvs.make("magnetic-field"), "magnetic-field", reply) is None, reply


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_an_article_before_a_hex_character_is_an_article(data: st.DataObject) -> None:
    env = textenvs.make("magnetic-field")
    char = data.draw(st.sampled_from(HEX))
    article = "an" if char in "8AEF" else "a"
    template = data.draw(st.sampled_from([
        "I will type {a} {x}.", "I'll enter {a} {x} now.", "Type {a} {x}.", "Let's input {a} {x}.",
        "I will type {a} {x} into slot 2.", "Action: type {a} {x}",
    ]))  # fmt: skip
    reply = template.format(a=article, x=char)
    if "slot 2" in reply:  # a slot named is never typed into another
        assert reading_of(env, "magnetic-field", reply) is None, reply
    else:
        assert reading_of(env, "magnetic-field", reply) == f"enter {char}", reply


@pytest.mark.parametrize(
    "reply",
    ["Type a message.", "I will type a C and a D.", "Type A C.", "I will type a CAFE.",
     "I will enter a 7, then a 3."],
)  # fmt: skip
def test_an_article_never_hides_a_second_character(reply: str) -> None:
    assert reading_of(textenvs.make("magnetic-field"), "magnetic-field", reply) is None, reply


REASONS = {
    "treasure-hunt": ["the west is the edge of the grid.", "it is safe and unexplored.",
                      "I want to explore before the steps run out."],
    "em-anomaly": ["the field is higher there.", "the field reads 3 and the node is near.",
                   "I want to see the field rise before the steps run out."],
    "magnetic-field": ["windows 3 and 4 read 10 and 11.", "the checksum adds up.",
                       "slot 1 needs the first character before I move on."],
    "squad-recon": ["the camp is close and the enemy is weak.", "it keeps A safe.",
                    "we need intel before the attack."],
    "megacity": ["I need better materials before digging.", "the stress is low there.",
                 "B2 is clear of both seams and air is fine."],
}  # fmt: skip
TAKEN_BACK = ["{d} is better.", "wait, I meant {d}.", "scratch that, {d}.", "{d} instead.",
              "then {d}.", "it is safe, and {d}."]  # fmt: skip


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_labelled_reason_line_below_the_action_line_is_a_reason(
    env_name: str, data: st.DataObject
) -> None:
    env = textenvs.make(env_name)
    c = data.draw(commands(env_name))
    label = data.draw(st.sampled_from(["Reason", "Reasoning", "**Reason:**", "Why"]))
    label = label if label.endswith("**") else f"{label}:"
    reason = data.draw(st.sampled_from(REASONS[env_name]))
    reply = f"Action: {c}\n{label} {reason}"
    assert reading_of(env, env_name, reply) == reading_of(env, env_name, c), reply


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_labelled_reason_line_that_takes_the_order_back_is_rejected(
    env_name: str, data: st.DataObject
) -> None:
    env = textenvs.make(env_name)
    c = data.draw(commands(env_name))
    d = data.draw(commands(env_name).filter(lambda d: env.parse(d) != env.parse(c)))
    reason = data.draw(st.sampled_from(TAKEN_BACK)).format(d=d)
    reply = f"Action: {c}\nReason: {reason}"
    assert reading_of(env, env_name, reply) is None, reply
