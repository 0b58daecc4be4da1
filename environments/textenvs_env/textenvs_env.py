"""textenvs as a verifiers environment module: `pip install ./environments/textenvs_env`,
then `eval textenvs-env --env.taskset.env treasure-hunt --env.taskset.split eval ...`
(`vf-eval` from verifiers 0.4).

verifiers finds the taskset, its harness and its env through `__all__`; they are those
of `textenvs.adapters.verifiers` (one task per episode; every request built as `textenvs
eval --agent llm` builds it), with the same configuration.
"""

from __future__ import annotations

from typing import Any

from textenvs.adapters.verifiers import TextenvsEnv, TextenvsHarness, TextenvsTaskset
from textenvs.adapters.verifiers import load_environment as load


def load_environment(env: str = "all", **kwargs: Any) -> TextenvsEnv:
    """The env in Python; the arguments are those of
    `textenvs.adapters.verifiers.load_environment`."""
    return load(env, taskset="textenvs-env", **kwargs)


__all__ = ["TextenvsEnv", "TextenvsHarness", "TextenvsTaskset", "load_environment"]
