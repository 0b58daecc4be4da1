"""Learning curves of trial-mode runs (`--trials K`): does the agent do better in its
later episodes of a group than in its first?

Only complete groups count (all K trials recorded, none an agent error): a group is the
unit of measurement, so every trial index averages over the same groups. Groups are
independent (their own agent, seeds and conversation); the trials within one are not.
So every interval is taken across groups:

- per trial index t: the success rate with its 95% Wilson interval (one episode per
  group at each t) and the mean return with a 95% normal interval;
- the slope: each group's least-squares slope of success (and of return) on the trial
  index, averaged over groups (equal to the slope through the per-trial means), with a
  95% normal interval from the groups' spread; units per trial;
- the gain: each group's mean over its last m trials minus its mean over its first m
  (m = K // 3, at least 1), averaged over groups, with a 95% normal interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from textenvs.episodes.protocol import AGENT_ERROR
from textenvs.evals.metrics import Z95, Record, mean, stderr, wilson

GroupId = tuple[str, int, int]  # (env, episode index, seed of the first trial)


def trial_groups(records: Iterable[Record]) -> dict[str, list[list[Record]]]:
    """Per env, the complete groups without agent errors, each in trial order."""
    groups: dict[GroupId, dict[int, Record]] = {}
    for r in records:
        if "trial" in r:
            gid = (str(r["env"]), int(r.get("episode", 0)), int(r["group"]))
            groups.setdefault(gid, {})[int(r["trial"])] = r
    out: dict[str, list[list[Record]]] = {}
    for gid in sorted(groups):
        trials = groups[gid]
        k = int(next(iter(trials.values()))["trials"])
        complete = sorted(trials) == list(range(1, k + 1))
        if complete and all(r["outcome"] != AGENT_ERROR for r in trials.values()):
            out.setdefault(gid[0], []).append([trials[t] for t in range(1, k + 1)])
    return out


def slope(values: Sequence[float]) -> float:
    """The least-squares slope of `values` on 1, 2, ..., n (0 below two values)."""
    n = len(values)
    if n < 2:
        return 0.0
    x_mean = (n + 1) / 2
    sxx = sum((x - x_mean) ** 2 for x in range(1, n + 1))
    return sum((x - x_mean) * v for x, v in zip(range(1, n + 1), values, strict=True)) / sxx


def _interval(values: Sequence[float]) -> dict[str, Any]:
    """Mean over groups with its 95% normal interval (None below two groups)."""
    m = mean(values)
    if len(values) < 2:
        return {"mean": m, "ci95": None}
    half = Z95 * stderr(values)
    return {"mean": m, "ci95": [m - half, m + half]}


def curve(groups: list[list[Record]]) -> dict[str, Any]:
    """The learning curve of one scenario's complete groups (all of one size K)."""
    k = len(groups[0])
    success = [[float(bool(r["success"])) for r in g] for g in groups]
    returns = [[float(r["return"]) for r in g] for g in groups]
    by_trial = []
    for t in range(k):
        wins = int(sum(s[t] for s in success))
        ret = _interval([r[t] for r in returns])
        by_trial.append(
            {
                "trial": t + 1,
                "success_rate": wins / len(groups),
                "success_ci95": list(wilson(wins, len(groups))),
                "mean_return": ret["mean"],
                "return_ci95": ret["ci95"],
            }
        )
    m = max(1, k // 3)
    return {
        "trials": k,
        "groups": len(groups),
        "by_trial": by_trial,
        "slope": {
            "success": _interval([slope(s) for s in success]),
            "return": _interval([slope(r) for r in returns]),
        },
        "gain": {
            "window": m,
            "success": _interval([mean(s[-m:]) - mean(s[:m]) for s in success]),
            "return": _interval([mean(r[-m:]) - mean(r[:m]) for r in returns]),
        },
    }


def learning_curves(records: Iterable[Record]) -> dict[str, dict[str, Any]]:
    """`{env: curve}` for the trial-mode records among `records` ({} for a run without
    trials; a run has one group size)."""
    return {env: curve(groups) for env, groups in trial_groups(records).items()}
