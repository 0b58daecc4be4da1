"""textenvs: text environments for evaluating LLMs as agents.

Importing the package registers every scenario with gymnasium:

    import gymnasium, textenvs
    env = gymnasium.make("textenvs/TreasureHunt-v1")

`textenvs.make("treasure-hunt")` gives the same env unwrapped.
"""

from importlib.metadata import PackageNotFoundError, version

from textenvs.core.registry import SCENARIOS, get, make, names, register_all

try:
    __version__ = version("textenvs")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

register_all()

__all__ = ["SCENARIOS", "__version__", "get", "make", "names"]
