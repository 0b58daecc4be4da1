"""`textenvs train --method sft`: an agent's episodes written as the model's own
conversation, and a real SFT run with TRL on a tiny model that makes them more likely."""

from __future__ import annotations

import asyncio

import pytest
import torch

import textenvs
from textenvs.agents import make_agent
from textenvs.agents.llm.conversation import Conversation, conversation_settings
from textenvs.cli import main
from textenvs.episodes.loop import context_for, run_episode
from textenvs.episodes.specs import EpisodeSpec
from textenvs.inference import models
from textenvs.inference.chat import ChatTokens
from textenvs.training.demonstrations import IGNORED, demonstrate, reply_for

SETTINGS = conversation_settings(prompt_budget=7000)


@pytest.mark.parametrize("env", ["treasure-hunt", "em-anomaly"])
def test_a_demonstration_is_the_conversation_eval_holds_with_only_the_replies_trained(tiny, env):
    _, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    spec = EpisodeSpec(env, 3)
    shown = demonstrate(spec, "scripted", textenvs.make, SETTINGS, chat)
    played = asyncio.run(run_episode(textenvs.make(env), make_agent("scripted"), 3))
    assert [t.command for t in shown.result.turns] == [t.command for t in played.turns]
    assert shown.result.success == played.success
    # the tokens are the conversation as eval would send it, each reply as the rules teach
    env_ = textenvs.make(env)
    observation, info = env_.reset(seed=3)
    conversation = Conversation.for_context(context_for(env_, 3), SETTINGS)
    for turn in played.turns:
        conversation.observe(observation, info)
        command = conversation.read(reply_for(turn.command))
        observation, _, _, _, info = env_.step(command)
    rendered = chat.render(conversation.transcript, reply_next=False)
    text = chat.decode(shown.ids)
    assert rendered.startswith(text) and chat.reply_closer.endswith(rendered[len(text) :])
    trained = [t for t, label in zip(shown.ids, shown.labels, strict=True) if label != IGNORED]
    assert chat.decode(trained) == "".join(
        reply_for(t.command) + "<|im_end|>" for t in played.turns
    )


def _reply_loss(model_dir, demonstration) -> float:
    model, _ = models.load(str(model_dir))
    ids = torch.tensor([demonstration.ids])
    labels = torch.tensor([demonstration.labels])
    with torch.no_grad():
        return float(model(input_ids=ids, labels=labels).loss)


@pytest.mark.slow
def test_sft_steps_make_the_demonstrations_more_likely(tiny_dir, tiny, tmp_path, capsys):
    out = tmp_path / "sft"
    code = main(
        ["train", "--method", "sft", "--env", "treasure-hunt", "--model", str(tiny_dir),
         "--steps", "4", "--seeds", "1000-1001", "--seeds-per-step", "1",
         "--learning-rate", "3e-3", "--save-every", "2", "--out", str(out)]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert "2 demonstrations" in capsys.readouterr().err
    record = models.read_record(out / "final")
    assert record["method"] == "sft" and record["demonstrations"] == "scripted"
    # a checkpoint carries the run's settings, so eval plays it with the same reply limit
    (checkpoint,) = (out / "checkpoints").glob("checkpoint-*")
    assert models.read_record(checkpoint)["max_tokens"] == record["max_tokens"]
    _, tokenizer = tiny
    shown = demonstrate(
        EpisodeSpec("treasure-hunt", 1000),
        "scripted",
        textenvs.make,
        SETTINGS,
        ChatTokens(tokenizer),
    )
    assert _reply_loss(out / "final", shown) < _reply_loss(out / "base", shown)


def test_sft_refuses_json_mode_and_agents_that_cannot_demonstrate(tiny_dir, tmp_path, capsys):
    base = ["train", "--method", "sft", "--env", "treasure-hunt", "--model", str(tiny_dir),
            "--steps", "1", "--out", str(tmp_path / "x")]  # fmt: skip
    with pytest.raises(SystemExit) as caught:
        main([*base, "--action-mode", "json"])
    assert caught.value.code != 0
    assert "--method sft writes demonstrations as text replies" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--demonstrations", "llm"])
    assert "--demonstrations llm: one of scripted, learner, random" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
