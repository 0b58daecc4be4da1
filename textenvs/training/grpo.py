"""GRPO on textenvs episodes with TRL's `GRPOTrainer` and a multi-turn `rollout_func`.

Each training example is an episode (scenario, seed, reset options). TRL repeats each
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

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import PreTrainedModel, TrainerCallback
from transformers.tokenization_utils_base import PreTrainedTokenizerBase
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from trl import GRPOConfig, GRPOTrainer

from textenvs.agents.llm import context
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.core import registry
from textenvs.episodes.specs import EpisodeSpec, seed_ranges
from textenvs.evals import bands, run_folder
from textenvs.inference import models
from textenvs.inference.chat import ChatTokens
from textenvs.inference.generation import Sampling
from textenvs.training import curve
from textenvs.training.rollouts import EnvFactory, Rollout, Timing, play
from textenvs.training.samplers import PromptSampler, trl_vllm_generator


@dataclass
class TrainSettings:
    """Everything a training run depends on (written into every checkpoint)."""

    env: str
    model: str
    steps: int
    seeds: list[int]
    eval_seeds: list[int]
    #: the seeds the starting model was trained on (its record's), so `textenvs eval`
    #: refuses them for this run's checkpoints too
    earlier_seeds: list[int] = field(default_factory=list)
    #: "grpo" (reinforcement from the scenario's reward) or "sft" (imitate the episodes
    #: of the agent `demonstrations` on the training seeds: `sft.py`)
    method: str = "grpo"
    demonstrations: str = "scripted"
    #: sft: imitate won episodes only
    only_success: bool = False
    #: --method sft: the share of the replies repeating the command before trained on
    habit_share: float = 1.0
    #: --method sft: the share of turns the demonstrator plays a random command on
    demonstration_noise: float = 0.0
    options: dict[str, Any] = field(default_factory=dict)
    #: episodes per seed in a step (GRPO's group), and seeds per step
    group_size: int = 4
    seeds_per_step: int = 2
    #: episodes trained on per forward/backward pass
    micro_batch: int = 2
    learning_rate: float = 1e-5
    temperature: float = 1.0
    max_tokens: int = 32
    #: the trainer stops an episode after this many turns (None: the scenario's budget)
    max_turns: int | None = None
    #: conversation settings (`agents.llm.conversation.CONVERSATION_SETTINGS`)
    conversation: dict[str, Any] = field(default_factory=dict)
    #: "text", "json" (replies held to the action schema) or, --method sft only, "tools"
    #: (replies as calls of `act`), and in json mode the most characters of reasoning
    #: before the action (0: none)
    action_mode: str = "text"
    json_reasoning: int = 0
    #: train only the top layers (None: all): on a CPU the backward pass is most of a step
    train_layers: int | None = None
    #: "return" (the scenario's reward) or "headline" (the per-episode headline metric)
    reward: str = "return"
    env_url: str | None = None
    #: where rollout replies are sampled: "transformers" (any device, json mode too) or
    #: "vllm" (TRL's vLLM generation on a GPU: colocated, or the server at `vllm_server`)
    generation: str = "transformers"
    vllm_server: str | None = None
    save_every: int = 10
    seed: int = 0

    @property
    def episodes_per_step(self) -> int:
        return self.group_size * self.seeds_per_step

    def record(self) -> dict[str, Any]:
        """The settings as JSON, seeds as ranges (`parse_seeds` reads them back)."""
        fields = asdict(self)
        for name in ("seeds", "eval_seeds", "earlier_seeds"):
            fields[name] = seed_ranges(fields[name])
        return {"textenvs_training": 1, **fields}


def episode_prompt(env: str, seed: int) -> str:
    """A training example: the episode it stands for (the prompt is built per turn)."""
    return f"{env} seed={seed}"


def episode_of(prompt: str, options: dict[str, Any]) -> EpisodeSpec:
    env, _, seed = prompt.partition(" seed=")
    return EpisodeSpec(env, int(seed), dict(options) or None)


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
        specs = [episode_of(prompt, self.settings.options) for prompt in prompts]
        model = trainer.accelerator.unwrap_model(trainer.model)
        was_training = model.training
        model.eval()
        seed = self.settings.seed * 1_000_003 + trainer.state.global_step
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
        value = bands.episode_headline(self.settings.env, curve.episode_record(rollout))
        return 0.0 if value is None else value


def episode_reward(prompts: list[Any], completions: list[Any], **fields: Any) -> list[float]:
    """The reward of each episode (the rollout function scores them)."""
    return [float(value) for value in fields["episode_reward"]]


class RecordWriter(TrainerCallback):
    """Writes the run's settings into every checkpoint, so `textenvs eval --model` plays a
    checkpoint with the settings it was trained with (its reply limit among them)."""

    def __init__(self, settings: TrainSettings) -> None:
        self.settings = settings

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if folder.is_dir():
            models.write_record(folder, self.settings.record())


class CurveWriter(RecordWriter):
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
        self.step_started = time.perf_counter()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.step_started = time.perf_counter()

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if not logs or "loss" not in logs or not self.source.last:
            return
        step_s = time.perf_counter() - self.step_started
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
    per_step = settings.episodes_per_step
    if per_step % settings.micro_batch:
        raise ValueError(
            f"episodes per step ({per_step}) must be a multiple of the micro batch "
            f"({settings.micro_batch})"
        )
    vllm = settings.generation == "vllm"
    if vllm and settings.action_mode == "json":
        raise ValueError(
            "--generation vllm samples text only (json mode holds each token to the action "
            "schema): use --action-mode text, or the default transformers generation"
        )
    return GRPOConfig(
        use_vllm=vllm,
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
        "seed": settings.seed,
        "data_seed": settings.seed,
        "lr_scheduler_type": "constant",
        "dataloader_num_workers": 0,
    }


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
    dataset = Dataset.from_dict(
        {"prompt": [episode_prompt(settings.env, seed) for seed in settings.seeds]}
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=episode_reward,
        args=grpo_config(settings, out, keep_checkpoints),
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=source,
        callbacks=[CurveWriter(settings, source, out, on_step)],
    )
    for noisy in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(noisy)
    return trainer


def freeze_below(model: PreTrainedModel, trained_layers: int) -> None:
    """Train only the top `trained_layers` decoder layers and the final norm (the
    embeddings, shared with the output head in small models, stay as they are)."""
    layers = _decoder_layers(model)
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


def _decoder_layers(model: PreTrainedModel) -> Sequence[torch.nn.Module]:
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise ValueError("--train-layers needs a decoder model with model.layers")
    return list(layers)
