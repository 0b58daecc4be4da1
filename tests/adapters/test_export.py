"""`textenvs export`: chat-format records that `datasets` loads, with the filters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import textenvs
from benchmarks.support.openai_server import OpenAIServer
from tests.adapters.conftest import textenvs_eval
from textenvs.cli import main
from textenvs.evals.store import read_episodes
from textenvs.prompts import system_prompt

datasets = pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scripted") / "run"
    assert main(["eval", "--env", "treasure-hunt,em-anomaly", "--agent", "scripted",
                 "--seeds", "0-9", "--out", str(out)]) == 0  # fmt: skip
    return out


def test_hf_export_loads_with_every_field(scripted_run: Path, tmp_path: Path) -> None:
    records = read_episodes(scripted_run)
    assert main(["export", str(scripted_run), "--format", "hf", "--out", str(tmp_path / "hf")]) == 0
    data = datasets.load_from_disk(str(tmp_path / "hf"))
    assert isinstance(data, datasets.DatasetDict) and set(data) == {"train", "eval"}
    # The default split rule: every tenth seed is held out, across every scenario.
    assert sorted(set(data["eval"]["seed"])) == [0] and len(data["eval"]) == 2
    assert sorted(set(data["train"]["seed"])) == list(range(1, 10))
    assert len(data["train"]) + len(data["eval"]) == len(records) == 20
    by_key = {(r["env"], r["seed"]): r for r in records}
    for row in [*data["train"], *data["eval"]]:
        record = by_key[(row["env"], row["seed"])]
        assert (row["outcome"], row["success"], row["return"], row["steps"]) == (
            record["outcome"], record["success"], record["return"], record["steps"],
        )  # fmt: skip
        roles = [m["role"] for m in row["messages"]]
        assert roles == ["system"] + ["user", "assistant"] * row["steps"]
        assert len(row["rewards"]) == len(row["parse_ok"]) == len(row["commands"]) == row["steps"]
        assert sum(row["rewards"]) == pytest.approx(row["return"])
        assert row["messages"][-1]["content"] == row["commands"][-1]  # scripted: no raw reply
        # GRPO-style prompt: the rules and the first observation, nothing played yet.
        assert row["prompt"] == row["messages"][:2]
        assert row["prompt"][0]["content"] == system_prompt(row["env"])
        first, _ = textenvs.make(row["env"]).reset(seed=row["seed"])
        assert row["prompt"][1] == {"role": "user", "content": first}
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "seed % 10 == 0" in card and "| treasure-hunt | 9 | 1 |" in card


def test_jsonl_splits_by_the_given_seeds_and_loads_through_its_card(
    scripted_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "chat"
    assert main(["export", str(scripted_run), "--format", "jsonl-chat", "--eval-seeds", "7-9",
                 "--out", str(out)]) == 0  # fmt: skip
    data = datasets.load_dataset(
        str(out), cache_dir=str(tmp_path / "cache")
    )  # the card's configs name the split files
    assert sorted(set(data["eval"]["seed"])) == [7, 8, 9] and len(data["train"]) == 14
    assert "seeds 7, 8, 9" in (out / "README.md").read_text()
    assert main(["export", str(scripted_run), "--format", "hf", "--eval-seeds", "none",
                 "--out", str(tmp_path / "all")]) == 0  # fmt: skip
    data = datasets.load_from_disk(str(tmp_path / "all"))
    assert len(data["train"]) == 20 and len(data["eval"]) == 0
    assert data["eval"].features == data["train"].features


def test_jsonl_filters_success_and_agent(scripted_run: Path, tmp_path: Path) -> None:
    successes = sum(r["success"] for r in read_episodes(scripted_run))
    assert 0 < successes < 20
    out = tmp_path / "chat"
    both = ["--env", "em-anomaly", "--env", "TreasureHunt"]
    assert main(["export", str(scripted_run), "--format", "jsonl-chat", "--only-success",
                 *both, "--out", str(out)]) == 0  # fmt: skip
    data = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "cache"))
    assert sum(len(split) for split in data.values()) == successes
    assert all(success for split in data.values() for success in split["success"])
    assert main(["export", str(scripted_run), "--format", "jsonl-chat", "--env", "em-anomaly",
                 "--out", str(out)]) == 0  # fmt: skip
    rows = [
        json.loads(line) for split in ("train", "eval") for line in (out / f"{split}.jsonl").open()
    ]
    assert {row["env"] for row in rows} == {"em-anomaly"}
    # the agent filter: nothing of 'llm' in a scripted run
    assert main(["export", str(scripted_run), "--format", "jsonl-chat", "--agent", "llm",
                 "--out", str(tmp_path / "none")]) == 2  # fmt: skip


def test_llm_run_exports_the_replies_and_parse_status(
    model_server: OpenAIServer, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    records = textenvs_eval(model_server, run, "em-anomaly", "0-3", "--reasks", "0")
    out = tmp_path / "chat"
    assert main(["export", str(run), "--format", "jsonl-chat", "--agent", "test-model",
                 "--eval-seeds", "none", "--out", str(out)]) == 0  # fmt: skip
    rows = [json.loads(line) for line in (out / "train.jsonl").open()]
    assert len(rows) == len(records) == 4
    system = model_server.requests[0].messages[0]["content"]
    for row in rows:
        assert row["messages"][0] == {"role": "system", "content": system}
        assert row["prompt"] == row["messages"][:2]  # the rules the model had, its first turn
        assert (
            row["parse_ok"].count(False) == records[("em-anomaly", row["seed"])]["invalid_actions"]
        )
        for ok, error in zip(row["parse_ok"], row["parse_errors"], strict=True):
            assert ok == (error is None)
    assert any(False in row["parse_ok"] for row in rows)


def test_bad_input_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(tmp_path), "--format", "jsonl-chat"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("textenvs export: error:") and "not an eval run" in err
    assert err.count("\n") == 1
    assert main(["export", str(tmp_path), "--format", "hf", "--eval-seeds", "x"]) == 2
    assert "bad seed range" in capsys.readouterr().err


def test_default_out_is_its_own_folder_not_the_run(
    scripted_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = sorted(p.relative_to(scripted_run) for p in scripted_run.rglob("*"))
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(scripted_run), "--format", "jsonl-chat"]) == 0
    out = tmp_path / "exports" / "run-jsonl-chat"
    assert (out / "train.jsonl").is_file() and (out / "README.md").is_file()
    assert sorted(p.relative_to(scripted_run) for p in scripted_run.rglob("*")) == before
