"""GRPO on textenvs episodes with TRL's `GRPOTrainer` and a multi-turn `rollout_func`.

Each training example is an episode (scenario, seed, reset options: the dataset row
`EpisodeSpec.row` writes, the TRL adapter's too, carried in the prompt). TRL repeats each
example `group_size` times; the rollout function plays all of a step's episodes in
lockstep with the trainer's own model (`rollouts.play`), and returns per episode the
prompt ids, the completion ids (every later token), the mask of the model's own tokens
(`env_mask`: observations and re-asks are not trained on) and the sampled tokens'
log-probabilities. The reward is the episode's return, the scenario's own reward. GRPO
compares the episodes of one seed with each other (group-relative advantages).

Replies are sampled behind one interface (`samplers.py`): through transformers, one
key/value cache kept across turns (any device; the default, and the only one here on a
CPU), or on a GPU through the trainer's own vLLM generation (`GRPOConfig(use_vllm=True)`,
colocated or a `trl vllm-serve` server), each turn's prompts sent as token ids and the
sampled tokens' log-probabilities returned as TRL expects them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase
from trl import GRPOConfig, GRPOTrainer

from textenvs.core import registry
from textenvs.episodes.envs import EnvFactory
from textenvs.episodes.specs import EpisodeSpec
from textenvs.evals.records import result_headline
from textenvs.inference.chat import ChatTokens
from textenvs.inference.generation import Sampling
from textenvs.training import curve
from textenvs.training.rollouts import Rollout, Timing, play
from textenvs.training.samplers import PromptSampler, trl_vllm_generator
from textenvs.training.settings import TrainSettings, check_batches
from textenvs.training.trainers import (
    StepWriter,
    freeze_below,
    model_prompt_budget,
    run_conversation,
    trainer_arguments,
    without_printing,
)


def episode_prompt(spec: EpisodeSpec) -> str:
    """A training example's prompt: the episode's dataset row (`EpisodeSpec.row`) as JSON
    text, since TRL hands its `rollout_func` the prompts alone (each turn's prompt is
    built as the episode is played)."""
    return json.dumps(spec.row(), sort_keys=True)


def episode_of(prompt: str) -> EpisodeSpec:
    """The episode an `episode_prompt` stands for."""
    return EpisodeSpec.from_row(json.loads(prompt))


class RolloutSource:
    """TRL's `rollout_func`: plays the episodes of a step and keeps them for the curve."""

    def __init__(
        self,
        settings: TrainSettings,
        chat: ChatTokens,
        make_env: EnvFactory,
        prompt_budget: int,
    ) -> None:
        self.settings = settings
        self.chat = chat
        self.make_env = make_env
        self.conversation = run_conversation(settings, prompt_budget)
        self.sampling = Sampling(
            max_new_tokens=settings.max_tokens, temperature=settings.temperature
        )
        #: the last step's episodes and where its time went (read by `CurveWriter`)
        self.last: list[Rollout] = []
        self.rewards: list[float] = []
        self.timing = Timing()
        self.rollout_s = 0.0

    def __call__(self, prompts: list[str], trainer: GRPOTrainer) -> dict[str, list[Any]]:
        started = time.perf_counter()
        specs = [episode_of(prompt) for prompt in prompts]
        model = trainer.accelerator.unwrap_model(trainer.model)
        was_training = model.training
        model.eval()
        seed = self.settings.rng_seed * 1_000_003 + trainer.state.global_step
        self.timing = Timing()
        sampler = None
        if trainer.args.use_vllm:
            generate = trl_vllm_generator(trainer, self.chat.stop_ids)
            sampler = PromptSampler(generate, len(specs), stop_ids=self.chat.stop_ids)
        try:
            rollouts = play(
                model,
                self.chat,
                specs,
                self.make_env,
                self.conversation,
                self.sampling,
                max_turns=self.settings.max_turns,
                generator=torch.Generator().manual_seed(seed),
                timing=self.timing,
                sampler=sampler,
            )
        finally:
            model.train(was_training)
        self.last = rollouts
        self.rewards = [self.score(r) for r in rollouts]
        self.rollout_s = time.perf_counter() - started
        return {
            "prompt_ids": [r.prompt_ids for r in rollouts],
            "completion_ids": [r.completion_ids for r in rollouts],
            "logprobs": [r.logprobs for r in rollouts],
            "env_mask": [r.env_mask for r in rollouts],
            "episode_reward": self.rewards,
        }

    def score(self, rollout: Rollout) -> float:
        """What GRPO maximises for one episode: its return, or its headline metric."""
        if self.settings.reward == "return":
            return rollout.reward
        value = result_headline(rollout.result, rollout.skills)
        return 0.0 if value is None else value


def episode_reward(prompts: list[Any], completions: list[Any], **fields: Any) -> list[float]:
    """The reward of each episode (the rollout function scores them)."""
    return [float(value) for value in fields["episode_reward"]]


class CurveWriter(StepWriter):
    """One curve row per optimizer step (and the charts), a checkpoint's record, and
    progress for the caller."""

    def __init__(
        self,
        settings: TrainSettings,
        source: RolloutSource,
        out: Path,
        on_step: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        super().__init__(settings)
        self.source = source
        self.out = out
        self.on_step = on_step

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if not logs or "loss" not in logs or not self.source.last:
            return
        step_s = self.step_seconds()
        row = curve.row(
            step=state.global_step,
            env=self.settings.env,
            level=registry.episode_level(self.settings.env, self.settings.options),
            rollouts=self.source.last,
            rewards=self.source.rewards,
            logs=logs,
            step_s=step_s,
            rollout_s=self.source.rollout_s,
            timing=self.source.timing,
        )
        curve.append(self.out, row)
        curve.append_rollouts(self.out, state.global_step, self.source.last)
        if self.on_step is not None:
            self.on_step(row)


def grpo_config(
    settings: TrainSettings, out: Path, keep_checkpoints: int | None = None
) -> GRPOConfig:
    """TRL's settings for `settings`; the newest `keep_checkpoints` checkpoints are kept
    (None: all)."""
    check_batches(settings)  # a ValueError saying what does not fit, before TRL's own
    per_step = settings.episodes_per_step
    return GRPOConfig(
        use_vllm=settings.generation == "vllm",
        vllm_mode="server" if settings.vllm_server else "colocate",
        vllm_server_base_url=settings.vllm_server,
        num_generations=settings.group_size,
        per_device_train_batch_size=settings.micro_batch,
        gradient_accumulation_steps=per_step // settings.micro_batch,
        generation_batch_size=per_step,
        temperature=settings.temperature,
        max_completion_length=None,
        beta=0.0,  # no reference model: a second copy costs a CPU more than it helps here
        **trainer_arguments(settings, out, keep_checkpoints),
    )


def build_trainer(
    settings: TrainSettings,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    make_env: EnvFactory,
    out: Path,
    on_step: Callable[[dict[str, Any]], None] | None = None,
    keep_checkpoints: int | None = None,
) -> GRPOTrainer:
    """The GRPO trainer of `settings`, its rollouts played with `model` itself."""
    chat = ChatTokens(tokenizer)
    if settings.train_layers is not None:
        freeze_below(model, settings.train_layers)
    source = RolloutSource(settings, chat, make_env, model_prompt_budget(settings, model))
    options = settings.options or None
    specs = [EpisodeSpec(settings.env, seed, options) for seed in settings.seeds]
    dataset = Dataset.from_dict({"prompt": [episode_prompt(spec) for spec in specs]})
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=episode_reward,
        args=grpo_config(settings, out, keep_checkpoints),
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=source,
        callbacks=[CurveWriter(settings, source, out, on_step)],
    )
    return without_printing(trainer)
