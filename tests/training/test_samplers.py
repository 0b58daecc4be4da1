"""The sampler seam: rollouts sample through transformers (one cache kept across turns) or
through a prompt generator as vLLM is one, and play the same episodes either way.

vLLM itself needs a CUDA GPU, which the test machines do not have: a transformers
generator stands in for it behind the same contract (whole token prompts in, completions
and their log-probabilities out), and TRL's `VLLMGeneration` is stood in for by an object
with its `generate` signature and return shape."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import textenvs
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.episodes.specs import EpisodeSpec
from textenvs.inference.chat import ChatTokens
from textenvs.inference.generation import Sampling
from textenvs.training import grpo
from textenvs.training.rollouts import play
from textenvs.training.samplers import (
    PromptSampler,
    sampled_logprobs,
    transformers_generator,
    trl_vllm_generator,
)
from textenvs.training.settings import TrainingError, TrainSettings, settings_from

GREEDY = Sampling(max_new_tokens=10, temperature=0.0)
SPECS = [EpisodeSpec("treasure-hunt", seed) for seed in (3, 4, 5)]


def _play(tiny, sampling, sampler=None, specs=SPECS):
    model, tokenizer = tiny
    return play(
        model,
        ChatTokens(tokenizer),
        specs,
        textenvs.make,
        conversation_settings(prompt_budget=7000),
        sampling,
        max_turns=4,
        generator=torch.Generator().manual_seed(0),
        sampler=sampler,
    )


def test_a_prompt_sampler_plays_the_episodes_the_cached_sampler_plays(tiny):
    model, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    cached = _play(tiny, GREEDY)
    generate = transformers_generator(model, tokenizer.pad_token_id)
    prompted = _play(tiny, GREEDY, PromptSampler(generate, len(SPECS), stop_ids=chat.stop_ids))
    for a, b in zip(cached, prompted, strict=True):
        assert [t.command for t in a.result.turns] == [t.command for t in b.result.turns]
        assert a.prompt_ids == b.prompt_ids
        assert a.completion_ids == b.completion_ids
        assert a.env_mask == b.env_mask
        mine = [(x, y) for x, y, m in zip(a.logprobs, b.logprobs, a.env_mask, strict=True) if m]
        # NaN where a reply was read in another form than sampled (not sampled as such)
        assert mine and all(
            math.isclose(x, y, abs_tol=1e-3) or (math.isnan(x) and math.isnan(y)) for x, y in mine
        )


def test_a_prompt_sampler_cuts_a_completion_at_the_turn_end_and_the_token_limit():
    sampler = PromptSampler(lambda prompts, sampling: [], 1, stop_ids={9})
    ended = sampler.reply([5, 6, 9, 7, 7], [-0.1, -0.2, -0.3, -0.4, -0.5], limit=10)
    assert (ended.ids, ended.logprobs, ended.ended) == ([5, 6, 9], [-0.1, -0.2, -0.3], True)
    cut = sampler.reply([5, 6, 7, 8], [-0.1] * 4, limit=3)
    assert (cut.ids, cut.ended, cut.chosen) == ([5, 6, 7], False, [True] * 3)


def test_a_prompt_sampler_refuses_json_grammars():
    sampler = PromptSampler(lambda prompts, sampling: [], 1, stop_ids={9})
    with pytest.raises(ValueError, match="json action mode"):
        sampler.extend_and_sample({0: [1, 2]}, GREEDY, {0: object()})


class StandInVLLMGeneration:
    """TRL's `VLLMGeneration` as `trl_vllm_generator` uses it: the sampling attributes it
    reads and `generate(prompts, images, num_generations)` returning (prompt ids,
    completion ids, per-position log-probabilities sorted by rank, their token ids).
    Completions come from the tiny model; each position lists a decoy token first, so
    the sampled token is not the first entry (as when it is not the most probable)."""

    def __init__(self, model, pad_id: int) -> None:
        self.model, self.pad_id = model, pad_id
        self.temperature, self.top_p, self.top_k = 1.0, 1.0, -1
        self.max_completion_length = None
        self.generation_kwargs: dict = {}
        self.calls: list[dict] = []

    def generate(self, prompts, images, num_generations):
        assert images is None and num_generations == 1
        self.calls.append({"max": self.max_completion_length, "t": self.temperature})
        sampling = Sampling(max_new_tokens=self.max_completion_length, temperature=0.0)
        completions = transformers_generator(self.model, self.pad_id)(prompts, sampling)
        decoy = 0
        logprobs = [[[-9.0, lp] for lp in lps] for _, lps in completions]
        token_ids = [[[decoy, token] for token in ids] for ids, _ in completions]
        return prompts, [ids for ids, _ in completions], logprobs, token_ids


def test_trls_vllm_generation_is_asked_per_turn_and_its_sampled_logprobs_kept(tiny):
    model, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    generation = StandInVLLMGeneration(model, tokenizer.pad_token_id)
    trainer = SimpleNamespace(vllm_generation=generation)
    generate = trl_vllm_generator(trainer, chat.stop_ids)
    assert generation.generation_kwargs["stop_token_ids"] == sorted(chat.stop_ids)
    sampler = PromptSampler(generate, len(SPECS), stop_ids=chat.stop_ids)
    through_vllm = _play(tiny, GREEDY, sampler)
    cached = _play(tiny, GREEDY)
    assert [r.completion_ids for r in through_vllm] == [r.completion_ids for r in cached]
    # one call a turn, all live episodes at once, each held to the turn's token limit
    assert len(generation.calls) == max(len(r.result.turns) + r.result.reasks for r in cached)
    assert {call["max"] for call in generation.calls} == {GREEDY.max_new_tokens}


def test_sampled_logprobs_pick_the_sampled_token_and_keep_nan_where_vllm_had_none():
    picked = sampled_logprobs([7, 8], [[-0.5, -2.0], [None]], [[3, 7], [8]])
    assert picked[0] == -2.0 and math.isnan(picked[1])
    assert sampled_logprobs([7], [[-0.25]], None) == [-0.25]


def test_the_rollout_function_samples_through_vllm_when_the_trainer_uses_it(tiny):
    model, tokenizer = tiny
    source = grpo.RolloutSource(
        TrainSettings(
            env="treasure-hunt",
            model="tiny",
            steps=1,
            seeds=[1000],
            eval_seeds=[0],
            max_turns=2,
            max_tokens=10,
            temperature=0.0,
        ),
        ChatTokens(tokenizer),
        textenvs.make,
        prompt_budget=7000,
    )
    generation = StandInVLLMGeneration(model, tokenizer.pad_token_id)
    trainer = SimpleNamespace(
        args=SimpleNamespace(use_vllm=True),
        vllm_generation=generation,
        model=model,
        accelerator=SimpleNamespace(unwrap_model=lambda m: m),
        state=SimpleNamespace(global_step=0),
    )
    out = source([grpo.episode_prompt(EpisodeSpec("treasure-hunt", 1000))] * 2, trainer)
    assert generation.calls and len(out["completion_ids"]) == 2
    for logprobs, ids in zip(out["logprobs"], out["completion_ids"], strict=True):
        assert len(logprobs) == len(ids)


def test_vllm_generation_without_a_gpu_is_one_line_saying_what_to_do(tiny_dir):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(TrainingError) as caught:
        settings_from(
            env="treasure-hunt",
            model=str(tiny_dir),
            seeds="1000-1009",
            eval_seeds="0-9",
            steps=1,
            generation="vllm",
        )
    assert str(caught.value) == (
        "--generation vllm: vLLM needs a CUDA GPU and none is visible; "
        "on a CPU leave --generation out"
    )


def test_vllm_generation_refuses_json_mode():
    settings = TrainSettings(
        env="treasure-hunt",
        model="tiny",
        steps=1,
        seeds=[1000, 1001],
        eval_seeds=[0],
        generation="vllm",
        action_mode="json",
    )
    with pytest.raises(ValueError, match="--action-mode text"):
        grpo.grpo_config(settings, Path("unused"))
