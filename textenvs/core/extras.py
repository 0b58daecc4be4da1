"""How to install an optional extra, said the way this installation needs it: a clone
(the package installed editable from its source tree) with `pip install -e`, else by
name from the package index."""

from __future__ import annotations

from pathlib import Path

#: the source tree of a clone: the folder above the package, holding pyproject.toml
_SOURCE_TREE = Path(__file__).resolve().parents[2]


def install_hint(*extras: str) -> str:
    """The pip command that installs `extras` into this installation."""
    names = ",".join(extras)
    if not (_SOURCE_TREE / "pyproject.toml").is_file():
        return f"pip install 'textenvs[{names}]'"
    if Path.cwd().resolve() == _SOURCE_TREE:
        return f"pip install -e '.[{names}]'"
    return f"pip install -e '{_SOURCE_TREE}[{names}]'"
