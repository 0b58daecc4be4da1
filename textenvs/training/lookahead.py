"""Relabelling by the critic's one-step lookahead (`--reward-weighted --credit lookahead`).

`--credit critic-gains` pushes up a command the model played where the critic saw its
value rise, so it teaches only what the model already did: at SmolLM2's EM Anomaly
states where the reactive agent would climb, the model climbed on a quarter, and the
other three quarters taught nothing. Here each recorded turn is replayed in the scenario
and every command the model plays is tried from it, on a copy of the env: a command's
value is the reward where it ends the episode, else the critic's value of the observation
it leads to (the critic fit on the other half of the seeds, `critic.fold_critics`: only
the runs' own success teaches it). Where the best of them beats the command played by
`MARGIN` or more, the turn is trained on the best one instead, weighing its margin; the
other turns are not fed. This is one step of policy improvement by lookahead in the
environment (expert iteration's "expert" is the lookahead, the apprentice the model), the
model's own states the ones relabelled; no demonstrator's choice is read.

Measured on SFT's 512 sampled EM Anomaly episodes (2026-11-30, `python -m
benchmarks.reading_counts --credit lookahead`): 518 of their 14,347 turns are
relabelled, 460 at states where the reactive agent would climb (401 of them to its
climb) and 58 elsewhere (0.4% of those turns: the critic's values of ordinary moves
differ by about 0.02).
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import textenvs
from textenvs.evals import store
from textenvs.training.critic import Critic, fold_critics
from textenvs.training.demonstrations import RecordedEpisode

#: how much a command must be worth above the one played (a tenth of a win) to replace it
MARGIN = 0.1
#: the share of the recorded episodes a command must be played in to be tried: the
#: commands the sampling model plays (SmolLM2's EM Anomaly runs: the four moves and
#: `mark`, which ends an episode and so is under 1% of the turns)
PLAYED_SHARE = 0.01
#: with --kl-penalty, the share of the drawn turns that are anchors (`anchor_draws`)
ANCHOR_SHARE = 0.5


def played_commands(episodes: Sequence[RecordedEpisode]) -> list[str]:
    """The commands played in at least `PLAYED_SHARE` of the episodes, sorted."""
    counts = Counter(
        command for episode in episodes for command in set(episode.commands) if command
    )
    least = PLAYED_SHARE * len(episodes)
    return sorted(command for command, count in counts.items() if count >= least)


def command_values(env: Any, commands: Sequence[str], critic: Critic) -> list[float]:
    """Each command's value from `env`'s state, tried on a copy of it: the reward where it
    ends the episode, else the critic's value of the observation it leads to."""
    outcomes = []
    for command in commands:
        observation, reward, terminated, truncated, _ = copy.deepcopy(env).step(command)
        outcomes.append((observation, float(reward), terminated or truncated))
    values = critic.values([observation for observation, _, _ in outcomes])
    return [
        reward if ended else value
        for (_, reward, ended), value in zip(outcomes, values, strict=True)
    ]


def best_command(values: Sequence[float], commands: Sequence[str]) -> int:
    """Where among `commands` (the first of `values`) the most is worth; ties: the first."""
    return max(range(len(commands)), key=values.__getitem__)


def relabelled(
    episode: RecordedEpisode, critic: Critic, commands: Sequence[str]
) -> tuple[RecordedEpisode, list[float]]:
    """`episode` with its relabelled turns' answers, and each turn's weight (its margin
    where relabelled, else 0)."""
    env = textenvs.make(episode.spec.env)
    try:
        env.reset(seed=episode.spec.seed, options=episode.spec.options)
        answers: list[str | None] = []
        weights: list[float] = []
        for played in episode.commands:
            played = played or ""  # an unreadable reply spends the step too
            values = command_values(env, [*commands, played], critic)
            best = best_command(values, commands)
            margin = values[best] - values[-1]
            relabel = margin >= MARGIN and commands[best] != played
            answers.append(commands[best] if relabel else None)
            weights.append(margin if relabel else 0.0)
            env.step(played)
    finally:
        env.close()
    return replace(episode, answers=tuple(answers)), weights


def lookahead_relabels(
    episodes: Sequence[RecordedEpisode],
    on_episode: Callable[[int, int], Any] | None = None,
    kept_in: Path | None = None,
) -> tuple[list[RecordedEpisode], list[list[float]]]:
    """Every episode with its relabelled turns (`RecordedEpisode.answers`) and a weight
    for each turn, valued by the critic fit on the other half of the seeds; `on_episode`
    is told how many are done, of how many (minutes for thousands). With `kept_in` (a
    run's relabels file) they are read from it where it holds these episodes' (a
    `--resume`), else written there once worked out."""
    if kept_in is not None and (kept := kept_relabels(kept_in, episodes)) is not None:
        if on_episode is not None:
            on_episode(len(episodes), len(episodes))
        return kept
    commands = played_commands(episodes)
    found: dict[int, tuple[RecordedEpisode, list[float]]] = {}
    for critic, valued in fold_critics(episodes, "lookahead"):
        for at in valued:
            found[at] = relabelled(episodes[at], critic, commands)
            if on_episode is not None:
                on_episode(len(found), len(episodes))
    ordered = [found[at] for at in range(len(episodes))]
    if kept_in is not None:
        store.write_json_atomic(
            kept_in,
            {
                "margin": MARGIN,
                "episodes": episodes_digest(episodes),
                "answers": [episode.answers for episode, _ in ordered],
                "weights": [weights for _, weights in ordered],
            },
        )
    return [episode for episode, _ in ordered], [weights for _, weights in ordered]


def kept_relabels(
    path: Path, episodes: Sequence[RecordedEpisode]
) -> tuple[list[RecordedEpisode], list[list[float]]] | None:
    """The relabels `lookahead_relabels` kept at `path` for `episodes`, in their order;
    None where there are none, or they are another set of episodes' or margin's."""
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if (kept.get("margin"), kept.get("episodes")) != (MARGIN, episodes_digest(episodes)):
        return None
    return (
        [
            replace(episode, answers=tuple(answers))
            for episode, answers in zip(episodes, kept["answers"], strict=True)
        ],
        kept["weights"],
    )


def episodes_digest(episodes: Sequence[RecordedEpisode]) -> str:
    """A fingerprint of the episodes relabelled: each one's seed, options and commands,
    in order (a seed's episodes differ only in their commands)."""
    played = [[episode.spec.id, episode.spec.options, episode.commands] for episode in episodes]
    return hashlib.sha256(json.dumps(played, sort_keys=True).encode()).hexdigest()


def anchor_draws(
    weights: Sequence[float], count: int, rng_seed: int, among: Sequence[bool] | None = None
) -> list[tuple[int, float]]:
    """`count` of the turns not relabelled (weight 0; with `among`, of those it marks),
    drawn uniformly with replacement, each weighing 0: no policy gradient there, only
    `--kl-penalty`'s pull towards the sampling model. A push at the relabelled states
    moves the others too (the model cannot yet tell them apart: three steps of it took
    SmolLM2's turn at a wall from 0.86 to 0.51), and these hold them."""
    unlabelled = [
        at for at, weight in enumerate(weights) if weight == 0 and (among is None or among[at])
    ]
    return [(at, 0.0) for at in random.Random(rng_seed).choices(unlabelled, k=count)]
