"""Expert iteration: an eval run's episodes replayed as demonstrations (`--demonstrations
RUN`), each checked to end as recorded, the won ones kept with --only-success, and the
trained checkpoint refusing every seed it or its starting model trained on."""

from __future__ import annotations

import json
import re

import pytest

import textenvs
from benchmarks.support.openai_server import OpenAIServer, text
from benchmarks.support.scripted_replies import REPLIES
from benchmarks.support.scripted_replies import reply_for as scripted_reply
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.cli import main
from textenvs.evals import run_folder, store
from textenvs.evals.metrics import key_of
from textenvs.inference import models
from textenvs.inference.chat import ChatTokens
from textenvs.training.demonstrations import (
    recorded_episodes,
    recorded_runs,
    replayed_demonstrations,
    reply_for,
)
from textenvs.training.settings import settings_from

WINDOW = conversation_settings(prompt_budget=7000, history=0)
UNASKED = conversation_settings(prompt_budget=7000, history=0, reasks=0)  # as the run played


@pytest.fixture(scope="module")
def reactive_run(tmp_path_factory):
    """The reactive agent's eval run on 12 EM Anomaly seeds (some won, some lost)."""
    out = tmp_path_factory.mktemp("recorded") / "run"
    code = main(["eval", "--env", "em-anomaly", "--agent", "reactive", "--seeds", "2000-2011",
                 "--out", str(out)])  # fmt: skip
    assert code == 0
    return out


def test_a_recorded_episode_is_replayed_command_for_command_as_its_replies(tiny, reactive_run):
    _, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    episodes, unreadable = recorded_episodes([reactive_run], "em-anomaly")
    assert unreadable == 0 and len(episodes) == 12
    won = [episode for episode in episodes if episode.success]
    assert 0 < len(won) < 12  # the test needs both
    shown = replayed_demonstrations(episodes, textenvs.make, WINDOW, chat)
    for episode, demonstration in zip(episodes, shown, strict=True):
        assert [t.command for t in demonstration.result.turns] == list(episode.commands)
        assert demonstration.result.success == episode.success
        trained = [
            chat.decode([t for t, label in zip(s.ids, s.labels, strict=True) if label >= 0])
            for s in demonstration.sequences
        ]
        assert trained == [reply_for(command) + "<|im_end|>" for command in episode.commands]


def test_a_replay_that_ends_otherwise_than_recorded_is_refused(tiny, reactive_run, tmp_path):
    _, tokenizer = tiny
    run = tmp_path / "run"
    run.mkdir()
    (run / store.EPISODES).write_text((reactive_run / store.EPISODES).read_text())
    (run / store.TRAJECTORIES).symlink_to(reactive_run / store.TRAJECTORIES)
    (episode, *_), _ = recorded_episodes([run], "em-anomaly")
    records = store.read_episodes(run)
    first = min(records, key=key_of)  # the episode taken first
    first["return"] += 1  # as if another version of the scenario had paid it
    (run / store.EPISODES).write_text("".join(json.dumps(r) + "\n" for r in records))
    (tampered, *_), _ = recorded_episodes([run], "em-anomaly")
    with pytest.raises(ValueError, match="its commands end otherwise than recorded"):
        replayed_demonstrations([tampered], textenvs.make, WINDOW, ChatTokens(tokenizer))
    assert episode.total_reward + 1 == tampered.total_reward


def test_an_episode_with_an_unreadable_reply_is_left_out_and_counted(reactive_run, tmp_path):
    run = tmp_path / "run"
    (run / store.TRAJECTORIES).mkdir(parents=True)
    (run / store.EPISODES).write_text((reactive_run / store.EPISODES).read_text())
    records = store.read_episodes(run)
    for record in records:
        data = json.loads((reactive_run / record["trajectory"]).read_text())
        if record["seed"] == 2003:
            data["turns"][1]["invalid_action"] = True
        (run / record["trajectory"]).write_text(json.dumps(data))
    episodes, unreadable = recorded_episodes([run], "em-anomaly")
    assert unreadable == 1
    assert [e.spec.seed for e in episodes] == [s for s in range(2000, 2012) if s != 2003]


def test_an_unreadable_reply_is_replayed_as_written_where_the_run_keeps_it(tiny, tmp_path):
    """A model's real run, on the OpenAI protocol, with replies no parser reads: kept (for
    a policy gradient), each such reply is trained on as the model wrote it, and the
    episode, replayed through the same reader, ends as it was recorded."""
    _, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    out = tmp_path / "run"
    with OpenAIServer(default=scripted_reply) as server:
        code = main(["eval", "--env", "em-anomaly", "--agent", "llm", "--model", "m",
                     "--base-url", server.base_url, "--history", "0", "--reasks", "0",
                     "--seeds", "2000-2003", "--out", str(out)])  # fmt: skip
    assert code == 0
    left, unreadable = recorded_episodes([out], "em-anomaly")
    episodes, counted = recorded_episodes([out], "em-anomaly", keep_unreadable=True)
    assert counted == unreadable > 0 and len(left) == 4 - unreadable and len(episodes) == 4
    shown = replayed_demonstrations(episodes, textenvs.make, UNASKED, chat)
    for episode, demonstration in zip(episodes, shown, strict=True):
        trained = [
            chat.decode([t for t, label in zip(s.ids, s.labels, strict=True) if label >= 0])
            for s in demonstration.sequences
        ]
        unread = episode.unread or (None,) * len(episode.commands)
        expected = [
            (reply_for(command) if raw is None else raw) + "<|im_end|>"
            for command, raw in zip(episode.commands, unread, strict=True)
        ]
        assert trained == expected
    replies = [raw for episode in episodes for raw in episode.unread if raw is not None]
    assert set(replies) <= set(REPLIES) and "hmm, not sure yet" in replies
    # replayed in a conversation that re-asks, the run's unread reply is not played on
    asking = conversation_settings(prompt_budget=7000, history=0, reasks=1)
    with pytest.raises(ValueError, match=r"re-asks \(--reasks 1\) where the run played on"):
        replayed_demonstrations(episodes, textenvs.make, asking, chat)


def test_a_runs_episodes_are_taken_by_seed_and_episode_whatever_order_they_finished_in(
    reactive_run, tmp_path
):
    run = tmp_path / "run"
    run.mkdir()
    (run / store.TRAJECTORIES).symlink_to(reactive_run / store.TRAJECTORIES)
    lines = (reactive_run / store.EPISODES).read_text().splitlines()
    (run / store.EPISODES).write_text("\n".join(reversed(lines)) + "\n")  # as if resumed
    shuffled, _ = recorded_episodes([run], "em-anomaly")
    recorded, _ = recorded_episodes([reactive_run], "em-anomaly")
    assert shuffled == recorded
    assert [e.spec.seed for e in recorded] == list(range(2000, 2012))


@pytest.mark.slow
def test_training_on_a_run_keeps_its_won_episodes_and_refuses_every_seed_trained_on(
    tiny_dir, reactive_run, tmp_path, capsys
):
    first = tmp_path / "first"
    code = main(["train", "--method", "sft", "--env", "em-anomaly", "--model", str(tiny_dir),
                 "--steps", "1", "--seeds", "1000-1001", "--demonstrations", "reactive",
                 "--history", "0", "--seeds-per-step", "1", "--out", str(first)])  # fmt: skip
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0, err
    assert re.search(r"demonstrations em-anomaly [━ ]+ 2/2 ", err)  # every seed played
    second = tmp_path / "second"
    code = main(["train", "--method", "sft", "--env", "em-anomaly", "--model",
                 str(first / "final"), "--steps", "1", "--demonstrations", str(reactive_run),
                 "--only-success", "--history", "0", "--seeds-per-step", "1",
                 "--eval-seeds", "3000-3009", "--out", str(second)])  # fmt: skip
    err = " ".join(capsys.readouterr().err.split())  # rich wraps lines at 80 columns
    assert code == 0, err
    won = sum(r["success"] for r in store.read_episodes(reactive_run))
    assert f"of {reactive_run} on 12 seeds (0 with an unreadable reply: left out)" in err
    assert f"{won} demonstrations ({won} won)" in err
    # the bar counts the replayed episodes trained on: the won ones
    assert re.search(rf"demonstrations em-anomaly [━ ]+ {won}/{won} ", err)
    record = models.read_record(second / "final")
    assert record["seeds"] == "2000-2011" and record["earlier_seeds"] == "1000-1001"
    assert record["demonstrations"] == str(reactive_run)
    for seeds in ("2005", "1001"):  # its own training seeds, and its starting model's
        with pytest.raises(SystemExit) as caught:
            main(["eval", "--env", "em-anomaly", "--agent", "llm", "--model", str(second / "final"),
                  "--seeds", seeds, "--out", str(tmp_path / "e")])  # fmt: skip
        assert caught.value.code != 0
        assert f"seeds {seeds}: {second / 'final'} was trained on them" in capsys.readouterr().err


def test_a_recorded_run_is_imitated_with_sft_and_replayed_as_it_was(
    tiny_dir, reactive_run, tmp_path, capsys
):
    base = ["train", "--env", "em-anomaly", "--model", str(tiny_dir), "--steps", "1",
            "--demonstrations", str(reactive_run), "--out", str(tmp_path / "x")]  # fmt: skip
    with pytest.raises(SystemExit):
        main(base)
    assert "--demonstrations does nothing with --method grpo; leave it out" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        main([*base, "--method", "sft", "--demonstration-noise", "0.2"])
    assert "recorded run's commands are replayed as they were" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--method", "sft", "--seeds", "5000-5009"])
    assert f"--demonstrations {reactive_run}: no episode on --seeds 5000-5009" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        main([*base, "--method", "sft", "--demonstrations", str(tmp_path)])
    assert "or 'textenvs eval' run folders, a comma list" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--method", "sft", "--clip", "0.5"])
    assert "give --reward-weighted too, or leave --clip out" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--method", "sft", "--kl-penalty", "0.1"])
    assert "give --reward-weighted too, or leave --kl-penalty out" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_several_runs_are_one_set_of_demonstrations(tiny_dir, reactive_run, tmp_path):
    """Rounds pooled: `--demonstrations RUN1,RUN2` replays both runs' episodes, run after
    run, and trains on (and so refuses at eval) the seeds of both."""
    other = tmp_path / "other"
    code = main(["eval", "--env", "em-anomaly", "--agent", "reactive", "--seeds", "2100-2102",
                 "--out", str(other)])  # fmt: skip
    assert code == 0
    pooled = f"{reactive_run},{other}"
    assert recorded_runs(pooled) == [reactive_run, other]
    assert recorded_runs(f"{reactive_run},{tmp_path / 'missing'}") == []
    episodes, unreadable = recorded_episodes(recorded_runs(pooled), "em-anomaly")
    assert unreadable == 0
    seeds = [e.spec.seed for e in episodes]  # each run's in the order it recorded them
    assert sorted(seeds[:12]) == [*range(2000, 2012)] and sorted(seeds[12:]) == [2100, 2101, 2102]
    settings = settings_from(
        env="em-anomaly", model=str(tiny_dir), seeds=None, eval_seeds="3000-3009",
        method="sft", demonstrations=pooled, steps=1,
    )  # fmt: skip
    assert settings.seeds == [*range(2000, 2012), *range(2100, 2103)]


@pytest.mark.slow
def test_reward_weighted_training_weighs_won_and_lost_episodes(
    tiny_dir, reactive_run, tmp_path, capsys
):
    base = ["train", "--method", "sft", "--env", "em-anomaly", "--model", str(tiny_dir),
            "--demonstrations", str(reactive_run), "--reward-weighted", "--history", "0",
            "--seeds-per-step", "2", "--eval-seeds", "3000-3009", "--save-every", "1",
            "--train-layers", "2"]  # fmt: skip
    run = tmp_path / "run"
    code = main([*base, "--steps", "1", "--out", str(run)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0, err
    assert "(0 with an unreadable reply: replayed as written)" in err
    assert "frozen beside the trained one" in err
    # the tiny model's 2 layers all train: nothing shared, and the line does not say so
    assert "only its layers above the frozen ones" not in err
    # a resumed run's model is its checkpoint's; it still measures against the starting
    # model, from which step 1 moved it (against the checkpoint, step 2's kl would be 0)
    code = main([*base, "--steps", "2", "--out", str(run), "--resume"])
    resumed = " ".join(capsys.readouterr().err.split())
    assert code == 0, resumed
    kl = re.search(r"step 2/2 +loss \S+ +kl ([0-9.e-]+)", resumed)
    assert kl is not None and float(kl.group(1)) > 0, resumed
    assert models.read_record(run / "final")["step"] == 2
    successes = [r["success"] for r in store.read_episodes(reactive_run)]
    won = sum(successes)
    lost = min(won, len(successes) - won)
    assert f"{won + lost} demonstrations ({won} won)" in err
    assert "else the runs' mean) is shared among its turns" in err
    assert "a won episode's turn weighs +" in err and "a lost one's -" in err
    assert models.read_record(run / "final")["reward_weighted"] is True
    for extra, said in [
        (["--only-success"], "--only-success on won ones alone: give one of them"),
        (["--demonstrations", "reactive", "--seeds", "1000-1003"], "'textenvs eval' run folders"),
    ]:
        with pytest.raises(SystemExit):
            main([*base, *extra, "--steps", "1", "--out", str(tmp_path / "refused")])
        assert said in capsys.readouterr().err
    assert not (tmp_path / "refused").exists()


@pytest.mark.slow
def test_a_reward_weighted_run_stops_after_the_step_that_drifts_past_target_kl(
    tiny_dir, reactive_run, tmp_path, capsys
):
    """The first step's weights are the sampling model's (its drift 0), so with any bound
    the run goes on; the second step's replies are read by a moved model and pass it.
    With --train-layers the reference is its top alone, fed the trained model's hidden
    states: it is still the starting model (were it the trained top, no drift)."""
    run = tmp_path / "run"
    code = main(["train", "--method", "sft", "--env", "em-anomaly", "--model", str(tiny_dir),
                 "--demonstrations", str(reactive_run), "--reward-weighted", "--history", "0",
                 "--seeds-per-step", "2", "--eval-seeds", "3000-3009", "--learning-rate", "1e-2",
                 "--target-kl", "1e-6", "--steps", "5", "--habit-share", "0.5",
                 "--train-layers", "1", "--out", str(run)])  # fmt: skip
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0, err
    assert "only its layers above the frozen ones" in err
    assert "note: --habit-share 0.5 trains only that share of the turns repeating" in err
    assert (
        "stopped after step 2 of 5: its approximate KL from the sampling model passed "
        "--target-kl 1e-06" in err
    )
    assert models.read_record(run / "final")["step"] == 2
    with pytest.raises(SystemExit):
        main(["train", "--method", "sft", "--env", "em-anomaly", "--model", str(tiny_dir),
              "--demonstrations", str(reactive_run), "--target-kl", "0.02", "--steps", "1",
              "--eval-seeds", "3000-3009", "--out", str(tmp_path / "refused")])  # fmt: skip
    assert "give --reward-weighted too" in capsys.readouterr().err


def sampled_reply(request):
    """A sampling policy on the OpenAI protocol: `mark` on a field of 2 or more, a step
    towards a higher reading beside it, else a direction drawn by the request's own seed,
    so each episode of a seed walks its own way."""
    observation = request.messages[-1]["content"]
    here = re.search(r"Field here:\s+(\d)", observation)
    if here is None:  # eval's preflight request
        return text("Action: north")
    if int(here.group(1)) >= 2:
        return text("Action: mark")
    rows = dict(re.findall(r"^ *(north|centre|south) +(.*)$", observation, re.MULTILINE))
    scan = {row: re.findall(r"[0-9#x]", cells) for row, cells in rows.items()}
    beside = {"north": scan["north"][1], "south": scan["south"][1], "west": scan["centre"][0],
              "east": scan["centre"][2]}  # fmt: skip
    higher = [way for way, cell in beside.items() if cell.isdigit() and cell > here.group(1)]
    way = higher[0] if higher else ("north", "south", "east", "west")[request.body["seed"] % 4]
    return text(f"Action: {way}")


@pytest.fixture(scope="module")
def sampled_run(tmp_path_factory):
    """`sampled_reply`'s episodes on seeds 2000-2011, four a seed."""
    sampled = tmp_path_factory.mktemp("sampled") / "run"
    with OpenAIServer(default=sampled_reply) as server:
        code = main(["eval", "--env", "em-anomaly", "--agent", "llm", "--model", "m",
                     "--base-url", server.base_url, "--history", "0", "--reasks", "0",
                     "--temperature", "1", "--llm-seed", "0", "--seeds", "2000-2011",
                     "--episodes-per-seed", "4", "--out", str(sampled)])  # fmt: skip
    assert code == 0
    return sampled


def test_turn_credit_trains_the_turns_that_changed_their_seeds_value(
    tiny_dir, sampled_run, tmp_path, capsys
):
    """A sampled run, four episodes a seed, trained with --credit turn: the turns that
    changed their seed's value are fed, the rest not, and the settings it needs are
    asked for in one line."""
    ends: dict[int, set[bool]] = {}
    for record in store.read_episodes(sampled_run):
        ends.setdefault(record["seed"], set()).add(record["success"])
    assert any(len(outcomes) == 2 for outcomes in ends.values())  # a seed won and lost
    base = ["train", "--method", "sft", "--env", "em-anomaly", "--model", str(tiny_dir),
            "--demonstrations", str(sampled_run), "--reward-weighted", "--credit", "turn",
            "--seeds-per-step", "2", "--eval-seeds", "3000-3009", "--train-layers", "1",
            "--steps", "1"]  # fmt: skip
    run = tmp_path / "run"
    code = main([*base, "--history", "0", "--out", str(run)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0, err
    changed = re.search(r"([0-9,]+) of the ([0-9,]+) turns changed it, ([0-9,]+) up", err)
    assert changed is not None, err
    fed, turns, up = (int(group.replace(",", "")) for group in changed.groups())
    assert 0 < up < fed < turns
    assert f"won), {fed:,} sequences," in err  # the turns fed, all and only
    assert models.read_record(run / "final")["credit"] == "turn"
    # --anchor-seeds: those seeds' episodes are anchors alone, one drawn a credited turn
    anchored = tmp_path / "anchored"
    anchoring = ["--history", "0", "--kl-penalty", "0.1", "--anchor-seeds", "2000-2003",
                 "--kl-anchors-only", "--target-kl", "5"]  # fmt: skip
    assert main([*base, *anchoring, "--out", str(anchored)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    changed = re.search(
        r"([0-9,]+) of the [0-9,]+ turns changed it, .*; ([0-9,]+) anchors drawn", err
    )
    assert changed is not None, err
    credited, anchors = (int(group.replace(",", "")) for group in changed.groups())
    assert 0 < credited < fed and anchors == credited  # the anchor seeds' turns not credited
    assert f"won), {credited + anchors:,} sequences," in err
    record = models.read_record(anchored / "final")
    assert [record["anchor_seeds"], record["kl_anchors_only"]] == ["2000-2003", True]
    for flags, said in [
        (
            ["--history", "0", "--anchor-seeds", "2000-2003"],
            "which only --credit lookahead or turn with --kl-penalty feeds",
        ),
        (
            ["--history", "0", "--kl-penalty", "0.1", "--kl-anchors-only"],
            "give them too, or leave it out",
        ),
        (
            [*anchoring[:4], "--anchor-seeds", "2000-2011"],
            "these are every training seed, so no turn is credited",
        ),
        ([], "give --history K and leave --habit-share out"),
        (["--history", "0", "--habit-share", "0.5"], "give --history K and leave --habit-share"),
    ]:
        with pytest.raises(SystemExit):
            main([*base, *flags, "--out", str(tmp_path / "refused")])
        assert said in " ".join(capsys.readouterr().err.split())
    without = [flag for flag in base if flag != "--reward-weighted"]
    with pytest.raises(SystemExit):
        main([*without, "--history", "0", "--out", str(tmp_path / "refused")])
    assert "give --reward-weighted too, or leave --credit out" in capsys.readouterr().err
    assert not (tmp_path / "refused").exists()


@pytest.mark.parametrize("credit", ["critic", "critic-gains", "lookahead"])
def test_critic_credit_feeds_the_turns_drawn_by_the_size_of_their_weight(
    tiny_dir, sampled_run, tmp_path, capsys, credit
):
    """--credit critic: every turn is weighed by a critic fit across seeds, and the run's
    steps x seeds-per-step turns are drawn by their weight's size and fed; critic-gains
    draws only the turns that raised the value (here with a wider clip and a kl penalty,
    which reach the trainer and the checkpoint's record), lookahead only the turns it
    relabels (with a kl penalty, half of them: the rest are anchors, turns not relabelled
    fed only for the penalty)."""
    run = tmp_path / "run"
    bounds = {
        "critic-gains": ["--clip", "1.0", "--kl-penalty", "0.1"],
        "lookahead": ["--kl-penalty", "0.1"],
    }.get(credit, [])
    argv = ["train", "--method", "sft", "--env", "em-anomaly", "--model", str(tiny_dir),
            "--demonstrations", str(sampled_run), "--reward-weighted", "--credit",
            credit, "--history", "0", "--seeds-per-step", "4", "--steps", "2",
            "--eval-seeds", "3000-3009", "--train-layers", "1", *bounds]  # fmt: skip
    code = main([*argv, "--out", str(run)])
    written = capsys.readouterr().err
    err = " ".join(written.split())
    assert code == 0, err
    # not a terminal: each line whole, not wrapped at 80 columns (a log is grepped)
    assert re.search(r"^\S.* turns drawn by the size of their weight: .*, each ", written, re.M)
    drawn = re.search(
        r"([0-9,]+) turns drawn by the size of their weight: (\d+) up, (\d+) down", err
    )
    assert drawn is not None, err
    fed, up, down = (int(group.replace(",", "")) for group in drawn.groups())
    assert fed == 8 and up + down == (4 if credit == "lookahead" else 8)
    assert down > 0 if credit == "critic" else down == 0
    if credit == "lookahead":
        relabelled = re.search(r"margin: ([0-9,]+) of the turns", err)
        assert relabelled is not None and int(relabelled.group(1).replace(",", "")) > 0, err
        assert "; 4 anchors (turns not relabelled, held by --kl-penalty)" in err
        # every turn replayed and its commands tried, in a bar (minutes for thousands)
        assert re.search(r"lookahead relabelling .*? (\d+)/\1 ", err), err
        # kept in the run folder: a resume reads them back instead of relabelling again
        kept = run / run_folder.RELABELS
        written = kept.stat().st_mtime_ns
        assert main([*argv, "--steps", "3", "--out", str(run), "--resume"]) == 0
        assert kept.stat().st_mtime_ns == written
        assert "step 3/3" in " ".join(capsys.readouterr().err.split())
        # its trained replies are not the model's: the drift is its anchors', which only
        # --kl-penalty draws
        unanchored = [arg for arg in argv if arg not in bounds]
        with pytest.raises(SystemExit):
            main([*unanchored, "--target-kl", "1", "--out", str(tmp_path / "refused")])
        refused = " ".join(capsys.readouterr().err.split())
        assert "give --kl-penalty too, or leave --target-kl out" in refused
        # --anchor-seeds: where the anchors are drawn, only where there are anchors
        for flags, said in [
            (["--anchor-seeds", "2000-2005"], "only --credit lookahead or turn with --kl-penalty"),
            (["--kl-anchors-only"], "--kl-anchors-only adds the penalty at the anchors alone"),
            (["--kl-penalty", "0.1", "--anchor-seeds", "9000"], "no episode trained on has one"),
        ]:
            with pytest.raises(SystemExit):
                main([*unanchored, *flags, "--out", str(tmp_path / "refused")])
            assert said in " ".join(capsys.readouterr().err.split())
        anchored = tmp_path / "anchored"
        anchored_argv = [*argv, "--anchor-seeds", "2000-2005", "--kl-anchors-only"]
        assert main([*anchored_argv, "--out", str(anchored)]) == 0
        assert "4 anchors (turns not relabelled, held by --kl-penalty, of --anchor-seeds'" in (
            " ".join(capsys.readouterr().err.split())
        )
        anchored_record = models.read_record(anchored / "final")
        assert anchored_record["anchor_seeds"] == "2000-2005"
        assert anchored_record["kl_anchors_only"] is True
        # with no anchors, the drift logged is the trained replies' (it read 0 at every step)
        assert main([*unanchored, "--out", str(tmp_path / "unanchored")]) == 0
        logged = " ".join(capsys.readouterr().err.split())
        kl = re.search(r"step 2/2 loss \S+ kl (\S+)", logged)
        assert kl is not None and float(kl.group(1)) > 0, logged
    assert "won), 8 sequences," in err
    # only the episodes holding a drawn turn were tokenized
    assert re.search(r"\d+ demonstrations of 48 \(those holding a turn drawn\)", err), err
    record = models.read_record(run / "final")
    assert record["credit"] == credit
    assert [record["clip"], record["kl_penalty"]] == {
        "critic-gains": [1.0, 0.1],
        "lookahead": [0.2, 0.1],
    }.get(credit, [0.2, 0.0])
