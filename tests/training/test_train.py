"""`textenvs train`: real GRPO steps with TRL on a tiny model, then the checkpoint played
by `textenvs eval` through the same agent and runner as any model."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time

import pytest
import torch
from safetensors.torch import load_file

from textenvs.cli import main
from textenvs.episodes.specs import parse_seeds
from textenvs.inference import models
from textenvs.training import curve

STEPS = ["--steps", "2", "--max-turns", "3", "--group-size", "4", "--seeds-per-step", "1"]
SMALL = ["--micro-batch", "2", "--max-tokens", "10", "--learning-rate", "1e-2"]


def train(tiny_dir, out, *extra: str) -> int:
    model = ["--env", "treasure-hunt", "--model", str(tiny_dir), "--out", str(out)]
    return main(
        ["train", *model, *STEPS, *SMALL, "--reward", "headline", "--save-every", "1", *extra]
    )


@pytest.fixture(scope="module")
def trained(tiny_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("train") / "run"
    assert train(tiny_dir, out) == 0
    return out


@pytest.mark.slow
def test_two_grpo_steps_change_the_weights_and_write_the_curve(trained, tiny_dir):
    # kept small: base/ links the model trained (no copy), one checkpoint of two is kept
    assert (trained / "base").is_symlink() and (trained / "base").resolve() == tiny_dir.resolve()
    checkpoints = [p.name for p in (trained / "checkpoints").iterdir() if p.is_dir()]
    assert checkpoints == ["checkpoint-2"]
    base = load_file(trained / "base" / "model.safetensors")
    final = load_file(trained / "final" / "model.safetensors")
    assert base.keys() == final.keys()
    assert any(not (base[k] == final[k]).all() for k in base)
    rows = curve.read(trained)
    assert [r["step"] for r in rows] == [1.0, 2.0]
    for row in rows:
        assert row["episodes"] == 4
        assert 0 <= row["invalid_rate"] <= 1
        assert row["headline"] is not None and row["reward"] == pytest.approx(row["headline"])
        assert row["generation_s"] > 0 and row["update_s"] > 0
    logged = [json.loads(line) for line in (trained / curve.ROLLOUTS).read_text().splitlines()]
    assert [line["step"] for line in logged] == [1] * 4 + [2] * 4  # each step's episodes
    assert all(len(line["commands"]) == len(line["rewards"]) <= 3 for line in logged)
    assert {p.name for p in (trained / "figures").iterdir()} >= {
        "curve-reward.svg",
        "curve-reward.pdf",
        "curve-invalid-rate.svg",
    }
    record = models.read_record(trained / "final")
    assert record["env"] == "treasure-hunt" and record["steps"] == 2
    assert record["eval_seeds"] == "0-99"  # ranges, not ten thousand numbers
    assert not set(parse_seeds(record["seeds"])) & set(parse_seeds(record["eval_seeds"]))


@pytest.mark.slow
def test_the_checkpoint_plays_through_eval_on_held_out_seeds(trained, tmp_path, capsys):
    run = tmp_path / "after"
    code = main(
        ["eval", "--env", "treasure-hunt", "--agent", "llm", "--model", str(trained / "final"),
         "--seeds", "0-1", "--out", str(run), "--max-invalid", "3"]
    )  # fmt: skip
    assert code == 0
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 2 and all(e["steps"] >= 1 for e in episodes)
    config = json.loads((run / "config.json").read_text())
    # the checkpoint's own settings: the reply limit it was trained with
    assert config["agent"]["max_tokens"] == 10
    # on a CPU the server holds one conversation at a time (each holds its cache)
    at_once = "8 conversations" if torch.cuda.is_available() else "1 conversation"
    assert f"on loopback ({at_once} at a time)" in capsys.readouterr().err
    assert config["concurrency"] == int(at_once[0])
    # a resumed run serves the checkpoint on another port: it continues all the same,
    # and samples its remaining episode as the uninterrupted run did (each request seeded)
    lines = (run / "episodes.jsonl").read_text().splitlines(keepends=True)
    (run / "episodes.jsonl").write_text(lines[0])  # as if killed after one episode
    second = run / json.loads(lines[1])["trajectory"]
    uninterrupted = [t["raw"] for t in json.loads(second.read_text())["turns"]]
    code = main(
        ["eval", "--env", "treasure-hunt", "--agent", "llm", "--model", str(trained / "final"),
         "--seeds", "0-1", "--out", str(run), "--max-invalid", "3", "--resume"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert "1 of 2 episodes already recorded" in capsys.readouterr().err
    assert len((run / "episodes.jsonl").read_text().splitlines()) == 2
    assert [t["raw"] for t in json.loads(second.read_text())["turns"]] == uninterrupted


def test_eval_refuses_a_checkpoint_on_its_training_seeds(trained, tmp_path, capsys):
    with pytest.raises(SystemExit) as refused:
        main(["eval", "--env", "treasure-hunt", "--agent", "llm", "--model",
              str(trained / "final"), "--seeds", "1000-1001",
              "--out", str(tmp_path / "x")])  # fmt: skip
    assert refused.value.code == 2
    assert "trained on them" in capsys.readouterr().err


@pytest.mark.slow
def test_resume_goes_on_from_the_last_checkpoint(tiny_dir, tmp_path):
    out = tmp_path / "run"
    assert train(tiny_dir, out) == 0
    first = curve.read(out)
    with pytest.raises(SystemExit) as refused:
        train(tiny_dir, out)  # the folder holds a run
    assert refused.value.code == 2
    # a run of an older version, without a setting added since, resumes at its default,
    # and one that recorded the RNG seed as "seed" resumes with it
    saved = json.loads((out / "settings.json").read_text())
    del saved["earlier_seeds"]
    saved["seed"] = saved.pop("rng_seed")
    (out / "settings.json").write_text(json.dumps(saved))
    assert train(tiny_dir, out, "--steps", "3", "--resume") == 0
    rows = curve.read(out)
    assert [r["step"] for r in rows] == [1.0, 2.0, 3.0]
    assert rows[:2] == first
    logged = [json.loads(line) for line in (out / curve.ROLLOUTS).read_text().splitlines()]
    assert [line["step"] for line in logged] == [1] * 4 + [2] * 4 + [3] * 4
    assert models.read_record(out / "final")["steps"] == 3


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--seeds", "0-5"], "overlap"),
        (["--env", "all"], "one scenario"),
        (["--env-option", "size=3"], "size"),
        (["--micro-batch", "3"], "multiple of the micro batch"),
    ],
)
def test_bad_settings_are_one_line_errors(tiny_dir, tmp_path, capsys, extra, message):
    with pytest.raises(SystemExit) as failed:
        main(["train", "--env", "treasure-hunt", "--model", str(tiny_dir), "--steps", "1",
              "--out", str(tmp_path / "run"), *extra])  # fmt: skip
    assert failed.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_a_missing_model_is_a_one_line_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as failed:
        main(["train", "--env", "treasure-hunt", "--model", str(tmp_path / "nowhere"),
              "--steps", "1", "--out", str(tmp_path / "run")])  # fmt: skip
    assert failed.value.code == 2
    assert "not 'local' nor a transformers model directory" in capsys.readouterr().err


def test_local_without_the_gguf_reader_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gguf" else find_spec(name, *a),
    )
    with pytest.raises(SystemExit) as failed:
        main(["train", "--env", "treasure-hunt", "--model", "local", "--steps", "1",
              "--out", str(tmp_path / "run")])  # fmt: skip
    assert failed.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "needs the gguf package" in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_ctrl_c_while_a_checkpoint_plays_is_one_line(tiny_dir, tmp_path):
    """Ctrl-C with replies in flight: the interruption line, no server traceback of the
    cancelled requests, and an exit that waits for none of them."""
    import signal
    import subprocess
    import time

    from tests.support.interrupt import interruptible

    argv = ["eval", "--env", "treasure-hunt", "--agent", "llm", "--model", str(tiny_dir),
            "--seeds", "0-99", "--out", str(tmp_path / "run")]  # fmt: skip
    proc = interruptible(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().startswith("note: serving")
        deadline = time.monotonic() + 120
        while not list((tmp_path / "run" / "trajectories").glob("*.json")):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130
    assert "Traceback" not in err and "CancelledError" not in err, err
    assert err.splitlines()[-1].startswith("textenvs eval: interrupted; finished episodes")


@pytest.mark.slow
def test_an_interrupted_run_says_what_it_keeps_and_how_to_resume(tiny_dir, tmp_path):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "textenvs.cli", "train", "--env", "treasure-hunt",
               "--model", str(tiny_dir), "--out", str(out), "--steps", "50", "--max-turns", "3",
               "--group-size", "2", "--seeds-per-step", "1", *SMALL,
               "--save-every", "1"]  # fmt: skip
    # a pytest-xdist worker may hold SIGINT ignored, which the child would inherit
    process = subprocess.Popen(
        command,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 300
    while not list((out / "checkpoints").glob("checkpoint-*")) and time.monotonic() < deadline:
        time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"textenvs train: interrupted; {out}/checkpoints/checkpoint-")
    assert last.endswith(f"resume with: {shlex.join(['textenvs', *command[3:], '--resume'])}")
