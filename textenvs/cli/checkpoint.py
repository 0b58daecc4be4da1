"""`--agent llm --model DIR`: play a transformers model directory (a `textenvs train`
checkpoint among them) through the same agent, runner and parser as any model.

With no `--base-url`, the directory is served on loopback for the command
(`inference.serving`, an OpenAI-compatible endpoint) and the agent talks to it. A
checkpoint of `textenvs train` carries how it was trained: its conversation settings and
reply limit become the defaults (a model is evaluated under the prompt it trained on),
and playing it on its own training seeds is refused.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from textenvs.cli.common import env_option_flags, env_options_from_args, fail, missing_extra
from textenvs.episodes.specs import resolve_envs

LOOPBACK_TIMEOUT_S = 3600.0
#: conversations a model directory served on a CPU holds at once (`--concurrency`'s
#: default there): a round costs its real tokens, so batching gains little on a few cores
#: (100 Treasure Hunt episodes of a 135M model: 10.0 minutes one at a time, 8.3 at 8),
#: while each conversation in flight holds its keys and values (1.3 GB peak against 2.4)
CPU_CONVERSATIONS = 1


def wanted(args: argparse.Namespace) -> bool:
    """Whether the command plays a model directory with no endpoint given."""
    return _no_endpoint(args) and (Path(args.model) / "config.json").is_file()


def default_concurrency(args: argparse.Namespace) -> int | None:
    """`--concurrency`'s default where the command serves a model directory on a CPU
    (`CPU_CONVERSATIONS`); None elsewhere."""
    if not wanted(args) or importlib.util.find_spec("torch") is None:
        return None
    import torch

    return None if torch.cuda.is_available() else CPU_CONVERSATIONS


def _no_endpoint(args: argparse.Namespace) -> bool:
    """An LLM agent with a --model and no --base-url(s)."""
    return (
        getattr(args, "agent", None) == "llm"
        and bool(getattr(args, "model", None))
        and not getattr(args, "base_url", None)
        and not getattr(args, "base_urls", None)
    )


def model_path_mistake(model: str) -> str | None:
    """Why `--model` names a path that is no model directory (a typo, a training run's
    folder instead of its final/), else None: such a name is no API model's, and sent to
    an API it would fail as a missing key or an unknown model. Names with a slash count as
    paths only where no base URL is set (`org/model` is a name on other servers)."""
    path = Path(model)
    if (path / "config.json").is_file():
        return None
    if (path / "final" / "config.json").is_file():
        return (
            f"--model {model} is a training run's folder, not a model directory; "
            f"give its final/: --model {path / 'final'}"
        )
    if path.is_dir():
        return (
            f"--model {model} is a folder without config.json, not a transformers model "
            "directory; give a model directory (a training run's OUT/final)"
        )
    written_as_path = model.startswith(("/", "./", "../", "~")) or (
        "/" in model and not os.environ.get("OPENAI_BASE_URL")
    )
    if written_as_path:
        return (
            f"--model {model}: no such model directory; give a transformers model "
            "directory (a training run's OUT/final), 'local', or a model name"
        )
    return None


@contextlib.contextmanager
def served(args: argparse.Namespace, seeds: list[int], slots: int) -> Iterator[None]:
    """Serve `--model DIR` while the block runs (when `wanted`), with the checkpoint's
    training settings as defaults; otherwise do nothing."""
    mistake = model_path_mistake(args.model) if _no_endpoint(args) else None
    if mistake:
        raise fail(args, mistake)
    if not wanted(args):
        yield
        return
    try:
        from textenvs.inference import models, serving
    except ImportError as exc:
        who = f"--model {args.model} (a model directory)"
        raise missing_extra(args, who, exc, "train") from None
    record = models.read_record(args.model) or {}
    trained_on = sorted(set(models.trained_seeds(record)) & set(seeds))
    if trained_on:
        shown = ", ".join(map(str, trained_on[:5])) + (" ..." if len(trained_on) > 5 else "")
        raise fail(
            args,
            f"seeds {shown}: {args.model} was trained on them; evaluate it on held-out "
            "seeds (its textenvs-training.json lists both)",
        )
    note = _other_options_note(args, record)
    if note:
        print(note, file=sys.stderr)
    trained_with = {**(record.get("conversation") or {})}
    for name in ("action_mode", "json_reasoning", "max_tokens"):
        if record.get(name) is not None:
            trained_with[name] = record[name]
    # the server is this process's own: a slow answer on a busy CPU is not an outage
    trained_with["request_timeout"] = LOOPBACK_TIMEOUT_S
    # each request seeded on its own: a sampled run draws the same resumed or concurrent
    trained_with["llm_seed"] = 0
    for name, value in trained_with.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    if _action_mode(args) == "tools":
        from textenvs.inference.tool_template import tools_refusal

        problem = tools_refusal(args.model)
        if problem:
            raise fail(args, f"--action-mode tools: {problem} (or play it in text mode)")
    at_once = f"{slots} conversation{'s' if slots > 1 else ''} at a time"
    print(f"note: serving {args.model} on loopback ({at_once})", file=sys.stderr)
    try:
        with serving.serve(args.model, slots=slots) as url:
            args.base_url = [url]
            args.served_on_loopback = url
            try:
                yield
            except BaseException:
                # Ctrl-C or an error: the requests in flight are cancelled, and the
                # server's log of each cancelled request (a long traceback) says nothing
                logging.getLogger("uvicorn.error").disabled = True
                raise
    except models.ModelError as exc:
        raise fail(args, str(exc)) from None


def _other_options_note(args: argparse.Namespace, record: dict[str, Any]) -> str | None:
    """A checkpoint trained on its scenario's options (a level, say) and played with other
    ones meets episodes unlike those it learned from: a line that says so."""
    trained, env = record.get("options") or {}, record.get("env")
    try:
        played, envs = env_options_from_args(args), resolve_envs(args.env)
    except (ValueError, KeyError):
        return None  # the command says what is wrong with them
    if env not in envs or played == trained:
        return None
    learned = env_option_flags(trained) or "its default options"
    plays = env_option_flags(played) or "its default options"
    return f"note: {args.model} was trained on {env} with {learned}; this run plays {plays}"


def _action_mode(args: argparse.Namespace) -> str | None:
    """The action mode the command plays in: --action-mode (or the checkpoint's), else
    its --agent-config file's."""
    mode = getattr(args, "action_mode", None)
    if mode is None and getattr(args, "agent_config", None):
        from textenvs.agents.llm.options import llm_config_from_args

        return llm_config_from_args(args).mode
    return mode


#: what a run's config.json names as the endpoint of a served `--model DIR`
SERVED_ENDPOINT = "loopback (textenvs eval --model DIR)"


def record_as_served(args: argparse.Namespace, config: dict[str, Any]) -> None:
    """A served checkpoint's loopback port differs in every run: the config names the
    endpoint as served, so that `--resume` continues the run."""
    if getattr(args, "served_on_loopback", None):
        config["agent"]["base_url"] = SERVED_ENDPOINT
