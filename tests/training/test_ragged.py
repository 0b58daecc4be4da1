"""`RaggedSequences` (the checkpoint server's storage): each row stored alone and the rows'
new tokens packed into one sequence give what each row alone gives, and what the padded
batch gives."""

from __future__ import annotations

import pytest
import torch

from benchmarks.support import tiny_model
from tests.training import replies_alone
from tests.training.replies_alone import same
from textenvs.inference import ragged
from textenvs.inference.chat import ChatTokens
from textenvs.inference.generation import Reply, Sampling, Sequences

GREEDY = Sampling(max_new_tokens=6, temperature=0)
TEXTS = ["Position: x=0", "Steps left: 30 of 30\nStanding on: Empty", "north?", "x"]


@pytest.fixture(scope="module")
def tokenizer(tiny):
    return tiny[1]


def made(tokenizer, rows: int, *, window: int | None = None, seed: int = 0) -> Sequences:
    model = tiny_model.untrained(tokenizer, seed=3, window=window)
    chat = ChatTokens(tokenizer)
    return ragged.sequences_for(
        model, rows, stop_ids=chat.stop_ids, pad_id=tokenizer.pad_token_id, seed=seed
    )


def alone(sequences: Sequences, ids: list[int]) -> Reply:
    return replies_alone.alone(sequences.model, sequences.stop_ids, ids, GREEDY.max_new_tokens)


def history(sequences: Sequences, row: int, reply: Reply) -> list[int]:
    return sequences.tokens[row][: -len(reply.ids)]


def test_the_server_stores_llama_rows_alone(tokenizer):
    assert isinstance(made(tokenizer, 2), ragged.RaggedSequences)


def test_rows_of_every_length_sample_what_each_row_alone_samples(tokenizer):
    sequences = made(tokenizer, 4)
    firsts = {row: tokenizer.encode(TEXTS[row] * (row + 1)) for row in range(3)}
    replies = sequences.extend_and_sample(firsts, GREEDY)
    for row, ids in firsts.items():
        assert same(replies[row], alone(sequences, ids))
    assert len({tuple(reply.ids) for reply in replies.values()}) == 3  # the rows differ
    # row 1 sits out; row 3 starts; the others read segments of other lengths
    more = {0: tokenizer.encode(" then east"), 2: tokenizer.encode(" and west"), 3: [5]}
    second = sequences.extend_and_sample(more, GREEDY)
    assert 1 not in second
    for row in more:
        assert same(second[row], alone(sequences, history(sequences, row, second[row])))
    assert sequences.longest() == max(len(sequences.tokens[row]) - 1 for row in range(4))


def test_kept_restarted_and_rewound_rows_sample_as_alone(tokenizer):
    sequences = made(tokenizer, 4)
    firsts = {row: tokenizer.encode(TEXTS[row] * 3) for row in range(4)}
    sequences.extend_and_sample(firsts, GREEDY)
    sequences.keep([0, 2, 3])  # row 1's episode ended
    sequences.restart(3)
    sequences.rewind(2, 4)  # a reply taken back, and one token before it
    more = {0: tokenizer.encode(" north"), 2: tokenizer.encode(" south"), 3: [9, 10, 11]}
    replies = sequences.extend_and_sample(more, GREEDY)
    for row in more:
        assert same(replies[row], alone(sequences, history(sequences, row, replies[row])))
    assert sequences.tokens[3][:3] == [9, 10, 11]
    assert sequences.tokens[2][: len(firsts[2])] == firsts[2]


def test_sampled_replies_and_logprobs_are_those_of_the_padded_batch(tokenizer):
    """The same generator draws the same tokens: the log-probabilities agree to float
    error and the rows see the same random numbers in the same order."""
    sampling = Sampling(max_new_tokens=8, temperature=1.0)
    turns = [
        {row: tokenizer.encode(TEXTS[row] * (row + 2)) for row in range(3)},
        {0: tokenizer.encode(" then"), 2: tokenizer.encode(" and the west edge")},
    ]

    def play(sequences: Sequences) -> list[Reply]:
        return [
            r
            for segments in turns
            for r in sequences.extend_and_sample(segments, sampling).values()
        ]

    model = tiny_model.untrained(tokenizer, seed=3)
    chat = ChatTokens(tokenizer)
    given = {"stop_ids": chat.stop_ids, "pad_id": tokenizer.pad_token_id}
    padded = play(Sequences(model, 3, **given, generator=torch.Generator().manual_seed(5)))
    packed = play(made(tokenizer, 3, seed=5))
    assert [r.ids for r in packed] == [r.ids for r in padded]
    for got, expected in zip(packed, padded, strict=True):
        assert torch.allclose(
            torch.tensor(got.logprobs), torch.tensor(expected.logprobs), atol=1e-5
        )


def test_a_sliding_window_is_kept_to(tokenizer):
    """A Mistral whose attention reaches back 8 tokens, over conversations far longer."""
    sequences = made(tokenizer, 2, window=8)
    firsts = {0: tokenizer.encode(TEXTS[1] * 3), 1: tokenizer.encode(TEXTS[0])}
    replies = sequences.extend_and_sample(firsts, GREEDY)
    more = {0: tokenizer.encode(TEXTS[2] * 4), 1: [7]}
    replies = sequences.extend_and_sample(more, GREEDY)
    for row in more:
        ids = history(sequences, row, replies[row])
        assert len(ids) > 8
        assert same(replies[row], alone(sequences, ids))


def test_a_row_started_over_gives_its_room_back(tokenizer):
    sequences = made(tokenizer, 2)
    long = tokenizer.encode(TEXTS[1] * 200)
    sequences.extend_and_sample({0: long, 1: [5, 6]}, GREEDY)
    held = sequences.row_cache.nbytes()
    sequences.restart(0)
    assert sequences.row_cache.nbytes() < held / 2
    reply = sequences.extend_and_sample({0: [5, 6]}, GREEDY)[0]
    assert same(reply, alone(sequences, [5, 6]))


def test_a_row_that_outgrows_its_buffers_keeps_what_it_read(tokenizer):
    """Buffers grow a layer at a time: each layer's tokens are copied to the larger one."""
    sequences = made(tokenizer, 2)
    sequences.extend_and_sample({0: tokenizer.encode(TEXTS[0]), 1: [5]}, GREEDY)
    room = sequences.row_cache.buffers[0][0].shape[2]
    reply = sequences.extend_and_sample({0: tokenizer.encode(TEXTS[1] * 40)}, GREEDY)[0]
    assert sequences.row_cache.buffers[0][0].shape[2] > room
    assert same(reply, alone(sequences, history(sequences, 0, reply)))
