"""The parsing corpora and how a parser reads them, for the corpus tests and for
`python -m tests.parsing.misreads` (which runs without pytest, on the base install)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textenvs.core.parsing import ParseError
from textenvs.scenarios.megacity.state import MATERIALS

CORPUS_DIR = Path(__file__).parent / "corpus"
ENVS = ["treasure-hunt", "em-anomaly", "magnetic-field", "squad-recon", "megacity"]


def canonical(env_name: str) -> Callable[[Any], str]:
    """The canonical command text of a parsed action."""
    if env_name in ("treasure-hunt", "em-anomaly"):
        return lambda action: action.value
    if env_name == "magnetic-field":
        return lambda action: action.command
    if env_name == "megacity":
        return lambda action: action.command()
    return lambda orders: orders.to_command()


def _materials(text: str) -> str:
    """Megacity's corpus names materials by index ({m0}, {m1}) so it follows state.py."""
    for index, name in enumerate(MATERIALS):
        text = text.replace(f"{{m{index}}}", name)
    return text


def load_corpus(env_name: str, folder: str = "") -> list[dict[str, Any]]:
    """A corpus: `corpus/<env>.json`, or `corpus/<folder>/<env>.json`."""
    path = CORPUS_DIR / folder / f"{env_name}.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    for entry in entries:
        entry["reply"] = _materials(entry["reply"])
        if entry["expect"] is not None:
            entry["expect"] = _materials(entry["expect"])
    return entries


def reading_of(env: Any, env_name: str, reply: str) -> str | None:
    """The canonical command a reply is executed as, or None if it is rejected."""
    try:
        return canonical(env_name)(env.parse(reply))
    except ParseError:
        return None
