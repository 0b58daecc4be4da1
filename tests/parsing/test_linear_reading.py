"""Bounded reading (issue 30): every parser answers adversarial replies up to the length
limit, and a reply longer than the limit, before or after unicode folding, is rejected
for its length before any pattern runs. Parse times are measured in
`benchmarks/parse_worst_case.py`, not asserted here.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import textenvs
from benchmarks.adversarial_replies import FAMILIES, adversarial, folded_length
from tests.parsing.corpora import ENVS
from textenvs.core.parsing import MAX_COMMAND_CHARS, ParseError


def _read(env_name: str, text: str) -> str | None:
    """The rejection reason, or None if the reply was read as a command."""
    parse = textenvs.make(env_name).parse
    try:
        parse(text)
    except ParseError as exc:
        return exc.reason
    return None


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=10, deadline=None)
@given(family=st.sampled_from(sorted(FAMILIES)), size=st.integers(1, MAX_COMMAND_CHARS))
def test_adversarial_replies_up_to_the_limit_are_answered(
    env_name: str, family: str, size: int
) -> None:
    text = adversarial(family, size)
    assert folded_length(text) <= MAX_COMMAND_CHARS
    reason = _read(env_name, text)
    assert reason is None or "limit is" not in reason


@pytest.mark.parametrize("env_name", ENVS)
@pytest.mark.parametrize("family", ["nfkc-expanding U+FDFA", "one letter", "nested brackets"])
def test_replies_over_the_limit_are_rejected_for_their_length(env_name: str, family: str) -> None:
    text = adversarial(family, MAX_COMMAND_CHARS + 18)
    assert folded_length(text) > MAX_COMMAND_CHARS
    reason = _read(env_name, text)
    assert reason is not None and f"the limit is {MAX_COMMAND_CHARS:,}" in reason


def test_the_limit_holds_after_unicode_folding() -> None:
    # 1,200 characters that fold to 21,600: short on the wire, over the limit once read
    text = "\ufdfa" * 1200
    assert len(text) < MAX_COMMAND_CHARS < folded_length(text)
    reason = _read("treasure-hunt", text)
    assert reason is not None and "once unicode is folded" in reason
