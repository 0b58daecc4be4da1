"""The misread classes of issue 36, as properties over every scenario's commands.

- An order after a reason, joined by any connective ("north, because it is safe, and
  east"), is never dropped: the reply is rejected (two commands) or, where one command
  carries several orders (Squad Recon), read with that order in it. A description in a
  reason ("because the east and west are walls") stays a reason.
- An order qualified by a condition anywhere after it (after a dash, a colon, in the next
  sentence, on a line below the Action: line) is never executed unconditionally.
- A reason that schedules an order ("because it is safe: then east") is rejected.
- An order withdrawn or changed anywhere after its `Action:` line (issue 43: "Action:
  north", a blank line, "Wait, I meant east."), in every answer format a reply may mark
  its command with (labels, a heading, JSON, a `<tool_call>`, a JSON reasoning after the
  action), is never executed; a harmless remark after it still reads.
- Honest replies in the taught format that the last round rejected are read as written:
  verb phrases with articles and prepositions, reasoning lines labelled `Now:` or
  `Answer:`, `\\boxed{}`, a leaked chat token, a descriptive remark beside the command.

Run with `--hypothesis-profile thorough` for the full example counts.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import textenvs
from tests.parsing.corpora import ENVS, canonical, reading_of
from tests.parsing.strategies import commands
from textenvs.scenarios.megacity.state import MATERIALS

REASON_WORDS = ["because", "since", "as", "given that", "which means", "so that", "to make sure"]
REASONS = ["it is safe", "the path is clear", "it looks good", "I want progress", "it helps"]
CONNECTIVES = [
    "and", "but", "so", "plus", "also", "and also", "as well as", "along with", "and then",
    "then", "yet", "while", "&", "+", "/", "->", "and additionally", "and, moreover,",
    "and besides", "together with", "in addition to", "too",
]  # fmt: skip
SEPARATORS = [",", "", ":", " -"]
CONDITIONS = [
    "if possible", "if it is safe", "unless it is blocked", "assuming it works",
    "provided that it is open", "as long as it is safe", "in case it is clear",
    "depending on the wall", "should it be open", "only if safe", "if not blocked",
    "otherwise wait", "so long as it works", "in the event it is open",
]  # fmt: skip
AFTER_ORDER = [
    "{c} - {q}", "{c} -- {q}", "{c} — {q}", "{c}: {q}", "{c}. {Q}.", "{c}; {q}", "{c}\n{q}",
    "Action: {c} - {q}", "Action: {c}: {q}", "Action: {c}. {Q}.", "Action: {c}\n({q})",
    "Action: {c}\n{Q}.", "Action: {c} ({q})", "Action: {c}, because it is good, {q}",
    "I will do this: {c}. {Q}.", "**Action:** {c} *({q})*",
]  # fmt: skip
SCHEDULED = [
    "{c} because it is safe: then {d}", "{c} because {d} then", "{c}, since it is safe, {d} next",
    "Action: {c} because it is open: {d} afterwards", "Action: {c} because: then {d}",
    "{c} since it is safe and {d} later", "Action: {c}, which is safe, followed by {d}",
    "{c} (because it is safe: then {d})", "Action: {c} because it helps, and after that {d}",
    "Action: {c} because next turn {d}", "{c} because {d} comes next",
]  # fmt: skip


def _two(env_name: str, data: st.DataObject) -> tuple[str, str]:
    """Two commands that differ: for Squad Recon, orders for two different squads."""
    if env_name == "squad-recon":
        orders = ["north", "south", "east", "west", "hold", "attack"]
        first, second = data.draw(st.sampled_from([("A", "B"), ("B", "C"), ("C", "A")]))
        return (
            f"{first} {data.draw(st.sampled_from(orders))}",
            f"{second} {data.draw(st.sampled_from(orders))}",
        )
    env = textenvs.make(env_name)
    c = data.draw(commands(env_name))
    d = data.draw(commands(env_name).filter(lambda d: env.parse(d) != env.parse(c)))
    return c, d


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_an_order_after_a_reason_is_never_dropped(env_name: str, data: st.DataObject) -> None:
    env = textenvs.make(env_name)
    c, d = _two(env_name, data)
    reason = f"{data.draw(st.sampled_from(REASON_WORDS))} {data.draw(st.sampled_from(REASONS))}"
    joint = data.draw(st.sampled_from(SEPARATORS)) + " " + data.draw(st.sampled_from(CONNECTIVES))
    prefix = data.draw(st.sampled_from(["", "Action: ", "**Action:** ", "I'll go with "]))
    comma = data.draw(st.sampled_from([", ", " "]))
    reply = f"{prefix}{c}{comma}{reason}{joint} {d}"
    got = reading_of(env, env_name, reply)
    if env_name == "squad-recon":
        assert got is None or d in got.split("; "), (reply, got)
    else:
        assert got is None, (reply, got)


DESCRIPTIONS = {
    "treasure-hunt": ["the east and west are walls", "the exit is north and the gold is east"],
    "em-anomaly": ["the east and west are walls", "the field is 2 and the wall is west"],
    "magnetic-field": ["bit 3 is set and bit 4 is clear", "the checksum is 12 and it matches"],
    "squad-recon": ["the east and west are walls", "the camp is north and the forest is east"],
    "megacity": ["the stress is low and the seams are charted", "B2 is open and air is fine"],
}


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_description_in_a_reason_stays_a_reason(env_name: str, data: st.DataObject) -> None:
    env = textenvs.make(env_name)
    c = data.draw(commands(env_name))
    reason = data.draw(st.sampled_from(DESCRIPTIONS[env_name]))
    word = data.draw(st.sampled_from(["because", "since", ", because", ", since"]))
    prefix = data.draw(st.sampled_from(["Action: ", "**Action:** ", "Final answer: "]))
    reply = f"{prefix}{c} {word} {reason}".replace(" ,", ",")
    assert reading_of(env, env_name, reply) == canonical(env_name)(env.parse(c)), reply


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_an_order_followed_by_a_condition_is_not_executed(
    env_name: str, data: st.DataObject
) -> None:
    env = textenvs.make(env_name)
    c = data.draw(commands(env_name))
    q = data.draw(st.sampled_from(CONDITIONS))
    template = data.draw(st.sampled_from(AFTER_ORDER))
    reply = template.format(c=c, q=q, Q=q[0].upper() + q[1:])
    assert reading_of(env, env_name, reply) is None, reply


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_squad_order_under_a_condition_beside_others_is_rejected(data: st.DataObject) -> None:
    env = textenvs.make("squad-recon")
    c, d = _two("squad-recon", data)
    q = data.draw(st.sampled_from(CONDITIONS))
    template = data.draw(
        st.sampled_from(["{c}; {q} {d}", "{c}; {q}, {d}", "Action: {c}; {Q}, {d}", "{d} {q}; {c}"])
    )
    reply = template.format(c=c, d=d, q=q, Q=q[0].upper() + q[1:])
    assert reading_of(env, "squad-recon", reply) is None, reply


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_reason_that_schedules_an_order_is_rejected(env_name: str, data: st.DataObject) -> None:
    env = textenvs.make(env_name)
    c, d = _two(env_name, data)
    if data.draw(st.booleans()) and env_name != "squad-recon":
        d = c  # the same command scheduled again is still a later order
    reply = data.draw(st.sampled_from(SCHEDULED)).format(c=c, d=d)
    assert reading_of(env, env_name, reply) is None, reply


# ----- an order withdrawn after its Action: line (issue 43) -----------------------------

WITHDRAWALS = [
    "Wait, I meant {d}.", "Actually, I meant {d}.", "No, {d}.", "Oops, {d}.",
    "Hmm, scratch that: {d}.", "Correction: {d}.", "On second thought, {d}.",
    "Make that {d}.", "Sorry, {d} instead.", "Let me change that to {d}.", "{D}, not that.",
    "Just kidding.", "Scratch that.", "Never mind.", "Ignore the above.", "Wait, no.",
]  # fmt: skip
GAPS = ["\n\n", "\n\n\n", "\n\nThe map is clear.\n\n", "\n\n---\n\n", "\n \n"]
HARMLESS = [
    "That keeps the sweep on row 1.", "The map is clear.", "The wall is far away.",
    "Reason: the observation shows an open path.",
]  # fmt: skip


def _marked(c: str, form: str) -> str:
    """`c` marked as the reply's command in one of the answer formats."""
    if form == "json":
        return json.dumps({"action": c})
    if form == "tool_call":
        return "<tool_call>\n" + json.dumps({"name": "act", "arguments": {"action": c}})
    return form.format(c=c)


MARKS = ["Action: {c}", "**Action:** {c}", "Final answer: {c}", "### Action\n{c}", "json",
         "tool_call", "I checked the map.\nAction: `{c}`"]  # fmt: skip


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_an_order_withdrawn_after_its_action_line_is_never_executed(
    env_name: str, data: st.DataObject
) -> None:
    env = textenvs.make(env_name)
    c, d = _two(env_name, data)
    form = data.draw(st.sampled_from(MARKS))
    after = data.draw(st.sampled_from(WITHDRAWALS)).format(d=d, D=d[0].upper() + d[1:])
    gap = data.draw(st.sampled_from(GAPS))
    tail = "\n</tool_call>" if form == "tool_call" else ""
    if data.draw(st.booleans()):
        reply = _marked(c, form) + tail + gap + after
    elif form == "json":  # the reasoning written after the action
        reply = json.dumps({"action": c, "reasoning": after})
    else:
        reply = _marked(c, form) + gap + after + tail
    assert reading_of(env, env_name, reply) is None, reply


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_harmless_remark_after_the_action_line_still_reads(
    env_name: str, data: st.DataObject
) -> None:
    env = textenvs.make(env_name)
    c = data.draw(commands(env_name))
    form = data.draw(st.sampled_from(MARKS))
    remark = data.draw(st.sampled_from(HARMLESS))
    reply = _marked(c, form) + data.draw(st.sampled_from(GAPS)) + remark
    if form == "json" and data.draw(st.booleans()):
        reply = json.dumps({"action": c, "reasoning": remark})
    assert reading_of(env, env_name, reply) == canonical(env_name)(env.parse(c)), reply


# ----- honest replies the last round rejected ----------------------------------------

WRAPPED = [
    "\\boxed{{{c}}}",
    "Final answer: $\\boxed{{\\text{{{c}}}}}$",
    "Action: {c}<|im_end|>",
    "Action: {c}<|eot_id|>",
    "Action: {c}</s>",
    "I have looked at the map.\nAction: {c}<|im_end|>\n<|im_start|>user",
    "Now: I have looked at the map and the stress is high at the top.\nAction: {c}",
    "Answer: the observation is clear and nothing blocks it.\n\nAction: {c}",
    "Now: thinking about it.\nAction: {c}",
    "Action: {c}. The wall is far away.",
    "Action: {c} (the wall is far away)",
    "Action: {c} - the wall is far away",
]


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_honest_wrappers_read_as_the_command(env_name: str, data: st.DataObject) -> None:
    env = textenvs.make(env_name)
    c = data.draw(commands(env_name))
    reply = data.draw(st.sampled_from(WRAPPED)).format(c=c)
    assert reading_of(env, env_name, reply) == canonical(env_name)(env.parse(c)), reply


_CELLS = [f"{col}{row}" for col in "ABCDE" for row in range(1, 6)]
_VERB_PHRASES = {
    "excavate": ["excavate {x}", "excavate the cell at {x}", "excavate a chamber at {x}",
                 "dig a chamber at {x}", "dig out {x}", "excavate cell {x}"],
    "support": ["place a {m} support column at {x}", "place a {m} column at {x}",
                "support {x} ({m})", "support {x} with a {m} column", "support {x} using {m}",
                "place a support column at {x} made of {m}", "build a {m} support at {x}"],
    "district": ["open a district at {x}", "build a district at {x}", "create a district at {x}",
                 "open district {x}", "district at {x}", "set up a district at {x}"],
    "vent": ["vent {x} {d}ward", "vent {x} to the {d}", "build a vent at {x} facing {d}",
             "dig a ventilation shaft at {x} heading {d}", "vent from {x} towards the {d}"],
}  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_megacity_verb_phrases_read_as_written(data: st.DataObject) -> None:
    env = textenvs.make("megacity")
    kind = data.draw(st.sampled_from(sorted(_VERB_PHRASES)))
    x = data.draw(st.sampled_from(_CELLS))
    m = data.draw(st.sampled_from(MATERIALS))
    d = data.draw(st.sampled_from(["north", "south", "east", "west"]))
    phrase = data.draw(st.sampled_from(_VERB_PHRASES[kind])).format(x=x, m=m, d=d)
    canonical = {"excavate": f"excavate {x}", "support": f"support {x} {m}"}.get(kind, "")
    canonical = canonical or (f"district {x}" if kind == "district" else f"vent {x} {d}")
    prefix = data.draw(st.sampled_from(["Action: ", "Action: ", "**Action:** ", ""]))
    assert reading_of(env, "megacity", f"{prefix}{phrase}") == canonical, phrase
