"""A supervised warm start with TRL's `SFTTrainer`: the model imitates an agent's
episodes (`demonstrations.py`), each one the conversation the model will be in, with only
the replies trained on. `textenvs train --method sft` runs it; GRPO can then go on from
its `final/` (`textenvs train --model OUT/final`), so a report can show what each added.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from datasets import Dataset
from transformers import PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from trl import SFTConfig, SFTTrainer

from textenvs.episodes.specs import EpisodeSpec
from textenvs.inference.chat import ChatTokens
from textenvs.training import grpo
from textenvs.training.demonstrations import IGNORED, Demonstration, demonstrations
from textenvs.training.rollouts import EnvFactory

__all__ = ["IGNORED", "build_trainer", "demonstration_dataset", "sft_config"]


def sft_config(
    settings: grpo.TrainSettings, out: Path, keep_checkpoints: int | None = None
) -> SFTConfig:
    """One optimizer step per `seeds_per_step` demonstrations, one episode a pass."""
    return SFTConfig(
        per_device_train_batch_size=1,  # episodes differ in length: no padding
        gradient_accumulation_steps=settings.seeds_per_step,
        max_length=None,
        **grpo.trainer_arguments(settings, out, keep_checkpoints),
    )


def demonstration_dataset(
    settings: grpo.TrainSettings,
    tokenizer: PreTrainedTokenizerBase,
    model: PreTrainedModel,
    make_env: EnvFactory,
    on_episode: Callable[[Demonstration], Any] | None = None,
) -> tuple[Dataset, list[Demonstration]]:
    """The demonstrations of the training seeds as a tokenized dataset (`input_ids`,
    `labels`), in the conversation `textenvs eval` holds for this model (its prompt
    budget, the run's conversation settings, text mode)."""
    # text mode: `settings_from` refuses --method sft with another action mode
    conversation = grpo.run_conversation(settings, grpo.model_prompt_budget(settings, model))
    specs = [EpisodeSpec(settings.env, seed, settings.options or None) for seed in settings.seeds]
    kept = demonstrations(
        specs,
        settings.demonstrations,
        make_env,
        conversation,
        ChatTokens(tokenizer),
        only_success=settings.only_success,
        on_episode=on_episode,
    )
    if not kept:
        raise ValueError(
            f"no demonstrations: {settings.demonstrations} won none of the {len(specs)} "
            "training episodes (leave --only-success out, or give more --seeds)"
        )
    dataset = Dataset.from_dict(
        {"input_ids": [d.ids for d in kept], "labels": [d.labels for d in kept]}
    )
    return dataset, kept


class LossWriter(grpo.RecordWriter):
    """Each optimizer step's loss, for the caller (the progress line), and each
    checkpoint's record (the loss per step is in its `trainer_state.json`)."""

    def __init__(
        self, settings: grpo.TrainSettings, on_step: Callable[[dict[str, Any]], None] | None
    ) -> None:
        super().__init__(settings)
        self.on_step = on_step

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if logs and "loss" in logs and self.on_step is not None:
            self.on_step({"step": state.global_step, "loss": logs["loss"]})


def build_trainer(
    settings: grpo.TrainSettings,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    dataset: Dataset,
    out: Path,
    on_step: Callable[[dict[str, Any]], None] | None = None,
    keep_checkpoints: int | None = None,
) -> SFTTrainer:
    if settings.train_layers is not None:
        grpo.freeze_below(model, settings.train_layers)
    trainer = SFTTrainer(
        model=model,
        args=sft_config(settings, out, keep_checkpoints),
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[LossWriter(settings, on_step)],
    )
    for noisy in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(noisy)
    return trainer
