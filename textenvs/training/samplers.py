"""Where a rollout's replies come from: one small interface, two kinds of sampler.

`rollouts.play` asks a `Sampler` for each turn's replies: it hands over each live
episode's new tokens (the next observation, rendered by the chat template) and gets back
one `Reply` per episode (its tokens, their log-probabilities, whether the model chose
each, whether it ended). Two samplers meet it:

- `generation.Sequences` (the default, any device, a CPU included): transformers with one
  key/value cache kept across turns, and json mode's grammar held token by token;
- `PromptSampler` over any function that completes whole token prompts, as vLLM does
  (`TokenGenerator`): each turn sends each live episode's whole token sequence (vLLM's
  prefix cache makes the shared part cheap). `trl_vllm_generator(trainer)` is TRL's own
  vLLM generation (`GRPOConfig(use_vllm=True)`, colocated or a server), whose weights
  the trainer syncs before each step's rollouts.

Both return the same replies for the same model at temperature 0; a sampled reply's
log-probabilities are the model's at the sampling temperature, as GRPO expects them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch
from transformers import PreTrainedModel

from textenvs.inference.generation import Grammar, Reply, Sampling

#: prompts (token ids, one list per episode) -> per prompt, the completion's token ids
#: and each one's log-probability
Completion = tuple[list[int], list[float]]
TokenGenerator = Callable[[list[list[int]], Sampling], list[Completion]]


class Sampler(Protocol):
    """What `rollouts.play` needs of a sampler (rows are episodes, numbered from 0)."""

    def keep(self, rows: list[int]) -> None:
        """Only `rows` go on (the others' episodes have ended)."""
        ...

    def rewind(self, row: int, count: int) -> None:
        """Take back `row`'s last `count` tokens (a reply read in another form)."""
        ...

    def extend_and_sample(
        self,
        segments: dict[int, list[int]],
        sampling: Sampling,
        grammars: dict[int, Grammar] | None = None,
    ) -> dict[int, Reply]:
        """Append each row's segment and sample its reply after it."""
        ...


class PromptSampler:
    """A `Sampler` over a `TokenGenerator`: each row's tokens kept here, sent whole."""

    def __init__(self, generate: TokenGenerator, rows: int, *, stop_ids: set[int]) -> None:
        self.generate = generate
        self.stop_ids = stop_ids
        self.tokens: list[list[int]] = [[] for _ in range(rows)]

    def keep(self, rows: list[int]) -> None:
        """Nothing to drop: a row's tokens are only sent while it is live."""

    def rewind(self, row: int, count: int) -> None:
        del self.tokens[row][-count:]

    def extend_and_sample(
        self,
        segments: dict[int, list[int]],
        sampling: Sampling,
        grammars: dict[int, Grammar] | None = None,
    ) -> dict[int, Reply]:
        if grammars:
            raise ValueError(
                "json action mode holds each reply to the action schema token by token, "
                "which a prompt sampler (vLLM) cannot: train in text mode, or with the "
                "transformers sampler"
            )
        rows = sorted(segments)
        for row in rows:
            self.tokens[row].extend(segments[row])
        completions = self.generate([list(self.tokens[row]) for row in rows], sampling)
        replies: dict[int, Reply] = {}
        for row, (ids, logprobs) in zip(rows, completions, strict=True):
            reply = self.reply(list(ids), list(logprobs), sampling.max_new_tokens)
            self.tokens[row].extend(reply.ids)
            replies[row] = reply
        return replies

    def reply(self, ids: list[int], logprobs: list[float], limit: int) -> Reply:
        """A completion as a `Reply`: up to its first end-of-turn token, at most `limit`
        tokens (a generator may stop on other tokens of its own, or run on)."""
        end = next((i + 1 for i, token in enumerate(ids) if token in self.stop_ids), len(ids))
        ids = ids[: min(end, limit)]
        return Reply(
            ids=ids,
            logprobs=logprobs[: len(ids)],
            chosen=[True] * len(ids),
            ended=bool(ids) and ids[-1] in self.stop_ids,
        )


def trl_vllm_generator(trainer: Any, stop_ids: set[int]) -> TokenGenerator:
    """TRL's vLLM generation (`trainer.vllm_generation`, set up by `GRPOConfig(
    use_vllm=True)`) as a `TokenGenerator`: one completion per prompt, held to the turn's
    `Sampling` and stopped at the chat template's end-of-turn tokens."""
    generation = trainer.vllm_generation
    generation.generation_kwargs = {
        **generation.generation_kwargs,
        "stop_token_ids": sorted(stop_ids),
    }

    def generate(prompts: list[list[int]], sampling: Sampling) -> list[Completion]:
        # the turn's limits, in the attributes `VLLMGeneration.generate` reads them from
        generation.max_completion_length = sampling.max_new_tokens
        generation.temperature = sampling.temperature
        generation.top_p = sampling.top_p
        generation.top_k = sampling.top_k if sampling.top_k > 0 else -1
        _, completions, logprobs, token_ids = generation.generate(
            prompts, images=None, num_generations=1
        )
        return [
            (list(ids), sampled_logprobs(ids, lps, tids))
            for ids, lps, tids in zip(completions, logprobs, token_ids, strict=True)
        ]

    return generate


def sampled_logprobs(
    ids: list[int], logprobs: list[list[float | None]], token_ids: list[list[int]] | None
) -> list[float]:
    """The sampled tokens' log-probabilities from vLLM's per-position lists (sorted by
    rank, so the sampled token is not always first; None where vLLM had a NaN)."""
    picked: list[float] = []
    for position, token in enumerate(ids):
        candidates = token_ids[position] if token_ids is not None else [token]
        value = logprobs[position][candidates.index(token) if token in candidates else 0]
        picked.append(float("nan") if value is None else float(value))
    return picked


def transformers_generator(model: PreTrainedModel, pad_id: int) -> TokenGenerator:
    """A `TokenGenerator` on a transformers model (`model.generate`, prompts left-padded):
    the contract vLLM's generation meets, on any device. It stands in for vLLM where
    there is none, and checks `PromptSampler` against `generation.Sequences`."""

    @torch.inference_mode()
    def generate(prompts: list[list[int]], sampling: Sampling) -> list[Completion]:
        width = max(len(ids) for ids in prompts)
        block = torch.full((len(prompts), width), pad_id, dtype=torch.long, device=model.device)
        mask = torch.zeros_like(block)
        for place, ids in enumerate(prompts):
            block[place, width - len(ids) :] = torch.tensor(ids, device=model.device)
            mask[place, width - len(ids) :] = 1
        greedy = sampling.temperature <= 0
        out = model.generate(
            input_ids=block,
            attention_mask=mask,
            max_new_tokens=sampling.max_new_tokens,
            do_sample=not greedy,
            temperature=None if greedy else sampling.temperature,
            top_p=None if greedy else sampling.top_p,
            top_k=None if greedy else sampling.top_k,
            pad_token_id=pad_id,
            return_dict_in_generate=True,
            output_logits=True,
        )
        temperature = 1.0 if greedy else sampling.temperature
        logits = torch.stack(out.logits, dim=1).float() / temperature
        new = out.sequences[:, width:]
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, new.unsqueeze(-1)).squeeze(-1)
        return [(new[i].tolist(), logprobs[i].tolist()) for i in range(len(prompts))]

    return generate
