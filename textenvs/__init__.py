"""textenvs: text environments for evaluating LLMs as agents.

Importing the package registers every scenario with gymnasium:

    import gymnasium, textenvs
    env = gymnasium.make("textenvs/TreasureHunt-v2")

`textenvs.make("treasure-hunt")` gives the same env unwrapped.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from textenvs.core.registry import SCENARIOS, get, make, names, register_all

try:
    __version__ = version("textenvs")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

register_all()


def load_environment(env: str = "all", **kwargs: Any) -> Any:
    """The verifiers environment (`pip install 'textenvs[verifiers]'`), so that
    `verifiers.load_environment("textenvs", env=...)` and `vf-eval textenvs` find it;
    see `textenvs.adapters.verifiers.load_environment` for the arguments."""
    from textenvs.adapters.verifiers import load_environment as load

    return load(env=env, **kwargs)


__all__ = ["SCENARIOS", "__version__", "get", "load_environment", "make", "names"]
