"""The names of the files in a run folder, said once: every module that writes or reads
a run's files takes their names from here.

An eval run (`textenvs eval --out DIR`; written by `store.py`, crash-safe and resumable):

```
DIR/config.json          everything needed to rerun (written atomically)
DIR/episodes.jsonl       one JSON line per finished episode, appended + flushed + fsynced
DIR/trajectories/<env>-<seed>-<episode>.json   every turn of that episode
DIR/summary.json         per-env statistics (written atomically)
DIR/dropped.jsonl        lines a resume took out of episodes.jsonl (retried errors, duplicates,
                         the trials of a trial group that did not finish)
DIR/.lock                the advisory lock of the process writing the run
```

A training run (`textenvs train --out OUT`; written by `textenvs.training`):

```
OUT/settings.json        the run's settings (a resume must give the same)
OUT/checkpoints/checkpoint-N/   the trainer's checkpoints, to resume from
OUT/base/, OUT/final/    the starting and the trained model, each a transformers directory
                         with its training record (`textenvs.inference.models.RECORD_FILE`)
OUT/curve.csv            one row per optimizer step
OUT/figures/             the curve's charts (SVG and PDF)
OUT/relabels.json        --credit lookahead: each turn's relabelled command and weight,
                         for --resume (the episodes' fingerprint says whose)
```
"""

from __future__ import annotations

# an eval run
CONFIG = "config.json"
EPISODES = "episodes.jsonl"
TRAJECTORIES = "trajectories"
SUMMARY = "summary.json"
DROPPED = "dropped.jsonl"
LOCK = ".lock"

# a training run
SETTINGS = "settings.json"
CHECKPOINTS = "checkpoints"
BASE = "base"
FINAL = "final"
CURVE = "curve.csv"
FIGURES = "figures"
RELABELS = "relabels.json"
