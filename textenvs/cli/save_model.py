"""`textenvs save-model`: write `local` (or any model directory) as a transformers model
directory, with `--tools-template` one whose chat template renders tools (TRL's
`environment_factory`, `textenvs eval --action-mode tools`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from textenvs.cli.command import Command
from textenvs.cli.common import fail, missing_extra


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        required=True,
        metavar="local|DIR",
        help="'local' (SmolLM2-135M-Instruct, the GGUF of the [local] extra) or a "
        "transformers model directory",
    )
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="a new (or empty) folder")
    p.add_argument(
        "--tools-template",
        action="store_true",
        help="give the tokenizer a chat template that renders tools (TRL's Qwen 2.5 "
        "template for a ChatML model; a template that renders tools is kept)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        from textenvs.inference import models, tool_template
    except ImportError as exc:
        raise missing_extra(args, "save-model", exc, "train", "local") from None
    models.quiet_libraries()
    try:
        template = tool_template.save_model(args.model, args.out, tools=args.tools_template)
    except models.ModelError as exc:
        raise fail(args, str(exc)) from None
    print(f"wrote {args.out}/ (a transformers directory; chat template: {template})")
    if args.tools_template:
        print(
            f"next: a warm start that calls act: textenvs train --method sft --action-mode "
            f"tools --model {args.out} ... (docs/training.md), or "
            f"GRPOTrainer(model='{args.out}', environment_factory=...) (docs/adapters.md)",
            file=sys.stderr,
        )
    return 0


COMMAND = Command(
    "save-model",
    help="write a model ('local' or a directory) as a transformers model directory, "
    "optionally with a chat template that renders tools",
    description="Write --model as a transformers model directory (weights, tokenizer, "
    "chat template, and a checkpoint's training record): 'local', SmolLM2-135M-Instruct "
    "from the GGUF of the [local] extra, becomes a folder that TRL, transformers and "
    "'textenvs eval --model DIR' load offline. With --tools-template its chat template "
    "renders tools: a model whose template does is kept as it is, and a ChatML model "
    "(SmolLM2) is given TRL's bundled Qwen 2.5 template, the one TRL's "
    "GRPOTrainer(environment_factory=...) recognises and parses calls with. Needs pip "
    "install 'textenvs[train]' (and [local] for 'local').",
    handler=run,
    arguments=_arguments,
    epilog="Then: textenvs train --method sft --action-mode tools --model OUT ... (a "
    "warm start that calls act), or GRPOTrainer(model=OUT, environment_factory=...) "
    "(docs/adapters.md, TRL).",
)
