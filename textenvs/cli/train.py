"""`textenvs train`: GRPO on a scenario with TRL (`pip install 'textenvs[train]'`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from textenvs.cli import train_options
from textenvs.cli.command import Command
from textenvs.cli.common import (
    env_option_flags,
    env_options_from_args,
    fail,
    missing_extra,
)
from textenvs.cli.eval_output import continue_command
from textenvs.episodes.specs import consecutive_runs, seed_ranges
from textenvs.evals import run_folder


def run(args: argparse.Namespace) -> int:
    try:
        from textenvs.inference import models
        from textenvs.training import run as training
        from textenvs.training.settings import TrainingError, settings_from
    except ImportError as exc:
        raise missing_extra(args, "training", exc, "train", "local") from None
    models.quiet_libraries()
    try:
        settings = settings_from(
            env=args.env,
            model=args.model,
            steps=args.steps,
            seeds=args.seeds,
            eval_seeds=args.eval_seeds,
            method=args.method,
            demonstrations=args.demonstrations,
            only_success=args.only_success,
            reward_weighted=args.reward_weighted,
            credit=args.credit,
            target_kl=args.target_kl,
            clip=args.clip,
            kl_penalty=args.kl_penalty,
            anchor_seeds=args.anchor_seeds,
            kl_anchors_only=args.kl_anchors_only,
            habit_share=args.habit_share,
            demonstration_noise=args.demonstration_noise,
            options=env_options_from_args(args),
            group_size=args.group_size,
            seeds_per_step=args.seeds_per_step,
            micro_batch=args.micro_batch,
            learning_rate=args.learning_rate,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
            max_turns=args.max_turns,
            conversation=_conversation(args),
            train_layers=args.train_layers,
            reward=args.reward,
            action_mode=args.action_mode,
            json_reasoning=args.json_reasoning,
            env_url=args.env_url,
            generation=args.generation,
            vllm_server=args.vllm_server,
            save_every=args.save_every,
            rng_seed=args.seed,
        )
        final = training.train(
            settings,
            args.out,
            resume=args.resume,
            keep_checkpoints=args.save_total_limit,
            save_base=args.save_base,
        )
    except TrainingError as exc:
        raise fail(args, str(exc)) from None
    except KeyboardInterrupt:
        print(flush=True)  # ends the line the terminal's ^C was echoed on
        print(f"textenvs train: interrupted; {_kept(args, training)}", file=sys.stderr)
        return 130
    curve = args.out / run_folder.CURVE
    shown = f"; curve in {curve}" if curve.is_file() else ""
    print(f"trained model in {final}/ (a transformers directory){shown}")
    print(_next_steps(settings, args.out, final), file=sys.stderr)
    return 0


#: what a reply of `--method sft` needs: "Action: <command>" is 4-6 tokens
SFT_REPLY_TOKENS = 8


def _next_steps(settings: Any, out: Path, final: Path) -> str:
    """The evaluation commands to run next, with what they cost. A text-mode reply the
    run taught is a few tokens: the commands cut replies there, ask nothing again and
    play greedily, so a checkpoint whose replies are still unreadable costs minutes,
    not hours (32-token replies, each asked again, took 10 minutes an episode here)."""
    quick = ""
    if settings.action_mode == "tools":  # "before" too: base/ may hold no record of it
        quick = " --action-mode tools"
    if settings.method == "sft":
        quick += " --temperature 0"
        if settings.action_mode == "tools":  # the run checked that every call fits
            quick += f" --max-tokens {settings.max_tokens}"
        elif settings.max_tokens > SFT_REPLY_TOKENS:
            quick += f" --max-tokens {SFT_REPLY_TOKENS}"
        if settings.conversation.get("reasks", 1):
            quick += " --reasks 0"
    # Only --eval-seeds' first run of consecutive seeds: a later one may be a final
    # range, played once, so not even the 5-episode try reaches into it.
    first_run, *later_runs = consecutive_runs(settings.eval_seeds)
    played, first = seed_ranges(first_run), seed_ranges(first_run[:5])
    later = seed_ranges([seed for run in later_runs for seed in run])
    name, base = out.name, out / run_folder.BASE
    # the options it trained on (a level, say): without them it would play other episodes
    options = f" {env_option_flags(settings.options)}" if settings.options else ""
    play = f"  textenvs eval --env {settings.env}{options} --agent llm{quick} --model"
    lines = [
        "evaluate it on held-out seeds: 5 episodes first (on a 2-core CPU a checkpoint "
        "that answers in a few tokens plays an episode in seconds to a minute: the SFT "
        f"recipe's 100 EM Anomaly episodes took 15.5 minutes), then all of {played}:",
        f"{play} {final} --seeds {first} --out runs/{name}-try",
        f"{play} {final} --seeds {played} --out runs/{name}-after",
    ]
    if base.exists():
        lines.append(f"{play} {base} --seeds {played} --out runs/{name}-before")
    else:
        lines.append(
            "  (the starting weights were not saved: train with --save-base to evaluate "
            "them as 'before')"
        )
    lines.append(f"  textenvs report runs/{name}-before runs/{name}-after")
    if later:
        lines.append(
            f"  (--eval-seeds' other seeds, {later}, are left for an evaluation "
            "chosen before it is played: a final range is played once)"
        )
    return "\n".join(lines)


def _kept(args: argparse.Namespace, training: Any) -> str:
    """What an interrupted run keeps, and how to go on with it."""
    checkpoint = training.latest_checkpoint(args.out) if args.out.is_dir() else None
    if checkpoint is None:
        return (
            f"no checkpoint was saved yet (one every {args.save_every} steps); run the "
            f"command again with a new --out (or empty {args.out}) to start over"
        )
    resume = continue_command(["textenvs", *sys.argv[1:]], "--resume")
    return f"{checkpoint} is kept (its steps done); resume with: {resume}"


def _conversation(args: argparse.Namespace) -> dict[str, Any]:
    given = {"observations": args.observations, "reasks": args.reasks, "history": args.history}
    return {name: value for name, value in given.items() if value is not None}


COMMAND = Command(
    "train",
    help="train a model on a scenario: reinforcement (TRL's GRPO) or supervised (SFT)",
    description="Train a model on one scenario with TRL's GRPOTrainer, multi-turn: one "
    "rollout is one whole episode, each turn's prompt the conversation 'textenvs eval "
    "--agent llm' sends, the reward the scenario's own return. Only the model's own "
    "tokens are trained on. Or, with --method sft, with TRL's SFTTrainer on another "
    "agent's episodes written as that same conversation. Writes OUT/checkpoints/ (the "
    "last one kept, resumable), OUT/final (a transformers directory 'textenvs eval "
    "--model' plays), OUT/base (the starting weights: a link to --model DIR, a copy "
    "with --save-base), OUT/curve.csv (a row a step) and, for GRPO, OUT/figures/ (the "
    "training curve) and OUT/rollouts.jsonl (every step's episodes: commands and "
    "rewards). Needs pip install 'textenvs[train]'; runs on a CPU (the model samples "
    "with transformers) or a GPU.",
    handler=run,
    arguments=train_options.arguments,
    epilog="Evaluate before and after on held-out seeds with the same harness: "
    "textenvs eval --env ENV --agent llm --model OUT/base --seeds 0-99 --out runs/before "
    "(with --model local, train with --save-base to have OUT/base); "
    "the same with --model OUT/final; then textenvs report runs/before runs/after.",
)
