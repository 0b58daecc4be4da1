"""Adversarial replies for the parsers: each family repeats a short unit up to a size, so
a reader that is not linear in the reply shows it (shared by `parse_worst_case` and the
property test `tests/parsing/test_linear_reading.py`).

A unit's size is counted after unicode folding (NFKC), which the parsers apply first:
U+FDFA is one character that folds to 18.
"""

from __future__ import annotations

import unicodedata

# name -> (prefix, repeated unit, suffix)
FAMILIES: dict[str, tuple[str, str, str]] = {
    "nfkc-expanding U+FDFA": ("", "\ufdfa", ""),
    "nfkc-expanding U+FDFA with a question": ("", "\ufdfa", "?"),
    "one letter": ("", "n", ""),
    "one letter, then a command": ("", "n", " north"),
    "command words": ("", "north ", ""),
    "spaces before a word": ("Action:", " ", "x"),
    "nested brackets": ("", "([{", ""),
    "nested JSON": ('{"action": ', "[", ""),
    "repeated separators": ("north", ";,|", "east"),
    "repeated full stops": ("", ". ", "north"),
    "Action labels": ("", "Action: ", ""),
    "negations": ("", "not ", "north"),
    "conditions": ("", "if ", "north"),
    "reasons": ("north ", "because ", ""),
    "purposes": ("north ", "to ", ""),
    "quotes": ("", "' \"", ""),
    "questions": ("", "north? ", ""),
    "spaced hex digits": ("", "1 ", "F"),
    "hex words": ("enter ", "a", ""),
    "submit runs": ("", "submit  ", "F"),
    "squad letters": ("", "A ", "north"),
    "squads and joiners": ("", "A+B, ", "north"),
    "cells": ("excavate ", "B3 ", ""),
    "conduit cells": ("conduit ", "B2 > ", "B3"),
    "think blocks": ("", "<think>", ""),
    "dashes": ("north", " - ", "east"),
    # many asides and many command phrases: each aside was once tested against every phrase
    "bracketed commands": ("", "(north) ", ""),
    "asides between commands": ("", "(a) wait ", ""),
    "orders and conditions": ("Action: ", "A north. if b. ", ""),
    "lines below Action lines": ("", "Action: north\nthis is fine\n", ""),
    # reading v4: what a reply says beside its orders
    "reasons with joints": ("north because ", "the east is a wall, and ", "east"),
    "orders after reasons": ("", "north, because it is safe, and ", "east"),
    "remarks after commas": ("Action: ", "north, toward the gold ", ""),
    "remark sentences": ("Action: north", ". The east tile is a flower", ""),
    "conditions after orders": ("Action: north", " - if possible", ""),
    "questions after orders": ("Action: north. ", "Or east? ", ""),
    "reasoning labels": ("", "Now: I am at (2,2).\n", "Action: north"),
    "remarks below Action lines": ("Action: north\n", "Reason: the east is a wall.\n", ""),
    "leaked chat tokens": ("", "north<|im_end|>", ""),
    "squads described": ("", "A is weak; ", "B north"),
    # reading v5: what follows the Action: line, values and places in remarks
    "paragraphs after Action lines": ("Action: north", "\n\nNext I'll go east.", ""),
    "digit runs in a remark": ("Action: north (", "1", " > 2)"),
    "brackets in a remark": ("Action: north (the wall", " at (1,0)", ")"),
    "places after orders": ("Action: ", "A north to (0,1); ", ""),
    "later turns after orders": ("Action: north\n\n", "next north ", "east"),
}


def folded_length(text: str) -> int:
    return len(unicodedata.normalize("NFKC", text))


def adversarial(family: str, size: int) -> str:
    """The family's reply, as long as possible without folding to more than `size`."""
    prefix, unit, suffix = FAMILIES[family]
    fixed = folded_length(prefix + suffix)
    count = max(0, (size - fixed) // max(1, folded_length(unit)))
    return prefix + unit * count + suffix
