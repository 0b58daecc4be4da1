"""Where `textenvs eval` plays its episodes when not simply here: the embedded model's
servers (one per episode in flight), the Ray backend, and the label of a run's sessions
on an `--env-url` service."""

from __future__ import annotations

import argparse
import os
import re
import secrets
from typing import Any

from rich.console import Console

from textenvs.agents.llm.config import LLMConfig
from textenvs.cli import checkpoint
from textenvs.cli.common import scrubber_for
from textenvs.cli.eval_output import say
from textenvs.evals import store
from textenvs.evals.plan import EvalPlan
from textenvs.evals.players import AgentFactory
from textenvs.service.models import SESSION_ID_PATTERN


def plan_local_servers(args: argparse.Namespace) -> bool:
    """Settle --concurrency (8; 1 for the embedded model and for a model directory served
    on a CPU) and, for the embedded model, plan one server per episode in flight. True
    when the agent is the embedded model."""
    local_model = False
    if args.agent == "llm" and args.backend == "local":
        from textenvs.agents.llm.options import llm_config_from_args

        local_model = llm_config_from_args(args).is_local
    if args.concurrency is None:
        args.concurrency = 1 if local_model else checkpoint.default_concurrency(args) or 8
    if local_model:
        from textenvs.agents.llm import local

        local.pool.plan(args.concurrency)
    return local_model


def start_ray_backend(
    args: argparse.Namespace,
    plan: EvalPlan,
    factory: AgentFactory,
    probe: Any,
    console: Console,
) -> Any:
    """The started Ray backend, its endpoint checked from every actor; None after telling
    why it cannot be used."""
    try:
        from textenvs.evals.ray_backend import RayBackend, RayBackendError
    except ImportError:
        say(console, "textenvs eval: error: --backend ray needs Ray: pip install 'textenvs[ray]'")
        return None
    from textenvs.agents.llm.preflight import PreflightError

    config = getattr(probe, "cfg", None)
    names = [config.api_key_env, "OPENAI_BASE_URL"] if isinstance(config, LLMConfig) else []
    backend = RayBackend(
        plan,
        factory,
        address=args.ray_address,
        actors=args.ray_actors,
        # the actors' processes were not started from this shell: send what the agent reads
        env_vars={name: os.environ[name] for name in names if os.environ.get(name)},
        on_note=lambda text: console.print(f"note: {text}", markup=False),
    )
    try:
        backend.start()
        if not args.no_preflight:
            backend.preflight()
    except (RayBackendError, PreflightError) as exc:
        backend.stop()
        what = "preflight: " if isinstance(exc, PreflightError) else ""
        say(console, f"textenvs eval: error: {what}{scrubber_for(args, probe).text(str(exc))}")
        return None
    return backend


def session_label(args: argparse.Namespace) -> str:
    """The label of the run's sessions on an --env-url service: the run's own (kept in its
    config, so a resume finds what a killed run left open), or a new random one."""
    if args.resume:
        try:
            config = store.read_config(args.out)
        except store.RunDirError:
            config = None  # the run itself reports why it cannot resume
        label = (config or {}).get("session_label")
        if isinstance(label, str) and re.fullmatch(SESSION_ID_PATTERN, label):
            return label
    return "eval-" + secrets.token_urlsafe(16)
