"""`textenvs export RUN_DIR --format hf|jsonl-chat`: trajectories as a chat dataset."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import textenvs
from textenvs.cli.command import Command


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dirs", nargs="+", type=Path, metavar="RUN_DIR", help="eval run directories")
    p.add_argument(
        "--format",
        required=True,
        choices=["hf", "jsonl-chat"],
        dest="fmt",
        help="hf (save_to_disk) or jsonl-chat (train.jsonl)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="output directory; nothing is written into the runs (default: "
        "exports/RUN-FORMAT, RUN the first RUN_DIR's name)",
    )
    p.add_argument(
        "--only-success",
        action="store_true",
        help="keep only successful episodes (rejection sampling)",
    )
    p.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="NAME",
        help="keep episodes of this agent or model name (repeatable)",
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="ENV",
        help="keep episodes of this scenario (repeatable)",
    )
    p.add_argument(
        "--eval-seeds",
        default=None,
        metavar="SEEDS",
        help="seeds whose episodes form the eval split (N, N-M or a comma list; 'none' for "
        "no eval split); default: every tenth seed (seed %% 10 == 0)",
    )


def _export(args: argparse.Namespace) -> int:
    from textenvs.episodes.specs import parse_seeds
    from textenvs.evals.export import ExportFilter, export
    from textenvs.evals.store import RunDirError

    out = args.out or Path("exports") / f"{args.dirs[0].resolve().name or 'run'}-{args.fmt}"
    envs = frozenset(textenvs.get(name).name for name in args.env)
    keep = ExportFilter(args.only_success, frozenset(args.agent), envs)
    if args.fmt == "hf":
        try:
            import datasets  # noqa: F401
        except ImportError:
            return _fail("--format hf needs the datasets library: pip install 'textenvs[datasets]'")
    try:
        eval_seeds = None
        if args.eval_seeds is not None:
            spec = args.eval_seeds.strip().lower()
            eval_seeds = frozenset() if spec == "none" else frozenset(parse_seeds(spec))
        counts = export(args.dirs, out, args.fmt, keep, eval_seeds)
    except (RunDirError, ValueError, OSError) as exc:
        return _fail(str(exc))
    split = ", ".join(f"{n} {name}" for name, n in counts.items())
    print(f"wrote {sum(counts.values())} episodes ({split}) and a dataset card to {out}/")
    return 0


def _fail(message: str) -> int:
    print(f"textenvs export: error: {message}", file=sys.stderr)
    return 2


COMMAND = Command(
    "export",
    help="export the trajectories of eval runs as a chat-format dataset",
    description="Write every recorded episode of the eval run directories as one "
    "chat-format record (system, then user observation / assistant reply per turn) "
    "with env, seed, outcome, success, return, per-turn rewards and parse status as "
    "columns, and a 'prompt' column (the rules and the first observation) for GRPO-style "
    "trainers. Episodes are split by seed into train and eval (--eval-seeds), and a "
    "dataset card (README.md) describes the export. 'jsonl-chat' writes OUT/train.jsonl "
    "and OUT/eval.jsonl (datasets.load_dataset(OUT)); 'hf' saves a Hugging Face "
    "DatasetDict (datasets.load_from_disk; needs pip install 'textenvs[datasets]').",
    handler=_export,
    arguments=_arguments,
)
