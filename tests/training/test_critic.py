"""--credit critic: a critic fit across seeds on the observations' words values each
turn's observation; a turn weighs the change its command made in that value."""

from __future__ import annotations

import pytest

from textenvs.core.env import INVALID_COMMAND, VALID_COMMANDS
from textenvs.episodes.specs import EpisodeSpec
from textenvs.scenarios.em_anomaly.env import EMAnomalyEnv
from textenvs.training.critic import Critic, critic_value_changes, drawn_by_weight, features
from textenvs.training.demonstrations import RecordedEpisode

FAR = "Field here:  0\nSteps left: 30"
NEAR = "Field here:  2\nSteps left: 29"
STILL = "Field here:  0\nSteps left: 29"
REPORTS = EMAnomalyEnv.report_lines


def climbs_and_wanders(seeds: range) -> list[RecordedEpisode]:
    """Two episodes a seed, both opening far from the node: one steps where the field
    reads 2 and wins, the other stays where it reads 0 and loses."""
    return [
        RecordedEpisode(EpisodeSpec("em-anomaly", seed), ("north", "mark"), won, float(won),
                        observations=(FAR, NEAR if won else STILL))
        for seed in seeds
        for won in (True, False)
    ]  # fmt: skip


def test_words_are_features_with_their_line_and_place():
    assert features("Field here:  2\nnorth 0 1 #", REPORTS) == {
        "Field:0:Field", "Field:1:here:", "Field:2:2",
        "north:0:north", "north:1:0", "north:2:1", "north:3:#",
    }  # fmt: skip


def test_the_report_of_the_last_command_is_not_read():
    """A command earns credit by where it led: the notice after an unreadable reply and
    the report of the last action are not features, and the notice moves no line."""
    shown = "Field here:  2\nnorth 0 1 #"
    after_unreadable = f"{INVALID_COMMAND} 'wheels' is not a command\n{VALID_COMMANDS} north\n\n"
    report = "\nLast action: north: BLOCKED, an insulating wall"
    assert features(after_unreadable + shown + report, REPORTS) == features(shown, REPORTS)


def test_the_climb_that_won_is_drawn_up_and_each_episode_sums_to_its_credit():
    episodes = climbs_and_wanders(range(2000, 2040))
    critic = Critic(episodes, REPORTS)
    near, still = critic.values([NEAR, STILL])
    assert near > 0.9 and still < 0.1  # the reading is what tells them apart
    chosen, weights = critic_value_changes(episodes)
    assert chosen == episodes
    won, lost = weights[0], weights[1]
    assert won[0] > 0.3  # stepping onto a 2: drawn up
    assert abs(lost[0]) < won[0] and lost[1] < 0  # staying at 0, then a wrong mark
    for episode, turns in zip(chosen, weights, strict=True):
        first = critic.values([episode.observations[0]])[0]
        assert sum(turns) == pytest.approx(episode.success - first, abs=0.05)


def test_the_critic_needs_won_and_lost_episodes_in_each_half_of_the_seeds():
    lost_only = [e for e in climbs_and_wanders(range(2000, 2010)) if not e.success]
    with pytest.raises(ValueError, match="each half of the seeds needs won and lost"):
        critic_value_changes(lost_only)
    bare = RecordedEpisode(EpisodeSpec("em-anomaly", 1), ("north",), False, 0.0)
    with pytest.raises(ValueError, match="recorded without its observations"):
        critic_value_changes([bare])


def test_turns_are_drawn_by_the_size_of_their_weight():
    drawn = drawn_by_weight([0.3, -0.1, 0.0], 4000, rng_seed=0)
    assert len(drawn) == 4000
    places = [at for at, _ in drawn]
    assert 2 not in places  # a turn that changed nothing is never fed
    assert places.count(0) / places.count(1) == pytest.approx(3, rel=0.15)
    expected = [0.4 / 3 if at == 0 else -0.4 / 3 for at in places]  # the mean size, signed
    assert [weight for _, weight in drawn] == pytest.approx(expected)
    assert drawn == drawn_by_weight([0.3, -0.1, 0.0], 4000, rng_seed=0)
