"""What a row's reply should be: greedy tokens after `ids` with no cache at all (the whole
sequence read again for every token, through transformers' own masks), for the batched
samplers' tests to compare with."""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from textenvs.inference.generation import Reply


def alone(model: PreTrainedModel, stop_ids: set[int], ids: list[int], limit: int) -> Reply:
    out, sequence = Reply(), list(ids)
    with torch.inference_mode():
        for _ in range(limit):
            logits = model(input_ids=torch.tensor([sequence])).logits[0, -1]
            token = int(logits.argmax())
            out.ids.append(token)
            out.logprobs.append(float(torch.log_softmax(logits, dim=-1)[token]))
            sequence.append(token)
            if token in stop_ids:
                break
    return out


def same(reply: Reply, expected: Reply) -> bool:
    """The same tokens with the same log-probabilities (a position off by one changes
    them even where it leaves the greedy choice alone)."""
    return reply.ids == expected.ids and torch.allclose(
        torch.tensor(reply.logprobs), torch.tensor(expected.logprobs), atol=1e-4
    )
