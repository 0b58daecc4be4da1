"""The error every parser raises, and a safe way to quote user text inside it."""

from __future__ import annotations

from collections.abc import Sequence


class ParseError(ValueError):
    """A command could not be read. `reason` says what was wrong, `valid` what is accepted."""

    def __init__(
        self, reason: str, valid: Sequence[str] = (), suggestions: Sequence[str] = ()
    ) -> None:
        self.reason = reason
        self.valid = list(valid)
        self.suggestions = list(suggestions)
        super().__init__(self.message)

    @property
    def message(self) -> str:
        text = self.reason
        if self.suggestions:
            text += " Did you mean: " + ", ".join(f"'{s}'" for s in self.suggestions) + "?"
        return text


def excerpt(text: str, limit: int = 40) -> str:
    """A short, printable-ASCII quotation of user text, safe to put in an observation."""
    cut = text[:limit]
    safe = cut.encode("ascii", "backslashreplace").decode("ascii")
    safe = "".join(ch if 32 <= ord(ch) < 127 else " " for ch in safe)
    return safe + ("..." if len(text) > limit else "")
