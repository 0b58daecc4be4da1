"""`textenvs export`: chat-format records that `datasets` loads, with the filters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adapters.conftest import textenvs_eval
from tests.support.openai_server import OpenAIServer
from textenvs.cli import main
from textenvs.evals.store import read_episodes

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
    assert len(data) == len(records) == 20
    by_key = {(r["env"], r["seed"]): r for r in records}
    for row in data:
        record = by_key[(row["env"], row["seed"])]
        assert (row["outcome"], row["success"], row["return"], row["steps"]) == (
            record["outcome"], record["success"], record["return"], record["steps"],
        )  # fmt: skip
        roles = [m["role"] for m in row["messages"]]
        assert roles == ["system"] + ["user", "assistant"] * row["steps"]
        assert len(row["rewards"]) == len(row["parse_ok"]) == len(row["commands"]) == row["steps"]
        assert sum(row["rewards"]) == pytest.approx(row["return"])
        assert row["messages"][-1]["content"] == row["commands"][-1]  # scripted: no raw reply


def test_jsonl_filters_success_and_agent(scripted_run: Path, tmp_path: Path) -> None:
    successes = sum(r["success"] for r in read_episodes(scripted_run))
    assert 0 < successes < 20
    out = tmp_path / "chat"
    both = ["--env", "em-anomaly", "--env", "TreasureHunt"]
    assert main(["export", str(scripted_run), "--format", "jsonl-chat", "--only-success",
                 *both, "--out", str(out)]) == 0  # fmt: skip
    data = datasets.load_dataset("json", data_files=str(out / "train.jsonl"), split="train")
    assert len(data) == successes and all(data["success"])
    assert main(["export", str(scripted_run), "--format", "jsonl-chat", "--env", "em-anomaly",
                 "--out", str(out)]) == 0  # fmt: skip
    assert {json.loads(line)["env"] for line in (out / "train.jsonl").open()} == {"em-anomaly"}
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
                 "--out", str(out)]) == 0  # fmt: skip
    rows = [json.loads(line) for line in (out / "train.jsonl").open()]
    assert len(rows) == len(records) == 4
    system = model_server.requests[0].messages[0]["content"]
    for row in rows:
        assert row["messages"][0] == {"role": "system", "content": system}
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
