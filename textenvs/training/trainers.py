"""What both methods' trainers share (GRPO's, `grpo.py`, and SFT's, `sft.py`): the
trainer arguments of a run, the callbacks writing the run's record into each checkpoint
and timing each step, training only the top layers, and the conversation the run's
episodes are played in."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch
from transformers import PreTrainedModel, Trainer, TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from textenvs.agents.llm import context
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.evals import run_folder
from textenvs.inference import models
from textenvs.training.settings import TrainSettings


def trainer_arguments(
    settings: TrainSettings, out: Path, keep_checkpoints: int | None
) -> dict[str, Any]:
    """The arguments every trainer of a run takes alike (GRPO's and SFT's); the newest
    `keep_checkpoints` checkpoints are kept (None: all)."""
    return {
        "output_dir": str(out / run_folder.CHECKPOINTS),
        "max_steps": settings.steps,
        "learning_rate": settings.learning_rate,
        "use_cpu": not torch.cuda.is_available(),
        "bf16": False,
        # short sequences on a CPU: recomputing activations costs more than keeping them
        "gradient_checkpointing": False,
        "logging_steps": 1,
        "save_steps": settings.save_every,
        "save_total_limit": keep_checkpoints,
        "report_to": [],
        "disable_tqdm": True,
        "seed": settings.rng_seed,
        "data_seed": settings.rng_seed,
        "lr_scheduler_type": "constant",
        "dataloader_num_workers": 0,
    }


class RecordWriter(TrainerCallback):
    """Writes the run's settings into every checkpoint, so `textenvs eval --model` plays a
    checkpoint with the settings it was trained with (its reply limit among them)."""

    def __init__(self, settings: TrainSettings) -> None:
        self.settings = settings

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if folder.is_dir():
            models.write_record(folder, self.settings.record())


class StepWriter(RecordWriter):
    """A `RecordWriter` that also times each optimizer step, for a curve row written at
    the step's log (`step_seconds`)."""

    def __init__(self, settings: TrainSettings) -> None:
        super().__init__(settings)
        self.step_started = time.perf_counter()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.step_started = time.perf_counter()

    def step_seconds(self) -> float:
        return time.perf_counter() - self.step_started


AnyTrainer = TypeVar("AnyTrainer", bound=Trainer)


def without_printing(trainer: AnyTrainer) -> AnyTrainer:
    """`trainer` without its own log lines and bar: the run's progress bar says them."""
    for noisy in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(noisy)
    return trainer


def model_prompt_budget(settings: TrainSettings, model: PreTrainedModel) -> int:
    """The prompt budget `textenvs eval` sets for `model` (its context window, learned at
    preflight, less room for a reply of `settings.max_tokens`)."""
    return context.budget_under(models.context_window(model), settings.max_tokens)


def run_conversation(settings: TrainSettings, prompt_budget: int) -> LLMConfig:
    """The conversation the run's episodes are played in, as `textenvs eval` holds it: the
    run's action mode and conversation settings under `prompt_budget`. Tools mode (`--method
    sft` only) holds text mode's conversation, each reply a call of `act` and answered."""
    tools = settings.action_mode == "tools"
    config = conversation_settings(
        "text" if tools else settings.action_mode,
        settings.json_reasoning,
        **{"prompt_budget": prompt_budget, **settings.conversation},
    )
    return config.model_copy(update={"action_mode": "tools"}) if tools else config


def freeze_below(model: PreTrainedModel, trained_layers: int) -> None:
    """Train only the top `trained_layers` decoder layers and the final norm (the
    embeddings, shared with the output head in small models, stay as they are)."""
    layers = decoder_layers(model)
    if not 0 < trained_layers <= len(layers):
        raise ValueError(f"--train-layers must be 1-{len(layers)}")
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    for layer in layers[len(layers) - trained_layers :]:
        for parameter in layer.parameters():
            parameter.requires_grad_(True)
    norm = getattr(getattr(model, "model", model), "norm", None)
    if norm is not None:
        for parameter in norm.parameters():
            parameter.requires_grad_(True)


def decoder_layers(model: PreTrainedModel) -> Sequence[torch.nn.Module]:
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise ValueError("--train-layers needs a decoder model with model.layers")
    return list(layers)
