"""Evaluating a model directory: `textenvs eval --agent llm --model DIR`, timed.

The directory is served on loopback by the checkpoint server (`inference/serving.py`)
exactly as the command does it; this runs the command in-process over the first
`--episodes` seeds (or `--seeds`) and reports episodes a minute, replies a minute, the
tokens of a reply, the process's CPU seconds (wall time on a shared machine measures the
other tenants too) and its peak resident memory (the server's included: it runs here). A
trained checkpoint's own settings apply; a plain model directory plays Treasure Hunt in
json mode with observations as changes (the recipe of docs/training.md).

    python -m benchmarks.checkpoint_eval --model runs/train-th/base --episodes 16
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import resource
import tempfile
import time
from pathlib import Path

from benchmarks._common import table
from textenvs.cli.common import positive


def main(argv: list[str] | None = None) -> int:
    import torch

    from textenvs.cli import main as cli_main
    from textenvs.evals import run_folder
    from textenvs.inference.models import RECORD_FILE

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a transformers model directory")
    p.add_argument("--env", default="treasure-hunt", help="scenario (treasure-hunt)")
    p.add_argument("--episodes", type=int, default=16, help="seeds 0..N-1 (16)")
    p.add_argument("--seeds", help="the seeds instead (e.g. 1,2,6 or 0-23)")
    p.add_argument("--threads", type=int, default=2, help="torch threads (2)")
    p.add_argument(
        "--concurrency",
        type=positive,
        help="episodes at once: the server's conversations (the command's default: 1 on a CPU)",
    )
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    trained = (Path(args.model) / RECORD_FILE).is_file()
    settings = [] if trained else ["--action-mode", "json", "--observations", "changes"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        command = ["eval", "--env", args.env, "--agent", "llm", "--model", args.model]
        seeds = args.seeds or f"0-{args.episodes - 1}"
        command += ["--seeds", seeds, "--out", str(out)]
        command += ["--concurrency", str(args.concurrency)] if args.concurrency else []
        command += settings
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = cli_main(command)
        wall = time.perf_counter() - started
        if code:
            raise SystemExit(f"textenvs eval exited with {code}")
        stats = json.loads((out / run_folder.SUMMARY).read_text())["by_env"][args.env]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak_mb = usage.ru_maxrss / 1024  # KiB on Linux
    replies = stats["mean_steps"] * stats["episodes"] + stats["reasks"]
    rows = [
        [
            f"{stats['episodes']}",
            f"{wall:.0f}",
            f"{usage.ru_utime + usage.ru_stime:.0f}",
            f"{60 * stats['episodes'] / wall:.2f}",
            f"{60 * replies / wall:.1f}",
            f"{stats['tokens']['completion'] / replies:.1f}",
            f"{peak_mb:.0f}",
        ]
    ]
    print(
        f"textenvs eval --model {args.model} on {args.env} (model load included, "
        f"{args.threads} threads, {args.concurrency or 'the default'} at once)"
    )
    headers = [
        "episodes",
        "wall s",
        "CPU s",
        "episodes/min",
        "replies/min",
        "tokens/reply",
        "peak MB",
    ]
    print(table(headers, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
