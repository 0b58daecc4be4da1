"""Clauses whose command words are not orders: quotes, negations, questions, conditions
and hypotheses.

"Should I go north?", "If the east is clear, then north", "go north if possible",
"north; otherwise east", "Suppose I go north" and "what if I dig B3?" give no order the
environment could carry out as written: it does not check conditions, and a question or a
hypothesis orders nothing. Such a clause is not read (masked: replaced by `MASK`
characters of the same length, so positions still line up), and so are quoted text and
the rest of a clause after a negation ("not north but east" is `east`), unless the
negation cancels or postpones the order ("north, not yet", "north, but I can't"): then
its words are read and reject the reply. A reply whose only command sits in such a
clause is rejected with a reason rather than executed unconditionally. Reading resumes
after a word that draws the conclusion ("If I go north I hit the wall, so east" is
`east`), and after an `if` that only asks whether ("check if north is open") at the end
of that clause.

Every pattern here is linear in the text: none can backtrack over a run of user text.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

#: Stands in for text that is not read. Cleaning turns every control character into a
#: space, so it never occurs in a reply; scanners treat it as a wall.
MASK = "\x1f"

_QUOTED = re.compile(r"\"[^\"\n]*\"|(?<![\w'])'[^'\n]+'(?![\w'])")
_NEGATORS = (
    r"not|never|cannot|can'?t|don'?t|doesn'?t|didn'?t|won'?t|shouldn'?t|mustn'?t|isn'?t"
    r"|aren'?t|wasn'?t|no|avoid(?:ing)?|instead\s+of|rather\s+than|unable\s+to"
)
# A negation reaches to the end of its clause: punctuation, a new line, or a word that
# turns the sentence ("not north but east").
_NEGATED = re.compile(
    rf"\b(?:{_NEGATORS})\b.*?(?=[.;:!?,()\n]|\b(?:but|so|instead|therefore|because|hence"
    r"|thus|then|which)\b|$)",
    re.IGNORECASE,
)
# A negation that cancels or postpones the order rather than naming what not to do: one
# that ends its clause at once ("north, but I can't") or with a time ("north, not yet",
# "north (not now)"), or puts it off ("not until I reveal"); "(not yet excavated)"
# describes. It is read, so its words reject the reply instead of leaving the order to run.
_CANCELLING = re.compile(
    r"(?:not|never|no)\s+(?:(?:yet|now|today|right\s+now|this\s+(?:turn|time)|just\s+yet"
    r"|for\s+now|at\s+the\s+moment|so\s+fast)[\s)\]]*$|until\b|till\b|before\b)"
    r"|never\s+mind\b"
    r"|(?:cannot|can'?t|don'?t|doesn'?t|didn'?t|won'?t|shouldn'?t|mustn'?t)(?:\s+yet)?[\s)\]]*$",
    re.IGNORECASE,
)
# A sentence: up to its end mark or the end of a line.
_SENTENCE = re.compile(r"[^.;!?\n]+[.;!?]*")
# Condition and hypothesis markers (matched on folded text: lower case, `-`/`_` as spaces).
# `provided` is the verb after an auxiliary or before a preposition ("the scan provided
# nothing", "was provided by"), else a condition ("north, provided row 2 is open");
# `once` before a clause is one ("once the scan is done"), alone or in "at once", "once
# more", "I once saw" it is not (a lone `once` still schedules: `core.words.TEMPORAL`).
_PROVIDED = (
    r"(?<!\bis )(?<!\bwas )(?<!\bhas )(?<!\bhad )(?<!\bare )(?<!\bwere )(?<!\bbeen )"
    r"(?<!\bhave )provided(?!\s+(?:by|for|with|to|in|on|at|from|as|us|me|them)\b)"
    r"(?=\s+[a-z0-9(])"
)
_ONCE = (
    r"(?<!\bat )(?<!\bi )(?<!\bwe )(?<!\bit )once"
    r"(?=\s+(?!(?:more|again|and|or|per|in|every|each|a|an|twice|already|before)\b)[a-z0-9(])"
)
_CONDITION = re.compile(
    rf"\b(?:if|unless|otherwise|or\s+else|in\s+case|providing\s+that|{_PROVIDED}|{_ONCE}"
    r"|(?:as|so)\s+long\s+as|assuming|depending\s+on|depends\s+on|contingent\s+on"
    r"|in\s+the\s+event|should\s+(?:it|this|that|there|we|i|they)\s+(?:be|fail|work)"
    r"|barring|suppose|supposing|imagine|imagining|hypothetically|whether)\b"
)
# After these an `if` asks whether ("check if north is open"): only its clause is unread.
_ASKING = re.compile(
    r"\b(?:check|checking|see|seeing|know|wonder|wondering|ask|asking|test|testing|verify"
    r"|determine|sure|unsure|tell|find\s+out|decide|deciding|figure\s+out)\s+$"
)
_CLAUSE_END = re.compile(r"[,;:)\n]|\bthen\b")
# A condition right after one of these is the reason's own ("because if I go east ...").
_OPENS_REASON = re.compile(r"\b(?:because|since|cause|cuz|as|given)\s+$")
# Words that draw the conclusion: what follows them is said outright.
_CONCLUSION = re.compile(r"\b(?:so|therefore|hence|thus|which\s+is\s+why)\b")


def _first(
    starts: list[int], matches: list[re.Match[str]], lo: int, hi: int
) -> re.Match[str] | None:
    """The first of `matches` (sorted, with their `starts`) that starts in [lo, hi)."""
    index = bisect.bisect_left(starts, lo)
    return matches[index] if index < len(starts) and starts[index] < hi else None


def _sentence_markers(
    folded: str,
) -> Iterator[tuple[int, int, re.Match[str] | None, bool]]:
    """Each sentence of `folded` as its span, its first condition marker (None if it has
    none) and whether that marker is an `if` that only asks whether ("check if north is
    open"). The marker pattern runs once over the whole text."""
    markers = list(_CONDITION.finditer(folded))
    marker_at = [m.start() for m in markers]
    for sentence in _SENTENCE.finditer(folded):
        start, end = sentence.span()
        marker = _first(marker_at, markers, start, end)
        asking = False
        if marker is not None and marker.group(0) == "if":
            asking = bool(_ASKING.search(folded[max(start, marker.start() - 40) : marker.start()]))
        yield start, end, marker, asking


def _condition_spans(folded: str) -> list[tuple[int, int]]:
    # Each pattern runs once over the whole text; sentences look their matches up.
    conclusions = list(_CONCLUSION.finditer(folded))
    clause_ends = list(_CLAUSE_END.finditer(folded))
    conclusion_at = [m.start() for m in conclusions]
    clause_end_at = [m.start() for m in clause_ends]
    spans = []
    for start, end, marker, asking in _sentence_markers(folded):
        question = folded.rfind("?", start, end)
        if question >= 0:
            spans.append((start, question + 1))
        if marker is None:
            continue
        if asking:
            clause = _first(clause_end_at, clause_ends, marker.end(), end)
            spans.append((marker.start(), clause.start() if clause else end))
            continue
        conclusion = _first(conclusion_at, conclusions, marker.end(), end)
        spans.append((start, conclusion.start() if conclusion else end))
    return spans


def conditioned_stretches(folded: str) -> list[tuple[int, int]]:
    """The stretches of `folded` (lower case) where an order would be on a condition:
    each sentence with a condition, from its start to the marker when a conclusion
    follows ("c attack" in "c attack if possible, so ..."), else to its end ("c attack"
    in "c attack if possible", "b east" in "if possible b east"; nothing in "if I go north
    I hit the wall, so east"). Sorted, not overlapping."""
    conclusions = list(_CONCLUSION.finditer(folded))
    conclusion_at = [m.start() for m in conclusions]
    stretches = []
    for start, end, marker, asking in _sentence_markers(folded):
        if marker is None or asking or _opens_reason(folded, marker):
            continue
        if _first(conclusion_at, conclusions, marker.end(), end) is not None:
            end = marker.start()
        if end > start:
            stretches.append((start, end))
    return stretches


def questions(folded: str) -> list[tuple[int, int]]:
    """The questions of `folded`: each sentence's stretch up to its last `?`."""
    spans = []
    for sentence in _SENTENCE.finditer(folded):
        mark = folded.rfind("?", *sentence.span())
        if mark >= 0:
            spans.append((sentence.start(), mark + 1))
    return spans


def qualifying_conditions(folded: str) -> list[re.Match[str]]:
    """The condition markers of `folded` that can qualify an order written before them
    ("north - if possible", "north. Unless it is a wall."): every one but an `if` that
    only asks whether ("check if"), `whether`, and one that opens a reason ("because if I
    go east I hit the wall"). Linear: each looks back a bounded distance."""
    out = []
    for marker in _CONDITION.finditer(folded):
        if marker.group(0) == "whether":
            continue
        before = folded[max(0, marker.start() - 40) : marker.start()]
        if marker.group(0) == "if" and _ASKING.search(before):
            continue
        if not _opens_reason(folded, marker):
            out.append(marker)
    return out


def _opens_reason(folded: str, marker: re.Match[str]) -> bool:
    """Whether a condition marker opens a reason ("because if I go east ...")."""
    return bool(_OPENS_REASON.search(folded, max(0, marker.start() - 12), marker.start()))


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with every span replaced by `MASK` characters (linear in the text)."""
    if not spans:
        return text
    change = [0] * (len(text) + 1)
    for start, end in spans:
        change[start] += 1
        change[end] -= 1  # a running count: positions under at least one span are hidden
    out, depth = [], 0
    for index, ch in enumerate(text):
        depth += change[index]
        out.append(MASK if depth > 0 else ch)
    return "".join(out)


def mask_unread(text: str, folded: str, *, keep_quotes: bool = False) -> str:
    """`text` with quoted passages, negated clauses, questions, conditions and hypotheses
    replaced by `MASK` characters. `folded` is `text` folded to lower case, position by
    position."""
    spans = [] if keep_quotes else [m.span() for m in _QUOTED.finditer(text)]
    spans += [m.span() for m in _NEGATED.finditer(text) if not _CANCELLING.match(m.group(0))]
    text = _masked(text, spans)
    if spans:
        folded = "".join(MASK if ch == MASK else f for ch, f in zip(text, folded, strict=True))
    return _masked(text, _condition_spans(folded))
