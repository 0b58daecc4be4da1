"""`Sequences`: batched sampling with each row's cache kept across turns gives what each
row alone would give."""

from __future__ import annotations

import pytest
import torch

from benchmarks.support import tiny_model
from tests.training import replies_alone
from tests.training.replies_alone import same
from textenvs.inference.chat import ChatTokens
from textenvs.inference.generation import Reply, Sampling, Sequences

GREEDY = Sampling(max_new_tokens=6, temperature=0)


@pytest.fixture(scope="module")
def untrained(tiny):
    """The tiny model's tokenizer with an untrained model: its replies hang on every
    token it reads (the trained one answers the same whatever it reads)."""
    _, tokenizer = tiny
    return tiny_model.untrained(tokenizer, seed=3), tokenizer


def alone(model, chat: ChatTokens, ids: list[int]) -> Reply:
    return replies_alone.alone(model, chat.stop_ids, ids, GREEDY.max_new_tokens)


def prompts(tokenizer, count: int) -> list[list[int]]:
    texts = ["Position: x=0", "Steps left: 30 of 30\nStanding on: Empty", "north?", "x"]
    return [tokenizer.encode(texts[i % len(texts)] * (i + 1)) for i in range(count)]


def test_batched_rows_sample_what_each_row_alone_samples(untrained):
    model, tokenizer = untrained
    chat = ChatTokens(tokenizer)
    firsts = prompts(tokenizer, 3)  # of different lengths: padding in the first block
    sequences = Sequences(model, 3, stop_ids=chat.stop_ids, pad_id=tokenizer.pad_token_id)
    replies = sequences.extend_and_sample(dict(enumerate(firsts)), GREEDY)
    for row, ids in enumerate(firsts):
        assert same(replies[row], alone(model, chat, ids))
    assert len({tuple(reply.ids) for reply in replies.values()}) == 3  # the rows differ
    # a second turn for two rows only (row 1 sits it out), with new text of other lengths
    more = {0: tokenizer.encode(" then east"), 2: tokenizer.encode(" and the west edge, again")}
    second = sequences.extend_and_sample(more, GREEDY)
    for row, ids in more.items():
        history = sequences.tokens[row][: -len(second[row].ids)]
        assert history == firsts[row] + replies[row].ids + ids
        assert same(second[row], alone(model, chat, history))
    assert 1 not in second


def test_kept_restarted_and_compacted_rows_still_sample_as_alone(untrained):
    model, tokenizer = untrained
    chat = ChatTokens(tokenizer)
    firsts = prompts(tokenizer, 4)
    sequences = Sequences(model, 4, stop_ids=chat.stop_ids, pad_id=tokenizer.pad_token_id)
    sequences.extend_and_sample(dict(enumerate(firsts)), GREEDY)
    sequences.keep([0, 2, 3])  # row 1's episode ended
    fresh = tokenizer.encode("a new conversation")
    sequences.restart(3)
    assert sequences.holes() > 0
    sequences.compact()
    assert sequences.holes() == sum(
        int(sequences.mask.shape[1] - n) for n in sequences.mask.sum(dim=1).tolist()
    )
    more = {0: tokenizer.encode(" north"), 2: tokenizer.encode(" south"), 3: fresh}
    replies = sequences.extend_and_sample(more, GREEDY)
    for row in more:
        history = sequences.tokens[row][: -len(replies[row].ids)]
        assert same(replies[row], alone(model, chat, history))
    assert sequences.tokens[3][: len(fresh)] == fresh


def test_sampling_is_repeatable_with_the_same_generator(untrained):
    model, tokenizer = untrained
    chat = ChatTokens(tokenizer)
    firsts = dict(enumerate(prompts(tokenizer, 3)))
    sampling = Sampling(max_new_tokens=8, temperature=1.0)

    def draw(seed: int) -> list[list[int]]:
        sequences = Sequences(
            model,
            3,
            stop_ids=chat.stop_ids,
            pad_id=tokenizer.pad_token_id,
            generator=torch.Generator().manual_seed(seed),
        )
        replies = sequences.extend_and_sample(firsts, sampling)
        return [replies[row].ids for row in range(3)]

    assert draw(7) == draw(7)
    assert any(draw(7) != draw(seed) for seed in range(8, 12))


def test_logprobs_are_those_of_the_sampled_tokens(untrained):
    model, tokenizer = untrained
    chat = ChatTokens(tokenizer)
    ids = prompts(tokenizer, 1)[0]
    sequences = Sequences(model, 1, stop_ids=chat.stop_ids, pad_id=tokenizer.pad_token_id)
    reply = sequences.extend_and_sample({0: ids}, Sampling(max_new_tokens=5, temperature=0.5))[0]
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids + reply.ids])).logits[0]
    expected = torch.log_softmax(logits[len(ids) - 1 : -1] / 0.5, dim=-1)
    picked = expected.gather(-1, torch.tensor(reply.ids).unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(picked, torch.tensor(reply.logprobs), atol=1e-4)


def test_forced_tokens_read_in_one_pass_give_the_replies_sampled_one_by_one(untrained):
    import textenvs
    from textenvs.agents.llm import json_mode

    model, tokenizer = untrained
    chat = ChatTokens(tokenizer)
    schema = json_mode.response_schema(textenvs.make("treasure-hunt").action_schema, 0)
    turns = [dict(enumerate(prompts(tokenizer, 3))), {0: tokenizer.encode(" and"), 2: [7, 8]}]
    passes = 0

    def count(*_: object) -> None:
        nonlocal passes
        passes += 1

    model.register_forward_hook(count)

    def play(fast_forward: bool) -> tuple[list[Reply], int]:
        nonlocal passes
        passes = 0
        sampling = Sampling(max_new_tokens=20, temperature=0)
        sequences = Sequences(model, 3, stop_ids=chat.stop_ids, pad_id=tokenizer.pad_token_id)
        replies = []
        for segments in turns:
            grammars = {row: chat.json_grammars().for_schema(schema) for row in segments}
            answered = sequences.extend_and_sample(
                segments, sampling, grammars, fast_forward=fast_forward
            )
            replies += [answered[row] for row in sorted(answered)]
        return replies, passes

    one_by_one, slow_passes = play(fast_forward=False)
    forwarded, fast_passes = play(fast_forward=True)
    assert [r.ids for r in forwarded] == [r.ids for r in one_by_one]
    assert all(r.ended for r in forwarded)  # whole replies, end of turn included
    assert [r.chosen for r in forwarded] == [r.chosen for r in one_by_one]
    assert fast_passes < slow_passes / 2, (fast_passes, slow_passes)
