"""Does a model read EM Anomaly's observation? Counted from its runs' transcripts.

    python -m benchmarks.reading_counts runs/em-sft runs/em-dart

Replays each episode of each `textenvs eval` run folder (the same seed and commands give
the same states) and, on every state the run reached, asks the reactive agent
(`agents/scripted/reactive.py`, which reads only that observation) what it would do and
why: MARK (the field here reads 2-3), CLIMB (towards a higher reading), STRAIGHT (on
in the facing direction) or TURN (away from a wall ahead). Prints for each run: episodes
won, the commands it played, how many of its observations after the first report its
last move BLOCKED, how many of its moves went into a wall or the lab's edge that the scan
showed beside it (a bump read from the observation it answered), how many of its episodes
ever showed a reading above 0 and how many of those it won (where it lost: finding the
field, or climbing it), its marks on a tile reading 2-3, and how often it chose the
reactive agent's command, by that reason. A run that reads agrees on TURN and CLIMB, not
only on STRAIGHT.

    python -m benchmarks.reading_counts --won-and-lost runs/or1-play runs/or2-play

counts, on the seeds the runs together both won and lost (sampled with
`--episodes-per-seed K`), the won episodes and the lost ones apart: what
`train --reward-weighted` draws up and pushes down on those seeds.

    python -m benchmarks.reading_counts --credit turn runs/or4-play

sums, by the reactive agent's reason and by whether the run's command was the reactive
agent's, the weights `train --reward-weighted --credit episode|turn|critic|critic-gains`
would give the runs' turns: which readings a round on them would draw up and which it
would push down, before it is trained. With `--credit lookahead`, the command counted is
the one a turn is trained on (the lookahead's, where it relabels one).
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import textenvs
from textenvs.agents.opening import opening_turn
from textenvs.agents.scripted.reactive import SIDE, em_anomaly_decision
from textenvs.evals import store
from textenvs.training.choices import CRITIC_CREDITS, DRAWN_CREDITS, PER_TURN_CREDITS
from textenvs.training.credit import drawing_weight
from textenvs.training.critic import critic_value_changes
from textenvs.training.demonstrations import RecordedEpisode, recorded_episodes
from textenvs.training.lookahead import lookahead_relabels
from textenvs.training.weighting import seed_relative, seed_value_changes, turn_weights

ENV = "em-anomaly"


Episode = tuple[Path, dict[str, Any]]  # a run folder and one of its episode records


def episodes_of(run: Path) -> list[Episode]:
    return [(run, record) for record in store.read_episodes(run) if record["env"] == ENV]


def counts(run: Path) -> dict[str, Counter[str]]:
    """The run's counts: 'commands', 'agree' and 'states' (by reason), and 'totals'."""
    return episode_counts(episodes_of(run))


def won_and_lost(episodes: Sequence[Episode]) -> tuple[list[Episode], list[Episode], int]:
    """Of the seeds both won and lost in `episodes`: the won episodes, the lost ones, and
    how many such seeds."""
    by_seed: dict[int, list[Episode]] = defaultdict(list)
    for episode in episodes:
        by_seed[episode[1]["seed"]].append(episode)
    mixed = [
        group
        for group in by_seed.values()
        if len({bool(record["success"]) for _, record in group}) == 2
    ]
    plays = [episode for group in mixed for episode in group]
    won = [episode for episode in plays if episode[1]["success"]]
    return won, [episode for episode in plays if not episode[1]["success"]], len(mixed)


def replayed_observations(
    env: Any, seed: int, commands: Sequence[str | None]
) -> Iterator[dict[str, Any]]:
    """The observation (its data form) each of an episode's commands answered, the episode
    replayed in `env` (the same seed and commands give the same states)."""
    _, info = env.reset(seed=seed)
    for command in commands:
        yield info["observation"]
        info = env.step(command or "")[4]  # an unreadable reply spends a step too


def episode_counts(episodes: Sequence[Episode]) -> dict[str, Counter[str]]:
    """The episodes' counts: 'commands', 'agree' and 'states' (by reason), and 'totals'."""
    env = textenvs.make(ENV)
    counted: dict[str, Counter[str]] = {n: Counter() for n in ("commands", "agree", "states")}
    totals: Counter[str] = Counter()
    for run, record in episodes:
        turns = store.read_turns(run, record)
        observations = replayed_observations(env, record["seed"], [t["command"] for t in turns])
        totals["episodes"] += 1
        totals["won"] += bool(record["success"])
        field_shown = False
        for number, (turn, observation) in enumerate(zip(turns, observations, strict=True)):
            field_shown = field_shown or field_above_zero(observation)
            if opening_turn(turn):  # `eval --openings`: not the agent's choice
                continue
            answer, reason = em_anomaly_decision(observation)
            command = store.command_read(turn) or ""
            counted["commands"][command or "(unreadable)"] += 1
            counted["states"][reason] += 1
            counted["agree"][reason] += command == answer
            if command in SIDE:
                row, column = SIDE[command]
                totals["moves"] += 1
                totals["moves_into_shown_wall"] += not isinstance(
                    observation["view"][row][column], int
                )
            if number > 0:
                totals["observations"] += 1
                totals["blocked"] += observation["last_result"].startswith("blocked")
            if command == "mark":
                totals["marks"] += 1
                totals["marks_on_2_3"] += observation["view"][1][1] >= 2
        totals["field_shown"] += field_shown
        totals["field_shown_won"] += field_shown and bool(record["success"])
    counted["totals"] = totals
    return counted


def field_above_zero(observation: dict[str, Any]) -> bool:
    """Whether any tile of the observation's 3x3 scan reads above 0."""
    return any(isinstance(value, int) and value > 0 for row in observation["view"] for value in row)


Weighed = Counter[tuple[str, bool]]  # by (the reactive agent's reason, its command played)


def credit_by_reading(
    runs: Sequence[Path], credit: str
) -> tuple[Weighed, Weighed, list[RecordedEpisode]]:
    """The weights `--credit` gives the runs' turns, summed by the reactive agent's reason
    and by whether the turn's command was its; how many turns weighed something, so
    summed; and the episodes weighed."""
    episodes, _ = recorded_episodes(runs, ENV, keep_unreadable=True)
    if credit == "turn":
        chosen, weights = seed_value_changes(episodes)
    elif credit in CRITIC_CREDITS:
        chosen, weights = critic_value_changes(episodes)
        weights = [[drawing_weight(credit, weight) for weight in turns] for turns in weights]
    elif credit == "lookahead":
        chosen, weights = lookahead_relabels(episodes)
    else:
        chosen, shared = seed_relative(episodes)
        weights = turn_weights(shared, [len(episode.commands) for episode in chosen])
    env = textenvs.make(ENV)
    net: Weighed = Counter()
    turns: Weighed = Counter()
    for episode, episode_weights in zip(chosen, weights, strict=True):
        observations = replayed_observations(env, episode.spec.seed, episode.commands)
        # the command each turn is trained on: the one relabelled, or the one played
        answers = episode.answers or (None,) * len(episode.commands)
        trained = [a or c for a, c in zip(answers, episode.commands, strict=True)]
        for command, weight, observation in zip(
            trained, episode_weights, observations, strict=True
        ):
            answer, reason = em_anomaly_decision(observation)
            if weight:
                net[reason, command == answer] += weight
                turns[reason, command == answer] += 1
    return net, turns, chosen


def credit_described(
    credit: str, net: Weighed, turns: Weighed, chosen: list[RecordedEpisode]
) -> str:
    lines = [
        f"{credit} credit on {len({e.spec.seed for e in chosen})} seeds"
        f"{'' if credit in DRAWN_CREDITS else ' both won and lost'}: "
        f"{sum(turns.values()):,} of their {sum(len(e.commands) for e in chosen):,} turns "
        "weighed; net weight by the reactive agent's reason"
    ]
    for reason in ("mark", "climb", "straight", "turn"):
        own, other = (reason, True), (reason, False)
        lines.append(
            f"  {reason}: its command {net[own]:+.2f} over {turns[own]} turns, another "
            f"{net[other]:+.2f} over {turns[other]}"
        )
    return "\n".join(lines)


def described(name: str, counted: dict[str, Counter[str]]) -> str:
    totals = counted["totals"]
    played = ", ".join(f"{c} {n}" for c, n in counted["commands"].most_common())
    agree = ", ".join(
        f"{reason} {counted['agree'][reason]} of {counted['states'][reason]}"
        for reason in ("mark", "climb", "straight", "turn")
    )
    return (
        f"{name}: won {totals['won']} of {totals['episodes']}; commands: {played}\n"
        f"  BLOCKED after {totals['blocked']} of {totals['observations']} observations; "
        f"moves into a wall the scan showed: {totals['moves_into_shown_wall']} of "
        f"{totals['moves']}; marks on 2-3: {totals['marks_on_2_3']} of {totals['marks']}\n"
        f"  episodes showing a reading above 0: {totals['field_shown']} "
        f"(won {totals['field_shown_won']})\n"
        f"  the reactive agent's command, by its reason: {agree}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run folders of `textenvs eval`")
    p.add_argument(
        "--won-and-lost",
        action="store_true",
        help="the runs together, on the seeds they both won and lost: won and lost "
        "episodes counted apart",
    )
    p.add_argument(
        "--credit",
        choices=("episode", *PER_TURN_CREDITS),
        help="the runs together: the weights train --reward-weighted --credit would give "
        "their turns, summed by the reactive agent's reason",
    )
    args = p.parse_args(argv)
    for run in args.runs:
        if not (run / store.EPISODES).is_file():
            p.error(f"{run} is not a `textenvs eval` run folder (it has no {store.EPISODES})")
    if args.credit:
        try:
            print(credit_described(args.credit, *credit_by_reading(args.runs, args.credit)))
        except ValueError as exc:  # no seed both won and lost
            p.error(str(exc).splitlines()[0])
        return 0
    if not args.won_and_lost:
        for run in args.runs:
            print(described(str(run), counts(run)))
        return 0
    won, lost, seeds = won_and_lost([e for run in args.runs for e in episodes_of(run)])
    print(f"{seeds} seeds both won and lost")
    print(described("their won episodes", episode_counts(won)))
    print(described("their lost episodes", episode_counts(lost)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
