"""Magnetic Field commands: text -> Action.

A hex digit alone (`A`, `7`, `0xA`) is a command only as the whole reply or a whole
`Action:` line: inside prose single letters are ordinary words, and one beside other
words rejects the reply (`Action: A; right`), the article "a" included when it stands
alone or is written `A` before no word. In prose a digit needs its
verb (`enter A`, `type 7`), and a lower-case letter must also end its clause, so "type a
message" is not read as a digit; an article between them is one ("I will type a C", "type
an F"), unless written `A` ("type A C" is two characters).

Nothing is submitted that the reply did not ask to submit as it stands: `submit` with any
argument (`submit FAAE`, `Submit: A`, `submit the code 3FA0`) is rejected, and so is a
several-character answer anywhere in the part of the reply that is read (`FAAE` then
`submit`; reasoning above an `Action:` line is not read), because `submit` scores the
slots as they are; a code that a bracketed remark describes is not an argument
(`submit (3FA0 is entered)`). A digit always goes into the selected slot, so `type 9 into
slot 2` (or `enter 9 (slot 2)`) is rejected rather than typed into the wrong slot.
"""

from __future__ import annotations

import re

from textenvs.core.parsing import (
    FILLERS as CORE_FILLERS,
)
from textenvs.core.parsing import (
    Found,
    ParseError,
    excerpt,
    fold,
    memoise_parse,
    normalise,
    resolve,
)
from textenvs.scenarios.magnetic_field.state import HEX, Action

VERBS = r"(?:enter|entering|type|typing|input|write|put|press|key|set)"
_FILLER = r"(?:(?:the\s+)?(?:hex\s+|hexadecimal\s+)?(?:digit|character|char|letter)\s+)?"
_CHAR = r"['\"]?(?:0x)?([0-9a-f])['\"]?"
_SUBMIT = r"(?:submit|finali[sz]e)"
# In prose a lower-case digit ends its clause: "enter a." or "enter a now", not "type a
# message" (an upper-case letter or a numeral is a digit wherever it stands).
_CLAUSE_END = r"(?=\s*$|\s*[.,;:!?)\]\"'`*\n\x1f]|\s+(?:now|here|in|into|at|to|for|then|and)\b)"
_ENDS_CLAUSE = re.compile(_CLAUSE_END)
_EXACT_HEX = re.compile(rf"^(?:{VERBS}\s+{_FILLER})?{_CHAR}$")
_SCAN_HEX = re.compile(rf"\b{VERBS}\s+{_FILLER}['\"]?(?:0x)?([0-9a-f]{{1,8}})\b['\"]?")
# An article before one character that ends its clause ("I will type a C.", "type an F
# now"): "an", or "a" in lower case (an upper-case `A` is the digit: "type A C" is two).
_ARTICLE_HEX = re.compile(
    rf"\b{VERBS}\s+(?P<article>an?)\s+{_FILLER}{_CHAR}"
    r"(?=\s*$|\s*[.,;:!?)\]\"'`*\n\x1f]|\s+now\b)"  # where its clause ends: not "put a 5 in"
)
_INTO_SLOT = re.compile(
    r"(?:[\s(\[,;:>@-]+(?:in|into|at|to|for|on)\s+|[\s(\[,;:>@-]+)(?:the\s+)?"
    r"(?:slot|position|place|box)\s*(?:#\s*)?\d"
)
_MORE_CHARS = re.compile(rf"(?:\s*[,&+/]\s*|\s+and\s+|\s+){_CHAR}{_CLAUSE_END}")
# 'submit' followed by a character, in any punctuation: "submit: A", "submit (FAAE)",
# "submit the code FAAE", "I'll submit now: FAAE"; not the subject of a remark ("submit
# (3FA0 is entered)", where the code is still found by `_CODE` and must be described).
_SUBMIT_ARG = re.compile(
    rf"\b{_SUBMIT}\b(?P<words>(?:\s+(?:now|it|the|my|this|final|code|answer|message|as|with))*)"
    r"(?P<sep>\s*[:=(\[]\s*|\s+)['\"`*]*(?:0x)?(?P<arg>[0-9a-f]{1,8})\b"
    r"(?![ \t]+(?:is|are|was|has|have)\b)"
)
# A several-character answer: upper case with a letter (FAAE, 3FA0), or alone on a line
# (where a single character is a digit command: "A" then "right" is two commands).
_CODE = re.compile(r"(?<![\w])(?:0x)?([0-9A-F]{2,8})(?![\w])")
# ...in lower case when it mixes numerals and letters (3fa0; "0b1011" is bits, not a
# code), or spelled out with spaces or commas ("3 F A 0", "F, A, A, E").
_MIXED_CODE = re.compile(
    r"(?<![\w])(?!0b[01]+(?!\w))(?:0x)?((?=[a-f]*\d)(?=\d*[a-f])[0-9a-f]{2,8})(?![\w])"
)
# (Bounded runs of separators: the pattern may not look further than a code can reach.)
_SPACED_CODE = re.compile(
    r"(?<![\w])(?=[0-9A-F ,\t]{0,60}[A-F])[0-9A-F]"
    r"(?:(?:[ \t]{0,3},[ \t]{0,3}|[ \t]{1,3})[0-9A-F]){2,7}(?![\w])"
)
# A lone `A` beside other words is the digit, not the article ("Action: A; right",
# "A and enter B"): written upper case and not followed by a word, or followed by a
# separator or a joining word in any case.
_LONE_A = re.compile(
    r"(?<![\w'])(?:A(?![\w'])(?![ \t]+[a-z])|[aA](?=[ \t]*(?:[;,.!:)\]\n]|$|(?:and|or|then"
    r"|plus|also|next)\b|&)))",
    re.MULTILINE,
)
_CODE_LINE = re.compile(r"^[ \t*`'\"]*(?:0x)?([0-9a-fA-F]{1,8})[ \t*`'\".]*$", re.MULTILINE)
_MANY = re.compile(rf"^(?:(?:{VERBS}|{_SUBMIT})\s+)?['\"]?(?:0x)?([0-9a-f]{{2,8}})['\"]?$")
_VERB_ONLY = re.compile(rf"^{VERBS}(?:\s+{_FILLER}['\"]?(\S+?)['\"]?)?$")

PHRASES: dict[Action, tuple[str, ...]] = {
    Action.RIGHT: (
        "right", "cursor right", "move right", "move cursor right", "moveright",
        "movecursorright", "cursor_right", "next slot", "move the cursor right",
        "move cursor to the right", "move the cursor to the right", "cursor to the right",
        "move the cursor one slot to the right", "move the cursor one slot right",
    ),
    Action.LEFT: (
        "left", "cursor left", "move left", "move cursor left", "moveleft",
        "movecursorleft", "cursor_left", "previous slot", "prev slot", "move the cursor left",
        "move cursor to the left", "move the cursor to the left", "cursor to the left",
        "move the cursor one slot to the left", "move the cursor one slot left",
    ),
    Action.SUBMIT: (
        "submit", "finalize", "finalise", "finalize answer", "finalise answer",
        "submit answer", "finalize the answer", "submit the answer", "submit code",
        "submit the code", "submit the message", "score the four slots", "score the slots",
    ),
}  # fmt: skip
# Accepted only as the whole reply or a whole `Action:` line (too common in prose).
EXACT_ONLY: dict[Action, tuple[str, ...]] = {
    Action.RIGHT: ("r", "next"),
    Action.LEFT: ("l", "prev", "previous", "back"),
    Action.SUBMIT: ("done", "finish", "final"),
}
_EXACT = {normalise(p): a for table in (PHRASES, EXACT_ONLY) for a, ps in table.items() for p in ps}
_SCAN_PHRASES = re.compile(
    r"\b("
    + "|".join(
        re.escape(k).replace(r"\ ", r"\s+")
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
# "Enter 7 into the selected slot", "enter C in the selected slot" (a slot named by
# number is rejected: `INTO_SLOT`).
FILLERS = CORE_FILLERS | {"selected", "current", "slot", "into", "in", "cursor"}


def _hex(char: str) -> Action:
    return Action(HEX.index(char.upper()))


def _submit_with(arg: str) -> str:
    arg = excerpt(arg.upper(), 8)
    if len(arg) == 1:
        return (
            "'submit' takes no character: it scores the four slots as they are and ends the "
            f"episode. To put {arg} into the selected slot send 'enter {arg}'."
        )
    return (
        f"'submit' takes no characters (found '{arg}'): it scores the four slots as they "
        "are and ends the episode. Enter the message one character per turn ('enter X', "
        "then 'right'), and send 'submit' alone when all four slots are filled."
    )


def _several(chars: str) -> str:
    return (
        f"one hex character per command ('{excerpt(chars.upper(), 8)}' has {len(chars)}): "
        "send 'enter X' for the selected slot, 'right'/'left' to move the cursor, "
        "and 'submit' when all four slots are filled."
    )


INTO_SLOT = (
    "a character always goes into the selected slot: move the cursor with 'right'/'left' "
    "first, then send 'enter X' on its own."
)


def exact(segment: str) -> Action | None:
    """A whole normalised reply (or `Action:` line) as one command; wrong shapes raise."""
    if match := _EXACT_HEX.match(segment):
        return _hex(match.group(1))
    if segment in _EXACT:
        return _EXACT[segment]
    if match := _MANY.match(segment):
        raise ParseError(_several(match.group(1)), VALID)
    if match := re.match(rf"^{_SUBMIT}\s*[:=(]?\s*['\"]?(?:0x)?([0-9a-f])['\"]?\)?$", segment):
        raise ParseError(_submit_with(match.group(1)), VALID)
    if match := _VERB_ONLY.match(segment):
        arg = match.group(1)
        if arg is None:
            raise ParseError("say which hex character to enter, e.g. 'enter 7'.", VALID)
        raise ParseError(
            f"'{excerpt(arg)}' is not a hexadecimal digit: use one of 0-9 or A-F.", VALID
        )
    if len(segment) == 1 and segment.isascii() and segment.isalnum():
        raise ParseError(f"'{segment}' is not a hexadecimal digit: use one of 0-9 or A-F.", VALID)
    return None


def _stands_as_digit(text: str, folded: str, match: re.Match[str], group: int | str) -> bool:
    """An upper-case letter or a numeral is a digit; a lower-case letter only where its
    clause ends ("type a message" is not "type A")."""
    arg = text[match.start(group) : match.end(group)]
    return not arg.islower() or bool(_ENDS_CLAUSE.match(folded, match.end(group)))


def _one_char(folded: str, match: re.Match[str], group: int) -> Found[Action]:
    """The order a verb and one character (the match's `group`) give, unless more
    characters or a slot follow it."""
    chars = match.group(group)
    if more := _MORE_CHARS.match(folded, match.end()):
        return Found(match.start(), more.end(), None, chars, _several(chars + more.group(1)))
    if into := _INTO_SLOT.match(folded, match.end()):
        return Found(match.start(), into.end(), None, chars, INTO_SLOT)
    return Found(match.start(), match.end(), _hex(chars), match.group(0))


def scan(text: str) -> list[Found[Action]]:
    folded = fold(text)
    found: list[Found[Action]] = []
    for match in _SCAN_HEX.finditer(folded):
        chars = match.group(1)
        if not _stands_as_digit(text, folded, match, 1):
            continue
        if len(chars) > 1:
            found.append(Found(match.start(), match.end(), None, chars, _several(chars)))
        else:
            found.append(_one_char(folded, match, 1))
    for match in _ARTICLE_HEX.finditer(folded):
        if text[match.start("article") : match.end("article")] != "A" and _stands_as_digit(
            text, folded, match, 2
        ):
            found.append(_one_char(folded, match, 2))
    for match in _SUBMIT_ARG.finditer(folded):
        if match.group("sep").strip() or _stands_as_digit(text, folded, match, "arg"):
            problem = _submit_with(match.group("arg"))
            found.append(Found(match.start(), match.end(), None, match.group(0), problem))
    for pattern in (_CODE, _CODE_LINE, _MIXED_CODE, _SPACED_CODE):
        for match in pattern.finditer(text):
            chars = re.sub(r"[\s,]", "", match.group(1) if pattern.groups else match.group(0))
            if pattern is _CODE_LINE and len(chars) == 1:
                found.append(Found(match.start(), match.end(), _hex(chars), chars))
            elif pattern is not _CODE or (len(chars) > 1 and not chars.isdigit()):
                found.append(Found(match.start(), match.end(), None, chars, _several(chars)))
    covered = bytearray(len(text) + 1)  # where a phrase found so far lies (linear)
    for item in found:
        covered[item.start : item.end] = b"\x01" * (item.end - item.start)
    for match in _LONE_A.finditer(text):
        if not covered[match.start()]:
            problem = (
                "'A' stands alone beside other words: send 'enter A' (or just 'A') as the "
                "whole command."
            )
            found.append(Found(match.start(), match.end(), None, "A", problem))
    for match in _SCAN_PHRASES.finditer(folded):
        phrase = " ".join(match.group(1).split())
        found.append(
            Found(match.start(), match.end(), _EXACT[phrase], phrase, bare=" " not in phrase)
        )
    return found


# Pure in the text: memoised for the few short replies agents keep sending.
@memoise_parse
def parse(text: str) -> Action:
    return resolve(
        text,
        exact=exact,
        scan=scan,
        valid=VALID,
        vocabulary=VOCABULARY,
        describe=lambda action: action.command,
        fillers=FILLERS,
    )
