"""Megacity commands: text -> Action, through the core `resolve` policy.

Each command form is a regular expression over the folded text (lower case, `-`/`_` as
spaces); a verb phrase may open it ("place a basalt support column at C2", "open a
district at B3", "excavate a chamber at B3", "support C2 (basalt)", "vent A1 eastward").
A phrase that has a command's shape but cannot be executed as written rejects
the whole reply with its precise complaint: bad parameters ("excavate c9", "support c2
granite") or more targets than the command takes ("excavate B3 C3", "vent A1 north
east", "excavate B3 - C3", "research (C3)"; a cell before a verb is a remark's subject:
"excavate B3 (B3 is off the seam)", a direction before "of" a place: "(east of the
fault)"); nothing is dropped. An incomplete phrase ("support C2") is explained when the
reply names no command at all. Every other word must be filler or a clause that is not read
(`core.consumption`): range and list syntax the forms do not have (`excavate B3..B5`,
`excavate B3 | C3`) rejects the reply. A JSON action in Megacity's own function-calling
schema (`{"action": "support", "cells": ["C2"], "material": ...}`) reads as the command
it describes (`core.answer_format`).
"""

from __future__ import annotations

import itertools
import re

from textenvs.core.parsing import (
    Found,
    JsonFields,
    ParseError,
    excerpt,
    fold,
    memoise_parse,
    resolve,
)
from textenvs.core.reasons import PREDICATES
from textenvs.scenarios.megacity.state import (
    COLS,
    DIRECTIONS,
    MATERIALS,
    SIZE,
    Action,
    Cell,
    adjacent,
    cell_name,
)

VALID = [
    "excavate CELL (e.g. excavate B3)",
    "support CELL MATERIAL (e.g. support C2 basalt; materials: " + ", ".join(MATERIALS) + ")",
    "vent CELL DIRECTION (e.g. vent A1 east; north, south, east or west)",
    "conduit CELL [CELL [CELL]] (1-3 adjacent cells in a path, e.g. conduit B2 B3 B4)",
    "district CELL (e.g. district B3)",
    "research",
    "scan",
    "wait",
]
GRID_TEXT = f"the {SIZE}x{SIZE} grid (A-{COLS[-1]}, 1-{SIZE})"
SHORT_DIRECTIONS = {"n": "north", "s": "south", "e": "east", "w": "west"}
MAX_CONDUIT = 3

_CELL = r"[a-z]\d{1,2}"
# A cell, material or direction before a verb, or with "'s", is the subject of a remark,
# not a further argument ("support C2 basalt (C2 is off the seams)", "conduit B2 B3, B3
# holds", "excavate B3 (C3's stress is 40)").
_NOT_SUBJECT = rf"(?!'s\s+[a-z]|\s+(?:{'|'.join(sorted(PREDICATES))}|[a-z]{{3,}}[^s\W]s)\b)"
_SEP = r"(?:\s*[,>]\s*|\s+(?:to|and|then|through)\s+|\s+)"
# A verb phrase may open a command: "place a basalt support column at C2", "open a
# district at B3", "lay a conduit on B3": the verb and its article are part of it.
_ARTICLE = r"(?:(?:a|an|the|one|new|a\s+new)\s+)?"
_BUILD = r"(?:build|place|install|put|add|erect|construct|create|open|establish|lay|set\s+up)"
_CELL_AT = rf"(?:(?:at|on|in|into|under)\s+)?(?:(?:the\s+)?(?:cell|chamber)\s+)?(?P<c1>{_CELL})"
_SHAFT = r"(?:ventilation\s+shaft|vent\s+shaft|air\s+shaft|shaft|vent)"
_COLUMN = r"(?:support\s+column|support|column|pillar)"
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (kind, re.compile(pattern))
    for kind, pattern in [
        (
            "vent",
            rf"\b(?:(?:dig|{_BUILD}|cut|drill)\s+{_ARTICLE})?(?:{_SHAFT}|ventilate)"
            rf"\s+(?:(?:at|from|in|on)\s+)?(?P<c1>{_CELL})\s+(?:(?:to(?:wards?)?|going|heading"
            r"|facing|pointing|running)\s+)?(?:the\s+)?(?P<d>[a-z]+)\b",
        ),
        (
            "vent",
            rf"\b(?:(?:dig|{_BUILD}|cut|drill)\s+{_ARTICLE})?{_SHAFT}\s+"
            rf"(?P<d>north|south|east|west)\s+(?:(?:from|at)\s+)?(?P<c1>{_CELL})\b",
        ),
        (
            "excavate",
            r"\b(?:excavate|excavating|dig\s+out|dig|digging|mine|hollow\s+out)\s+"
            rf"{_ARTICLE}(?:(?:chamber|cell|room|cavern)\s+)?{_CELL_AT}\b",
        ),
        (
            "support",
            rf"\b(?:{_BUILD}\s+{_ARTICLE})?(?:support(?:\s+column)?|column|pillar)\s+{_CELL_AT}"
            r"\s+(?:(?:with|using|of|made\s+of|in|from)\s+)?(?:(?:a|an)\s+)?\(?(?P<m>[a-z]+)\b"
            r"(?:\)|\s+(?:support\s+column|support|column|pillar)\b)?",
        ),
        (
            "support",
            rf"\b(?:{_BUILD}\s+{_ARTICLE})?(?:support(?:\s+column)?|column)\s+"
            r"(?!at\b|on\b|in\b|column\b|the\b|cell\b)(?P<m>[a-z]+)\s+(?:(?:column|support)\s+)?"
            rf"{_CELL_AT}\b",
        ),
        (
            "support",
            rf"\b(?:{_BUILD}\s+{_ARTICLE})?(?P<m>{'|'.join(MATERIALS)})\s+{_COLUMN}s?\s+"
            rf"{_CELL_AT}\b",
        ),
        (
            "support",
            rf"\b{_BUILD}\s+{_ARTICLE}(?P<m>{'|'.join(MATERIALS)})\s+{_CELL_AT}\b",
        ),
        (
            "conduit",
            rf"\b(?:(?:{_BUILD}|run|connect|extend)\s+{_ARTICLE})?(?:power\s+)?conduits?\s+"
            r"(?:(?:on|along|at|through|over|from|in|across|between)\s+)?(?:(?:the\s+)?cells?\s+)?"
            rf"(?P<cells>{_CELL}(?:{_SEP}{_CELL}\b{_NOT_SUBJECT})*)\b",
        ),
        (
            "district",
            rf"\b(?:{_BUILD}\s+{_ARTICLE})?district(?:\s+core)?\s+{_CELL_AT}\b",
        ),
        (
            "research",
            r"\b(?:(?:do|conduct|carry\s+out|perform)\s+(?:some\s+|more\s+)?)?research"
            r"(?:\s+(?:the\s+)?anomal(?:y|ies)|\s+(?:one|a)\s+(?:research\s+)?point)?\b",
        ),
        (
            "scan",
            r"\b(?:diagnostic\s+scan|scan)(?:\s+(?:of\s+)?(?:the\s+)?(?:geology|mineral\s+seams"
            r"(?:\s+and\s+(?:the\s+)?fault\s+lines)?|seams(?:\s+and\s+faults)?|faults"
            r"|fault\s+lines))?\b",
        ),
        # the rules' own words: "`wait`: let one step pass"
        ("wait", r"\bwait\b|\blet\s+(?:one|a)\s+step\s+pass\b"),
    ]
]
# A direction before these names a place ("excavate E1 (east of the fault)", "vent A1
# north (east side is open)").
_PLACE = (
    r"(?!\s+(?:of|(?:sides?|edges?|walls?|corners?|borders?|parts?|half|neighbou?rs?)\s+"
    rf"(?:{'|'.join(sorted(PREDICATES))}))\b)"
)
# What may not follow a whole command: another cell, material or direction ("excavate B3
# C3", "excavate B3 to B5", "conduit B2 > B3 > B4", "excavate B3 - C3", which cleaning
# joins with a semicolon), which would otherwise be left out;
# not the subject of a remark, before a verb (`_NOT_SUBJECT`), nor a place.
_EXTRA = re.compile(
    r"(?:\s*(?:[,;&/+:>(\[]|\b(?:and|or|then|next|also|to|through|thru|until|till)\b))*\s*"
    rf"(?P<extra>{_CELL}|{'|'.join(MATERIALS)}|(?:{'|'.join(DIRECTIONS)})\b{_PLACE})"
    rf"\b{_NOT_SUBJECT}"
)
# `research`, `scan` and `wait` take nothing: "scan B3" or "research gravity" would be
# carried out as something else (research advances the rules in their fixed order).
_ARGUMENT = re.compile(
    r"\s+(?:(?:on|at|in|of|into|about|the|cell)\s+)*(?P<arg>"
    rf"{_CELL}|{'|'.join(MATERIALS)}|{'|'.join(DIRECTIONS)}|(?P<topic>gravity|stress|load"
    r"|airflow|air|power|conduits?|supports?|materials?|seams?|ventilation|faults?))\b"
)
# A build order without its cell ("excavate B3 and build a district there", "excavate
# B3, then district"): a second command, rejected rather than dropped.
_INCOMPLETE = re.compile(
    r"\b(?:build|place|install|lay|put|add|open|create|construct|then)\s+"
    r"(?:(?:a|an|the|another|one\s+more)\s+)?"
    r"(?P<kind>district|support|column|conduit|vent|shaft)s?\b(?=\s*(?:$|[.,;:!)\n]|(?:there|here"
    r"|too|next|later|afterwards?|on\s+it|in\s+it)\b))"
)
_USAGE = {
    "excavate": "excavate CELL, e.g. excavate B3",
    "dig": "excavate CELL, e.g. excavate B3",
    "support": "support CELL MATERIAL, e.g. support C2 basalt",
    "column": "support CELL MATERIAL, e.g. support C2 basalt",
    "vent": "vent CELL DIRECTION, e.g. vent A1 east",
    "shaft": "vent CELL DIRECTION, e.g. vent A1 east",
    "conduit": "conduit CELL [CELL [CELL]], e.g. conduit B2 B3 B4",
    "district": "district CELL, e.g. district B3",
}
VOCABULARY = [
    "excavate", "support", "vent", "conduit", "district", "research", "scan", "wait",
    *MATERIALS, *DIRECTIONS,
]  # fmt: skip


# "vent A1 eastward": a direction written as an adverb
_TOWARD = re.compile(r"wards?$")


class BadParameter(ValueError):
    """A command-shaped phrase with a parameter that is not valid."""


def to_cell(token: str) -> Cell:
    col, row = token[0], int(token[1:])
    if col not in COLS.lower() or not 1 <= row <= SIZE:
        raise BadParameter(f"{token.upper()} is outside {GRID_TEXT}.")
    return COLS.lower().index(col), row - 1


def _build(kind: str, match: re.Match[str]) -> Action:
    groups = match.groupdict()
    if kind == "conduit":
        tokens = re.findall(_CELL, groups["cells"])
        cells = tuple(to_cell(t) for t in tokens)
        if len(cells) > MAX_CONDUIT:
            raise BadParameter(f"a conduit covers at most {MAX_CONDUIT} cells, not {len(cells)}.")
        if len(set(cells)) != len(cells):
            raise BadParameter("a conduit path cannot visit a cell twice.")
        for a, b in itertools.pairwise(cells):
            if not adjacent(a, b):
                raise BadParameter(
                    f"conduit cells must form a path of orthogonally adjacent cells: "
                    f"{cell_name(a)} and {cell_name(b)} are not adjacent."
                )
        return Action("conduit", cells)
    cells = (to_cell(groups["c1"]),) if groups.get("c1") else ()
    material = groups.get("m")
    if material is not None and material not in MATERIALS:
        raise BadParameter(
            f"'{material}' is not a support material; use one of {', '.join(MATERIALS)}."
        )
    direction = groups.get("d")
    if direction is not None:
        direction = SHORT_DIRECTIONS.get(direction, direction)
        if _TOWARD.sub("", direction) in DIRECTIONS:
            direction = _TOWARD.sub("", direction)
        if direction not in DIRECTIONS:
            raise BadParameter(f"'{direction}' is not a direction; use north, south, east or west.")
    return Action(kind, cells, material, direction)


def _argument(kind: str, folded: str, end: int) -> tuple[int, str] | None:
    """Where an argument given to `research`/`scan`/`wait` ends, and the complaint."""
    arg = _ARGUMENT.match(folded, end)
    if arg is None or (arg.group("topic") and kind != "research"):
        # "scan the seams" says what a scan does; "research (C3)", "wait - east" give one
        arg = _EXTRA.match(folded, end)
        if arg is None:
            return None
    found = arg.groupdict().get("arg") or arg.group("extra")
    problem = f"'{kind}' takes nothing (found '{excerpt(found)}'): send '{kind}' alone."
    if kind == "research":
        problem += " Each point advances the rules in their fixed order."
    return arg.end(), problem


class _Reader:
    """Matchers for one parse call; remembers the first precise complaint."""

    def __init__(self) -> None:
        self.complaint: str | None = None

    def _try(self, kind: str, match: re.Match[str]) -> Action | None:
        try:
            return _build(kind, match)
        except BadParameter as exc:
            self.complaint = self.complaint or str(exc)
            return None

    def exact(self, segment: str) -> Action | None:
        for kind, pattern in _PATTERNS:
            match = pattern.fullmatch(segment)
            if match:
                action = self._try(kind, match)
                if action is not None:
                    return action
        head = segment.split(" ", 1)[0]
        if head in _USAGE and self.complaint is None and len(segment) < 60:
            self.complaint = f"'{segment}' is incomplete; use {_USAGE[head]}."
        return None

    def scan(self, text: str) -> list[Found[Action]]:
        folded = fold(text)
        found = []
        for kind, pattern in _PATTERNS:
            for match in pattern.finditer(folded):
                phrase, end = match.group(0), match.end()
                try:
                    action: Action | None = _build(kind, match)
                    problem = ""
                    if action.cells and (extra := _EXTRA.match(folded, end)):
                        end = extra.end()
                        left_out = text[extra.start("extra") : extra.end()]
                        problem = (
                            f"'{excerpt(text[match.start() : end])}': the form is "
                            f"{_USAGE[kind]}, so '{excerpt(left_out)}' would be left out; "
                            "send one command per turn."
                        )
                        action = None
                except BadParameter as exc:
                    action, problem = None, str(exc)
                if kind in ("research", "scan", "wait") and (
                    unwanted := _argument(kind, folded, end)
                ):
                    end, problem, action = unwanted[0], unwanted[1], None
                bare = kind in ("research", "scan", "wait") and " " not in phrase
                found.append(Found(match.start(), end, action, phrase, problem, bare=bare))
        for match in _INCOMPLETE.finditer(folded):
            problem = (
                f"'{excerpt(text[match.start() : match.end()])}' names no cell: send one "
                f"command per turn, in full ({_USAGE[match.group('kind')]})."
            )
            found.append(Found(match.start(), match.end(), None, match.group(0), problem))
        return found


# The action schema's arguments (and `cell` for one cell) follow the action's word:
# `{"action": "support", "cells": ["C2"], "material": "basalt"}` is `support C2 basalt`.
JSON_FIELDS = JsonFields(arguments=("cells", "cell", "material", "direction"))


# Pure in the text: memoised for the few short replies agents keep sending.
@memoise_parse
def parse(text: str) -> Action:
    reader = _Reader()
    try:
        return resolve(
            text,
            exact=reader.exact,
            scan=reader.scan,
            valid=VALID,
            vocabulary=VOCABULARY,
            describe=Action.command,
            json_fields=JSON_FIELDS,
        )
    except ParseError as exc:
        if reader.complaint and exc.reason.startswith("no command found"):
            raise ParseError(reader.complaint, VALID) from None
        raise
