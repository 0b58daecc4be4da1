"""textenvs as a verifiers environment module (`vf-install textenvs-env`, then
`vf-eval textenvs-env -a '{"env": "treasure-hunt", "seeds": "0-49"}'`).

One dataset row is one episode (scenario, seed); every request is built as `textenvs
eval --agent llm` builds it. The arguments are those of
`textenvs.adapters.verifiers.load_environment`.
"""

from __future__ import annotations

from typing import Any

from textenvs.adapters.verifiers import TextenvsEnv
from textenvs.adapters.verifiers import load_environment as _load


def load_environment(
    env: str = "all",
    seeds: str = "0-99",
    eval_seeds: str | None = "1000-1019",
    **kwargs: Any,
) -> TextenvsEnv:
    """Scenarios `env` ("all", a name, or a comma list) on training `seeds`, evaluated on
    `eval_seeds` (seeds not trained on; None: the training seeds)."""
    return _load(env=env, seeds=seeds, eval_seeds=eval_seeds, **kwargs)
