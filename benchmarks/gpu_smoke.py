"""A smoke of training on a GPU: each stage run once on a tiny model, timed, checked to
have run on CUDA where there is one.

Stages, on Treasure Hunt, in this process:

- `grpo`: `textenvs train` (GRPO, transformers sampling, text mode), 2 steps of 4 episodes;
- `sft`: `textenvs train --method sft`, 2 steps of the scripted agent's episodes;
- `trl-env`: one step of TRL's own `GRPOTrainer(environment_factory=...)` on
  `textenvs.adapters.trl` (the model calls the `act(command)` tool);
- `eval`: `textenvs eval --agent llm --model` the GRPO run's final checkpoint on 2 seeds;
- `eval-tools`: the same in `--action-mode tools`, of the `trl-env` stage's checkpoint;
- `reward-weighted`: `train --method sft --reward-weighted` (EM Anomaly) on the reactive
  agent's run of 20 seeds, won and lost: 2 steps, the starting model's top layer frozen
  beside the trained one, the kl bound measured.

With `--shape DIR` (a model folder without its weights: `config.json` and the tokenizer,
e.g. SmolLM2-135M's), `shape` then times one round of the EM Anomaly recipe at that
model's size on weights drawn at random here: 16 episodes sampled at temperature 1 and
`--concurrency 8`, and reward-weighted steps of 16 turns with the top 12 layers trained
(seconds a step from a 1-step and a 6-step run). A random model's replies are unreadable,
so its episodes run all 30 turns, as many tokens as a real episode or more.

The models are made here (`benchmarks/support/tiny_model.py`: a two-layer model of a few
hundred kB, its tokenizer trained on the rules, taught for a moment to answer), so no
weights travel. On a machine with CUDA a stage counts as run there only if it allocated
GPU memory (`--require-gpu` makes a CPU machine a failure). Writes `gpu_smoke.json`
(versions, the card, each stage's seconds, peak GPU memory and figures) into `--out`;
exits 1 if a stage failed. It runs on a CPU too, in minutes.

    python -m benchmarks.gpu_smoke --out runs/gpu-smoke

On the device machine the packages its image lacks are carried as wheels (this project's
own among them), and this folder's copy is run from where it was carried:
    pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl
    cd .gpu/src && PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 \\
        python3 -m benchmarks.gpu_smoke --out "$OUT" --require-gpu

On 2026-11-29 the H200's image (Python 3.12, torch 2.11.0) lacked, at the versions this
project's environment holds: gymnasium, farama-notifications, pydantic, pydantic-core,
annotated-types, typing-inspection, openai, httpx2, httpcore2, truststore, jiter, sniffio,
textarena, chess (1.10.0: 1.11.2 has no wheel), nltk, defusedxml, python-dotenv,
websockets, fastapi, starlette, opentelemetry-api, uvicorn, httptools, trl, datasets,
dill, multiprocess, and newer transformers (5.24.0), tokenizers and huggingface-hub (the
image's 5.17.0 and 1.33.0): 30 wheels and this project's, 29 MB (`pip download --no-deps
--only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 ...`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import torch

from benchmarks.support import tiny_model
from textenvs.evals import store

ENV = "treasure-hunt"
#: north explores and west bumps from the start corner: a group's episodes differ
REPLIES = ["north", "west"]
GRPO = ["--steps", "2", "--max-turns", "3", "--group-size", "4", "--seeds-per-step", "1",
        "--micro-batch", "2", "--max-tokens", "10", "--learning-rate", "1e-2",
        "--reward", "headline"]  # fmt: skip
SFT = ["--method", "sft", "--steps", "2", "--seeds", "1000-1001", "--seeds-per-step", "1",
       "--learning-rate", "3e-3"]  # fmt: skip
EVAL = ["--seeds", "0-1", "--max-invalid", "3"]

Stage = Callable[[Path], dict[str, Any]]


def cli(*argv: str) -> None:
    """One `textenvs` command in this process (its stdout kept off the log)."""
    from textenvs.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    if code:
        raise RuntimeError(f"textenvs {argv[0]} exited with {code}")


def make_models(work: Path) -> dict[str, Any]:
    text = tiny_model.make(work / "text-model", ENV, REPLIES)
    tiny_model.make_tool_caller(work / "tool-model", ENV, REPLIES)
    weights = (text / "model.safetensors").stat().st_size
    return {"model_bytes": weights, "replies": REPLIES}


def grpo(work: Path) -> dict[str, Any]:
    from textenvs.training import curve

    out = work / "grpo"
    cli("train", "--env", ENV, "--model", str(work / "text-model"), "--out", str(out), *GRPO)
    keep = ("step", "episodes", "reward", "invalid_rate", "generation_s", "update_s", "step_s")
    return {"curve": [{k: row[k] for k in keep} for row in curve.read(out)]}


def sft(work: Path) -> dict[str, Any]:
    out = work / "sft"
    cli("train", "--env", ENV, "--model", str(work / "text-model"), "--out", str(out), *SFT)
    return {"final": (out / "final" / "model.safetensors").is_file()}


def trl_environment(work: Path) -> dict[str, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from textenvs.adapters.trl import EnvironmentFactory, episode_datasets

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    folder = work / "tool-model"
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    data = episode_datasets(ENV, "1000-1003", "100-101")
    args = GRPOConfig(
        output_dir=str(work / "trl-env" / "checkpoints"), max_steps=1, learning_rate=1e-2,
        beta=0.0, num_generations=4, per_device_train_batch_size=4,
        gradient_accumulation_steps=2, generation_batch_size=8, max_completion_length=400,
        max_tool_calling_iterations=4, temperature=1.0, use_cpu=not torch.cuda.is_available(),
        bf16=False, report_to=[], logging_steps=1, save_strategy="no", disable_tqdm=True,
        seed=0,
    )  # fmt: skip
    given = {"model": model, "args": args, "processing_class": tokenizer}
    with EnvironmentFactory("headline") as envs:
        trainer = GRPOTrainer(**given, train_dataset=data["train"], environment_factory=envs)
        trainer.train()
        commands = sorted(
            {turn.command for e in trainer.environments if e.result for turn in e.result.turns}
        )
    trainer.save_model(str(work / "trl-env" / "final"))
    tokenizer.save_pretrained(work / "trl-env" / "final")
    logs = trainer.state.log_history[0]
    wanted = ("reward", "tools/call_frequency", "tools/failure_frequency", "frac_reward_zero_std")
    return {
        "model_device": str(next(model.parameters()).device),
        "log": {k: logs[k] for k in wanted if k in logs},
        "commands": commands,
    }


def evaluate(work: Path, model: Path, name: str, *mode: str) -> dict[str, Any]:
    out = work / name
    cli("eval", "--env", ENV, "--agent", "llm", "--model", str(model), "--out", str(out),
        *EVAL, *mode)  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())["by_env"][ENV]
    keep = ("episodes", "mean_steps", "invalid_action_rate", "mean_return")
    return {k: summary[k] for k in keep if k in summary}


def reward_weighted(work: Path) -> dict[str, Any]:
    from textenvs.inference import models

    played = work / "em-reactive"
    # 20 seeds: `shape` trains on them 16 a step
    cli("eval", "--env", "em-anomaly", "--agent", "reactive", "--seeds", "2000-2019",
        "--out", str(played))  # fmt: skip
    out = work / "reward-weighted"
    cli("train", "--method", "sft", "--env", "em-anomaly", "--model", str(work / "text-model"),
        "--demonstrations", str(played), "--reward-weighted", "--history", "0",
        "--seeds-per-step", "2", "--steps", "2", "--train-layers", "1", "--target-kl", "0.05",
        "--eval-seeds", "3000-3009", "--out", str(out))  # fmt: skip
    record = models.read_record(out / "final")
    return {"step": record["step"], "reward_weighted": record["reward_weighted"]}


def shape(work: Path, folder: Path) -> dict[str, Any]:
    """One round of the EM Anomaly recipe at the size of the model `folder` describes."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    model_dir = work / "shape-model"
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder))
    model.save_pretrained(model_dir)
    AutoTokenizer.from_pretrained(folder).save_pretrained(model_dir)
    parameters = sum(p.numel() for p in model.parameters())
    del model
    episodes = 16
    started = time.perf_counter()
    cli("eval", "--env", "em-anomaly", "--agent", "llm", "--model", str(model_dir),
        "--temperature", "1", "--llm-seed", "0", "--seeds", f"21000-{21000 + episodes - 1}",
        "--concurrency", "8", "--history", "0", "--reasks", "0", "--max-tokens", "8",
        "--out", str(work / "shape-eval"))  # fmt: skip
    sampled = time.perf_counter() - started
    turns = sum(r["steps"] for r in store.read_episodes(work / "shape-eval"))
    seconds = {}
    for steps in (1, 6):
        started = time.perf_counter()
        cli("train", "--method", "sft", "--env", "em-anomaly", "--model", str(model_dir),
            "--demonstrations", str(work / "em-reactive"), "--reward-weighted", "--history",
            "0", "--seeds-per-step", "16", "--steps", str(steps), "--train-layers", "12",
            "--learning-rate", "2e-5", "--max-tokens", "8", "--reasks", "0",
            "--eval-seeds", "3000-3009", "--out", str(work / f"shape-train-{steps}"))  # fmt: skip
        seconds[steps] = time.perf_counter() - started
    return {
        "parameters": parameters,
        "episodes": episodes,
        "turns": turns,
        "sampling_s": round(sampled, 1),
        "s_per_episode": round(sampled / episodes, 2),
        "train_1_step_s": round(seconds[1], 1),
        "s_per_step": round((seconds[6] - seconds[1]) / 5, 2),
    }


STAGES: dict[str, Stage] = {
    "models": make_models,
    "grpo": grpo,
    "sft": sft,
    "trl-env": trl_environment,
    "eval": lambda work: evaluate(work, work / "grpo" / "final", "eval"),
    "eval-tools": lambda work: evaluate(
        work, work / "trl-env" / "final", "eval-tools", "--action-mode", "tools"
    ),
    "reward-weighted": reward_weighted,
}


def run_stage(name: str, stage: Stage, work: Path, cuda: bool) -> dict[str, Any]:
    """Run one stage; its seconds, peak GPU memory, figures, or the error that ended it."""
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        allocations = _cuda_allocations()
    started = time.perf_counter()
    entry: dict[str, Any] = {"stage": name}
    try:
        entry.update(stage(work))
        entry["ok"] = True
    except (Exception, SystemExit) as exc:
        traceback.print_exc()
        entry.update(ok=False, error=f"{type(exc).__name__}: {exc}".splitlines()[0])
    if cuda:
        torch.cuda.synchronize()
        # what earlier stages left allocated counts in the peak, not in the allocations
        entry["cuda_peak_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        used_cuda = _cuda_allocations() > allocations
        if name != "models" and entry["ok"] and not used_cuda:  # models are made on the CPU
            entry.update(ok=False, error="ran without allocating GPU memory (not on CUDA)")
    entry["seconds"] = round(time.perf_counter() - started, 2)
    print(json.dumps(entry), file=sys.stderr, flush=True)
    return entry


def _cuda_allocations() -> int:
    """How many GPU allocations this process has made so far."""
    return int(torch.cuda.memory_stats().get("allocation.all.allocated", 0))


def machine() -> dict[str, Any]:
    cuda = torch.cuda.is_available()
    packages = ("torch", "transformers", "trl", "accelerate", "datasets")
    return {
        "python": platform.python_version(),
        **{name: version(name) for name in packages},
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "cuda_total_mib": round(torch.cuda.get_device_properties(0).total_memory / 2**20)
        if cuda
        else None,
        "vllm": "installed" if _installed("vllm") else "not installed",
    }


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="where gpu_smoke.json goes")
    p.add_argument("--work", type=Path, default=None, help="run folders (default OUT/work)")
    p.add_argument("--require-gpu", action="store_true", help="fail where CUDA is missing")
    p.add_argument(
        "--shape",
        type=Path,
        default=None,
        help="a model folder without weights (config and tokenizer): also time a round of "
        "the EM Anomaly recipe at its size, on random weights",
    )
    args = p.parse_args(argv)
    cuda = torch.cuda.is_available()
    if args.require_gpu and not cuda:
        print("gpu_smoke: no CUDA device is visible", file=sys.stderr)
        return 1
    work = args.work or args.out / "work"
    work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"machine": machine(), "stages": []}
    print(json.dumps(report["machine"]), file=sys.stderr, flush=True)
    started = time.perf_counter()
    stages = dict(STAGES)
    if args.shape is not None:
        stages["shape"] = lambda work: shape(work, args.shape)
    for name, stage in stages.items():
        report["stages"].append(run_stage(name, stage, work, cuda))
    report["seconds"] = round(time.perf_counter() - started, 2)
    report["ok"] = all(entry["ok"] for entry in report["stages"])
    (args.out / "gpu_smoke.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({"ok": report["ok"], "seconds": report["seconds"]}), file=sys.stderr)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
