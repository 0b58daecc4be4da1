"""The checkpoint server's attention (`inference/attention.py`) reads the shared
key/value heads in place and samples exactly what transformers' own `sdpa` samples."""

from __future__ import annotations

import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from benchmarks.support import tiny_model
from textenvs.inference.attention import grouped_query_sdpa, use_grouped_query_sdpa
from textenvs.inference.chat import ChatTokens
from textenvs.inference.generation import Sampling, Sequences


class _Layer(torch.nn.Module):
    num_key_value_groups = 3
    is_causal = True


def test_a_masked_grouped_query_attention_equals_sdpa_over_repeated_heads():
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(4, 9, 5, 16, generator=generator)
    key, value = (torch.randn(4, 3, 40, 16, generator=generator) for _ in range(2))
    mask = torch.rand(4, 1, 5, 40, generator=generator) > 0.3  # holes, as padding leaves
    expected, _ = sdpa_attention_forward(_Layer(), query, key, value, mask, scaling=0.25)
    got, _ = grouped_query_sdpa(_Layer(), query, key, value, mask, scaling=0.25)
    assert got.shape == expected.shape == (4, 5, 9, 16)
    assert torch.allclose(got, expected, atol=1e-6)


def test_batched_turns_sample_the_same_tokens_and_logprobs_as_with_sdpa(tiny):
    _, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    first = {row: tokenizer.encode("Position: x=0, y=0 " * (row + 1)) for row in range(3)}
    second = {0: tokenizer.encode(" then east"), 2: tokenizer.encode(" and the west edge")}
    sampling = Sampling(max_new_tokens=6, temperature=1.0)

    def play(grouped: bool) -> list[tuple[list[int], list[float]]]:
        model = tiny_model.untrained(tokenizer, seed=3)
        assert model.config.num_key_value_heads < model.config.num_attention_heads
        if grouped:
            use_grouped_query_sdpa(model)
            assert model.config._attn_implementation == "textenvs_sdpa_gqa"
        sequences = Sequences(
            model,
            3,
            stop_ids=chat.stop_ids,
            pad_id=tokenizer.pad_token_id,
            generator=torch.Generator().manual_seed(5),
        )
        replies = [sequences.extend_and_sample(first, sampling)]
        replies.append(sequences.extend_and_sample(second, sampling))  # row 1 sits out
        return [(r.ids, r.logprobs) for turn in replies for r in turn.values()]

    plain, grouped = play(False), play(True)
    assert [ids for ids, _ in grouped] == [ids for ids, _ in plain]
    for (_, expected), (_, got) in zip(plain, grouped, strict=True):
        assert torch.allclose(torch.tensor(got), torch.tensor(expected), atol=1e-5)
