"""Does a model read EM Anomaly's observation? Counted from its runs' transcripts.

    python -m benchmarks.reading_counts runs/em-sft runs/em-dart

Replays each episode of each `textenvs eval` run folder (the same seed and commands give
the same states) and, on every state the run reached, asks the reactive agent
(`agents/scripted/reactive.py`, which reads only that observation) what it would do and
why: MARK (the field here reads 2-3), CLIMB (towards a higher reading), STRAIGHT (on
in the facing direction) or TURN (away from a wall ahead). Prints for each run: episodes
won, the commands it played, how many of its observations after the first report its
last move BLOCKED, its marks on a tile reading 2-3, and how often it chose the reactive
agent's command, by that reason. A run that reads agrees on TURN and CLIMB, not only on
STRAIGHT.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import textenvs
from textenvs.agents.scripted.reactive import em_anomaly_decision
from textenvs.evals import store

ENV = "em-anomaly"


def counts(run: Path) -> dict[str, Counter[str]]:
    """The run's counts: 'commands', 'agree' and 'states' (by reason), and 'totals'."""
    env = textenvs.make(ENV)
    tally: dict[str, Counter[str]] = {n: Counter() for n in ("commands", "agree", "states")}
    totals: Counter[str] = Counter()
    for record in store.read_episodes(run):
        if record["env"] != ENV:
            continue
        turns = store.read_turns(run, record)
        _, info = env.reset(seed=record["seed"])
        totals["episodes"] += 1
        totals["won"] += bool(record["success"])
        for number, turn in enumerate(turns):
            observation = info["observation"]
            answer, reason = em_anomaly_decision(observation)
            command = "" if turn["invalid_action"] else turn["command"]
            tally["commands"][command or "(unreadable)"] += 1
            tally["states"][reason] += 1
            tally["agree"][reason] += command == answer
            if number > 0:
                totals["observations"] += 1
                totals["blocked"] += observation["last_result"].startswith("blocked")
            if command == "mark":
                totals["marks"] += 1
                totals["marks_on_2_3"] += observation["view"][1][1] >= 2
            info = env.step(turn["command"] or "")[4]  # an unreadable reply spends a step too
    tally["totals"] = totals
    return tally


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run folders of `textenvs eval`")
    args = p.parse_args(argv)
    for run in args.runs:
        tally = counts(run)
        totals = tally["totals"]
        played = ", ".join(f"{c} {n}" for c, n in tally["commands"].most_common())
        agree = ", ".join(
            f"{reason} {tally['agree'][reason]} of {tally['states'][reason]}"
            for reason in ("mark", "climb", "straight", "turn")
        )
        print(
            f"{run}: won {totals['won']} of {totals['episodes']}; commands: {played}\n"
            f"  BLOCKED after {totals['blocked']} of {totals['observations']} observations; "
            f"marks on 2-3: {totals['marks_on_2_3']} of {totals['marks']}\n"
            f"  the reactive agent's command, by its reason: {agree}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
