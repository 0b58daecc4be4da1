"""A TRL user's first hour, offline: the model as a transformers folder whose chat template
renders tools (`textenvs save-model --tools-template`), a supervised warm start whose
replies are calls of `act` (`textenvs train --method sft --action-mode tools`), and the
record of a TRL-trained checkpoint's seeds that makes `textenvs eval` refuse them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from openai.types.chat import ChatCompletionMessage
from safetensors.torch import load_file
from transformers import AutoTokenizer
from trl.chat_template_utils import (
    add_response_schema,
    parse_response,
    qwen2_5_chat_template,
    supports_tool_calling,
)

import textenvs
from benchmarks.support.tiny_model import act_call
from textenvs.agents.llm.agent import act_tool
from textenvs.agents.llm.conversation import Conversation
from textenvs.agents.llm.reading import read_message
from textenvs.cli import main
from textenvs.episodes.loop import context_for
from textenvs.episodes.specs import EpisodeSpec
from textenvs.inference import models, tool_calls
from textenvs.inference.chat import ChatTokens
from textenvs.training.demonstrations import IGNORED, demonstrate
from textenvs.training.settings import TrainSettings
from textenvs.training.trainers import run_conversation


@pytest.fixture(scope="module")
def tools_dir(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny ChatML model written by `textenvs save-model --tools-template`."""
    out = tmp_path_factory.mktemp("tools") / "model"
    assert (
        main(["save-model", "--model", str(tiny_dir), "--out", str(out), "--tools-template"]) == 0
    )
    return out


def test_save_model_gives_a_chatml_model_a_template_that_renders_tools(tiny_dir, tools_dir, capsys):
    before = AutoTokenizer.from_pretrained(tiny_dir)
    assert not supports_tool_calling(before)
    assert not tool_calls.renders_tools(ChatTokens(before))
    tokenizer = AutoTokenizer.from_pretrained(tools_dir)
    # TRL's own Qwen 2.5 template, byte for byte: TRL parses the calls with it
    assert tokenizer.chat_template == qwen2_5_chat_template
    assert supports_tool_calling(tokenizer)
    chat = ChatTokens(tokenizer)
    assert tool_calls.renders_tools(chat)
    user = [{"role": "user", "content": "Where now?"}]
    tool = act_tool(context_for(textenvs.make("treasure-hunt"), 0))
    shown = tokenizer.apply_chat_template(user, tools=[tool], tokenize=False)
    assert json.dumps(tool) in shown and "<tool_call>" in shown
    # the same weights, and a model that loads as any directory
    weights = load_file(tiny_dir / "model.safetensors")
    saved = load_file(tools_dir / "model.safetensors")
    assert weights.keys() == saved.keys() and all(weights[k].equal(saved[k]) for k in weights)
    models.load(str(tools_dir))
    # nothing is written over
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["save-model", "--model", str(tiny_dir), "--out", str(tools_dir)])
    assert capsys.readouterr().err == (
        f"textenvs save-model: error: --out {tools_dir} is not an empty folder; give a new one\n"
    )


def _replies(ids: list[int], labels: list[int]) -> list[tuple[int, int]]:
    """The (start, end) of each run of trained tokens."""
    runs, start = [], None
    for i, label in enumerate([*labels, IGNORED]):
        if label != IGNORED and start is None:
            start = i
        elif label == IGNORED and start is not None:
            runs.append((start, i))
            start = None
    return runs


def test_a_tools_demonstration_trains_exactly_the_calls_of_act_and_they_read_back(tools_dir):
    tokenizer = AutoTokenizer.from_pretrained(tools_dir)
    chat = ChatTokens(tokenizer)
    settings = TrainSettings(
        env="treasure-hunt", model=str(tools_dir), steps=1, seeds=[3], eval_seeds=[0],
        action_mode="tools",
    )  # fmt: skip
    conversation_settings = run_conversation(settings, 7000)
    spec = EpisodeSpec("treasure-hunt", 3)
    shown = demonstrate(spec, "scripted", textenvs.make, conversation_settings, chat)
    commands = [turn.command for turn in shown.result.turns]
    (sequence,) = shown.sequences  # the conversation only grows: one sequence
    # the tokens trained on are exactly the calls, as TRL's tool-calling model writes them
    runs = _replies(sequence.ids, sequence.labels)
    replies = [chat.decode(sequence.ids[a:b]) for a, b in runs]
    assert replies == [act_call(command) + "<|im_end|>" for command in commands]
    # TRL's loop parses each reply (after the prompt before it) as the call of act(command)
    add_response_schema(tokenizer)
    context = context_for(textenvs.make("treasure-hunt"), 3)
    for (start, end), command in zip(runs, commands, strict=True):
        parsed = parse_response(tokenizer, sequence.ids[start:end], prefix=sequence.ids[:start])
        (call,) = parsed["tool_calls"]
        assert call["function"] == {"name": "act", "arguments": {"command": command}}
        # and eval reads it back: the checkpoint server's tool calls, the agent's reader
        written = chat.decode(sequence.ids[start : end - 1])  # without the stop token
        message, reason = tool_calls.reply_message(written, "stop", [act_tool(context)])
        sent = ChatCompletionMessage.model_validate(message)
        reading = read_message(
            sent.content or "", "tools", context, calls=sent.tool_calls, finish_reason=reason
        )
        assert reading.command == command
    # the whole sequence is the conversation eval's agent holds in tools mode, rendered
    # with its tool as the checkpoint server renders a request
    env = textenvs.make("treasure-hunt")
    observation, info = env.reset(seed=3)
    conversation = Conversation.for_context(context_for(env, 3), conversation_settings)
    for number, command in enumerate(commands):
        conversation.observe(observation, info)
        arguments = json.dumps({"command": command})
        function = {"name": "act", "arguments": arguments}
        call = {"id": f"call_{number}", "type": "function", "function": function}
        sent = ChatCompletionMessage.model_validate({"role": "assistant", "tool_calls": [call]})
        reading = read_message("", "tools", conversation.context, calls=sent.tool_calls)
        observation, _, _, _, info = env.step(conversation.take(reading))
    # up to the last call (its answer follows no reply)
    messages = tool_calls.template_messages(conversation.transcript[:-1])
    assert messages[-1]["tool_calls"]
    rendered = chat.render(messages, reply_next=False, tools=[act_tool(conversation.context)])
    text = chat.decode(sequence.ids)
    assert rendered.startswith(text) and chat.reply_closer.endswith(rendered[len(text) :])


@pytest.mark.slow
def test_one_sft_step_in_tools_mode_writes_a_checkpoint_that_plays_in_tools_mode(
    tools_dir, tmp_path, capsys
):
    out = tmp_path / "sft"
    argv = ["train", "--method", "sft", "--action-mode", "tools", "--env", "treasure-hunt",
            "--model", str(tools_dir), "--steps", "1", "--seeds", "1000", "--seeds-per-step",
            "1", "--learning-rate", "3e-3", "--out", str(out)]  # fmt: skip
    # the tiny tokenizer writes a call in 56 tokens: more than the default reply limit
    with pytest.raises(SystemExit):
        main(argv)
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("textenvs train: error: --max-tokens 32: a demonstrated tool call is")
    assert err.endswith("eval would cut the checkpoint's calls there; give --max-tokens 64 or more")
    # the failed run left its settings behind: the same --out again says what to do
    with pytest.raises(SystemExit):
        main([*argv, "--max-tokens", "64"])
    err = capsys.readouterr().err.strip()
    assert err == (
        f"textenvs train: error: --out {out} holds a run stopped before its first "
        "checkpoint; remove the folder or give another --out (--resume starts it over "
        "with its settings)"
    )
    shutil.rmtree(out)
    assert main([*argv, "--max-tokens", "64"]) == 0
    err = capsys.readouterr().err
    assert "1 demonstrations" in err and "step 1/1  loss" in err
    record = models.read_record(out / "final")
    assert record["method"] == "sft" and record["action_mode"] == "tools"
    assert record["max_tokens"] == 64
    # eval plays the checkpoint, and its base, in tools mode with the calls' room
    play = "textenvs eval --env treasure-hunt --agent llm --action-mode tools --temperature 0"
    assert f"{play} --max-tokens 64 --reasks 0 --model {out}/final --seeds 0-4" in err
    tokenizer = AutoTokenizer.from_pretrained(out / "final")
    assert tokenizer.chat_template == qwen2_5_chat_template


def test_tools_mode_is_refused_where_it_cannot_train(tiny_dir, tools_dir, tmp_path, capsys):
    base = ["train", "--env", "treasure-hunt", "--steps", "1", "--out", str(tmp_path / "x"),
            "--action-mode", "tools"]  # fmt: skip
    with pytest.raises(SystemExit):
        main([*base, "--method", "sft", "--model", str(tiny_dir)])
    assert capsys.readouterr().err == (
        f"textenvs train: error: --action-mode tools: the chat template of {tiny_dir} renders "
        f"no tools; write the model with one that does: textenvs save-model --model "
        f"{tiny_dir} --out {tiny_dir}-tools --tools-template, then give --model "
        f"{tiny_dir}-tools\n"
    )
    with pytest.raises(SystemExit):
        main([*base, "--model", str(tools_dir)])
    assert "--action-mode tools: this GRPO samples text or json replies" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_the_record_of_a_trl_checkpoint_makes_eval_refuse_its_seeds(
    tool_caller_dir, tmp_path, capsys
):
    from textenvs.adapters.trl import episode_datasets, write_training_record

    warm = tmp_path / "warm"  # the warm start it began from, trained on 1000-1001
    warm.mkdir()
    models.write_record(warm, {"seeds": "1000-1001", "eval_seeds": "0-99"})
    checkpoint = tmp_path / "trl-final"
    shutil.copytree(tool_caller_dir, checkpoint)
    data = episode_datasets("treasure-hunt", "0-3", "100-101")
    path = write_training_record(checkpoint, data, base=warm, reward="headline")
    assert path == checkpoint / "textenvs-training.json"
    record = models.read_record(checkpoint)
    assert record["seeds"] == "0-3" and record["eval_seeds"] == "100-101"
    assert models.trained_seeds(record) == [0, 1, 2, 3, 1000, 1001]
    for seeds, shown in (("2", "2"), ("1000-1005", "1000, 1001")):
        run = tmp_path / f"run-{seeds}"
        argv = ["eval", "--env", "treasure-hunt", "--agent", "llm", "--model", str(checkpoint),
                "--seeds", seeds, "--out", str(run)]  # fmt: skip
        with pytest.raises(SystemExit) as caught:
            main(argv)
        assert caught.value.code == 2 and not run.exists()
        assert capsys.readouterr().err == (
            f"textenvs eval: error: seeds {shown}: {checkpoint} was trained on them; evaluate "
            "it on held-out seeds (its textenvs-training.json lists both)\n"
        )


@pytest.mark.slow
def test_a_recorded_trl_checkpoint_plays_in_tools_mode_as_it_trained(tool_caller_dir, tmp_path):
    from textenvs.adapters.trl import episode_datasets, write_training_record

    checkpoint = tmp_path / "trl-final"
    shutil.copytree(tool_caller_dir, checkpoint)
    write_training_record(checkpoint, episode_datasets("treasure-hunt", "0-3", "100-101"))
    run = tmp_path / "after"
    code = main(
        ["eval", "--env", "treasure-hunt", "--agent", "llm", "--model", str(checkpoint),
         "--seeds", "100", "--out", str(run), "--max-invalid", "3", "--temperature", "0"]
    )  # fmt: skip
    assert code == 0
    agent = json.loads((run / "config.json").read_text())["agent"]
    assert agent["action_mode"] == "tools" and agent["reasks"] == 0
    (record,) = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert record["steps"] >= 1


@pytest.mark.slow
def test_the_offline_trl_example_runs_from_the_warm_start_to_eval(tools_dir, tmp_path, monkeypatch):
    """The offline example of docs/adapters.md ("TRL"), its sizes cut to a tiny model:
    the warm start, GRPOTrainer(environment_factory=...) from it, the record, eval."""
    from trl import GRPOConfig, GRPOTrainer

    from textenvs.adapters.trl import EnvironmentFactory, episode_datasets, write_training_record

    warm = tmp_path / "warm"
    assert main(
        ["train", "--method", "sft", "--action-mode", "tools", "--env", "treasure-hunt",
         "--model", str(tools_dir), "--steps", "1", "--seeds", "1000", "--seeds-per-step",
         "1", "--max-tokens", "64", "--out", str(warm)]
    ) == 0  # fmt: skip
    monkeypatch.setitem(os.environ, "TRL_EXPERIMENTAL_SILENCE", "1")
    data = episode_datasets("treasure-hunt", seeds="2000-2001", eval_seeds="0-99")
    args = GRPOConfig(
        output_dir=str(tmp_path / "trl"), max_steps=1, num_generations=2,
        per_device_train_batch_size=2, gradient_accumulation_steps=2,
        max_completion_length=160, max_tool_calling_iterations=2, learning_rate=1e-5,
        beta=0.0, use_cpu=True, bf16=False, logging_steps=1, save_strategy="no",
        report_to="none", disable_tqdm=True,
    )  # fmt: skip
    with EnvironmentFactory(reward="headline") as environments:
        trainer = GRPOTrainer(
            model=str(warm / "final"),
            args=args,
            train_dataset=data["train"],
            environment_factory=environments,
        )
        trainer.train()
    (logs, *_) = trainer.state.log_history
    assert {"tools/call_frequency", "frac_reward_zero_std"} <= set(logs)
    final = tmp_path / "trl" / "final"
    trainer.save_model(str(final))
    write_training_record(final, data, base=warm / "final", reward="headline")
    assert AutoTokenizer.from_pretrained(final).chat_template == qwen2_5_chat_template
    assert models.trained_seeds(models.read_record(final)) == [1000, 2000, 2001]
    run = tmp_path / "after"
    code = main(
        ["eval", "--env", "treasure-hunt", "--agent", "llm", "--model", str(final),
         "--seeds", "0", "--out", str(run), "--max-invalid", "2", "--max-tokens", "64",
         "--temperature", "0"]
    )  # fmt: skip
    assert code == 0
    agent = json.loads((run / "config.json").read_text())["agent"]
    assert agent["action_mode"] == "tools" and agent["reasks"] == 0
