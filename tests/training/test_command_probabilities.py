"""`benchmarks.command_probabilities` scores replies exactly, on real replayed prompts of
EM Anomaly and tiny models made on the spot."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from benchmarks import command_probabilities as probe
from benchmarks.support import tiny_model
from textenvs.cli import main as textenvs_main
from textenvs.inference import models
from textenvs.inference.chat import ChatTokens
from textenvs.training.demonstrations import recorded_episodes

BUDGET = 4000


@pytest.fixture(scope="module")
def reactive_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "reactive"
    argv = ["eval", "--env", "em-anomaly", "--agent", "reactive", "--seeds", "0-11"]
    assert textenvs_main([*argv, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def em_models(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two tiny EM Anomaly models of different weights."""
    folder = tmp_path_factory.mktemp("em-tiny")
    return [
        tiny_model.make(folder / f"model-{seed}", "em-anomaly", ["north", "west"], seed)
        for seed in (0, 1)
    ]


def states_at(
    run: Path, model_dir: Path, reason: str = "climb"
) -> tuple[list[probe.State], ChatTokens]:
    chat = ChatTokens(models.load(str(model_dir))[1])
    episodes, _ = recorded_episodes([run], probe.ENV)
    return probe.states_of(episodes, chat, BUDGET, reason), chat


def test_the_cached_scores_are_each_replys_log_probability_fed_whole(reactive_run, em_models):
    states, chat = states_at(reactive_run, em_models[0])
    assert states, "the reactive agent climbs on seeds 0-11 (8 times)"
    asked = [{"role": "user", "content": "u"}]
    generation = chat.render(asked, reply_next=True)[len(chat.render(asked, reply_next=False)) :]
    for state in states:
        assert chat.decode(state.prompt).endswith(generation)  # the reply comes next
        assert state.answer in probe.COMMANDS
    replies = [chat.encode(f"Action: {command}") for command in ("north", "rotate left")]
    model, _ = models.load(str(em_models[0]))
    scored = list(probe.reply_logprobs(model, states[:3], replies))
    for state, logprobs in zip(states[:3], scored, strict=True):
        for reply, logprob in zip(replies, logprobs, strict=True):
            ids = torch.tensor([state.prompt + reply])
            with torch.inference_mode():
                steps = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
            positions = range(len(state.prompt) - 1, len(state.prompt) + len(reply) - 1)
            whole = sum(steps[at, token].item() for at, token in zip(positions, reply, strict=True))
            assert logprob == pytest.approx(whole, abs=1e-4)  # float32 sums


def test_a_model_compared_with_itself_moved_nothing_and_with_another_something(
    reactive_run, em_models
):
    states, chat = states_at(reactive_run, em_models[0])
    model, other = (models.load(str(folder))[0] for folder in em_models)
    first, itself = probe.summaries([model, model], states, chat)
    assert first == itself
    assert itself.kl_from_first == 0
    assert 0 < first.answer_probability < first.mass_on_commands <= 1
    assert 0 <= first.likeliest <= len(states)
    assert sum(first.mean_shares) == pytest.approx(1)
    assert probe.summaries([model, other], states, chat)[1].kl_from_first > 0


def test_at_a_wall_the_bump_is_the_blocked_move_again(reactive_run, em_models):
    states, chat = states_at(reactive_run, em_models[0], "turn")
    assert states, "the reactive agent bumps on seeds 0-11"
    assert all(state.blocked in ("north", "south", "east", "west") for state in states)
    model = models.load(str(em_models[0]))[0]
    [summary] = probe.summaries([model], states, chat)
    shares = [
        [p / sum(ps) for p in ps]
        for ps in (
            [math.exp(value) for value in scored]
            for scored in probe.reply_logprobs(model, states, probe.command_replies(chat))
        )
    ]
    expected = [row[probe.COMMANDS.index(s.blocked)] for row, s in zip(shares, states, strict=True)]
    assert summary.bump_share == pytest.approx(sum(expected) / len(expected))


def test_the_command_prints_each_model_and_refuses_what_is_not_a_model(
    reactive_run, em_models, tmp_path, capsys
):
    names = f"{em_models[0]},{em_models[1]}"
    assert probe.main(["--models", names, "--limit", "4", str(reactive_run)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("4 climb states of 12 episodes")
    assert [line.split(":")[0] for line in out[1::2]] == [str(m) for m in em_models]
    assert out[2].startswith("  mean shares: north ")
    turn = ["--models", str(em_models[0]), "--reason", "turn", "--limit", "3", str(reactive_run)]
    assert probe.main(turn) == 0
    assert "; the blocked move again 0." in capsys.readouterr().out.splitlines()[2]
    with pytest.raises(SystemExit) as refused:
        probe.main(["--models", str(tmp_path), str(reactive_run)])
    assert refused.value.code == 2
    assert "not a model directory" in capsys.readouterr().err


def test_the_reading_gap_is_what_a_model_puts_on_a_command_where_it_is_the_answer_only():
    answers = [0, 0, 1, 2]
    blind = [[0.5, 0.3, 0.2]] * 4  # the same mix whatever the state says
    assert probe.reading_gap(blind, answers) == pytest.approx(0)
    reads = [[1.0 if c == a else 0.0 for c in range(3)] for a in answers]
    assert probe.reading_gap(reads, answers) == pytest.approx(1)
    # half-way: the answer's share 0.6 where it is the answer, 0.2 elsewhere
    half = [[0.6 if c == a else 0.2 for c in range(3)] for a in answers]
    assert probe.reading_gap(half, answers) == pytest.approx(0.4)
    assert probe.reading_gap(blind[:2], [1, 1]) is None
