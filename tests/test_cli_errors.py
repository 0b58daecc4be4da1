"""Every error line of the CLI follows one convention (docs/architecture.md, "Error
lines"): one line on stderr, `textenvs COMMAND: error: what was wrong; what to do`, a
non-zero exit status, nothing on stdout, and nothing written. One case per mistake a
newcomer makes, for every subcommand, with the exact line."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

import textenvs
from textenvs.cli import main
from textenvs.core.extras import install_hint

KNOWN = "known: treasure-hunt, magnetic-field, em-anomaly, squad-recon, megacity"
EVAL = ["eval", "--env", "treasure-hunt", "--agent", "random", "--seeds", "0"]
NO_MODEL = (
    "no such model directory; give a transformers model directory (a training run's "
    "OUT/final), 'local', or a model name"
)


def run_folder(path: Path) -> None:
    """What `textenvs eval --out` leaves: its config and its episode log."""
    path.mkdir(parents=True)
    config = {"envs": {}, "seed_list": [], "episodes_per_seed": 1, "agent": {"name": "x"}}
    (path / "config.json").write_text(json.dumps(config))
    (path / "episodes.jsonl").write_text("")
    (path / "trajectories").mkdir()


def training_run(path: Path) -> None:
    """A `textenvs train` run folder: its final/ is the model directory."""
    (path / "final").mkdir(parents=True)
    (path / "final" / "config.json").write_text("{}")


def chatml_model(path: Path) -> None:
    """A model directory whose chat template is plain ChatML: it renders no tools."""
    pytest.importorskip("transformers", reason="the train extra is not installed")
    from benchmarks.support import tiny_model

    tiny_model.tokenizer(["north south east west"]).save_pretrained(path)
    (path / "config.json").write_text(json.dumps({"model_type": "llama"}))


def a_file(path: Path) -> None:
    path.write_text("not a folder")


Case = tuple[Callable[[Path], None] | None, list[str], str]
CASES: dict[str, Case] = {
    "no command": (None, [], "textenvs: error: the following arguments are required: COMMAND; "
                   "see 'textenvs --help'"),
    "list: an extra word": (None, ["list", "extra"], "textenvs list: error: unrecognized "
                            "arguments: extra; see 'textenvs list --help'"),
    "rules: a near miss": (None, ["rules", "treasure-hunk"], "textenvs rules: error: unknown "
                           f"environment 'treasure-hunk'; did you mean 'treasure-hunt'? {KNOWN}"),
    "play: a negative seed": (None, ["play", "treasure-hunt", "--seed", "-5"], "textenvs play: "
                              "error: argument --seed: must be 0 or more, not -5; see "
                              "'textenvs play --help'"),
    "run: a mistyped model path": (None, ["run", "treasure-hunt", "--agent", "llm", "--model",
                                          "./nope", "--seed", "1"],
                                   f"textenvs run: error: --model ./nope: {NO_MODEL}"),
    "eval: a mistyped flag": (None, [*EVAL, "--sedes", "3", "--out", "r"], "textenvs eval: "
                              "error: unrecognized arguments: --sedes 3; see 'textenvs eval "
                              "--help'"),
    "eval: a reversed seed range": (None, [*EVAL, "--seeds", "9-0", "--out", "r"],
                                    "textenvs eval: error: bad seed range '9-0': it ends "
                                    "before it starts; write 0-9"),
    "eval: a seed named twice": (None, [*EVAL, "--seeds", "0-99,50", "--out", "r"],
                                 "textenvs eval: error: seed 50 is named twice in "
                                 "'0-99,50'; name each once"),
    "run: an agent for other scenarios": (None, ["run", "squad-recon", "--agent", "learner"],
                                          "textenvs run: error: --agent learner plays "
                                          "magnetic-field, em-anomaly, not "
                                          "squad-recon; give --env one of them"),
    "eval: an agent for other scenarios": (None, [*EVAL, "--agent", "reactive", "--out", "r"],
                                           "textenvs eval: error: --agent reactive plays "
                                           "em-anomaly, squad-recon, not treasure-hunt; give "
                                           "--env one of them"),
    "eval: a mistyped checkpoint": (training_run, [*EVAL, "--agent", "llm", "--model",
                                                   "runs/t1/finall", "--out", "r"],
                                    f"textenvs eval: error: --model runs/t1/finall: {NO_MODEL}"),
    "eval: a missing absolute path": (None, [*EVAL, "--agent", "llm", "--model",
                                             "/tmp/textenvs-no-such-dir", "--out", "r"],
                                      "textenvs eval: error: --model "
                                      f"/tmp/textenvs-no-such-dir: {NO_MODEL}"),
    "eval: a training run for its final/": (
        training_run, [*EVAL, "--agent", "llm", "--model", "runs/t1", "--out", "r"],
        "textenvs eval: error: --model runs/t1 is a training run's folder, not a model "
        "directory; give its final/: --model runs/t1/final"),
    "eval: tools with a template that renders none": (
        chatml_model, [*EVAL, "--agent", "llm", "--model", "runs/t1", "--action-mode", "tools",
                       "--out", "r"],
        "textenvs eval: error: --action-mode tools: the chat template of runs/t1 renders no "
        "tools; write the model with one that does: textenvs save-model --model runs/t1 --out "
        "runs/t1-tools --tools-template, then give --model runs/t1-tools (or play it in text "
        "mode)"),
    "eval: a file in the --out path": (a_file, [*EVAL, "--out", "runs/t1/r"],
                                       "textenvs eval: error: cannot write the run directory "
                                       "runs/t1/r: {tmp}/runs/t1 is a file, not a folder; "
                                       "choose an --out you can write"),
    "eval: --out under /proc": (None, [*EVAL, "--out", "/proc/textenvs-no-such/run"],
                                "textenvs eval: error: cannot write the run directory "
                                "/proc/textenvs-no-such/run: /proc takes no new folders (No "
                                "such file or directory); choose an --out you can write"),
    "eval: a file as --out": (a_file, [*EVAL, "--out", "runs/t1"], "textenvs eval: error: "
                              "runs/t1 is a file, not a run directory; choose another --out"),
    "eval: retrying a new run": (None, [*EVAL, "--out", "r", "--retry-errors"],
                                 "textenvs eval: error: --retry-errors continues a run; add "
                                 "--resume"),
    "eval: an error rate over 1": (None, [*EVAL, "--out", "r", "--max-error-rate", "2"],
                                   "textenvs eval: error: argument --max-error-rate: must be "
                                   "between 0 and 1, not 2; see 'textenvs eval --help'"),
    "eval: a scenario named twice": (None, [*EVAL, "--env", "treasure-hunt,treasure_hunt",
                                            "--out", "r"],
                                     "textenvs eval: error: --env names treasure-hunt more "
                                     "than once; name each once"),
    "report: a missing folder": (None, ["report", "runs/t1"], "textenvs report: error: "
                                 "runs/t1: no such folder; give a folder 'textenvs eval --out' "
                                 "wrote"),
    "report: a folder that is no run": (lambda p: p.mkdir(parents=True), ["report", "runs/t1"],
                                        "textenvs report: error: runs/t1 is not an eval run "
                                        "(no config.json); give a folder 'textenvs eval --out' "
                                        "wrote"),
    "report: a config without its keys": (
        lambda p: (p.mkdir(parents=True), (p / "config.json").write_text("{}")),
        ["report", "runs/t1"],
        "textenvs report: error: runs/t1/config.json is not a textenvs run configuration "
        "(missing: envs, seed_list, episodes_per_seed, agent); give a folder 'textenvs eval "
        "--out' wrote"),
    "report: --out another run": (
        lambda p: (run_folder(p), run_folder(p.parent / "other")),
        ["report", "runs/t1", "--out", "runs/other"],
        "textenvs report: error: --out runs/other is an eval run folder; give the report a "
        "folder of its own (the default is reports/RUN)"),
    "report: --out inside the run": (
        run_folder, ["report", "runs/t1", "--out", "runs/t1/trajectories"],
        "textenvs report: error: --out runs/t1/trajectories is inside {tmp}/runs/t1, an eval "
        "run folder; give the report a folder of its own (the default is reports/RUN)"),
    "export: a missing folder": (None, ["export", "runs/t1", "--format", "jsonl-chat"],
                                 "textenvs export: error: runs/t1: no such folder; give a "
                                 "folder 'textenvs eval --out' wrote"),
    "export: a mistyped format": (None, ["export", "runs/t1", "--format", "jsonl"],
                                  "textenvs export: error: argument --format: invalid choice: "
                                  "'jsonl' (choose from 'hf', 'jsonl-chat'); see 'textenvs "
                                  "export --help'"),
    "train: a mistyped model path": (training_run, ["train", "--env", "treasure-hunt",
                                                    "--model", "runs/t1/finall", "--steps",
                                                    "1", "--out", "t"],
                                     "textenvs train: error: --model runs/t1/finall: not "
                                     "'local' nor a transformers model directory (a folder "
                                     "with config.json); give 'local' or a model directory "
                                     "(an earlier run's OUT/final)"),
    "train: a reversed seed range": (training_run, ["train", "--env", "treasure-hunt",
                                                    "--model", "runs/t1/final", "--steps", "1",
                                                    "--out", "t", "--seeds", "9-0"],
                                     "textenvs train: error: bad seed range '9-0': it ends "
                                     "before it starts; write 0-9"),
    "train: an --out that cannot be created": (a_file, ["train", "--env", "em-anomaly",
                                                        "--model", "local", "--steps", "1",
                                                        "--out", "runs/t1/run"],
                                               "textenvs train: error: --out runs/t1/run: "
                                               "cannot create it (Not a directory); give a "
                                               "folder you can write"),
    "train: a flag sft does not read": (training_run, ["train", "--method", "sft", "--env",
                                                       "em-anomaly", "--model", "runs/t1/final",
                                                       "--steps", "1", "--out", "t",
                                                       "--temperature", "0.7"],
                                        "textenvs train: error: --temperature does nothing "
                                        "with --method sft; leave it out"),
    "train: a flag grpo does not read": (training_run, ["train", "--env", "em-anomaly",
                                                        "--model", "runs/t1/final", "--steps",
                                                        "1", "--out", "t", "--only-success"],
                                         "textenvs train: error: --only-success does nothing "
                                         "with --method grpo; leave it out"),
    "serve: a port out of range": (None, ["serve", "--port", "70000"], "textenvs serve: error: "
                                   "argument --port: must be at least 0 and at most 65535, not "
                                   "'70000'; see 'textenvs serve --help'"),
    "serve: an unset token variable": (None, ["serve", "--token-env",
                                              "TEXTENVS_TEST_NO_SUCH_TOKEN"],
                                       "textenvs serve: error: $TEXTENVS_TEST_NO_SUCH_TOKEN is "
                                       "unset or empty; export the token in it first"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_every_error_is_one_line_that_says_what_to_do(
    case: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    make, argv, line = CASES[case]
    if case.startswith("train"):
        pytest.importorskip("trl", reason="the train extra is not installed")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    if make is not None:
        (tmp_path / "runs").mkdir()
        make(tmp_path / "runs" / "t1")
    before = sorted(tmp_path.rglob("*"))
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse and one-line errors exit this way
        code = exc.code
    captured = capsys.readouterr()
    assert captured.err == line.format(tmp=tmp_path) + "\n"
    assert code == 2 and captured.out == ""
    assert sorted(tmp_path.rglob("*")) == before  # nothing written


def test_serve_on_a_port_in_use_is_one_line_before_the_app_starts(capsys):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        code = main(["serve", "--port", str(port)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err == (
        f"textenvs serve: error: cannot listen on 127.0.0.1:{port} (Address already in use); "
        "stop what holds it, or give another --port (0 picks a free one)\n"
    )


def test_the_install_hint_is_the_command_this_installation_needs(monkeypatch, tmp_path):
    root = Path(textenvs.__file__).resolve().parents[1]
    assert (root / "pyproject.toml").is_file()  # the tests run from a clone
    monkeypatch.chdir(root)
    assert install_hint("train", "local") == "pip install -e '.[train,local]'"
    monkeypatch.chdir(tmp_path)
    assert install_hint("local") == f"pip install -e '{root}[local]'"
