"""A tiny chat model made offline, for training and serving tests and the GPU smoke.

A byte-level BPE tokenizer trained on the rules texts, with a ChatML template, and a
two-layer Llama at random initialisation, fine-tuned for a moment to answer every prompt
with `Action: <one of the replies>` in roughly equal shares. It plays real episodes (its
replies are read by the real parser) fast, and its episodes differ, so GRPO has
something to compare.

A model that answers with tool calls (`make(..., chat_template=..., answer=str,
window=N)`, replies written as the template's tool calls) attends to its last N tokens
only (a two-layer Mistral with sliding-window attention): learned on short prompts, a
long reply such as a tool call then comes out whole after prompts of any length (a
long-rules prompt with tool schemas too).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerFast,
)

from textenvs.prompts import system_prompt

CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def act_call(command: str) -> str:
    """A call of the `act(command)` tool (`textenvs.adapters.trl`) as Qwen's chat template,
    TRL's tool-calling ChatML, writes one."""
    arguments = json.dumps({"name": "act", "arguments": {"command": command}})
    return f"<tool_call>\n{arguments}\n</tool_call>"


def tokenizer(texts: list[str], chat_template: str = CHATML) -> PreTrainedTokenizerFast:
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
        unk_token="<|endoftext|>",
    )
    fast.chat_template = chat_template
    return fast


def make(
    folder: Path,
    env: str,
    replies: list[str],
    seed: int = 0,
    *,
    chat_template: str = CHATML,
    answer: Callable[[str], str] = "Action: {}".format,
    window: int | None = None,
) -> Path:
    """Write the tiny model for `env` into `folder`; it answers with one of `replies`,
    as `answer` writes it, attending to its last `window` tokens only when given."""
    import textenvs

    first = [textenvs.make(env).reset(seed=s)[0] for s in range(3)]
    tok = tokenizer([system_prompt(env), *first, *replies] * 3, chat_template)
    model = untrained(tok, seed, window)
    _answer_with(model, tok, first, [answer(reply) for reply in replies])
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def make_tool_caller(folder: Path, env: str, commands: list[str], seed: int = 0) -> Path:
    """Write a tiny model for `env` with Qwen 2.5's chat template as TRL ships it (tools
    rendered) that answers every prompt by calling `act(command)` with one of `commands`,
    as a model trained through `textenvs.adapters.trl` does."""
    from trl.chat_template_utils import qwen2_5_chat_template

    calls = [act_call(command) for command in commands]
    return make(folder, env, calls, seed, chat_template=qwen2_5_chat_template, answer=str,
                window=48)  # fmt: skip


def untrained(
    tok: PreTrainedTokenizerFast, seed: int = 0, window: int | None = None
) -> PreTrainedModel:
    """A two-layer Llama at random initialisation: what it writes depends on every token
    it reads, so a cache that lost or misplaced one shows. With a `window`, a Mistral of
    the same size whose attention reaches back that many tokens."""
    torch.manual_seed(seed)
    if window is not None:
        return MistralForCausalLM(MistralConfig(sliding_window=window, **_shape(tok))).eval()
    return LlamaForCausalLM(LlamaConfig(**_shape(tok))).eval()


def _shape(tok: PreTrainedTokenizerFast) -> dict[str, Any]:
    return dict(
        initializer_range=0.3,
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )


def _answer_with(
    model: PreTrainedModel,
    tok: PreTrainedTokenizerFast,
    observations: list[str],
    answers: list[str],
) -> None:
    """A few supervised steps on short prompts (a line of an observation): after the
    assistant's turn opens, one of `answers` and the end of the turn. The model only
    needs the last tokens to do that, so it does it after whole episodes' prompts too."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    lines = [line for text in observations for line in text.splitlines() if line.strip()]
    model.train()
    for step in range(150):
        user = {"role": "user", "content": lines[step % len(lines)]}
        prompt = tok.apply_chat_template([user], add_generation_prompt=True)
        prompt = prompt["input_ids"] if hasattr(prompt, "keys") else prompt
        answer = tok.encode(f"{answers[step % len(answers)]}<|im_end|>")
        ids = torch.tensor([prompt + answer])
        labels = torch.tensor([[-100] * len(prompt) + answer])
        model(input_ids=ids, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
