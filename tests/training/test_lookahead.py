"""`--credit lookahead`: each command tried from a replayed state, valued by the reward or
the critic, on real EM Anomaly episodes (the reactive agent's and random play's)."""

from __future__ import annotations

from pathlib import Path

import pytest

import textenvs
from benchmarks.support import tiny_model
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.cli import main
from textenvs.episodes.specs import EpisodeSpec
from textenvs.inference import models
from textenvs.inference.chat import ChatTokens
from textenvs.training import credit, lookahead
from textenvs.training.critic import Critic, fold_critics
from textenvs.training.demonstrations import (
    IGNORED,
    RecordedEpisode,
    recorded_episodes,
    replayed_demonstrations,
    reply_for,
)
from textenvs.training.settings import TrainSettings

ENV = "em-anomaly"


@pytest.fixture(scope="module")
def episodes(tmp_path_factory: pytest.TempPathFactory) -> list[RecordedEpisode]:
    """The reactive agent's and random play's episodes of seeds 0-23."""
    folder = tmp_path_factory.mktemp("runs")
    runs = []
    for agent in ("reactive", "random"):
        runs.append(folder / agent)
        argv = ["eval", "--env", ENV, "--agent", agent, "--seeds", "0-23", "--out", str(runs[-1])]
        assert main(argv) == 0
    return recorded_episodes(runs, ENV)[0]


@pytest.fixture(scope="module")
def critic(episodes: list[RecordedEpisode]) -> Critic:
    return next(fold_critics(episodes, "lookahead"))[0]


def replayed_env(episode: RecordedEpisode, turns: int) -> tuple[object, dict]:
    """A fresh env of `episode` after its first `turns` commands, and its last info."""
    env = textenvs.make(ENV)
    _, info = env.reset(seed=episode.spec.seed)
    for command in episode.commands[:turns]:
        info = env.step(command)[4]
    return env, info


def test_the_commands_tried_are_those_the_runs_play():
    def played(*commands: str) -> RecordedEpisode:
        return RecordedEpisode(EpisodeSpec(ENV, 0), commands, False, 0.0)

    # `mark` ends an episode: one turn of its 30, but played in one episode of 99
    runs = [played(*("north",) * 29, "mark"), *(played("north", "west") for _ in range(98))]
    assert lookahead.played_commands(runs) == ["mark", "north", "west"]
    runs += [played("west")] * 2  # 1 in 101 episodes
    assert lookahead.played_commands(runs) == ["north", "west"]


def test_a_command_is_worth_its_reward_where_it_ends_the_episode_else_where_it_leads(
    episodes, critic
):
    won = next(e for e in episodes if e.success and e.commands[-1] == "mark")
    last = len(won.commands) - 1
    env, _ = replayed_env(won, last)
    commands = ["north", "south", "east", "west", "mark"]
    values = lookahead.command_values(env, commands, critic)
    assert values[-1] == 1.0  # the winning mark
    for command, value in zip(commands[:-1], values[:-1], strict=True):
        # tried on a copy: the same as stepping a fresh replay of the episode
        fresh, _ = replayed_env(won, last)
        observation, _, ended, truncated, _ = fresh.step(command)
        assert not (ended or truncated)
        assert value == pytest.approx(critic.values([observation])[0])
    # the trials left the env where it was: the mark still wins
    assert env.step("mark")[1] == 1.0
    lost = next(e for e in episodes if not e.success and e.commands[-1] == "mark")
    env, _ = replayed_env(lost, len(lost.commands) - 1)
    assert lookahead.command_values(env, ["mark"], critic) == [0.0]


def test_a_turn_is_relabelled_only_where_the_lookahead_beats_the_command_played(episodes, critic):
    commands = lookahead.played_commands(episodes)
    relabels = 0
    for episode in episodes[::4]:
        relabelled, weights = lookahead.relabelled(episode, critic, commands)
        assert relabelled.commands == episode.commands
        assert len(relabelled.answers) == len(weights) == len(episode.commands)
        for turn, (answer, weight) in enumerate(zip(relabelled.answers, weights, strict=True)):
            if answer is None:
                assert weight == 0
                continue
            relabels += 1
            played = episode.commands[turn]
            assert answer in commands and answer != played and weight >= lookahead.MARGIN
            env, _ = replayed_env(episode, turn)
            values = lookahead.command_values(env, [answer, played], critic)
            assert values[0] - values[1] == pytest.approx(weight)
        if episode.success:  # the winning mark is worth 1: nothing beats it
            assert relabelled.answers[-1] is None
    assert relabels > 0


def test_every_episode_is_valued_by_the_critic_of_the_other_half(episodes):
    relabelled, weights = lookahead.lookahead_relabels(episodes)
    assert [e.spec for e in relabelled] == [e.spec for e in episodes]
    assert [len(w) for w in weights] == [len(e.commands) for e in episodes]
    assert sum(answer is not None for e in relabelled for answer in e.answers) > 0


def test_the_replayed_demonstration_trains_the_relabelled_command(episodes, tmp_path: Path):
    """A relabelled turn's sequence ends with the lookahead's reply, the episode goes on
    with the command played (and ends as recorded)."""
    relabelled, _ = lookahead.lookahead_relabels(episodes)
    episode = next(e for e in relabelled if any(e.answers))
    chat = ChatTokens(models.load(str(tiny_model.make(tmp_path / "m", ENV, ["north"], 0)))[1])
    settings = conversation_settings("text", 0, prompt_budget=4000, reasks=0, history=0)
    [shown] = replayed_demonstrations([episode], textenvs.make, settings, chat)
    assert len(shown.sequences) == len(episode.commands)
    for sequence, answer, played in zip(
        shown.sequences, episode.answers, episode.commands, strict=True
    ):
        reply = chat.decode([t for t in sequence.labels if t != IGNORED])
        assert reply.startswith(reply_for(answer or played))


def test_anchors_are_drawn_from_the_turns_not_relabelled_and_weigh_nothing():
    weights = [0.0, 0.3, 0.0, 0.0, 0.2]
    drawn = lookahead.anchor_draws(weights, 50, rng_seed=7)
    assert len(drawn) == 50 and {at for at, _ in drawn} == {0, 2, 3}
    assert {weight for _, weight in drawn} == {0.0}
    assert drawn == lookahead.anchor_draws(weights, 50, rng_seed=7)  # the same each run
    among = [True, True, False, True, True]  # --anchor-seeds: these turns' episodes alone
    assert {at for at, _ in lookahead.anchor_draws(weights, 50, 7, among)} == {0, 3}


def test_anchor_seeds_draw_the_anchors_from_those_seeds_episodes_alone(episodes):
    relabelled, weights = lookahead.lookahead_relabels(episodes)
    given = dict(
        env=ENV, model="m", steps=10, seeds=[], eval_seeds=[], method="sft",
        reward_weighted=True, credit="lookahead", kl_penalty=0.01, seeds_per_step=8,
    )  # fmt: skip
    fed, draws = credit.fed_choice(
        TrainSettings(**given, anchor_seeds=[0, 1, 2]), relabelled, weights
    )
    assert isinstance(draws, credit.Draws)
    anchored = {fed[at].spec.seed for at, _, weight in draws.turns if weight == 0}
    assert anchored == {0, 1, 2}
    relabelled_seeds = {fed[at].spec.seed for at, _, weight in draws.turns if weight > 0}
    assert relabelled_seeds - {0, 1, 2}  # the relabelled turns are drawn from every seed


def test_only_the_episodes_holding_a_drawn_turn_are_tokenized_and_the_same_rows_fed(
    episodes, tmp_path: Path
):
    """`fed_choice` + `weighted_columns` feed the rows that drawing over every episode's
    tokenized turns feeds: the relabelled turns drawn by their margin, the anchors."""
    relabelled, weights = lookahead.lookahead_relabels(episodes)
    settings = TrainSettings(
        env=ENV, model="m", steps=3, seeds=[], eval_seeds=[], method="sft",
        reward_weighted=True, credit="lookahead", kl_penalty=0.01, seeds_per_step=4,
    )  # fmt: skip
    fed, draws = credit.fed_choice(settings, relabelled, weights)
    assert isinstance(draws, credit.Draws) and len(draws.turns) == 12
    assert 0 < len(fed) < len(relabelled)
    chat = ChatTokens(models.load(str(tiny_model.make(tmp_path / "m", ENV, ["north"], 0)))[1])
    conversation = conversation_settings("text", 0, prompt_budget=4000, reasks=0, history=0)

    def columns(shown: list) -> dict:
        sequences = [sequence for d in shown for sequence in d.sequences]
        return {"ids": [s.ids for s in sequences], "labels": [s.labels for s in sequences]}

    every = replayed_demonstrations(relabelled, textenvs.make, conversation, chat)
    # the reactive agent's and random play's episodes share seeds: found by identity
    where = [next(n for n, e in enumerate(relabelled) if e is episode) for episode in fed]
    starts = [sum(len(e.commands) for e in relabelled[:n]) for n in range(len(relabelled))]
    rows = [starts[where[at]] + turn for at, turn, _ in draws.turns]
    expected = {name: [column[row] for row in rows] for name, column in columns(every).items()}
    shown = replayed_demonstrations(fed, textenvs.make, conversation, chat)
    got = credit.weighted_columns(columns(shown), draws, shown)
    assert {name: got[name] for name in expected} == expected
    anchors = [weight for weight in got["weight"] if weight == 0]
    assert len(anchors) == 6  # half the draws, with --kl-penalty
    assert all(
        weights[relabelled.index(fed[at])][turn] == 0 for at, turn, w in draws.turns if w == 0
    )


def test_the_relabels_are_kept_for_a_resume_and_read_back_only_for_the_same_episodes(
    episodes, tmp_path: Path
):
    kept_in = tmp_path / "relabels.json"
    first = lookahead.lookahead_relabels(episodes, kept_in=kept_in)
    seen: list[int] = []
    again = lookahead.lookahead_relabels(episodes, lambda done, _: seen.append(done), kept_in)
    assert again == first and seen == [len(episodes)]  # read back at once, none replayed
    fewer = episodes[:-1]  # another set of episodes: relabelled again, and kept instead
    redone = lookahead.lookahead_relabels(fewer, lambda done, _: seen.append(done), kept_in)
    assert seen[1:] == list(range(1, len(fewer) + 1))
    assert lookahead.kept_relabels(kept_in, episodes) is None
    assert lookahead.kept_relabels(kept_in, fewer) == redone
