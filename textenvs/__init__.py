"""textenvs: text environments for evaluating LLMs as agents.

Importing the package registers every scenario with gymnasium:

    import gymnasium, textenvs
    env = gymnasium.make("textenvs/TreasureHunt-v6")

`textenvs.make("treasure-hunt")` gives the same env unwrapped.
"""

from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from typing import Any

from textenvs.core.registry import SCENARIOS, get, make, names, register_all

try:
    __version__ = version("textenvs")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

register_all()


#: what verifiers loads as the taskset `textenvs` (`eval textenvs`): it finds a
#: taskset's classes through its package's `__all__` (`textenvs.adapters.verifiers`)
VERIFIERS_EXPORTS = ["TextenvsEnv", "TextenvsHarness", "TextenvsTaskset"]


def load_environment(env: str = "all", **kwargs: Any) -> Any:
    """The verifiers environment (`pip install 'textenvs[verifiers]'`); see
    `textenvs.adapters.verifiers.load_environment` for the arguments."""
    from textenvs.adapters.verifiers import load_environment as load

    return load(env=env, **kwargs)


def __getattr__(name: str) -> Any:
    if name in VERIFIERS_EXPORTS:  # imported on demand: verifiers is an optional extra
        from textenvs.adapters import verifiers

        return getattr(verifiers, name)
    raise AttributeError(f"module 'textenvs' has no attribute {name!r}")


__all__ = ["SCENARIOS", "__version__", "get", "load_environment", "make", "names"]
if find_spec("verifiers") is not None:
    __all__ += VERIFIERS_EXPORTS
