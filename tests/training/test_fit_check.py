"""`benchmarks.fit_check` trains on real climbing turns of EM Anomaly, replayed in the
conversation `--history 0` trains on, with a tiny model made on the spot."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from benchmarks import fit_check
from benchmarks.support import tiny_model
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.inference import models
from textenvs.inference.chat import ChatTokens
from textenvs.training.demonstrations import IGNORED, reply_for


@pytest.fixture(scope="module")
def em_tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("em-tiny") / "model"
    return tiny_model.make(folder, "em-anomaly", ["north", "west"])


def test_the_turns_climb_as_often_towards_each_direction_and_train_its_reply(em_tiny):
    chat = ChatTokens(models.load(str(em_tiny))[1])
    conversation = conversation_settings("text", 0, prompt_budget=4000, reasks=0, history=0)
    turns = fit_check.climbing_turns(60_000, 2, conversation, chat)
    assert sorted(turn.state.answer for turn in turns) == sorted(fit_check.DIRECTIONS * 2)
    for turn in turns:
        prompt, sequence = turn.state.prompt, turn.sequence
        reply = [*chat.encode(reply_for(turn.state.answer)), chat.reply_stop()]
        assert sequence.ids == [*prompt, *reply]
        assert sequence.labels == [IGNORED] * len(prompt) + reply
        assert "scan" in chat.decode(prompt).lower()  # the observation comes before


def test_a_pass_lowers_the_trained_turns_cross_entropy(em_tiny, tmp_path, capsys):
    out = tmp_path / "fit.csv"
    argv = ["--model", str(em_tiny), "--turns", "4", "--passes", "2", "--out", str(out)]
    assert fit_check.main([*argv, "--learning-rate", "1e-2"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [(r["pass"], r["set"]) for r in rows] == [
        (str(n), name) for n in range(3) for name in ("trained", "held-out")
    ]
    trained = [float(r["nats"]) for r in rows if r["set"] == "trained"]
    assert trained[-1] < trained[0]
    for row in rows:
        assert 0 <= float(row["share"]) <= 1
    assert "pass   2" in capsys.readouterr().out


def test_no_pass_only_measures_the_model(em_tiny, tmp_path):
    out = tmp_path / "measured.csv"
    argv = ["--model", str(em_tiny), "--turns", "4", "--passes", "0", "--out", str(out)]
    assert fit_check.main(argv) == 0
    rows = list(csv.DictReader(out.open()))
    assert [(r["pass"], r["step"], r["set"]) for r in rows] == [
        ("0", "0", "trained"),
        ("0", "0", "held-out"),
    ]


def test_refuses_turns_that_do_not_split_between_the_directions(em_tiny, capsys):
    with pytest.raises(SystemExit):
        fit_check.main(["--model", str(em_tiny), "--turns", "6"])
    assert "multiples of 4" in capsys.readouterr().err
