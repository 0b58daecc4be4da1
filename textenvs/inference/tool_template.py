"""A model directory whose chat template renders tools: what TRL's
`GRPOTrainer(environment_factory=...)` needs (`textenvs.adapters.trl`), what `textenvs
train --method sft --action-mode tools` writes its demonstrations with, and what `textenvs
eval --action-mode tools` needs of a `--model DIR` (`textenvs save-model` writes one).

GRPOTrainer refuses a tokenizer whose template cannot render a tool-calling conversation
(`The provided chat template does not support tool calling`), and the checkpoint server
refuses tools to it (`tool_calls.py`). SmolLM2's own template (`--model local`) is ChatML
without tools. A ChatML model is given TRL's bundled Qwen 2.5 template
(`trl.chat_template_utils.qwen2_5_chat_template`): the same `<|im_start|>`/`<|im_end|>`
turns, with the tools listed in the system turn, each call a `<tool_call>` block and each
answer a `<tool_response>` block. TRL knows that template byte for byte and parses the
model's calls with it (`add_response_schema`); the checkpoint server reads the same
blocks. A template that already renders tools is kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transformers import AutoTokenizer
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from textenvs.inference import models, tool_calls
from textenvs.inference.chat import ChatTokens, TemplateError

#: what a ChatML template writes for one user message and the opening of the reply
CHATML_TURN = "<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n"
CHATML_TOKENS = ("<|im_start|>", "<|im_end|>")
#: the command that writes a model directory with a template that renders tools
SAVE_COMMAND = "textenvs save-model --model {model} --out {out} --tools-template"


def tools_template() -> str:
    """TRL's Qwen 2.5 chat template (ChatML that renders tools)."""
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def renders_tools(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether the chat template renders a whole tool-calling conversation (TRL's own
    check: the call and its answer are shown) and the tools a request declares (what
    the checkpoint server needs)."""
    from trl.chat_template_utils import supports_tool_calling

    try:
        return supports_tool_calling(tokenizer) and tool_calls.renders_tools(ChatTokens(tokenizer))
    except TemplateError:
        return False


def is_chatml(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether the tokenizer's template writes ChatML turns with its own single
    `<|im_start|>` and `<|im_end|>` tokens (SmolLM2, Qwen 2)."""
    if not tokenizer.chat_template:
        return False
    user = [{"role": "user", "content": "u"}]
    rendered = tokenizer.apply_chat_template(user, tokenize=False, add_generation_prompt=True)
    single = all(len(tokenizer.encode(t, add_special_tokens=False)) == 1 for t in CHATML_TOKENS)
    return single and rendered.endswith(CHATML_TURN)


def with_tools_template(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Give `tokenizer` a chat template that renders tools: its own when it does (False),
    else TRL's Qwen 2.5 template for a ChatML model (True); `models.ModelError` for
    another template."""
    if renders_tools(tokenizer):
        return False
    if not is_chatml(tokenizer):
        raise models.ModelError(
            "its chat template renders no tools and is not ChatML, so TRL's Qwen 2.5 "
            "template does not fit it; give a model whose chat template renders tools"
        )
    tokenizer.chat_template = tools_template()
    return True


def save_model(model: str, out: Path, *, tools: bool = False) -> str:
    """Write `model` ('local' or a model directory) to `out` as a transformers directory,
    its training record too; with `tools`, with a chat template that renders tools
    (`with_tools_template`). Returns what chat template it has, in words."""
    if model != models.LOCAL and not models.is_model_dir(model):
        raise models.ModelError(
            f"--model {model}: not 'local' nor a transformers model directory (a folder "
            "with config.json); give 'local' or a model directory"
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise models.ModelError(f"--out {out} is not an empty folder; give a new one")
    loaded, tokenizer = models.load(model)
    template = "its own"
    if tools:
        try:
            replaced = with_tools_template(tokenizer)
        except models.ModelError as exc:
            raise models.ModelError(f"--model {model}: {exc}") from None
        template = "TRL's Qwen 2.5 (renders tools)" if replaced else "its own (renders tools)"
    record: dict[str, Any] | None = None if model == models.LOCAL else models.read_record(model)
    models.save(loaded, tokenizer, out, record)
    return template


def tools_refusal(model: str, *, whole_conversation: bool = False) -> str | None:
    """Why `model` ('local' or a model directory) cannot be played or trained in tools
    mode, with what to do: its chat template renders no tools (what the checkpoint server
    refuses; with `whole_conversation`, nor a call and its answer, as TRL requires).
    None when it renders them, or when its tokenizer does not load (loading the model
    says why)."""
    if model != models.LOCAL:  # SmolLM2's ChatML renders no tools
        try:
            tokenizer = AutoTokenizer.from_pretrained(model)
        except (OSError, ValueError):
            return None
        try:
            chat = ChatTokens(tokenizer)
            if tool_calls.renders_tools(chat) and (
                not whole_conversation or renders_tools(tokenizer)
            ):
                return None
        except TemplateError:
            pass
    fixed = "models/smollm2-tools" if model == models.LOCAL else f"{model.rstrip('/')}-tools"
    command = SAVE_COMMAND.format(model=model, out=fixed)
    return (
        f"the chat template of {model} renders no tools; write the model with one that "
        f"does: {command}, then give --model {fixed}"
    )
