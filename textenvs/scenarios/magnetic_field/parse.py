"""Magnetic Field commands: text -> Action.

A hex digit alone (`A`, `7`, `0xA`) is a command only as the whole reply or a whole marked
part (`Action: A`, a code span): inside prose single letters are ordinary words. In prose
a digit needs its verb (`enter A`, `type 7`) and must end the clause, so "type a message"
or "put a 5 in" are not read as a digit.
"""

from __future__ import annotations

import re

from textenvs.core.parsing import (
    MAX_COMMAND_CHARS,
    Found,
    ParseError,
    clean,
    excerpt,
    marked_segments,
    memoise_parse,
    normalise,
    resolve,
)
from textenvs.scenarios.magnetic_field.state import HEX, Action

VERBS = r"(?:enter|type|input|write|put|press|key|set)"
_FILLER = r"(?:(?:the\s+)?(?:hex\s+|hexadecimal\s+)?(?:digit|character|char|letter)\s+)?"
_CHAR = r"['\"]?(?:0x)?([0-9a-f])['\"]?"
# In prose a command ends its clause: "enter A." or "enter A now", not "type a message".
_CLAUSE_END = r"(?=\s*$|\s*[.,;:!?)\]\"'`*]|\s+(?:now|here|in|into|at|to|for|then)\b)"
_EXACT_HEX = re.compile(rf"^(?:{VERBS}\s+{_FILLER})?{_CHAR}$")
_SCAN_HEX = re.compile(rf"\b{VERBS}\s+{_FILLER}{_CHAR}{_CLAUSE_END}")
_SUBMIT_IN_PROSE = re.compile(
    rf"\b(?:submit|finali[sz]e)\s+['\"]?(?:0x)?([0-9a-f]{{1,8}})['\"]?{_CLAUSE_END}"
)
# Wrong shapes that deserve a precise error rather than a guess.
_MANY = re.compile(rf"^(?:(?:{VERBS}|submit|finali[sz]e)\s+)?['\"]?(?:0x)?([0-9a-f]{{2,8}})['\"]?$")
_SUBMIT_ARG = re.compile(r"^(?:submit|finali[sz]e)\s+['\"]?(?:0x)?([0-9a-f])['\"]?$")
_VERB_ONLY = re.compile(rf"^{VERBS}(?:\s+{_FILLER}['\"]?(\S+?)['\"]?)?$")

PHRASES: dict[Action, tuple[str, ...]] = {
    Action.RIGHT: (
        "right", "cursor right", "move right", "move cursor right", "moveright",
        "movecursorright", "cursor_right", "next slot",
    ),
    Action.LEFT: (
        "left", "cursor left", "move left", "move cursor left", "moveleft",
        "movecursorleft", "cursor_left", "previous slot", "prev slot",
    ),
    Action.SUBMIT: (
        "submit", "finalize", "finalise", "finalize answer", "finalise answer",
        "submit answer", "finalize the answer", "submit the answer",
    ),
}  # fmt: skip
# Accepted only as the whole reply or a whole marked part (too common in prose).
EXACT_ONLY: dict[Action, tuple[str, ...]] = {
    Action.RIGHT: ("r", "next"),
    Action.LEFT: ("l", "prev", "previous", "back"),
    Action.SUBMIT: ("done", "finish", "final"),
}
_EXACT = {normalise(p): a for table in (PHRASES, EXACT_ONLY) for a, ps in table.items() for p in ps}
_SCAN_PHRASES = re.compile(
    r"\b("
    + "|".join(
        re.escape(k)
        for k in sorted(
            {normalise(p) for ps in PHRASES.values() for p in ps}, key=len, reverse=True
        )
    )
    + r")\b"
)
VALID = [
    "enter X (X is one hex digit 0-9 or A-F; also just X, type X, input X)",
    "right (cursor right, move right, next; wraps from slot 4 to slot 1)",
    "left (cursor left, move left, prev; wraps from slot 1 to slot 4)",
    "submit (finalize, done; scores the four slots and ends the episode)",
]
VOCABULARY = sorted({*_EXACT, "enter", "type", "input"})


def exact(segment: str) -> Action | None:
    match = _EXACT_HEX.match(segment)
    if match:
        return Action(HEX.index(match.group(1).upper()))
    return _EXACT.get(segment)


def scan(text: str) -> list[Found[Action]]:
    found = [
        Found(m.start(), m.end(), Action(HEX.index(m.group(1).upper())), m.group(0))
        for m in _SCAN_HEX.finditer(text)
    ]
    found += [
        Found(m.start(), m.end(), _EXACT[m.group(1)], m.group(1))
        for m in _SCAN_PHRASES.finditer(text)
    ]
    return found


def _shape_error(piece: str) -> ParseError | None:
    """A precise reason for the usual wrong shapes, or None."""
    if match := _SUBMIT_ARG.match(piece):
        char = match.group(1).upper()
        return ParseError(
            f"'submit' takes no character: it scores the four slots as they are and ends "
            f"the episode. To put {char} into the selected slot send 'enter {char}'.",
            VALID,
        )
    if match := _MANY.match(piece):
        count = len(match.group(1))
        return ParseError(
            f"one hex character per command ('{excerpt(match.group(1).upper())}' has {count}): "
            "send 'enter X' for the selected slot, 'right'/'left' to move the cursor, "
            "and 'submit' when all four slots are filled.",
            VALID,
        )
    if match := _VERB_ONLY.match(piece):
        arg = match.group(1)
        if arg is None:
            return ParseError("say which hex character to enter, e.g. 'enter 7'.", VALID)
        return ParseError(
            f"'{excerpt(arg)}' is not a hexadecimal digit: use one of 0-9 or A-F.", VALID
        )
    if len(piece) == 1 and piece.isascii() and piece.isalnum():
        return ParseError(f"'{piece}' is not a hexadecimal digit: use one of 0-9 or A-F.", VALID)
    return None


def _check_shapes(cleaned: str) -> None:
    """Raise the precise error for a wrong shape, unless a well-formed command is there."""
    whole = normalise(cleaned)
    marked = [normalise(s) for s in marked_segments(cleaned)]
    if exact(whole) is not None or any(exact(p) is not None for p in marked):
        return
    for piece in (whole, *marked):
        if (error := _shape_error(piece)) is not None:
            raise error
    # In prose 'submit A.' must not be read as a bare 'submit'.
    if match := _SUBMIT_IN_PROSE.search(whole):
        raise _shape_error(f"submit {match.group(1)}") or ParseError("unreachable", VALID)


# Pure in the text: memoised for the few short replies agents keep sending.
@memoise_parse
def parse(text: str) -> Action:
    if isinstance(text, str) and len(text) <= MAX_COMMAND_CHARS:
        _check_shapes(clean(text))
    return resolve(
        text,
        exact=exact,
        scan=scan,
        valid=VALID,
        vocabulary=VOCABULARY,
        describe=lambda action: action.command,
    )
