"""`textenvs export RUN_DIR --format hf|jsonl-chat`: trajectories as a chat dataset."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import textenvs


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="export the trajectories of eval runs as a chat-format dataset",
        description="Write every recorded episode of the eval run directories as one "
        "chat-format record (system, then user observation / assistant reply per turn) "
        "with env, seed, outcome, success, return, per-turn rewards and parse status as "
        "columns. 'jsonl-chat' writes OUT/train.jsonl (load it with "
        "datasets.load_dataset('json', data_files=...)); 'hf' saves a Hugging Face "
        "dataset (datasets.load_from_disk; needs pip install 'textenvs[datasets]').",
    )
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
        help="output directory (default: RUN_DIR/export-FORMAT of the first RUN_DIR)",
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
    p.set_defaults(handler=_export)


def _export(args: argparse.Namespace) -> int:
    from textenvs.evals.export import ExportFilter, export
    from textenvs.evals.store import RunDirError

    out = args.out or args.dirs[0] / f"export-{args.fmt}"
    envs = frozenset(textenvs.get(name).name for name in args.env)
    keep = ExportFilter(args.only_success, frozenset(args.agent), envs)
    if args.fmt == "hf":
        try:
            import datasets  # noqa: F401
        except ImportError:
            return _fail("--format hf needs the datasets library: pip install 'textenvs[datasets]'")
    try:
        count = export(args.dirs, out, args.fmt, keep)
    except (RunDirError, ValueError, OSError) as exc:
        return _fail(str(exc))
    print(f"wrote {count} episode{'s' * (count != 1)} to {out}")
    return 0


def _fail(message: str) -> int:
    print(f"textenvs export: error: {message}", file=sys.stderr)
    return 2
