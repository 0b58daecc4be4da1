"""Can SFT teach a model to read EM Anomaly's scan? A fitting check on climbing turns.

    python -m benchmarks.fit_check --model models/base --turns 64 --passes 12

Collects the turns where the reactive agent climbs (`em_anomaly_decision`'s CLIMB: a step
towards a higher reading in the 3x3 scan), as many towards each of the four directions,
from training seeds (from `--train-from`) and as many from held-out seeds (from
`--held-out-from`). Each turn is the sequence `textenvs train --method sft --history 0`
feeds: the rules prompt, the observation, the reply `Action: <direction>`. Trains the
model on the training turns alone with SFT's own trainer (`SharedPrefixTrainer`, the
rules prompt fed once a step; `--whole` feeds every sequence whole), and before training
and after each pass measures on both sets how much of the four directions' probability
the model puts on the demonstrated one (0.25 is a guess), how often the demonstrated
direction is the likeliest of the four, and its cross-entropy over the four in nats (a
guess: log 4 = 1.39). The trained turns measured are as many as the held-out, as many
towards each direction.

A model that reads the scan raises the held-out figures with the trained ones; one that
memorises its turns raises only the trained. Prints a row per pass and, with `--out`,
writes them as CSV. `--passes 0` only measures `--model` (any checkpoint) on both sets.
Run it alone: it trains on every core torch is given.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import textenvs
from benchmarks import command_probabilities as probe
from benchmarks.reading_counts import replayed_observations
from textenvs.agents.scripted.reactive import CLIMB, em_anomaly_decision
from textenvs.episodes.specs import EpisodeSpec
from textenvs.training.demonstrations import IGNORED, TokenSequence, demonstrate, reply_for
from textenvs.training.settings import TrainSettings, settings_from

ENV = "em-anomaly"
DIRECTIONS = ("north", "east", "south", "west")
#: the training and held-out seeds' ranges are at least this far apart
SEED_SPAN = 10_000
COLUMNS = ["pass", "step", "minutes", "set", "share", "likeliest", "nats", "reading_gap"]


@dataclass
class ClimbTurn:
    """A turn the reactive agent climbed on: the prompt and the direction (`state`), and
    the sequence trained on (the prompt, then the direction's reply)."""

    state: probe.State
    sequence: TokenSequence


def check_settings(args: argparse.Namespace) -> TrainSettings:
    """The SFT recipe's settings for this check (the conversation the checkpoints play)."""
    return settings_from(
        env=ENV,
        model=args.model,
        seeds=f"{args.train_from}-{args.train_from + SEED_SPAN - 1}",
        eval_seeds=f"{args.held_out_from}-{args.held_out_from}",
        steps=1,  # set from the turns, below
        method="sft",
        demonstrations="reactive",
        seeds_per_step=args.per_step,
        learning_rate=args.learning_rate,
        max_tokens=8,
        conversation={"history": 0, "reasks": 0},
        train_layers=args.train_layers,
        rng_seed=args.seed,
    )


def climbing_turns(
    first_seed: int, per_direction: int, conversation: Any, chat: Any
) -> list[ClimbTurn]:
    """`per_direction` climbing turns towards each direction, from seeds `first_seed` on
    (each turn where the reactive agent climbs, in seed and turn order, until each
    direction has its share)."""
    wanted = dict.fromkeys(DIRECTIONS, per_direction)
    kept: list[ClimbTurn] = []
    env = textenvs.make(ENV)
    seed = first_seed
    while any(wanted.values()):
        spec = EpisodeSpec(ENV, seed)
        demonstration = demonstrate(spec, "reactive", textenvs.make, conversation, chat)
        commands = [turn.command for turn in demonstration.result.turns]
        # --history 0: each turn is its own sequence, every reply trained on
        assert len(demonstration.sequences) == len(commands), "a turn a sequence"
        states = replayed_observations(env, seed, commands)
        for observation, sequence in zip(states, demonstration.sequences, strict=True):
            direction, reason = em_anomaly_decision(observation)
            if reason == CLIMB and wanted[direction]:
                wanted[direction] -= 1
                prompt = sequence.ids[: first_trained(sequence)]
                kept.append(ClimbTurn(probe.State(prompt, direction), sequence))
        seed += 1
    return kept


def balanced(turns: list[ClimbTurn], count: int) -> list[ClimbTurn]:
    """The first `count` / 4 of `turns` towards each direction."""
    towards = {d: [t for t in turns if t.state.answer == d][: count // 4] for d in DIRECTIONS}
    return [turn for d in DIRECTIONS for turn in towards[d]]


def first_trained(sequence: TokenSequence) -> int:
    return next(i for i, label in enumerate(sequence.labels) if label != IGNORED)


def figures(model: Any, turns: list[ClimbTurn], replies: list[list[int]]) -> dict[str, float]:
    """At `turns`, what `model` puts on the demonstrated direction among the four."""
    was_training = model.training
    model.eval()
    states = [turn.state for turn in turns]
    scored = list(probe.reply_logprobs(model, states, replies))
    model.train(was_training)
    shares = [[math.exp(s - max(row)) for s in row] for row in scored]
    shares = [[s / sum(row) for s in row] for row in shares]
    answers = [DIRECTIONS.index(state.answer) for state in states]
    pairs = list(zip(shares, answers, strict=True))
    return {
        "share": sum(row[a] for row, a in pairs) / len(pairs),
        "likeliest": sum(row[a] == max(row) for row, a in pairs) / len(pairs),
        "nats": sum(-math.log(row[a]) for row, a in pairs) / len(pairs),
        "reading_gap": probe.reading_gap(shares, answers) or 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.fit_check", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--model", default="local", help="'local' or a model directory")
    parser.add_argument("--turns", type=int, default=16, help="training turns (a multiple of 4)")
    parser.add_argument("--held-out", type=int, default=None, help="held-out turns (--turns)")
    parser.add_argument(
        "--passes",
        type=int,
        default=12,
        help="passes over the training turns (0: only measure the model)",
    )
    parser.add_argument("--per-step", type=int, default=4, help="turns an optimizer step")
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--train-layers", type=int, default=None, help="top layers (all)")
    parser.add_argument("--whole", action="store_true", help="feed every sequence whole")
    parser.add_argument("--train-from", type=int, default=60_000, help="first training seed")
    parser.add_argument("--held-out-from", type=int, default=70_000, help="first held-out seed")
    parser.add_argument("--seed", type=int, default=0, help="the data order's seed")
    parser.add_argument("--out", type=Path, default=None, help="write the rows as CSV")
    args = parser.parse_args(argv)
    held_out = args.held_out or args.turns
    if args.turns % 4 or held_out % 4 or args.turns % args.per_step:
        parser.error("--turns and --held-out: multiples of 4, --turns of --per-step")
    if args.passes < 0:
        parser.error("--passes: 0 or more")
    if abs(args.held_out_from - args.train_from) < SEED_SPAN:
        parser.error(f"--train-from and --held-out-from: at least {SEED_SPAN} seeds apart")

    from datasets import Dataset

    from textenvs.inference import models
    from textenvs.inference.chat import ChatTokens
    from textenvs.training.sft import SharedPrefixTrainer, sft_config, shared_prefix
    from textenvs.training.trainers import (
        freeze_below,
        model_prompt_budget,
        run_conversation,
        without_printing,
    )

    models.quiet_libraries()
    settings = check_settings(args)
    model, tokenizer = models.load(args.model)
    chat = ChatTokens(tokenizer)
    conversation = run_conversation(settings, model_prompt_budget(settings, model))
    started = time.perf_counter()
    train = climbing_turns(args.train_from, args.turns // 4, conversation, chat)
    test = climbing_turns(args.held_out_from, held_out // 4, conversation, chat)
    print(f"{len(train)} training and {len(test)} held-out climbing turns", file=sys.stderr)
    sequences = [turn.sequence for turn in train]
    dataset = Dataset.from_dict(
        {"input_ids": [s.ids for s in sequences], "labels": [s.labels for s in sequences]}
    )
    prefix = [] if args.whole else shared_prefix(dataset)
    steps_per_pass = args.turns // args.per_step
    settings.steps = steps_per_pass * args.passes
    if args.train_layers is not None:
        freeze_below(model, args.train_layers)
    replies = [[*chat.encode(reply_for(d)), chat.reply_stop()] for d in DIRECTIONS]
    measured = {"trained": balanced(train, len(test)), "held-out": test}
    rows: list[dict[str, Any]] = []

    def record(step: int) -> None:
        minutes = (time.perf_counter() - started) / 60
        for name, turns in measured.items():
            found = figures(model, turns, replies)
            row = {"pass": step // steps_per_pass, "step": step, "set": name, **found}
            rows.append({**row, "minutes": round(minutes, 1)})
            print(
                f"pass {row['pass']:3d}  step {step:4d}  {minutes:6.1f} min  {name:8s}  "
                f"share {found['share']:.3f}  likeliest {found['likeliest']:.3f}  "
                f"nats {found['nats']:.2f}  reading gap {found['reading_gap']:+.3f}",
                flush=True,
            )

    from transformers import TrainerCallback

    class PassEnd(TrainerCallback):
        def on_step_end(self, args_: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step % steps_per_pass == 0:
                record(state.global_step)

    record(0)
    if not args.passes:
        return write_rows(rows, args.out)
    with tempfile.TemporaryDirectory() as scratch:
        config = sft_config(settings, Path(scratch))
        config.save_strategy = "no"
        trainer = SharedPrefixTrainer(
            model=model,
            args=config,
            train_dataset=dataset,
            processing_class=tokenizer,
            callbacks=[PassEnd()],
            prefix=prefix,
        )
        without_printing(trainer).train()
    return write_rows(rows, args.out)


def write_rows(rows: list[dict[str, Any]], out: Path | None) -> int:
    """Write the measured rows as CSV to `out` (if given); the exit status."""
    if out is not None:
        with out.open("w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows({column: row[column] for column in COLUMNS} for row in rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
