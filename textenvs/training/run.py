"""A training run: settings checked, the model loaded, GRPO run, checkpoints and curve
written (what `textenvs train` does)."""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from transformers.utils import logging as transformers_logging

import textenvs
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.core.redact import redact_url
from textenvs.episodes.specs import check_reset_options, parse_seeds, resolve_envs
from textenvs.training import curve, grpo, models
from textenvs.training.chat import ChatTokens, TemplateError
from textenvs.training.grpo import BASE, CHECKPOINTS, FINAL, TrainSettings
from textenvs.training.rollouts import EnvFactory

SETTINGS_FILE = "settings.json"


class TrainingError(ValueError):
    """Why a run cannot start or go on (one line, for the CLI)."""


def settings_from(
    *, env: str, model: str, seeds: str, eval_seeds: str, **given: Any
) -> TrainSettings:
    """Checked settings: one scenario, seeds that parse and do not overlap, options the
    scenario takes, conversation settings `textenvs eval` takes."""
    if model != models.LOCAL and not models.is_model_dir(model):
        raise TrainingError(
            f"--model {model}: not 'local' nor a transformers model directory (a folder "
            "with config.json)"
        )
    names = resolve_envs(env)
    if len(names) != 1:
        raise TrainingError("--env: train on one scenario at a time")
    try:
        train_seeds, held_out = parse_seeds(seeds), parse_seeds(eval_seeds)
    except ValueError as exc:
        raise TrainingError(str(exc)) from None
    overlap = sorted(set(train_seeds) & set(held_out))
    if overlap:
        shown = ", ".join(map(str, overlap[:5])) + (" ..." if len(overlap) > 5 else "")
        raise TrainingError(f"--seeds and --eval-seeds overlap ({shown}): hold the eval seeds out")
    settings = TrainSettings(
        env=names[0], model=model, seeds=train_seeds, eval_seeds=held_out, **given
    )
    if len(train_seeds) < settings.seeds_per_step:
        raise TrainingError(f"--seeds: a step needs {settings.seeds_per_step} training seeds")
    try:
        check_reset_options([settings.env], settings.options)
        conversation_settings(
            settings.action_mode, settings.json_reasoning, **settings.conversation
        )
        grpo.grpo_config(settings, Path("unused"))
    except ValueError as exc:
        raise TrainingError(str(exc).splitlines()[0]) from None
    return settings


def env_factory(settings: TrainSettings) -> EnvFactory:
    """In-process envs, or envs on a `textenvs serve` service (`service.client.RemoteEnv`,
    as `textenvs eval --env-url` plays them), checked to serve the installed version
    before the first episode (`VersionMismatch`, a ValueError)."""
    if settings.env_url is None:
        return textenvs.make
    from textenvs.service.client import remote_env_factory, service_error

    make = remote_env_factory(settings.env_url)
    try:
        make.client.checked_env_info(settings.env)  # type: ignore[attr-defined]
    except Exception as exc:
        message = service_error(exc, redact_url(settings.env_url))
        if message is None:
            raise
        raise TrainingError(message) from None
    return make


def quiet_libraries() -> None:
    """Keep the libraries' own chatter off the terminal: their progress bars, TRL's
    notice that `rollout_func` is experimental (this package uses it on purpose), and
    deprecation notices between TRL and transformers that no option here can change."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    transformers_logging.disable_progress_bar()
    transformers_logging.set_verbosity_error()
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|trl)\b")


def train(settings: TrainSettings, out: Path, *, resume: bool = False) -> Path:
    """Run GRPO as `settings` say into `out`; the final checkpoint's folder."""
    quiet_libraries()
    console = Console(stderr=True)
    make_env = env_factory(settings)  # a service is checked before anything is written
    checkpoint = _prepare(settings, out, resume)
    try:
        model, tokenizer = models.load(checkpoint_model(checkpoint, settings))
        ChatTokens(tokenizer)
    except (models.ModelError, TemplateError) as exc:
        raise TrainingError(str(exc)) from None
    if checkpoint is None:
        console.print(f"saving the starting weights to {out / BASE}/ (evaluate them as 'before')")
        models.save(model, tokenizer, out / BASE, settings.record() | {"step": 0})
    progress = Progress(
        TextColumn("[bold]GRPO {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("return {task.fields[ret]}  invalid {task.fields[invalid]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )
    task = progress.add_task(settings.env, total=settings.steps, ret="-", invalid="-")
    if checkpoint is not None:
        progress.update(task, completed=_step_of(checkpoint))

    def on_step(row: dict[str, Any]) -> None:
        invalid = row.get("invalid_rate")
        progress.update(
            task,
            completed=row["step"],
            ret=f"{row['return']:.3g}",
            invalid="-" if invalid is None else f"{invalid:.0%}",
        )
        curve.write_charts(out, settings.env)  # a run stopped early keeps its curve

    trainer = grpo.build_trainer(settings, model, tokenizer, make_env, out, on_step)
    try:
        with progress:
            trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    except TemplateError as exc:
        raise TrainingError(str(exc)) from None
    trained = trainer.accelerator.unwrap_model(trainer.model)
    models.save(trained, tokenizer, out / FINAL, settings.record() | {"step": settings.steps})
    return out / FINAL


def checkpoint_model(checkpoint: Path | None, settings: TrainSettings) -> str:
    """What to load: the checkpoint resumed from, else the model the settings name."""
    return str(checkpoint) if checkpoint is not None else settings.model


def _prepare(settings: TrainSettings, out: Path, resume: bool) -> Path | None:
    """Check the run folder; the checkpoint to resume from (None: a new run)."""
    saved = out / SETTINGS_FILE
    record = settings.record()
    if resume:
        if not saved.is_file():
            raise TrainingError(f"--resume: {out} holds no training run")
        before = json.loads(saved.read_text())
        changed = sorted(k for k in record if k != "steps" and before.get(k) != record[k])
        if changed:
            raise TrainingError(
                f"--resume with other settings than the run's: {', '.join(changed)}"
            )
        checkpoint = latest_checkpoint(out)
        if checkpoint is not None:
            curve.keep_until(out, _step_of(checkpoint))
            return checkpoint
        print(f"note: {out} has no checkpoint yet: starting over", file=sys.stderr)
    elif out.exists() and any(out.iterdir()):
        raise TrainingError(f"--out {out} is not empty (use --resume to go on with its run)")
    out.mkdir(parents=True, exist_ok=True)
    (out / curve.CURVE_FILE).unlink(missing_ok=True)
    saved.write_text(json.dumps(record, indent=2) + "\n")
    return None


def latest_checkpoint(out: Path) -> Path | None:
    found = [p for p in (out / CHECKPOINTS).glob("checkpoint-*") if p.is_dir()]
    return max(found, key=_step_of, default=None)


def _step_of(checkpoint: Path) -> int:
    return int(checkpoint.name.rpartition("-")[2])
