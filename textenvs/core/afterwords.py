"""What follows an `Action:` line in a later paragraph: whether it takes the order back.

`Action: north`, a blank line, then `Wait, I meant east.`: the marked line was not the
final word, and running `north` would misread the reply. A later paragraph is left
unread only when it takes nothing back and orders only for later turns (a plan: `Next
I'll move right.`) or nothing at all (a remark: `That keeps the sweep on row 1.`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from textenvs.core.remarks import WITHDRAWING
from textenvs.core.words import WORD

# A later turn a plan speaks of ("Next I'll move right", "then east"; not "then again").
_LATER = re.compile(
    r"\b(?:next|then(?![ \t]+again\b)|after[ \t]+(?:that|this)|afterwards?|later)\b"
)
# Phrases that take an order back with no word of `WITHDRAWING` in them.
_TAKING_BACK = re.compile(
    r"\b(?:second[ \t]+thoughts?|never[ \t]+mind|hold[ \t]+on|hang[ \t]+on|belay|strike"
    r"|make[ \t]+(?:that|it)|intended|switch|swap|whoops|woops)\b"
)


def is_afterword(folded: str, orders: Sequence[tuple[int, int]] | None) -> bool:
    """Whether a line of a later paragraph than an `Action:` line's may be left unread:
    it takes nothing back (`WITHDRAWING`: "Wait, I meant east", "Scratch that", "No,
    east") and every order it names is one for a later turn ("Next I'll move right",
    "Then B attacks"). A description ("That keeps the sweep on row 1") names none.
    With `orders` None (not looked for), only a line that opens with a later turn ("Next
    turn B follows") is."""
    if _TAKING_BACK.search(folded) or any(w in WITHDRAWING for w in WORD.findall(folded)):
        return False
    if orders is None:
        return bool(_LATER.match(folded.lstrip(" \t*_-(>")))
    return all(_LATER.search(folded, 0, start) for start, _ in orders)
