"""Learning-curve baselines of the withheld-knowledge variants (trial mode).

    python -m benchmarks.learning_baselines DIR

Runs (or, with their run folders already in DIR, resumes) `textenvs eval` for the
learner, the memoryless learner (`--trials 1`), the scripted agent where it plays the
variant, and the random agent, then prints the tables the scenario pages publish:
success (or score) by trial index with 95% Wilson intervals across groups, the slope
and the gain of the last trials over the first.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from textenvs.evals import run_folder, store
from textenvs.evals.learning import learning_curves
from textenvs.evals.metrics import mean

# (label, env, agent, seeds, trials): 200 groups of K trials each (1,000 / 2,000 seeds)
RUNS = (
    ("mf-learner", "magnetic-field", "learner", "0-999", 5),
    ("mf-memoryless", "magnetic-field", "learner", "0-999", 1),
    ("mf-random", "magnetic-field", "random", "0-999", 5),
    ("em-learner", "em-anomaly", "learner", "0-1999", 10),
    ("em-memoryless", "em-anomaly", "learner", "0-1999", 1),
    ("em-scripted", "em-anomaly", "scripted", "0-1999", 10),
    ("em-random", "em-anomaly", "random", "0-1999", 10),
)


def run(out: Path, env: str, agent: str, seeds: str, trials: int) -> None:
    command = ["textenvs", "eval", "--env", env, "--agent", agent, "--seeds", seeds, "--trials",
               str(trials), "--env-option", "withheld=true", "--out", str(out)]  # fmt: skip
    if (out / run_folder.CONFIG).exists():
        command.append("--resume")
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def table_row(label: str, out: Path) -> str:
    records = store.read_episodes(out)
    curve = learning_curves(records).get(records[0]["env"])
    if curve is None:  # memoryless: one episode per group, the same at every index
        rate = mean([float(r["success"]) for r in records])
        score = mean([float(r["return"]) for r in records])
        every = f"{rate:.1%} (score {score:.3f}) at every trial"
        return f"| {label} | {len(records)} x 1 | {every} | - | - |"
    cells = " / ".join(
        f"{t['success_rate']:.0%} [{t['success_ci95'][0]:.0%}, {t['success_ci95'][1]:.0%}]"
        for t in curve["by_trial"]
    )
    slope, gain, m = curve["slope"]["success"], curve["gain"]["success"], curve["gain"]["window"]
    bounds = lambda f: f"[{f['ci95'][0]:+.3f}, {f['ci95'][1]:+.3f}]"  # noqa: E731
    return (
        f"| {label} | {curve['groups']} x {curve['trials']} | {cells} | "
        f"{slope['mean']:+.3f} {bounds(slope)} | {gain['mean']:+.3f} {bounds(gain)} "
        f"(last {m} vs first {m}) |"
    )


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/learning")
    print("| run | groups x trials | success by trial [95% CI] | slope / trial | gain |")
    print("|---|---|---|---|---|")
    for label, env, agent, seeds, trials in RUNS:
        out = root / label
        run(out, env, agent, seeds, trials)
        print(table_row(label, out), flush=True)


if __name__ == "__main__":
    main()
