"""A training run: the model loaded, GRPO or SFT run, checkpoints and curve written
(what `textenvs train` does, with settings `settings.settings_from` checked)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress, TaskID

import textenvs
from textenvs.core.heartbeat import Heartbeat
from textenvs.core.progress import progress_bar
from textenvs.core.redact import redact_url
from textenvs.core.registry import episode_level
from textenvs.episodes.envs import EnvFactory
from textenvs.evals import run_folder
from textenvs.inference import models
from textenvs.inference.chat import ChatTokens, TemplateError
from textenvs.training import curve, grpo, lookahead
from textenvs.training.choices import CRITIC_CREDITS
from textenvs.training.demonstrations import RecordedEpisode, recorded_episodes, recorded_runs
from textenvs.training.settings import (
    DEFAULTS,
    TrainingError,
    TrainSettings,
    recorded_settings,
)


def env_factory(settings: TrainSettings) -> EnvFactory:
    """In-process envs, or envs on a `textenvs serve` service (`service.client.RemoteEnv`,
    as `textenvs eval --env-url` plays them), checked to serve the installed version
    before the first episode (`VersionMismatch`, a ValueError)."""
    if settings.env_url is None:
        return textenvs.make
    from textenvs.service.client import remote_env_factory, service_error

    make = remote_env_factory(settings.env_url)
    try:
        make.client.checked_env_info(settings.env)
    except Exception as exc:
        message = service_error(exc, redact_url(settings.env_url))
        if message is None:
            raise
        raise TrainingError(message) from None
    return make


def train(
    settings: TrainSettings,
    out: Path,
    *,
    resume: bool = False,
    keep_checkpoints: int | None = None,
    save_base: bool = False,
) -> Path:
    """Run GRPO as `settings` say into `out`; the final checkpoint's folder. The newest
    `keep_checkpoints` checkpoints are kept (None: all). The starting
    weights go to `out/base` with `save_base`; otherwise a model directory is linked
    there (no copy) and `local`, read from its GGUF, leaves none."""
    models.quiet_libraries()
    console = Console(stderr=True)
    # a log gets whole lines: rich would wrap them at 80 columns, and a grep miss half
    console.soft_wrap = not console.is_terminal
    # a service is checked before anything is written
    make_env = env_factory(settings) if settings.method != "sft" else None
    checkpoint = _prepare(settings, out, resume)
    try:
        model, tokenizer = models.load(checkpoint_model(checkpoint, settings))
        ChatTokens(tokenizer)
    except (models.ModelError, TemplateError) as exc:
        raise TrainingError(str(exc)) from None
    base = out / run_folder.BASE
    if checkpoint is None and save_base:
        console.print(f"saving the starting weights to {base}/ (evaluate them as 'before')")
        models.save(model, tokenizer, base, settings.record() | {"step": 0})
    elif checkpoint is None and settings.model != models.LOCAL and not base.exists():
        base.symlink_to(Path(settings.model).resolve(), target_is_directory=True)
    title = f"[bold]{settings.method.upper()} {{task.description}}"
    progress = progress_bar(console, title, "{task.fields[status]}")
    task = progress.add_task(settings.env, total=settings.steps, status="")
    if checkpoint is not None:
        progress.update(task, completed=_step_of(checkpoint))

    def on_step(row: dict[str, Any]) -> None:
        if settings.method == "sft":
            status = f"loss {row['loss']:.3g}"
            if "kl" in row:  # --reward-weighted: how far from the sampling model
                status += f"  kl {row['kl']:.2g}"
        else:
            invalid = row.get("invalid_rate")
            invalid_text = "-" if invalid is None else f"{invalid:.0%}"
            status = f"return {row['return']:.3g}  invalid {invalid_text}"
            level = episode_level(settings.env, settings.options)
            curve.write_charts(out, settings.env, level)  # a run stopped early keeps its curve
        progress.update(task, completed=row["step"], status=status)
        if not console.is_terminal:  # a log file gets a line a step, not one bar at the end
            elapsed = progress.tasks[task].elapsed or 0.0
            console.print(f"step {row['step']}/{settings.steps}  {status}  {elapsed / 60:.1f} min")
            heartbeat.said()

    def under_way() -> str:
        step = int(progress.tasks[task].completed) + 1
        elapsed = progress.tasks[task].elapsed or 0.0
        return f"step {step}/{settings.steps} under way, {elapsed / 60:.1f} min"

    heartbeat = Heartbeat(console, under_way)

    if settings.method == "sft":
        trainer = _sft_trainer(settings, model, tokenizer, out, on_step, console, keep_checkpoints)
    else:
        assert make_env is not None
        trainer = grpo.build_trainer(
            settings, model, tokenizer, make_env, out, on_step, keep_checkpoints
        )
    try:
        with progress, heartbeat:
            trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    except TemplateError as exc:
        raise TrainingError(str(exc)) from None
    step = trainer.state.global_step
    if step < settings.steps and settings.target_kl is not None:
        console.print(
            f"stopped after step {step} of {settings.steps}: its approximate KL from the "
            f"sampling model passed --target-kl {settings.target_kl:g}"
        )
    trained = trainer.accelerator.unwrap_model(trainer.model)
    final = out / run_folder.FINAL
    models.save(trained, tokenizer, final, settings.record() | {"step": step})
    return final


def _sft_trainer(
    settings: TrainSettings,
    model: Any,
    tokenizer: Any,
    out: Path,
    on_step: Any,
    console: Console,
    keep_checkpoints: int | None,
) -> Any:
    """The SFT trainer on `settings.demonstrations`' episodes of the training seeds."""
    from textenvs.training import sft
    from textenvs.training.credit import fed_choice

    recorded = replayed = fed = None
    runs = recorded_runs(settings.demonstrations)
    if runs:
        # A policy gradient learns from every episode, an unreadable reply pushed down with
        # the rest of a lost one; imitation must not copy one. Only text mode's replies
        # are replayed as written (a tools-mode reply is the server's message for a call).
        keep = settings.reward_weighted and settings.action_mode == "text"
        recorded, unreadable = recorded_episodes(
            runs, settings.env, settings.options, keep_unreadable=keep
        )
        fate = "replayed as written" if keep else "left out"
        console.print(
            f"replaying the episodes of {settings.demonstrations} on {len(settings.seeds)} "
            f"seeds ({unreadable} with an unreadable reply: {fate})"
        )
    else:
        console.print(
            f"playing {len(settings.seeds)} demonstration episodes ({settings.demonstrations})"
        )
    try:
        if recorded is not None:
            # the episodes trained on and their weights, worked out once (a critic is fit)
            replayed = _credited(settings, recorded, console, out)
            fed = fed_choice(settings, *replayed)
        # minutes for a long scenario's thousand episodes (Squad Recon: 7), so they show
        progress = progress_bar(console, "[bold]demonstrations {task.description}")
        total = len(settings.seeds) if fed is None else len(fed[0])
        task = progress.add_task(settings.env, total=total)
        shown = _heartbeat_line(progress, task, "demonstrations", "tokenized")
        # demonstrations play in-process: the agent reads its own env's observation
        with progress, Heartbeat(console, shown):
            dataset, kept = sft.demonstration_dataset(
                settings,
                tokenizer,
                model,
                textenvs.make,
                on_episode=lambda _: progress.advance(task),
                replayed=fed,
            )
    except (ValueError, TemplateError) as exc:
        raise TrainingError(str(exc).splitlines()[0]) from None
    longest = max(s.longest_reply for d in kept for s in d.sequences)
    if settings.action_mode == "tools" and longest > settings.max_tokens:
        raise TrainingError(
            f"--max-tokens {settings.max_tokens}: a demonstrated tool call is {longest} "
            "tokens with its end, and eval would cut the checkpoint's calls there; give "
            f"--max-tokens {longest + 8} or more"
        )
    won = sum(d.result.success for d in kept)
    # the sequences fed (--credit turn feeds only the turns that changed a value, critic
    # the turns drawn)
    tokens = sum(len(ids) for ids in dataset["input_ids"])
    trained = sum(label != sft.IGNORED for labels in dataset["labels"] for label in labels)
    holding = ""
    if replayed is not None and len(kept) < len(replayed[0]):
        holding = f" of {len(replayed[0]):,} (those holding a turn drawn)"
    console.print(
        f"{len(kept):,} demonstrations{holding} ({won} won), {len(dataset):,} sequences, "
        f"{tokens:,} tokens, {trained:,} of them replies (trained on)"
    )
    trainer = sft.build_trainer(settings, model, tokenizer, dataset, out, on_step, keep_checkpoints)
    if settings.reward_weighted:
        weights = dataset["weight"]
        up = [w for w in weights if w > 0]
        down = [w for w in weights if w < 0]
        if settings.credit == "turn":
            anchoring = set(settings.anchor_seeds)  # given with turn credit: anchors alone
            turns = sum(len(d.sequences) for d in kept if d.spec.seed not in anchoring)
            anchors = len(weights) - len(up) - len(down)
            console.print(
                "each turn weighs the change its command made in its seed's value (the "
                "share won among the seed's episodes shown its observation): "
                f"{len(up) + len(down):,} of the {turns:,} turns changed it, {len(up):,} up "
                f"({sum(up) / len(up):+.3f} on average), {len(down):,} down "
                f"({sum(down) / len(down):+.3f}); the rest are not fed"
                + (
                    f"; {anchors:,} anchors drawn from --anchor-seeds' episodes (weighing 0, "
                    "held by --kl-penalty)"
                    if anchors
                    else ""
                )
            )
        elif settings.credit == "lookahead":
            relabelled = sum(answer is not None for e in replayed[0] for answer in e.answers)
            anchors = len(weights) - len(up)
            console.print(
                "each turn where the critic's one-step lookahead (fit on the other half of "
                f"the seeds) beats the command played by {lookahead.MARGIN:g} or more is "
                f"trained on its command instead, weighing the margin: {relabelled:,} of the "
                f"turns; {len(weights):,} turns drawn by the size of their weight: "
                f"{len(up):,} up, {len(down):,} down, each {max(weights):.3f}"
                + (
                    f"; {anchors:,} anchors (turns not relabelled, held by --kl-penalty"
                    + (", of --anchor-seeds' episodes)" if settings.anchor_seeds else ")")
                    if anchors
                    else ""
                )
            )
        elif settings.credit in CRITIC_CREDITS:
            console.print(
                "each turn weighs the change its command made in the critic's value of the "
                "observation (fit on the other half of the seeds); "
                f"{len(weights):,} turns drawn by the size of their weight: {len(up):,} up, "
                f"{len(down):,} down, each {abs(weights[0]):.3f}"
            )
        else:
            console.print(
                "each episode's weight (success minus its seed's mean where a seed was "
                "sampled more than once, else the runs' mean) is shared among its turns: a won "
                f"episode's turn weighs {sum(up) / len(up):+.3f} "
                f"on average, a lost one's {sum(down) / len(down):+.3f}"
            )
        if settings.habit_share < 1:
            console.print(
                f"note: --habit-share {settings.habit_share:g} trains only that share of the "
                "turns repeating the command before, so they are pushed up or down less than "
                "the others (a policy gradient trains every turn: leave it out)"
            )
        cost = "about 0.65 s a reply on 2 CPU cores"
        if trainer.reference_top is not None:  # --train-layers 30 leaves none frozen
            cost += "; only its layers above the frozen ones, fed the trained model's "
            cost += "hidden states: half that"
        console.print(
            f"the starting model ({settings.model}), frozen beside the trained one, scores "
            "each reply as its step comes: the sampling policy that each step's clipping "
            f"and kl are measured against ({cost})"
        )
    return trainer


def _credited(
    settings: TrainSettings, recorded: list[RecordedEpisode], console: Console, out: Path
) -> tuple[list[RecordedEpisode], list[float] | list[list[float]]]:
    """`credit.replayed_choice`, with a bar while `--credit lookahead` replays every turn
    and tries its commands (about 4 minutes a 50,000 turns on 2 CPU cores; kept in the
    run folder, so that `--resume` reads them instead)."""
    from textenvs.training.credit import replayed_choice

    if not (settings.reward_weighted and settings.credit == "lookahead"):
        return replayed_choice(settings, recorded)
    kept_in = out / run_folder.RELABELS
    progress = progress_bar(console, "[bold]lookahead {task.description}")
    task = progress.add_task("relabelling", total=None)
    shown = _heartbeat_line(progress, task, "lookahead", "relabelled")
    with progress, Heartbeat(console, shown):
        return replayed_choice(
            settings,
            recorded,
            lambda done, total: progress.update(task, completed=done, total=total),
            kept_in,
        )


def _heartbeat_line(progress: Progress, task: TaskID, work: str, done_as: str) -> Callable[[], str]:
    """The line a `Heartbeat` prints for a bar's `task` of episodes."""

    def line() -> str:
        done, total = (int(progress.tasks[task].completed), progress.tasks[task].total)
        elapsed = progress.tasks[task].elapsed or 0.0
        return f"{work}: {done} of {total} episodes {done_as}, {elapsed / 60:.1f} min"

    return line


def checkpoint_model(checkpoint: Path | None, settings: TrainSettings) -> str:
    """What to load: the checkpoint resumed from, else the model the settings name."""
    return str(checkpoint) if checkpoint is not None else settings.model


def _prepare(settings: TrainSettings, out: Path, resume: bool) -> Path | None:
    """Check the run folder; the checkpoint to resume from (None: a new run)."""
    saved = out / run_folder.SETTINGS
    record = settings.record()
    if resume:
        if not saved.is_file():
            raise TrainingError(f"--resume: {out} holds no training run")
        before = recorded_settings(json.loads(saved.read_text()))
        # a setting the run's version did not have yet counts as its default
        defaults = DEFAULTS.record()
        changed = sorted(
            k for k in record if k != "steps" and before.get(k, defaults[k]) != record[k]
        )
        if changed:
            raise TrainingError(
                f"--resume with other settings than the run's: {', '.join(changed)}"
            )
        checkpoint = latest_checkpoint(out)
        if checkpoint is not None:
            curve.keep_until(out, _step_of(checkpoint))
            return checkpoint
        print(f"note: {out} has no checkpoint yet: starting over", file=sys.stderr)
    elif out.is_dir() and any(out.iterdir()):
        stopped = not (out / run_folder.FINAL).exists() and latest_checkpoint(out) is None
        if saved.is_file() and stopped:
            # a run that failed or stopped before its first checkpoint: nothing to go on from
            raise TrainingError(
                f"--out {out} holds a run stopped before its first checkpoint; remove the "
                "folder or give another --out (--resume starts it over with its settings)"
            )
        raise TrainingError(f"--out {out} is not empty (use --resume to go on with its run)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TrainingError(
            f"--out {out}: cannot create it ({exc.strerror or exc}); give a folder you can write"
        ) from None
    (out / run_folder.CURVE).unlink(missing_ok=True)
    saved.write_text(json.dumps(record, indent=2) + "\n")
    return None


def latest_checkpoint(out: Path) -> Path | None:
    found = [p for p in (out / run_folder.CHECKPOINTS).glob("checkpoint-*") if p.is_dir()]
    return max(found, key=_step_of, default=None)


def _step_of(checkpoint: Path) -> int:
    return int(checkpoint.name.rpartition("-")[2])
