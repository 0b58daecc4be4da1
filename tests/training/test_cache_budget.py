"""The checkpoint server's cache budget (`inference/budget.py`): conversations past it
wait or read their prompt again, and every reply is what an unbounded server gives.

The model is untrained, so its replies depend on every token it reads; its clients send
back a command of their own, not the reply (an untrained model's bytes need not read back
as the tokens it sampled), so each turn is read as a fresh server reads it."""

from __future__ import annotations

import concurrent.futures

import pytest

from benchmarks.support import tiny_model
from textenvs.inference import budget
from textenvs.inference.chat import ChatTokens
from textenvs.inference.engine import Engine
from textenvs.inference.generation import Sampling

GREEDY = Sampling(max_new_tokens=6, temperature=0)
COMMANDS = ["north", "east", "south", "west"]
SYSTEM = {"role": "system", "content": "You play Treasure Hunt. Reply with one command."}


class Recording(budget.CacheBudget):
    """The budget, noting what each round keeps and empties."""

    def __init__(self, tokens: int) -> None:
        super().__init__(tokens, idle_s=0.05)  # quick to see an ended conversation
        self.kept: list[tuple[int, int]] = []  # (all rows' tokens, the longest row's)
        self.emptied = 0

    def to_empty(self, rows: dict[int, budget.Row]) -> list[int]:
        emptied = super().to_empty(rows)
        kept = [rows[row].tokens for row in rows if row not in emptied]
        self.kept.append((sum(kept), max(kept)))
        self.emptied += len(emptied)
        return emptied


@pytest.fixture(scope="module")
def chat(tiny):
    return ChatTokens(tiny[1])


@pytest.fixture(scope="module")
def model(tiny):
    # an untrained model's replies depend on everything it reads
    return tiny_model.untrained(tiny[1], seed=3)


def play(engine: Engine, episode: int, turns: int = 6) -> list[str]:
    messages = [SYSTEM, {"role": "user", "content": f"Episode {episode}. Position: x=0"}]
    replies = []
    for turn in range(turns):
        reply = engine.complete(messages, GREEDY).text
        replies.append(reply)
        messages += [
            {"role": "assistant", "content": f"Action: {COMMANDS[turn % 4]}"},
            {"role": "user", "content": f"Position: x={turn + 1}, y={episode}"},
        ]
    return replies


def played(engine: Engine, episodes: range) -> dict[int, list[str]]:
    with concurrent.futures.ThreadPoolExecutor(len(episodes)) as pool:
        return dict(zip(episodes, pool.map(lambda e: play(engine, e), episodes), strict=True))


def test_conversations_past_the_budget_wait_and_reply_as_with_room_for_all(model, chat):
    episodes = range(6)
    ample = Engine(model, chat, slots=6)
    tight = Engine(model, chat, slots=6)
    tight.budget = Recording(tokens=200)  # room for about two of the six conversations
    try:
        expected = played(ample, episodes)
        assert played(tight, episodes) == expected
    finally:
        ample.close()
        tight.close()
    assert len({tuple(replies) for replies in expected.values()}) == len(episodes)
    # past the budget only when one conversation alone is longer than it
    assert all(total <= 200 or total == longest for total, longest in tight.budget.kept)
    assert max(total for total, _ in tight.budget.kept) > 100  # the budget was used
    assert tight.budget.emptied  # rows were emptied to keep it


def test_a_conversation_alone_is_served_whatever_its_length(model, chat):
    engine = Engine(model, chat, slots=2)
    engine.budget = Recording(tokens=10)  # less than one prompt
    unbounded = Engine(model, chat, slots=2)
    try:
        assert play(engine, 0, turns=3) == play(unbounded, 0, turns=3)
    finally:
        engine.close()
        unbounded.close()
    assert max(total for total, _ in engine.budget.kept) > 10


def test_rows_idle_longest_are_emptied_first_then_the_newest_conversation():
    cache = budget.CacheBudget(tokens=50)
    now = 1_000.0
    rows = {
        0: budget.Row(tokens=60, used=now - 30, started=now - 40),  # ended long ago
        1: budget.Row(tokens=60, used=now - 5, started=now - 20),  # ended
        2: budget.Row(tokens=40, used=now, started=now - 10),  # the oldest in flight
        3: budget.Row(tokens=40, used=now, started=now - 2),
        4: budget.Row(tokens=40, used=now, started=now - 1),  # the newest
    }
    assert cache.to_empty(rows, now) == [0, 1, 4, 3]
    assert not cache.admits(10, rows, taken=set(), now=now)  # 120 in flight
    assert cache.admits(10, {0: rows[0], 2: rows[2]}, taken=set(), now=now)
    assert not cache.admits(10, {0: rows[0], 2: rows[2]}, taken={0}, now=now)
    assert cache.admits(500, {0: rows[0]}, taken=set(), now=now)  # no one in flight
