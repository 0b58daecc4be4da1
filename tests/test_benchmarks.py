"""Smoke tests: every benchmark runs end to end on tiny sizes (no timing assertions)."""

from __future__ import annotations

import re
import sys

import pytest

from benchmarks import (
    blind_policies,
    critic_lookahead,
    env_breakdown,
    env_throughput,
    magnetic_field_shortcut,
    megacity_reward_probe,
    observation_tokens,
    prompt_cache,
    reading_counts,
)
from textenvs.cli import main as textenvs_main


def _run(main: object, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["bench", *argv])
    main()  # type: ignore[operator]


def test_env_throughput_prints_every_scenario_and_the_baseline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(env_throughput.main, ["--steps", "60", "--repeats", "1"], monkeypatch)
    out = capsys.readouterr().out
    assert "TextArena FrozenLake-v0-raw" in out and "1.00x" in out
    for env_id in ("TreasureHunt", "MagneticField", "EMAnomaly", "SquadRecon", "Megacity"):
        assert f"textenvs/{env_id}-v" in out


def test_env_breakdown_prints_every_part_for_every_scenario(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(env_breakdown.main, ["--steps", "40"], monkeypatch)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-9:] == [*env_breakdown.PARTS, "reset/step"]
    assert len(lines) == 2 + 5


def test_megacity_reward_probe_sets_passive_returns_against_the_planners_victories(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(megacity_reward_probe.main, ["--seeds", "0-1", "--levels", "0"], monkeypatch)
    rows = [re.split(r"\s{2,}", line.strip()) for line in capsys.readouterr().out.splitlines()]
    returns = {r[1]: r[3] for r in rows if len(r) > 3 and r[0] == "0"}
    # ten research points decode five rules (+20) and `steady` pays 0.5 on each of 40 steps
    assert returns["wait"] == "23.0" and returns["research, wait"] == "40.0"
    planner = next(r for r in rows if r[:2] == ["0", "2"])  # level 0: two victories
    assert planner[2:4] == ["0", "2"]  # none below the passive returns, both above the bound


@pytest.mark.slow
def test_observation_tokens_reports_all_three_sections(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--episodes", "1", "--resets", "2", "--llm-seeds", "1", "--llm-search", "1"]
    _run(observation_tokens.main, argv, monkeypatch)
    out = capsys.readouterr().out
    assert out.startswith("tokenizer: ")
    assert "1. Tokens per observation" in out and "2. llm agent" in out
    assert "3. TextArena FrozenLake-v0" in out and "growth:" in out


def test_token_counting_matches_o200k_when_available() -> None:
    from benchmarks._tokens import chat_tokens, counter

    label, count = counter()
    if "exact" in label:  # o200k_base verified against tiktoken's own hash
        assert count("hello world") == 2
    assert count("") == 0
    assert chat_tokens([{"role": "user", "content": ""}], count) == 6


def test_prompt_cache_compares_the_policies_on_the_loopback_server(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--seeds", "1", "--loopback-scenarios", "treasure-hunt", "--loopback-budget", "2000"]
    _run(prompt_cache.main, argv, monkeypatch)
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if "full-length" in line]
    assert [row[2] for row in rows] == ["old", "new"]
    assert all(row[-5] == "30.0" for row in rows)  # whole episodes of the step budget
    old, new = (float(row[-4].rstrip("%")) for row in rows)
    assert new > old


def test_magnetic_field_shortcut_reports_each_guess(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(magnetic_field_shortcut.main, ["--seeds", "3", "--level", "3"], monkeypatch)
    out = capsys.readouterr().out
    assert "hints never read" in out
    for name in magnetic_field_shortcut.GUESSES:
        assert name in out
    assert "episodes at 1.0" in out


def test_parse_worst_case_prints_every_scenario(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks import parse_worst_case

    _run(parse_worst_case.main, ["--limit", "400", "--repeats", "1"], monkeypatch)
    out = capsys.readouterr().out
    assert "reply length: 400 characters" in out
    for name in parse_worst_case.SCENARIOS:
        assert f"\n{name} " in out


@pytest.fixture(scope="module")
def reactive_run(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("runs") / "reactive"
    argv = ["eval", "--env", "em-anomaly", "--agent", "reactive", "--seeds", "0-11"]
    assert textenvs_main([*argv, "--out", str(out)]) == 0
    return out


def test_reading_counts_find_the_reactive_agent_agreeing_with_itself_on_every_state(
    reactive_run, capsys: pytest.CaptureFixture[str]
) -> None:
    tally = reading_counts.counts(reactive_run)
    assert tally["totals"]["episodes"] == 12 and tally["totals"]["blocked"] > 0  # it bumps
    assert tally["agree"] == tally["states"] and set(tally["states"]) >= {"straight", "turn"}
    assert tally["totals"]["marks_on_2_3"] == tally["totals"]["won"] > 0
    # every blocked move was into a wall the scan showed beside it (the last move of an
    # episode has no observation after it to say BLOCKED); a won episode showed a reading
    totals = tally["totals"]
    assert totals["moves_into_shown_wall"] >= totals["blocked"]
    assert totals["moves_into_shown_wall"] <= totals["blocked"] + totals["episodes"]
    assert totals["field_shown"] >= totals["field_shown_won"] == totals["won"]
    reading_counts.main([str(reactive_run)])
    out = capsys.readouterr().out
    assert "marks on 2-3: 3 of 3" in out
    assert f"episodes showing a reading above 0: {totals['field_shown']} (won 3)" in out


def test_reading_counts_tell_won_from_lost_episodes_on_the_seeds_both_won_and_lost(
    reactive_run, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reactive agent's run and a random one on the same seeds: where the first won
    and the second lost, each seed is counted once won (agreeing on every state) and once
    lost; a seed both won, or both lost, not at all."""
    blind = tmp_path / "random"
    argv = ["eval", "--env", "em-anomaly", "--agent", "random", "--seeds", "0-11"]
    assert textenvs_main([*argv, "--out", str(blind)]) == 0
    episodes = reading_counts.episodes_of(reactive_run) + reading_counts.episodes_of(blind)
    won, lost, seeds = reading_counts.won_and_lost(episodes)
    outcomes = {
        seed: {bool(r["success"]) for _, r in episodes if r["seed"] == seed} for seed in range(12)
    }
    mixed = sorted(seed for seed, ended in outcomes.items() if ended == {True, False})
    assert 0 < seeds == len(mixed) < 12
    assert sorted(r["seed"] for _, r in won) == sorted(r["seed"] for _, r in lost) == mixed
    assert all(r["success"] for _, r in won) and not any(r["success"] for _, r in lost)
    won_counts = reading_counts.episode_counts(won)
    assert won_counts["agree"] == won_counts["states"]
    reading_counts.main(["--won-and-lost", str(reactive_run), str(blind)])
    out = capsys.readouterr().out
    assert f"{seeds} seeds both won and lost" in out
    assert f"their won episodes: won {seeds} of {seeds}" in out
    assert f"their lost episodes: won 0 of {seeds}" in out
    with pytest.raises(SystemExit) as exit_:
        reading_counts.main([str(reactive_run), str(tmp_path / "nothing")])
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and "is not a `textenvs eval` run folder" in error


def test_reading_counts_sum_the_credit_a_round_would_give_by_reading(
    reactive_run, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reactive agent's run (the reading) and a random one on the same seeds. Turn
    credit weighs, on each seed the reactive agent won and the random one lost, only the
    turn where the two parted: +1/2 to the reactive agent's command, -1/2 to the other.
    Episode credit weighs every turn of both."""
    blind = tmp_path / "random"
    argv = ["eval", "--env", "em-anomaly", "--agent", "random", "--seeds", "0-11"]
    assert textenvs_main([*argv, "--out", str(blind)]) == 0
    capsys.readouterr()
    net, turns, chosen = reading_counts.credit_by_reading([reactive_run, blind], "turn")
    seeds = len({episode.spec.seed for episode in chosen})
    assert seeds > 0 and len(chosen) == 2 * seeds
    own = sum(weight for (_, agrees), weight in net.items() if agrees)
    other = sum(weight for (_, agrees), weight in net.items() if not agrees)
    assert own == pytest.approx(seeds / 2) and other == pytest.approx(-seeds / 2)
    assert sum(turns.values()) == 2 * seeds
    net, turns, chosen = reading_counts.credit_by_reading([reactive_run, blind], "episode")
    assert sum(turns.values()) == sum(len(episode.commands) for episode in chosen)
    reading_counts.main(["--credit", "turn", str(reactive_run), str(blind)])
    out = capsys.readouterr().out
    assert out.startswith(f"turn credit on {seeds} seeds both won and lost: {2 * seeds} of")
    with pytest.raises(SystemExit) as exit_:
        reading_counts.main(["--credit", "turn", str(blind)])  # one episode a seed, all lost
    assert exit_.value.code == 2 and "no seed was both won and lost" in capsys.readouterr().err
    # a critic fit across seeds weighs every episode (and every turn whose value moved)
    net, turns, chosen = reading_counts.credit_by_reading([reactive_run, blind], "critic")
    assert len(chosen) == 24
    assert 0 < sum(turns.values()) <= sum(len(episode.commands) for episode in chosen)
    own = sum(weight for (_, agrees), weight in net.items() if agrees)
    assert own > 0  # the reading won: its commands are drawn up
    # its gains alone: the same turns' positive weights, nothing pushed down
    gains, gained, _ = reading_counts.credit_by_reading([reactive_run, blind], "critic-gains")
    assert 0 < sum(gained.values()) < sum(turns.values())
    assert all(weight >= 0 for weight in gains.values())
    # the lookahead's relabels: counted by the command trained on, none the one played
    relabels, relabelled, chosen = reading_counts.credit_by_reading(
        [reactive_run, blind], "lookahead"
    )
    answers = [answer for episode in chosen for answer in episode.answers]
    assert sum(relabelled.values()) == sum(answer is not None for answer in answers) > 0
    assert all(weight > 0 for weight in relabels.values())


def test_the_critics_lookahead_plays_each_seed_beside_the_reactive_agent(
    reactive_run, capsys: pytest.CaptureFixture[str]
) -> None:
    assert critic_lookahead.main([str(reactive_run), "--seeds", "40-45"]) == 0
    first, second = capsys.readouterr().out.splitlines()
    # the reactive agent's own runs play mark in 1 of 12 episodes or more, the moves too
    found = re.match(r"the critic's lookahead over (.+) \(fit on 12 episodes\): \d of 6", first)
    assert found is not None, first
    assert "mark" in found.group(1).split(", ")
    # where the field reads 2-3, `mark` wins for sure: worth 1, nothing beats it
    marks = re.search(r"mark (\d+) of (\d+),", second)
    assert marks is not None and marks.group(1) == marks.group(2), second
    with pytest.raises(SystemExit) as refused:
        critic_lookahead.main([str(reactive_run), "--seeds", "9-1"])
    assert refused.value.code == 2 and "--seeds" in capsys.readouterr().err


def test_blind_policies_rank_the_cycles_and_set_a_reading_run_against_the_strongest(
    reactive_run, capsys: pytest.CaptureFixture[str]
) -> None:
    blind_policies.main([str(reactive_run), "--env", "em-anomaly", "--seeds", "0-11",
                         "--length", "1"])  # fmt: skip
    out = capsys.readouterr().out
    assert out.startswith("8 blind policies on 12 seeds of em-anomaly, of its 7 commands")
    assert re.search(r"reactive: headline 0\.\d+ on 12 paired seeds; against the hardest", out)


def test_blind_policies_play_commands_not_the_forms_that_stand_for_them() -> None:
    """`enter X` is sixteen commands, and Squad Recon's orders are every squad's order
    joined; where cycles are too many to play, a seeded draw of them."""
    digits = [f"enter {digit}" for digit in "0123456789ABCDEF"]
    assert blind_policies.commands("magnetic-field", {}) == sorted([*digits, "left", "right",
                                                                    "submit"])  # fmt: skip
    orders = blind_policies.commands("squad-recon", {})
    assert len(orders) == 6**3 and "A north; B hold; C attack" in orders
    drawn = blind_policies.cycles(orders, 2, 100)
    assert len(set(drawn)) == 100 and drawn == blind_policies.cycles(orders, 2, 100)
    assert len(blind_policies.cycles(digits, 2, 1000)) == 256  # all, where they fit


def test_blind_policies_play_at_the_scenario_options_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--env-option reaches every episode's reset (a level, as the runs were played), and
    one it does not take is refused in one line."""
    blind_policies.main(["--env", "magnetic-field", "--env-option", "level=0", "--seeds", "0-1",
                         "--length", "1"])  # fmt: skip
    assert "blind policies on 2 seeds of magnetic-field" in capsys.readouterr().out
    for option, said in [("level=9", "level must be one of"), ("level", "takes KEY=VALUE")]:
        with pytest.raises(SystemExit) as exited:
            blind_policies.main(["--env", "magnetic-field", "--env-option", option])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err


def test_a_runs_command_mix_played_blind_is_one_more_policy(
    reactive_run, capsys: pytest.CaptureFixture[str]
) -> None:
    played = blind_policies.command_frequencies(reactive_run)
    assert played == reading_counts.counts(reactive_run)["commands"]  # it never fails to read
    mix = blind_policies.MixAgent(played)
    once, again = (
        [{**r, "wall_s": 0} for r in blind_policies.play("em-anomaly", mix, list(range(12)), {})]
        for _ in range(2)
    )
    assert once == again and len({r["steps"] for r in once}) > 1  # seeded by the episode
    blind_policies.main([str(reactive_run), "--env", "em-anomaly", "--seeds", "0-11",
                         "--length", "1", "--mix", "--show", "9"])  # fmt: skip
    out = capsys.readouterr().out
    assert re.search(rf"the mix of {re.escape(str(reactive_run))}: (\w+ \d+%(, )?)+\n", out)
    assert "9 blind policies on 12 seeds" in out  # 7 forms, random and the mix
