"""`textenvs train --method sft`: an agent's episodes written as the model's own
conversation, and a real SFT run with TRL on a tiny model that makes them more likely."""

from __future__ import annotations

import asyncio

import pytest
import torch
from transformers import TrainerState

import textenvs
from textenvs.agents import make_agent
from textenvs.agents.llm.conversation import Conversation, conversation_settings
from textenvs.cli import main
from textenvs.episodes.loop import context_for, run_episode
from textenvs.episodes.specs import EpisodeSpec
from textenvs.inference import models
from textenvs.inference.chat import ChatTokens
from textenvs.training import curve
from textenvs.training.demonstrations import IGNORED, demonstrate, reply_for
from textenvs.training.settings import DEFAULTS
from textenvs.training.sft import LossWriter

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
    (sequence,) = shown.sequences  # the conversation only grows: one sequence
    text = chat.decode(sequence.ids)
    assert rendered.startswith(text) and chat.reply_closer.endswith(rendered[len(text) :])
    trained = [t for t, lab in zip(sequence.ids, sequence.labels, strict=True) if lab != IGNORED]
    assert chat.decode(trained) == "".join(
        reply_for(t.command) + "<|im_end|>" for t in played.turns
    )


def test_a_windowed_conversation_is_one_sequence_a_turn_each_the_prompt_eval_sends(tiny):
    _, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    settings = conversation_settings(prompt_budget=7000, history=0)
    shown = demonstrate(EpisodeSpec("em-anomaly", 3), "reactive", textenvs.make, settings, chat)
    env = textenvs.make("em-anomaly")
    observation, info = env.reset(seed=3)
    conversation = Conversation.for_context(context_for(env, 3), settings)
    assert len(shown.sequences) == len(shown.result.turns) > 1
    for turn, sequence in zip(shown.result.turns, shown.sequences, strict=True):
        conversation.observe(observation, info)
        prompt = chat.render(conversation.request(), reply_next=True)
        reply = reply_for(turn.command)
        assert chat.decode(sequence.ids) == prompt + reply + "<|im_end|>"
        trained = [t for t, lab in zip(sequence.ids, sequence.labels, strict=True) if lab >= 0]
        assert chat.decode(trained) == reply + "<|im_end|>"
        observation, _, _, _, info = env.step(conversation.read(reply))


def test_the_shared_prefix_loss_is_the_whole_sequence_loss(tiny, tmp_path):
    """Feeding the rules prompt once (its cache copied to every sequence) scores each
    sequence exactly as feeding it whole."""
    from datasets import Dataset

    from textenvs.training.sft import SharedPrefixTrainer, shared_prefix

    model, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    settings = conversation_settings(prompt_budget=7000, history=0)
    shown = demonstrate(EpisodeSpec("em-anomaly", 4), "reactive", textenvs.make, settings, chat)
    rows = shown.sequences[:3]
    dataset = Dataset.from_dict(
        {"input_ids": [r.ids for r in rows], "labels": [r.labels for r in rows]}
    )
    prefix = shared_prefix(dataset)
    assert len(prefix) > 100 and all(r.ids[: len(prefix)] == prefix for r in rows)
    assert all(r.labels[len(prefix)] == IGNORED for r in rows)
    from trl import SFTConfig

    trainer = SharedPrefixTrainer(
        model=model,
        args=SFTConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], max_length=None),
        train_dataset=dataset,
        processing_class=tokenizer,
        prefix=prefix,
    )
    for row in rows:
        inputs = {"input_ids": torch.tensor([row.ids]), "labels": torch.tensor([row.labels])}
        with torch.no_grad():
            split = float(trainer.compute_loss(model, inputs))
            whole = float(model(**inputs).loss)
        assert split == pytest.approx(whole, rel=1e-4)


def _reply_loss(model_dir, demonstration) -> float:
    model, _ = models.load(str(model_dir))
    (sequence,) = demonstration.sequences
    ids = torch.tensor([sequence.ids])
    labels = torch.tensor([sequence.labels])
    with torch.no_grad():
        return float(model(input_ids=ids, labels=labels).loss)


@pytest.mark.slow
def test_sft_steps_make_the_demonstrations_more_likely(tiny_dir, tiny, tmp_path, capsys):
    out = tmp_path / "sft"
    code = main(
        ["train", "--method", "sft", "--env", "treasure-hunt", "--model", str(tiny_dir),
         "--steps", "4", "--seeds", "1000-1001", "--seeds-per-step", "1",
         "--learning-rate", "3e-3", "--save-every", "2", "--eval-seeds", "0-99,30000-30199",
         "--out", str(out)]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    err = captured.err
    assert "2 demonstrations" in err
    assert "step 4/4  loss" in err  # not a terminal: a line a step
    rows = curve.read(out)  # and a row a step in the run folder, kept after the stop
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert all(r["loss"] is not None and r["step_s"] > 0 for r in rows)
    assert f"curve in {out}/curve.csv" in captured.out
    # the evaluation it suggests cuts the taught few-token replies there, asks nothing again
    quick = "textenvs eval --env treasure-hunt --agent llm --temperature 0 --max-tokens 8"
    assert f"{quick} --reasks 0 --model {out}/final --seeds 0-4 --out runs/sft-try" in err
    # a later held-out range may be the final one: it is named, not suggested
    assert f"--model {out}/final --seeds 0-99 --out runs/sft-after" in err
    assert "other seeds, 30000-30199, are left" in " ".join(err.split())
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


def test_the_suggested_evaluations_play_the_scenario_options_it_was_trained_on(
    tiny_dir, tmp_path, capsys
):
    out = tmp_path / "mf"
    code = main(
        ["train", "--method", "sft", "--env", "magnetic-field", "--env-option", "level=0",
         "--model", str(tiny_dir), "--steps", "1", "--seeds", "1000-1000",
         "--seeds-per-step", "1", "--out", str(out)]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    evaluations = [line for line in capsys.readouterr().err.splitlines() if "textenvs eval" in line]
    assert len(evaluations) == 3  # the try, 'after' and 'before'
    for line in evaluations:  # at the default level they would be other episodes
        assert "--env magnetic-field --env-option level=0 --agent llm" in line
    # played without it anyway, the evaluation says so in one line
    play = ["eval", "--env", "magnetic-field", "--agent", "llm", "--model", str(out / "final"),
            "--seeds", "40000", "--max-tokens", "2", "--reasks", "0",
            "--max-invalid", "1"]  # fmt: skip
    note = f"note: {out / 'final'} was trained on magnetic-field with --env-option level=0; "
    assert main([*play, "--out", str(tmp_path / "default")]) == 0
    assert note + "this run plays its default options" in capsys.readouterr().err
    assert main([*play, "--env-option", "level=0", "--out", str(tmp_path / "same")]) == 0
    assert "was trained on" not in capsys.readouterr().err


def test_sft_refuses_json_mode_and_agents_that_cannot_demonstrate(tiny_dir, tmp_path, capsys):
    base = ["train", "--method", "sft", "--env", "treasure-hunt", "--model", str(tiny_dir),
            "--steps", "1", "--out", str(tmp_path / "x")]  # fmt: skip
    with pytest.raises(SystemExit) as caught:
        main([*base, "--action-mode", "json"])
    assert caught.value.code != 0
    assert "--method sft writes demonstrations as text replies" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--demonstrations", "llm"])
    assert (
        "--demonstrations llm: one of scripted, reactive, learner, random"
        in capsys.readouterr().err
    )
    assert not (tmp_path / "x").exists()


def test_grpo_refuses_a_windowed_conversation(tiny_dir, tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["train", "--env", "treasure-hunt", "--model", str(tiny_dir), "--steps", "1",
              "--history", "0", "--out", str(tmp_path / "x")])  # fmt: skip
    assert caught.value.code != 0
    assert "--history: GRPO trains each episode as one growing conversation" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "x").exists()


def test_habit_share_trains_the_turns_that_change_the_command_and_a_share_of_the_rest(tiny):
    _, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    settings = conversation_settings(prompt_budget=7000, history=0)
    spec = EpisodeSpec("em-anomaly", 5)
    every = demonstrate(spec, "reactive", textenvs.make, settings, chat)
    decisive = demonstrate(spec, "reactive", textenvs.make, settings, chat, habit_share=1e-9)
    commands = [turn.command for turn in every.result.turns]
    changes = [i for i, c in enumerate(commands) if i == 0 or c != commands[i - 1]]
    assert len(every.sequences) == len(commands) > len(changes) == len(decisive.sequences)
    kept = {chat.decode(s.ids) for s in decisive.sequences}
    assert kept == {chat.decode(every.sequences[i].ids) for i in changes}
    half = demonstrate(spec, "reactive", textenvs.make, settings, chat, habit_share=0.5)
    assert len(changes) < len(half.sequences) < len(commands)
    again = demonstrate(spec, "reactive", textenvs.make, settings, chat, habit_share=0.5)
    assert [s.ids for s in again.sequences] == [s.ids for s in half.sequences]


def _answers(spec, turns):
    """The reactive agent's answer to each state the episode's commands lead through."""
    from textenvs.agents.scripted.reactive import em_anomaly

    env = textenvs.make(spec.env)
    _, info = env.reset(seed=spec.seed)
    answers = []
    for turn in turns:
        answers.append(em_anomaly(info["observation"]))
        info = env.step(turn.command)[4]
    return answers


def _trained_replies(chat, sequences):
    return [
        chat.decode([t for t, lab in zip(s.ids, s.labels, strict=True) if lab >= 0])
        for s in sequences
    ]


def test_demonstration_noise_plays_random_turns_and_trains_the_agent_answer_on_each(tiny):
    _, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    settings = conversation_settings(prompt_budget=7000, history=0)
    spec = EpisodeSpec("em-anomaly", 6)
    noisy = demonstrate(spec, "reactive", textenvs.make, settings, chat, noise=0.4)
    again = demonstrate(spec, "reactive", textenvs.make, settings, chat, noise=0.4)
    assert [s.ids for s in again.sequences] == [s.ids for s in noisy.sequences]
    answers = _answers(spec, noisy.result.turns)
    played = [turn.command for turn in noisy.result.turns]
    assert sum(a != c for a, c in zip(answers, played, strict=True)) >= 3  # random turns
    # one sequence a turn, each trained on the agent's answer, not the command played
    replies = _trained_replies(chat, noisy.sequences)
    assert replies == [reply_for(answer) + "<|im_end|>" for answer in answers]


def test_a_random_turn_ends_a_growing_sequence_and_the_next_goes_on_with_the_command_played(
    tiny,
):
    _, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    spec = EpisodeSpec("em-anomaly", 6)
    noisy = demonstrate(spec, "reactive", textenvs.make, SETTINGS, chat, noise=0.4)
    answers = _answers(spec, noisy.result.turns)
    played = [turn.command for turn in noisy.result.turns]
    branches = [i for i, (a, c) in enumerate(zip(answers, played, strict=True)) if a != c]
    assert len(noisy.sequences) == 1 + len([i for i in branches if i < len(played) - 1])
    assert "".join(_trained_replies(chat, noisy.sequences)) == "".join(
        reply_for(answer) + "<|im_end|>" for answer in answers
    )
    # the sequence after a random turn shows the command played there, untrained
    second = chat.decode(noisy.sequences[1].ids)
    assert f"Action: {played[branches[0]]}<|im_end|>" in second


def test_each_sft_step_is_a_curve_row_and_a_resume_drops_the_later_ones(tmp_path):
    steps: list[dict] = []
    writer = LossWriter(DEFAULTS, tmp_path, steps.append)
    state = TrainerState()
    for step, loss in [(1, 1.5), (2, 0.5), (3, 0.25)]:
        state.global_step = step
        writer.on_step_begin(None, state, None)
        logs = {"loss": loss, "grad_norm": 2.0, "learning_rate": 1e-4, "kl": 0.01}
        writer.on_log(None, state, None, logs=logs)
    writer.on_log(None, state, None, logs={"train_runtime": 9.0})  # the run's summary: no row
    rows = curve.read(tmp_path)
    assert [(r["step"], r["loss"], r["kl"]) for r in rows] == [
        (1, 1.5, 0.01), (2, 0.5, 0.01), (3, 0.25, 0.01)
    ]  # fmt: skip
    assert all(r["step_s"] is not None for r in rows)
    assert steps[-1] == {"step": 3, "loss": 0.25, "kl": 0.01}  # the progress line's
    curve.keep_until(tmp_path, 2)  # resumed from checkpoint-2: step 3 is trained again
    assert [r["step"] for r in curve.read(tmp_path)] == [1, 2]
