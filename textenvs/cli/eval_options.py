"""`textenvs eval`'s options: what each one does and its default (`eval.py` runs the
command with them)."""

from __future__ import annotations

import argparse
from pathlib import Path

from textenvs.cli.common import (
    add_agent_options,
    env_option_argument,
    env_url_argument,
    non_negative,
    positive,
)
from textenvs.evals import failures


def arguments(p: argparse.ArgumentParser) -> None:
    """`textenvs eval`'s options (`eval.py` runs them)."""
    p.add_argument("--env", required=True, help="scenario name, a comma list, or 'all'")
    env_option_argument(p)
    add_agent_options(p)
    p.add_argument(
        "--seeds",
        default=None,
        help="seeds: N, N-M or a comma list (0-99; with --openings, the file's seeds)",
    )
    p.add_argument(
        "--episodes-per-seed",
        type=positive,
        default=1,
        metavar="K",
        help="episodes per (env, seed) (1); the same seed gives the same world, so K > 1 "
        "measures the agent's own variance (sampled with --temperature and --llm-seed, "
        "each episode with seeds of its own: the groups `train --reward-weighted` "
        "compares within)",
    )
    p.add_argument(
        "--openings",
        type=Path,
        default=None,
        metavar="FILE",
        help="start each seed's episodes from one state: a JSON file of "
        '{"SEED": [commands]}, played '
        "before the agent's first turn (each recorded as an opening turn); every seed "
        "needs one. The episodes of a seed are then branches of one state "
        "(`python -m benchmarks.field_openings` writes EM Anomaly's)",
    )
    p.add_argument(
        "--trials",
        type=positive,
        default=1,
        metavar="K",
        help="trial mode: one agent plays K consecutive episodes (the seeds in groups of K: "
        "0-4, 5-9, ... for K=5) in one continuing conversation, seeing each episode's end; "
        "the report draws learning curves. The seed count must be a multiple of K (1)",
    )
    p.add_argument(
        "--concurrency",
        type=positive,
        default=None,
        metavar="C",
        help="episodes (with --trials, trial groups) in flight (8; with --model local, 1: "
        "one embedded-model server per episode in flight, sharing --local-threads; with "
        "--model DIR served on a CPU, 1: each conversation in flight holds its cache)",
    )
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="run directory")
    p.add_argument("--resume", action="store_true", help="continue the run in DIR")
    p.add_argument(
        "--retry-errors",
        action="store_true",
        help="with --resume: play again the episodes that ended in agent errors (endpoint "
        "outages, a lost --env-url service); scored episodes are kept",
    )
    p.add_argument(
        "--fail-fast",
        type=non_negative,
        default=5,
        metavar="N",
        help="stop when the first N episodes all end in the same agent error (5; 0 = never)",
    )
    p.add_argument(
        "--max-error-rate",
        type=share,
        default=0.5,
        metavar="R",
        help=f"stop when more than this share of the last {failures.RATE_WINDOW} episodes "
        "end in agent errors (0.5; 1 = never)",
    )
    p.add_argument(
        "--max-invalid",
        type=positive,
        default=None,
        metavar="N",
        help="end an episode after N invalid commands in a row (outcome invalid_limit)",
    )
    env_url_argument(p)
    p.add_argument(
        "--backend",
        choices=["local", "ray"],
        default="local",
        help="where episodes are played: 'local' (this process, the default) or 'ray' (actors "
        "on a Ray cluster; pip install 'textenvs[ray]'); this process writes DIR either way",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        default=None,
        help="with --backend ray: the cluster's address, e.g. 10.0.0.1:6379 (default "
        "$RAY_ADDRESS, else a cluster started on this machine, else a private local one)",
    )
    p.add_argument(
        "--ray-actors",
        type=positive,
        default=None,
        metavar="N",
        help="with --backend ray: episode actors (default one per cluster CPU, at most C); "
        "the C episodes in flight are shared among them",
    )
    p.add_argument(
        "--price-per-1k-prompt",
        type=float,
        default=None,
        metavar="USD",
        help="price of 1,000 prompt tokens, for the report's cost per episode",
    )
    p.add_argument(
        "--price-per-1k-completion",
        type=float,
        default=None,
        metavar="USD",
        help="price of 1,000 completion tokens, for the report's cost per episode",
    )


def share(text: str) -> float:
    """A share, 0 to 1 (argparse's type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {value:g}")
    return value
