"""A supervised warm start with TRL's `SFTTrainer`: the model imitates an agent's
episodes (`demonstrations.py`), each one the conversation the model will be in, with only
the replies trained on. `textenvs train --method sft` runs it; GRPO can then go on from
its `final/` (`textenvs train --model OUT/final`), so a report can show what each added.

Every sequence opens with the same tokens, none trained on: the rules prompt. They are
fed once per optimizer step, not once per sequence: their keys and values are computed
without gradient with the step's weights and each sequence feeds only the rest
(`SharedPrefixTrainer`). With one sequence a turn (`--history 0`: the rules prompt is
about 800 of a turn's 1,000 tokens) that is several times less work a step; the price is
that the rules prompt's own keys and values are not trained, only what reads them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import DynamicCache, PreTrainedModel, TrainerCallback
from transformers.tokenization_utils_base import PreTrainedTokenizerBase
from trl import SFTConfig, SFTTrainer

from textenvs.episodes.envs import EnvFactory
from textenvs.episodes.specs import EpisodeSpec
from textenvs.inference import models
from textenvs.inference.chat import ChatTokens
from textenvs.training import curve
from textenvs.training.choices import CLIP
from textenvs.training.credit import Draws, weighted_columns
from textenvs.training.demonstrations import (
    IGNORED,
    Demonstration,
    RecordedEpisode,
    demonstrations,
    replayed_demonstrations,
)
from textenvs.training.reference import ReferenceTop
from textenvs.training.settings import TrainSettings
from textenvs.training.trainers import (
    StepWriter,
    freeze_below,
    model_prompt_budget,
    run_conversation,
    trainer_arguments,
    without_printing,
)
from textenvs.training.weighting import (
    PolicyDrift,
    TrainedScores,
    clipped_policy_loss,
    vocabulary_kl,
)

__all__ = ["IGNORED", "build_trainer", "demonstration_dataset", "sft_config"]


def sft_config(
    settings: TrainSettings, out: Path, keep_checkpoints: int | None = None
) -> SFTConfig:
    """One optimizer step per `seeds_per_step` sequences (whole episodes, or turns when
    the conversation is a window), one sequence a pass."""
    return SFTConfig(
        per_device_train_batch_size=1,  # sequences differ in length: no padding
        gradient_accumulation_steps=settings.seeds_per_step,
        max_length=None,
        # keep the dataset's `weight` column (--reward-weighted) for `compute_loss`
        remove_unused_columns=not settings.reward_weighted,
        **trainer_arguments(settings, out, keep_checkpoints),
    )


def demonstration_dataset(
    settings: TrainSettings,
    tokenizer: PreTrainedTokenizerBase,
    model: PreTrainedModel,
    make_env: EnvFactory,
    on_episode: Callable[[Demonstration], Any] | None = None,
    replayed: tuple[list[RecordedEpisode], list[float] | list[list[float]] | Draws] | None = None,
) -> tuple[Dataset, list[Demonstration]]:
    """The demonstrations of the training seeds as a tokenized dataset (`input_ids`,
    `labels`), in the conversation `textenvs eval` holds for this model (its prompt
    budget, the run's conversation settings, text or tools mode). With `replayed` (the
    episodes of the eval run `settings.demonstrations` chosen to train on, and their
    weights as fed: `credit.replayed_choice`, `credit.fed_choice`), those are replayed
    instead of played; with `settings.reward_weighted`, each sequence fed has its
    `weight` (`credit.py`)."""
    # text or tools mode: `settings_from` refuses --method sft in json mode
    conversation = run_conversation(settings, model_prompt_budget(settings, model))
    chat = ChatTokens(tokenizer)
    weights: list[float] | list[list[float]] | Draws = []
    if replayed is not None:
        chosen, weights = replayed
        kept = replayed_demonstrations(
            chosen,
            make_env,
            conversation,
            chat,
            habit_share=settings.habit_share,
            on_episode=on_episode,
        )
    else:
        specs = [
            EpisodeSpec(settings.env, seed, settings.options or None) for seed in settings.seeds
        ]
        kept = demonstrations(
            specs,
            settings.demonstrations,
            make_env,
            conversation,
            chat,
            only_success=settings.only_success,
            habit_share=settings.habit_share,
            noise=settings.demonstration_noise,
            on_episode=on_episode,
        )
    if not kept:
        raise ValueError(
            f"no demonstrations: {settings.demonstrations} won none of its training "
            "episodes (leave --only-success out, or give more --seeds)"
        )
    sequences = [sequence for d in kept for sequence in d.sequences]
    columns = {"input_ids": [s.ids for s in sequences], "labels": [s.labels for s in sequences]}
    if weights:
        columns = weighted_columns(columns, weights, kept)
    return Dataset.from_dict(columns), kept


def shared_prefix(dataset: Dataset) -> list[int]:
    """The tokens every sequence of `dataset` opens with, ending before the first token
    trained on (the first token fed after the prefix is one no loss needs)."""
    rows = list(zip(dataset["input_ids"], dataset["labels"], strict=True))
    first = rows[0][0]
    length = len(first)
    for ids, labels in rows:
        trained = next(i for i, label in enumerate(labels) if label != IGNORED)
        differs = (i for i, (a, b) in enumerate(zip(ids, first, strict=False)) if a != b)
        length = min(length, next(differs, len(ids)), trained - 1)
    return list(first[: max(length, 0)])


class SharedPrefixTrainer(SFTTrainer):
    """SFT whose sequences all open with `prefix`, untrained: its keys and values are
    computed once an optimizer step, without gradient, and each sequence feeds the rest.
    A dataset with a `weight` column (--reward-weighted) is trained with the clipped
    policy loss of `weighting.py` instead: each sequence's tokens against their
    log-probabilities under `reference`, the policy that sampled them, frozen (scored as
    each sequence's step comes, so a run that stops early scores only what it trained on),
    and each step's drift from that policy measured (`drift_limit`; with
    `drift_at_anchors`, the vocabulary's divergence at the sequences weighing 0 alone)
    and logged as `kl`; with `kl_penalty`, plus that times the KL divergence from the
    reference over the whole vocabulary at each trained token (`weighting.vocabulary_kl`;
    with `kl_anchors_only`, at the sequences weighing 0 alone)."""

    def __init__(
        self,
        *args: Any,
        prefix: list[int],
        reference: PreTrainedModel | None = None,
        target_kl: float | None = None,
        clip: float = CLIP,
        kl_penalty: float = 0.0,
        drift_at_anchors: bool = False,
        kl_anchors_only: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.prefix = prefix
        self.weighted = "weight" in self.train_dataset.column_names
        if self.weighted and reference is None:
            raise ValueError("a weighted dataset needs the reference policy that sampled it")
        self.reference = reference
        if reference is not None:
            reference.requires_grad_(False).eval().to(self.args.device)
        self.drift_limit = DriftLimit(target_kl)
        self.clip = clip
        self.kl_penalty = kl_penalty
        # --credit lookahead trains replies the model did not play, whose rise is the
        # move it asks for: its drift is measured at the anchors alone (weight 0), as the
        # divergence over the vocabulary (an anchor's reply may be random play's, whose
        # ratio to the sampling model's tiny probability says nothing of its drift)
        self.drift_at_anchors = drift_at_anchors
        self.kl_anchors_only = kl_anchors_only  # the penalty where the weight is 0 alone
        if self.weighted:
            self.data_collator = ColumnsKeeping(self.data_collator, ("weight",))
            self.add_callback(self.drift_limit)
        self.cache_argument = models.cache_argument(self.model)
        if prefix or self.weighted:  # the loss below is a sequence's mean: average it
            self.loss_is_scaled_for_ga = False  # over accumulation
        self.prefix_cache: tuple[int, DynamicCache] | None = None  # (step, cache)
        self.reference_prefix_cache: DynamicCache | None = None  # the reference never moves
        # the reference's layers above the trained model's frozen bottom, fed its hidden
        # states (`reference.py`); None: the reference whole
        self.reference_top = (
            ReferenceTop.checked(reference, self.model, (prefix or self.first_ids())[:16])
            if reference is not None
            else None
        )

    def prefix_keys_values(self, model: PreTrainedModel) -> DynamicCache:
        ids = torch.tensor([self.prefix], device=model.device)
        with torch.no_grad():
            return model(input_ids=ids, use_cache=True).past_key_values

    def cache_for_step(self, model: PreTrainedModel) -> DynamicCache:
        """A copy of the prefix's cache under this optimizer step's weights."""
        step = self.state.global_step
        if self.prefix_cache is None or self.prefix_cache[0] != step:
            self.prefix_cache = (step, self.prefix_keys_values(model))
        return copy.deepcopy(self.prefix_cache[1])

    def first_ids(self) -> list[int]:
        return list(self.train_dataset[0]["input_ids"])

    def trained_logprobs(
        self, model: PreTrainedModel, ids: torch.Tensor, labels: torch.Tensor
    ) -> tuple[TrainedScores, Any]:
        """The log-probabilities at one sequence's trained tokens, and the model's outputs
        (with the hidden states between its layers where the reference reads them)."""
        cache = self.cache_for_step(model) if self.prefix else None
        fed = {"input_ids": ids[:, len(self.prefix) :]}
        if self.reference_top is not None:
            fed["output_hidden_states"] = True
        return self.sequence_logprobs(model, labels, cache, **fed)

    def reference_logprobs(
        self, ids: torch.Tensor, labels: torch.Tensor, trained_outputs: Any
    ) -> TrainedScores:
        """The log-probabilities at the trained tokens under the reference policy (no
        gradient): its top fed the hidden states of the trained model's pass
        (`trained_outputs`), or the whole reference fed the tokens."""
        assert self.reference is not None
        top = self.reference_top
        with torch.no_grad():
            if self.prefix and self.reference_prefix_cache is None:
                self.reference_prefix_cache = self.reference_prefix_keys_values()
            cache = copy.deepcopy(self.reference_prefix_cache)
            if top is None:
                fed = {"input_ids": ids[:, len(self.prefix) :]}
                return self.sequence_logprobs(self.reference, labels, cache, **fed)[0]
            entering = trained_outputs.hidden_states[top.shared].detach()
            return self.sequence_logprobs(top, labels, cache, entering=entering)[0]

    def reference_prefix_keys_values(self) -> DynamicCache:
        assert self.reference is not None
        if self.reference_top is None:
            return self.prefix_keys_values(self.reference)
        ids = torch.tensor([self.prefix], device=self.model.device)
        top = self.reference_top
        entering = self.model(input_ids=ids, output_hidden_states=True).hidden_states[top.shared]
        return top(entering, use_cache=True).past_key_values

    def sequence_logprobs(
        self,
        model: PreTrainedModel | ReferenceTop,
        labels: torch.Tensor,
        prefix_cache: DynamicCache | None,
        **fed: Any,
    ) -> tuple[TrainedScores, Any]:
        """`fed` (the tokens after the prefix, or what stands for them) through `model`:
        the log-probabilities at the labels' trained tokens, and the outputs."""
        cut = len(self.prefix)
        cache = {self.cache_argument: prefix_cache} if cut else {}
        outputs = model(**fed, **cache)
        # logits at position i predict token i + 1; the first fed token is never trained
        targets = labels[:, cut + 1 :]
        trained = targets != IGNORED
        every = outputs.logits[:, :-1][trained].float().log_softmax(-1)
        chosen = every.gather(-1, targets[trained].unsqueeze(-1)).squeeze(-1)
        return TrainedScores(chosen, every), outputs

    def compute_loss(
        self,
        model: PreTrainedModel,
        inputs: dict[str, torch.Tensor],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        weight = inputs.pop("weight", None)
        if not self.prefix and weight is None:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        ids, labels = inputs["input_ids"], inputs["labels"]
        scores, outputs = self.trained_logprobs(model, ids, labels)
        logprobs = scores.chosen
        if weight is None:
            loss = -logprobs.mean()
        else:  # one sequence a batch (`sft_config`)
            sampled = self.reference_logprobs(ids, labels, outputs)
            loss = clipped_policy_loss(logprobs, sampled.chosen, float(weight), self.clip)
            at_anchor = float(weight) == 0
            kl = None
            if self.kl_penalty or self.drift_at_anchors:
                kl = vocabulary_kl(sampled.every, scores.every)
            if self.kl_penalty and (at_anchor or not self.kl_anchors_only):
                loss = loss + self.kl_penalty * kl
            if not self.drift_at_anchors:
                self.drift_limit.drift.add(logprobs, sampled.chosen)
            elif at_anchor:
                self.drift_limit.drift.add_divergence(float(kl.detach()), len(logprobs))
        return (loss, outputs) if return_outputs else loss

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        if self.weighted and "loss" in logs:
            logs = {**logs, "kl": self.drift_limit.last}
        super().log(logs, *args, **kwargs)


class DriftLimit(TrainerCallback):
    """Takes each optimizer step's drift (`PolicyDrift`, measured in the step's forward
    passes, before its update) and stops the run after the first step where it passed
    `target` (None: never): PPO's target-KL early stop, a bound on how far the reward
    may pull the model from the one whose episodes it learns from."""

    def __init__(self, target: float | None) -> None:
        self.drift = PolicyDrift()
        self.target = target
        self.last = 0.0

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.last = self.drift.take()
        if self.target is not None and self.last > self.target:
            control.should_training_stop = True


class ColumnsKeeping:
    """TRL's collator, with the `columns` it does not know passed on as tensors beside."""

    def __init__(
        self, collate: Callable[[list[dict[str, Any]]], dict[str, Any]], columns: tuple[str, ...]
    ) -> None:
        self.collate = collate
        self.columns = columns

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        kept = {
            column: [example.pop(column) for example in examples]
            for column in self.columns
            if column in examples[0]
        }
        batch = self.collate(examples)
        for column, values in kept.items():
            batch[column] = torch.tensor(values, dtype=torch.float32)
        return batch


class LossWriter(StepWriter):
    """Each optimizer step's loss, as a row of `out/curve.csv` and for the caller (the
    progress line), and each checkpoint's record."""

    def __init__(
        self,
        settings: TrainSettings,
        out: Path,
        on_step: Callable[[dict[str, Any]], None] | None,
    ) -> None:
        super().__init__(settings)
        self.out = out
        self.on_step = on_step

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if not logs or "loss" not in logs:
            return
        row = {"step": state.global_step, **logs}
        row["step_s"] = self.step_seconds()
        curve.append(self.out, row, curve.SFT_COLUMNS)
        if self.on_step is not None:
            kl = {"kl": logs["kl"]} if "kl" in logs else {}
            self.on_step({"step": state.global_step, "loss": logs["loss"], **kl})


def build_trainer(
    settings: TrainSettings,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    dataset: Dataset,
    out: Path,
    on_step: Callable[[dict[str, Any]], None] | None = None,
    keep_checkpoints: int | None = None,
) -> SharedPrefixTrainer:
    """The trainer; with --reward-weighted, beside it the starting model, frozen, for the
    policy that sampled the runs (they were sampled from it, or from a round that played
    as it did): loaded from the settings, so a resumed run, whose model is its
    checkpoint's, measures against the same policy."""
    if settings.train_layers is not None:
        freeze_below(model, settings.train_layers)
    trainer = SharedPrefixTrainer(
        model=model,
        args=sft_config(settings, out, keep_checkpoints),
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[LossWriter(settings, out, on_step)],
        prefix=shared_prefix(dataset),
        reference=models.load(settings.model)[0] if settings.reward_weighted else None,
        target_kl=settings.target_kl,
        clip=settings.clip,
        kl_penalty=settings.kl_penalty,
        # without anchors the trained replies' drift is logged
        drift_at_anchors=settings.anchored,
        kl_anchors_only=settings.kl_anchors_only,
    )
    return without_printing(trainer)
