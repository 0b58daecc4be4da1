"""`eval --openings`: each seed's episodes start from the state its opening commands reach
(written for EM Anomaly by `benchmarks/field_openings.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import textenvs
from benchmarks import field_openings, reading_counts
from benchmarks.reading_counts import field_above_zero, replayed_observations
from benchmarks.support.openai_server import OpenAIServer, text
from textenvs.cli import main as textenvs_main
from textenvs.evals import store
from textenvs.training.demonstrations import recorded_episodes
from textenvs.training.weighting import seed_value_changes


@pytest.fixture(scope="module")
def openings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Random play's openings on seeds 0-299 (the first 6), written by the benchmark."""
    folder = tmp_path_factory.mktemp("openings")
    argv = ["eval", "--env", "em-anomaly", "--agent", "random", "--seeds", "0-299"]
    assert textenvs_main([*argv, "--out", str(folder / "random")]) == 0
    path = folder / "openings.json"
    assert field_openings.main([str(folder / "random"), "--out", str(path), "--limit", "6"]) == 0
    return path


def test_skip_leaves_out_the_first_seeds_found(openings: Path, tmp_path: Path) -> None:
    """--skip N --limit M: the M openings after the first N, as --limit N+M wrote them."""
    random_run = openings.parent / "random"
    later = tmp_path / "later.json"
    assert (
        field_openings.main([str(random_run), "--out", str(later), "--skip", "2", "--limit", "3"])
        == 0
    )
    first = json.loads(openings.read_text())
    assert json.loads(later.read_text()) == dict(list(first.items())[2:5])


def test_each_opening_reaches_the_first_state_with_a_reading_to_climb(openings: Path) -> None:
    env = textenvs.make("em-anomaly")
    chosen = json.loads(openings.read_text())
    assert len(chosen) == 6 and any(commands for commands in chosen.values())
    for seed, commands in chosen.items():
        seen = list(replayed_observations(env, int(seed), [*commands, "mark"]))
        *before, branch = seen
        assert field_above_zero(branch) and branch["view"][1][1] < 2
        assert branch["steps_left"] >= 8
        assert not any(field_above_zero(o) and o["view"][1][1] < 2 for o in before)


def test_eval_plays_the_opening_then_the_agent_from_the_branch(
    openings: Path, tmp_path: Path
) -> None:
    """Every episode of a seed opens with the seed's commands, recorded as opening turns,
    and the agent plays on from the state they reach; the seeds default to the file's."""
    chosen = json.loads(openings.read_text())
    out = tmp_path / "branches"
    argv = ["eval", "--env", "em-anomaly", "--agent", "random", "--episodes-per-seed", "3"]
    assert textenvs_main([*argv, "--openings", str(openings), "--out", str(out)]) == 0
    records = store.read_episodes(out)
    branches: dict[int, set[tuple[str, ...]]] = {}
    assert sorted({r["seed"] for r in records}) == sorted(map(int, chosen))
    assert len(records) == 3 * len(chosen)
    for record in records:
        turns = store.read_turns(out, record)
        opening = chosen[str(record["seed"])]
        assert [t["command"] for t in turns[: len(opening)]] == opening
        assert all(t["record"] == {"opening": True} for t in turns[: len(opening)])
        assert not any(t["record"].get("opening") for t in turns[len(opening) :])
        assert len(turns) > len(opening)  # the agent played on
        played = tuple(t["command"] for t in turns[len(opening) :])
        branches.setdefault(record["seed"], set()).add(played)
    assert any(len(played) > 1 for played in branches.values())  # a seed's branches differ
    config = json.loads((out / "config.json").read_text())
    assert config["agent"]["openings"]["seeds"] == len(chosen)
    # the same run with other openings is another run: --resume refuses it
    other = tmp_path / "other.json"
    other.write_text(json.dumps({seed: [] for seed in chosen}))
    resumed = [*argv, "--openings", str(other), "--out", str(out), "--resume"]
    assert textenvs_main(resumed) != 0


@pytest.mark.parametrize(
    ("content", "extra", "said"),
    [
        (None, [], "cannot read openings"),
        ("[1, 2]", [], "must be an object of seed -> list of commands"),
        ('{"x": []}', [], "entry 'x' is not"),
        ('{"0": [""]}', [], "seed 0's commands must be non-empty text"),
        ('{"0": ["fly"]}', ["--seeds", "0"], "seed 0's 'fly' is not a command em-anomaly reads"),
        ('{"0": []}', ["--seeds", "0-2"], "2 of the seeds have no opening (1, 2)"),
        ('{"0": [], "1": []}', ["--trials", "2"], "--openings starts single episodes"),
    ],
)
def test_bad_openings_are_refused_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | None,
    extra: list[str],
    said: str,
) -> None:
    path = tmp_path / "openings.json"
    if content is not None:
        path.write_text(content)
    argv = ["eval", "--env", "em-anomaly", "--agent", "random", "--openings", str(path)]
    assert textenvs_main([*argv, *extra, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("textenvs eval: error: ") and said in err and "\n" not in err


def test_a_model_is_first_asked_at_the_branch(
    openings: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over a loopback OpenAI server: the opening asks the model nothing, and its first
    request shows the state the opening reached, in a conversation that starts there."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    chosen = json.loads(openings.read_text())
    seed = next(int(s) for s, commands in chosen.items() if commands)
    env = textenvs.make("em-anomaly")
    env.reset(seed=seed)
    for command in chosen[str(seed)]:
        branch = env.step(command)[0]
    with OpenAIServer(default=text("Action: mark")) as server:
        code = textenvs_main(
            ["eval", "--env", "em-anomaly", "--agent", "llm", "--model", "test-model",
             "--base-url", server.base_url, "--history", "0", "--seeds", str(seed),
             "--openings", str(openings), "--out", str(tmp_path / "run")]
        )  # fmt: skip
        requests = server.requests
    assert code == 0 and len(requests) == 1  # the mark it answered ended the episode
    assert requests[0].messages[-1] == {"role": "user", "content": branch}
    (record,) = store.read_episodes(tmp_path / "run")
    assert record["steps"] == len(chosen[str(seed)]) + 1


def test_turn_credit_weighs_the_branches_and_never_the_opening(
    openings: Path, tmp_path: Path
) -> None:
    """A seed's branches share its opening's observations, so `--credit turn` values them
    alike and weighs no opening turn; where branches part, the turns weigh something."""
    chosen = json.loads(openings.read_text())
    out = tmp_path / "branches"
    argv = ["eval", "--env", "em-anomaly", "--agent", "random", "--episodes-per-seed", "8"]
    assert textenvs_main([*argv, "--openings", str(openings), "--out", str(out)]) == 0
    episodes, _ = recorded_episodes([out], "em-anomaly")
    weighed, weights = seed_value_changes(episodes)
    assert weighed
    for episode, changes in zip(weighed, weights, strict=True):
        opening = len(chosen[str(episode.spec.seed)])
        assert not any(changes[:opening]) and any(changes[opening:])


def test_reading_counts_count_the_agents_turns_not_the_openings(
    openings: Path, tmp_path: Path
) -> None:
    """The reactive agent from the branch states: it agrees with itself on every state it
    was asked about, and the opening's commands (random play's) are not counted."""
    chosen = json.loads(openings.read_text())
    out = tmp_path / "branches"
    argv = ["eval", "--env", "em-anomaly", "--agent", "reactive", "--openings", str(openings)]
    assert textenvs_main([*argv, "--out", str(out)]) == 0
    tally = reading_counts.counts(out)
    assert tally["agree"] == tally["states"]
    records = store.read_episodes(out)
    asked = sum(r["steps"] for r in records) - sum(map(len, chosen.values()))
    assert sum(tally["commands"].values()) == asked
    assert tally["totals"]["field_shown"] == len(records)  # every branch starts in the field
