"""Which scenarios an agent plays: the one line an agent that plays only some says
(its own module, so the agents that say it import it without importing the agents'
table that imports them)."""

from __future__ import annotations

from collections.abc import Iterable


def not_played(name: str, plays: Iterable[str], env_name: str) -> str | None:
    """The line saying that agent `name` plays only `plays` (None when it plays `env_name`)."""
    plays = list(plays)
    return None if env_name in plays else f"--agent {name} plays {', '.join(plays)}, not {env_name}"
