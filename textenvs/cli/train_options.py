"""`textenvs train`'s options: what each one does and its default (`train.py` runs the
command with them)."""

from __future__ import annotations

import argparse
from pathlib import Path

from textenvs.cli.common import (
    env_option_argument,
    env_url_argument,
    non_negative,
    positive,
)
from textenvs.core.numbers import bounded, positive_float
from textenvs.episodes.specs import TRAINING_SEEDS
from textenvs.training.choices import CLIP, CREDITS

DEFAULT_EVAL_SEEDS = "0-99"


def arguments(p: argparse.ArgumentParser) -> None:
    """`textenvs train`'s options (`train.py` runs them)."""
    p.add_argument("--env", required=True, metavar="ENV", help="the scenario to train on")
    p.add_argument(
        "--model",
        required=True,
        metavar="local|DIR",
        help="'local' (SmolLM2-135M-Instruct, the GGUF of the [local] extra) or a "
        "transformers model directory (e.g. an earlier run's OUT/final)",
    )
    p.add_argument("--steps", required=True, type=positive, help="optimizer steps")
    p.add_argument(
        "--method",
        choices=["grpo", "sft"],
        default="grpo",
        help="'grpo' (reinforcement from the scenario's reward, the default) or 'sft' (a "
        "supervised warm start: imitate --demonstrations' episodes of the training seeds, "
        "each written as the conversation 'textenvs eval' holds, in text mode or, with "
        "--action-mode tools, each reply a call of act, only the replies trained on; a step "
        "is --seeds-per-step sequences: whole episodes, or single turns with --history); "
        "GRPO can go on from its OUT/final (with tools, TRL's environment_factory)",
    )
    p.add_argument(
        "--demonstrations",
        default="scripted",
        metavar="AGENT|RUN[,RUN...]",
        help="--method sft: the agent whose episodes are imitated (default scripted: it "
        "reads only what the observation shows; reactive: em-anomaly or squad-recon, acts "
        "on the current observation alone, for a model trained with --history 0), or "
        "'textenvs eval' "
        "run folders, a comma list, whose episodes are replayed: the model's own runs, "
        "sampled at a temperature, with --only-success are expert iteration "
        "(docs/training.md)",
    )
    p.add_argument(
        "--habit-share",
        type=bounded(float, 0, 1, above=True),
        default=1.0,
        metavar="F",
        help="--method sft: train on only this share of the replies that repeat the "
        "command before (going on straight), so the turns the observation decides weigh "
        "more (default 1: all)",
    )
    p.add_argument(
        "--demonstration-noise",
        type=bounded(float, 0, 1),
        default=0.0,
        metavar="F",
        help="--method sft: play a random command instead of the demonstrator's on this "
        "share of the turns (the demonstrator's own answer is trained on there), so the "
        "demonstrations show the way out of states a model's mistakes lead to (default 0)",
    )
    p.add_argument(
        "--only-success",
        action="store_true",
        help="--method sft: imitate only the episodes the agent won",
    )
    p.add_argument(
        "--reward-weighted",
        action="store_true",
        help="--method sft with --demonstrations RUN (the model's own sampled episodes): "
        "a policy gradient on won and lost episodes, each reply weighted by its episode's "
        "success minus its seed's mean where a seed was sampled more than once (eval "
        "--episodes-per-seed K: GRPO's group baseline), else minus the runs' mean (as many "
        "lost episodes as won drawn, each weighing for all the lost); what won is drawn up, "
        "what lost down, each token only until its probability is 20%% past the starting "
        "model's (PPO's clip)",
    )
    p.add_argument(
        "--credit",
        choices=CREDITS,
        default="episode",
        help="--reward-weighted: where an episode's credit goes. episode: every turn "
        "shares it. turn: each turn weighs the change its command made in its seed's "
        "value (the share won among the seed's episodes shown the same observation), so "
        "a lost episode's turns before it went wrong are not pushed down; needs several "
        "episodes a seed (eval --episodes-per-seed). critic: each turn weighs the change "
        "its command made in a critic's value of the observation (a logistic regression "
        "from the observation's words to success, fit across seeds on the runs' episodes), "
        "and steps x seeds-per-step turns are drawn by the size of their weight. "
        "critic-gains: the same, only the turns that raised the value drawn (nothing "
        "pushed down). lookahead: each turn is replayed and every command the model plays "
        "tried from it (the reward where it ends the episode, else the critic's value of "
        "where it leads); where the best beats the command played by 0.1 or more, the turn "
        "is trained on the best instead, drawn by that margin (with --kl-penalty, half the "
        "turns drawn are anchors: turns not relabelled, fed for the penalty alone, which "
        "holds them). turn, the critic's and lookahead need --history K (default: episode)",
    )
    p.add_argument(
        "--target-kl",
        type=positive_float,
        default=None,
        metavar="F",
        help="--reward-weighted: stop after the first optimizer step whose approximate KL "
        "divergence from the sampling model, over the step's replies, is past F (PPO's "
        "target KL, e.g. 0.02); the run's final checkpoint is that step's. Each step's KL "
        "is in its progress line. With anchors (--credit lookahead with --kl-penalty, or turn "
        "with --kl-penalty and --anchor-seeds) it is the divergence over the vocabulary at "
        "the anchors alone (default: run every step)",
    )
    p.add_argument(
        "--clip",
        type=positive_float,
        default=CLIP,
        metavar="F",
        help="--reward-weighted: stop moving a trained token once its probability is this "
        "far from its sampled one, as a ratio (PPO's clip epsilon). The sampling model stays "
        "the same for the whole run, so F bounds the run's whole push on each trained token "
        f"({CLIP:g}: to {1 + CLIP:g} times its sampled probability; other replies' updates "
        f"can still carry it further) (default {CLIP:g})",
    )
    p.add_argument(
        "--kl-penalty",
        type=positive_float,
        default=0.0,
        metavar="BETA",
        help="--reward-weighted: add BETA times the KL divergence from the sampling model, "
        "over the whole vocabulary at each trained token, to the loss, so a state's other "
        "replies stay where the sampling model put them while the credit moves the trained "
        "one. Its scale is the credit's: a turn drawn by --credit critic-gains weighs about "
        "0.008, and 0.01 held such a run's drift to 0.004-0.12 a step, 0.01-0.27 without "
        "(default 0: none)",
    )
    p.add_argument(
        "--anchor-seeds",
        default=None,
        metavar="SEEDS",
        help="--credit lookahead with --kl-penalty: draw the anchors from the turns of the "
        "episodes on these seeds alone (e.g. 3000-3031: the starting model's own sampled "
        "runs', so that the penalty holds the states it meets, where random play's are "
        "few walls) (default: every training seed's). --credit turn with --kl-penalty: "
        "these seeds' episodes are anchors alone (no turn of theirs credited), one drawn "
        "for each credited turn, so that the states the credited episodes do not hold "
        "(a full episode's, beside branches from one state) stay where they were",
    )
    p.add_argument(
        "--kl-anchors-only",
        action="store_true",
        help="with anchors (--credit lookahead with --kl-penalty, or turn with --kl-penalty "
        "and --anchor-seeds): add the penalty at the anchors alone, not at the credited "
        "turns too, so a credited reply moves as far as its push takes it while the "
        "anchors hold the other states (default: at every trained turn)",
    )
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="the run folder")
    p.add_argument(
        "--seeds",
        default=None,
        metavar="SEEDS",
        help=f"training seeds, e.g. 1000-9999 (default {TRAINING_SEEDS}; with --demonstrations "
        "RUN, the run's seeds)",
    )
    p.add_argument(
        "--eval-seeds",
        default=DEFAULT_EVAL_SEEDS,
        metavar="SEEDS",
        help="held-out seeds the model is evaluated on: must not overlap --seeds; "
        "'textenvs eval' refuses to play a checkpoint on its training seeds "
        f"(default {DEFAULT_EVAL_SEEDS})",
    )
    env_option_argument(p)
    env_url_argument(p)
    p.add_argument(
        "--group-size",
        type=positive,
        default=4,
        help="episodes per seed per step (GRPO's group; default %(default)s)",
    )
    p.add_argument(
        "--seeds-per-step",
        type=positive,
        default=2,
        help="seeds per step (default %(default)s); --method sft: sequences per step",
    )
    p.add_argument(
        "--micro-batch",
        type=positive,
        default=2,
        help="episodes per forward/backward pass (a step accumulates the rest; default "
        "%(default)s)",
    )
    p.add_argument(
        "--learning-rate",
        type=positive_float,
        default=1e-5,
        help="AdamW learning rate (default %(default)g)",
    )
    p.add_argument(
        "--temperature",
        type=positive_float,
        default=1.0,
        help="sampling temperature of the rollouts (default %(default)g)",
    )
    p.add_argument(
        "--max-tokens",
        type=positive,
        default=32,
        help="most tokens in one reply (default %(default)s)",
    )
    p.add_argument(
        "--max-turns",
        type=positive,
        default=None,
        help="stop each training episode after this many turns (default: play to its end); "
        "evaluation always plays whole episodes",
    )
    p.add_argument(
        "--observations",
        choices=["full", "changes"],
        default=None,
        help="observations whole, or as their changes after the first (the eval setting "
        "of the same name; default full)",
    )
    p.add_argument(
        "--history",
        type=non_negative,
        default=None,
        metavar="K",
        help="each prompt holds the last K turns only (the eval setting of the same name: "
        "the window policy; 0: the rules and the current observation alone); default: the "
        "whole episode",
    )
    p.add_argument(
        "--action-mode",
        choices=["text", "json", "tools"],
        default="text",
        help="how replies carry commands: 'text' (an Action: line), 'json' (a JSON object "
        "held to the action schema as it is sampled, as 'textenvs eval --action-mode json' "
        "asks a server for; the default of --model local) or, with --method sft, 'tools' "
        "(each reply a call of act(command) as the chat template writes it, the call TRL's "
        "environment_factory parses and 'textenvs eval --action-mode tools' reads; needs a "
        "template that renders tools: textenvs save-model --tools-template)",
    )
    p.add_argument(
        "--json-reasoning",
        type=int,
        default=0,
        metavar="CHARS",
        help="json mode: most characters of reasoning before the action (default 0: none, as "
        "for --model local)",
    )
    p.add_argument(
        "--reasks",
        type=int,
        default=None,
        metavar="N",
        help="re-asks per unreadable reply (the eval setting of the same name; default 1)",
    )
    p.add_argument(
        "--reward",
        choices=["return", "headline"],
        default="return",
        help="what an episode is scored by: 'return' (the scenario's own reward, the "
        "default) or 'headline' (the per-episode headline metric reports score the "
        "scenario by; for treasure-hunt the expected success of the exploration, a dense "
        "form of its sparse return)",
    )
    p.add_argument(
        "--train-layers",
        type=positive,
        default=None,
        metavar="N",
        help="train only the top N decoder layers (faster on a CPU; default: all)",
    )
    p.add_argument(
        "--generation",
        choices=["transformers", "vllm"],
        default="transformers",
        help="how rollouts sample replies: 'transformers' (any device, a CPU included; the "
        "default) or 'vllm' (TRL's vLLM generation on a CUDA GPU, text mode; needs the vllm "
        "package): colocated with the trainer, or the server given by --vllm-server",
    )
    p.add_argument(
        "--vllm-server",
        default=None,
        metavar="URL",
        help="with --generation vllm: a 'trl vllm-serve' server's base URL (default: vLLM "
        "colocated in this process)",
    )
    p.add_argument(
        "--save-every",
        type=positive,
        default=10,
        help="steps between checkpoints (default %(default)s)",
    )
    p.add_argument(
        "--save-total-limit",
        type=positive,
        default=1,
        metavar="N",
        help="checkpoints kept, the oldest deleted (default %(default)s: the last, all "
        "--resume needs; each holds the weights and the optimizer's state)",
    )
    p.add_argument(
        "--save-base",
        action="store_true",
        help="write the starting weights to OUT/base (with --model local, to evaluate them "
        "as 'before'; a --model DIR is linked there instead, at no cost)",
    )
    p.add_argument(
        "--seed",
        type=non_negative,
        default=0,
        help="seed of the run (sampling, data order, --reward-weighted's draw of lost episodes; "
        "default %(default)s)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="go on from the last checkpoint in OUT/checkpoints (the same settings)",
    )
