"""A training run's settings (`TrainSettings`, written into `settings.json` and every
checkpoint) and their checks: `settings_from` turns `textenvs train`'s options into
checked settings, or one line saying what is wrong (`TrainingError`)."""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from textenvs.agents.llm.conversation import conversation_settings
from textenvs.episodes.specs import (
    TRAINING_SEEDS,
    check_reset_options,
    parse_seeds,
    resolve_envs,
    seed_ranges,
)
from textenvs.evals import store
from textenvs.inference import models, tool_template
from textenvs.training.choices import CLIP, PER_TURN_CREDITS
from textenvs.training.demonstrations import recorded_runs


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
    #: --method sft on recorded runs: a clipped policy gradient, each episode weighted by
    #: its success minus its seed's mean (a seed sampled more than once) or the runs'
    #: mean (`weighting.py`)
    reward_weighted: bool = False
    #: --reward-weighted: "episode" (each turn shares its episode's weight), "turn" (each
    #: turn weighs the change it made in its seed's value: `seed_value_changes`), "critic"
    #: (in a critic's value: `critic_value_changes`) or "critic-gains" (the critic's, only
    #: the turns that raised the value fed)
    credit: str = "episode"
    #: --reward-weighted: stop after the first step whose approximate KL from the sampling
    #: policy passed this (`sft.DriftLimit`; None: run every step)
    target_kl: float | None = None
    #: --reward-weighted: how far a trained token's probability may move from its sampled
    #: one, as a ratio, before the loss stops moving it (PPO's epsilon: `choices.CLIP`).
    #: The sampling policy stays the runs' for the whole run, so this bounds the whole
    #: run's push on a trained token, not a round's
    clip: float = CLIP
    #: --reward-weighted: add this times the KL divergence from the sampling policy over
    #: the whole vocabulary at each trained token to the loss (`weighting.vocabulary_kl`;
    #: 0: none)
    kl_penalty: float = 0.0
    #: --credit lookahead with --kl-penalty: the seeds whose episodes' turns the anchors
    #: are drawn from (empty: every training seed's). Anchors hold only the states they
    #: are drawn at: the starting model's own runs' seeds hold the states it will meet.
    #: --credit turn with --kl-penalty: these seeds' episodes are anchors alone (none of
    #: their turns credited), as many drawn as there are credited turns
    anchor_seeds: list[int] = field(default_factory=list)
    #: with anchors (`anchored`): add the penalty at the anchors alone, so the credited
    #: turns move as far as their push takes them while the rest are held (default: at
    #: every trained turn, which pulls the credited reply back too)
    kl_anchors_only: bool = False
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
    #: the run's random number generators (sampling, data order; `textenvs train --seed`),
    #: not an episode seed: those are `seeds`
    rng_seed: int = 0

    @property
    def anchored(self) -> bool:
        """Whether anchors are fed (turns weighing 0, for `kl_penalty`'s pull alone), at
        which the drift is measured: --credit lookahead with --kl-penalty, or --credit
        turn with --kl-penalty and --anchor-seeds."""
        if not (self.reward_weighted and self.kl_penalty):
            return False
        return self.credit == "lookahead" or (self.credit == "turn" and bool(self.anchor_seeds))

    @property
    def episodes_per_step(self) -> int:
        return self.group_size * self.seeds_per_step

    def record(self) -> dict[str, Any]:
        """The settings as JSON, seeds as ranges (`parse_seeds` reads them back)."""
        fields = asdict(self)
        for name in ("seeds", "eval_seeds", "earlier_seeds", "anchor_seeds"):
            fields[name] = seed_ranges(fields[name])
        return {"textenvs_training": 1, **fields}


#: settings an earlier version recorded under another name: {old name: name}
RENAMED = {"seed": "rng_seed"}


def recorded_settings(record: dict[str, Any]) -> dict[str, Any]:
    """A run's recorded settings (`settings.json`) under today's names, so a run of an
    earlier version resumes (`RENAMED`; a setting it lacks counts as its default)."""
    return {RENAMED.get(name, name): value for name, value in record.items()}


#: settings that only one method reads (given with the other, they would be recorded
#: and do nothing)
ONLY_FOR = {
    "grpo": (
        "group_size", "micro_batch", "temperature", "max_turns", "reward", "json_reasoning",
        "env_url", "generation", "vllm_server",
    ),
    "sft": (
        "demonstrations", "only_success", "reward_weighted", "credit", "target_kl",
        "clip", "kl_penalty", "anchor_seeds", "kl_anchors_only", "habit_share",
        "demonstration_noise",
    ),
}  # fmt: skip
#: every setting at its default
DEFAULTS = TrainSettings(env="", model="", steps=0, seeds=[], eval_seeds=[])
#: agents whose episodes `--method sft` can imitate (or a recorded eval run's)
DEMONSTRATORS = ("scripted", "reactive", "learner", "random")


class TrainingError(ValueError):
    """Why a run cannot start or go on (one line, for the CLI)."""


def check_batches(settings: TrainSettings) -> None:
    """A step's episodes fit the trainer's batches (a ValueError saying what does not):
    whole micro batches, GRPO's groups of two or more, and vLLM sampling text only."""
    per_step = settings.episodes_per_step
    if per_step % settings.micro_batch:
        raise ValueError(
            f"episodes per step ({per_step}) must be a multiple of the micro batch "
            f"({settings.micro_batch})"
        )
    if settings.generation == "vllm" and settings.action_mode == "json":
        raise ValueError(
            "--generation vllm samples text only (json mode holds each token to the action "
            "schema): use --action-mode text, or the default transformers generation"
        )
    if settings.group_size < 2:  # TRL's own words, as its GRPOConfig refuses it
        raise ValueError(
            "GRPO requires at least 2 generations per prompt to calculate the advantages. "
            f"You provided {settings.group_size}, which is less than the minimum required."
        )


def settings_from(
    *,
    env: str,
    model: str,
    seeds: str | None,
    eval_seeds: str,
    anchor_seeds: str | None = None,
    **given: Any,
) -> TrainSettings:
    """Checked settings: one scenario, seeds that parse and do not overlap, options the
    scenario takes, conversation settings `textenvs eval` takes. `seeds` None: the
    recorded run's seeds when the demonstrations are one, else `TRAINING_SEEDS`;
    `anchor_seeds` (None: every training seed) some of the training seeds."""
    if model != models.LOCAL and not models.is_model_dir(model):
        raise TrainingError(
            f"--model {model}: not 'local' nor a transformers model directory (a folder "
            "with config.json); give 'local' or a model directory (an earlier run's OUT/final)"
        )
    names = resolve_envs(env)
    if len(names) != 1:
        raise TrainingError("--env: train on one scenario at a time")
    demonstrator = given.get("demonstrations", TrainSettings.demonstrations)
    runs = recorded_runs(demonstrator)
    if not runs and demonstrator not in DEMONSTRATORS:
        raise TrainingError(
            f"--demonstrations {demonstrator}: one of {', '.join(DEMONSTRATORS)} (an agent "
            "that plays in-process) or 'textenvs eval' run folders, a comma list (their "
            "episodes replayed)"
        )
    try:
        train_seeds, held_out = parse_seeds(seeds or TRAINING_SEEDS), parse_seeds(eval_seeds)
        anchored = parse_seeds(anchor_seeds) if anchor_seeds else []
    except ValueError as exc:
        raise TrainingError(str(exc)) from None
    if runs:
        played = {episode["seed"] for run in runs for episode in store.read_episodes(run)}
        train_seeds = sorted(played & set(train_seeds)) if seeds else sorted(played)
        if not train_seeds:
            raise TrainingError(f"--demonstrations {demonstrator}: no episode on --seeds {seeds}")
    overlap = sorted(set(train_seeds) & set(held_out))
    if overlap:
        shown = ", ".join(map(str, overlap[:5])) + (" ..." if len(overlap) > 5 else "")
        raise TrainingError(f"--seeds and --eval-seeds overlap ({shown}): hold the eval seeds out")
    anchored_trained = sorted(set(anchored) & set(train_seeds))
    if anchored and not anchored_trained:
        raise TrainingError(
            f"--anchor-seeds {anchor_seeds}: no episode trained on has one; give seeds of "
            "--demonstrations' episodes (the starting model's own runs')"
        )
    settings = TrainSettings(
        env=names[0],
        model=model,
        seeds=train_seeds,
        eval_seeds=held_out,
        earlier_seeds=models.trained_seeds(models.read_record(model) or {}),
        anchor_seeds=anchored_trained,
        **given,
    )
    check_method(settings, bool(runs))
    if settings.action_mode == "tools":
        problem = tool_template.tools_refusal(model, whole_conversation=True)
        if problem:
            raise TrainingError(f"--action-mode tools: {problem}")
    if settings.generation == "vllm":
        problem = vllm_missing()
        if problem:
            raise TrainingError(f"--generation vllm: {problem}")
    if len(train_seeds) < settings.seeds_per_step:
        raise TrainingError(f"--seeds: a step needs {settings.seeds_per_step} training seeds")
    try:
        check_reset_options([settings.env], settings.options)
        # tools mode holds text mode's conversation (`trainers.run_conversation`)
        mode = "text" if settings.action_mode == "tools" else settings.action_mode
        conversation_settings(mode, settings.json_reasoning, **settings.conversation)
        check_batches(settings)
    except ValueError as exc:
        raise TrainingError(str(exc).splitlines()[0]) from None
    return settings


def check_method(settings: TrainSettings, recorded: bool) -> None:
    """The settings the method reads, in forms it trains (`recorded`: the demonstrations
    are a recorded run's)."""
    for name in ONLY_FOR["grpo" if settings.method == "sft" else "sft"]:
        if getattr(settings, name) != getattr(DEFAULTS, name):
            flag = "--" + name.replace("_", "-")
            raise TrainingError(
                f"{flag} does nothing with --method {settings.method}; leave it out"
            )
    if settings.reward_weighted and not recorded:
        raise TrainingError(
            "--reward-weighted weighs a model's own sampled episodes by their success: give "
            "--demonstrations 'textenvs eval' run folders, not an agent"
        )
    bounds = {
        "target-kl": settings.target_kl is not None,
        "clip": settings.clip != CLIP,
        "kl-penalty": settings.kl_penalty > 0,
    }
    for name, given in bounds.items():
        if given and not settings.reward_weighted:
            raise TrainingError(
                f"--{name} bounds how far --reward-weighted moves from the sampling model; "
                f"give --reward-weighted too, or leave --{name} out"
            )
    if settings.credit != "episode" and not settings.reward_weighted:
        raise TrainingError(
            "--credit says how --reward-weighted places an episode's credit on its turns; "
            "give --reward-weighted too, or leave --credit out"
        )
    if (
        settings.credit == "lookahead"
        and settings.target_kl is not None
        and not settings.kl_penalty
    ):
        raise TrainingError(
            "--credit lookahead trains replies the model did not play, so --target-kl "
            "measures the drift at its anchors (turns not relabelled, drawn with "
            "--kl-penalty): give --kl-penalty too, or leave --target-kl out"
        )
    anchoring_credit = settings.credit in ("lookahead", "turn") and settings.kl_penalty
    if settings.anchor_seeds and not anchoring_credit:
        raise TrainingError(
            "--anchor-seeds names the episodes anchors are drawn from, which only --credit "
            "lookahead or turn with --kl-penalty feeds: give them too, or leave it out"
        )
    if settings.kl_anchors_only and not settings.anchored:
        raise TrainingError(
            "--kl-anchors-only adds the penalty at the anchors alone, which only --credit "
            "lookahead with --kl-penalty, or --credit turn with --kl-penalty and "
            "--anchor-seeds, feeds: give them too, or leave it out"
        )
    if (
        settings.credit == "turn"
        and settings.anchored
        and set(settings.anchor_seeds) == set(settings.seeds)
    ):
        raise TrainingError(
            f"--anchor-seeds {seed_ranges(settings.anchor_seeds)}: with --credit turn an anchor "
            "seed's episodes are anchors alone, and these are every training seed, so no turn "
            "is credited; give the seeds of the runs kept for anchors alone (the starting "
            "model's own)"
        )
    if settings.credit in PER_TURN_CREDITS and (
        "history" not in settings.conversation or settings.habit_share < 1
    ):
        raise TrainingError(
            f"--credit {settings.credit} weighs each turn apart, so each turn must be a "
            "sequence of its own, all trained: give --history K and leave --habit-share out"
        )
    if settings.reward_weighted and settings.only_success:
        raise TrainingError(
            "--reward-weighted trains on won and lost episodes, --only-success on won ones "
            "alone: give one of them"
        )
    if recorded and settings.demonstration_noise:
        raise TrainingError(
            "--demonstration-noise: a recorded run's commands are replayed as they were; "
            "leave it out"
        )
    if settings.method == "sft" and settings.action_mode == "json":
        raise TrainingError(
            "--method sft writes demonstrations as text replies or tool calls: give "
            "--action-mode text or tools, not json"
        )
    if settings.method == "grpo" and settings.action_mode == "tools":
        raise TrainingError(
            "--action-mode tools: this GRPO samples text or json replies; train tool calls "
            "with TRL's GRPOTrainer(environment_factory=...) (docs/adapters.md, TRL), or "
            "give --method sft"
        )
    if settings.method == "grpo" and "history" in settings.conversation:
        raise TrainingError(
            "--history: GRPO trains each episode as one growing conversation; leave --history "
            "out (or use --method sft)"
        )


def vllm_missing() -> str | None:
    """Why TRL's vLLM generation cannot run here (None: it can)."""
    if not torch.cuda.is_available():
        return "vLLM needs a CUDA GPU and none is visible; on a CPU leave --generation out"
    if importlib.util.find_spec("vllm") is None:
        return "the vllm package is not installed: pip install vllm (the version TRL supports)"
    return None
