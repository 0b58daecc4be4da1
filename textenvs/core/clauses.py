"""Sentences whose command words are not orders: questions, conditions and hypotheses.

"Should I go north?", "If the east is clear, then north", "go north if possible",
"north; otherwise east", "Suppose I go north" and "what if I dig B3?" give no order the
environment could carry out as written: it does not check conditions, and a question or a
hypothesis orders nothing. Such a sentence is not read (masked, like a negated clause), so
a reply whose only command sits in one is rejected with a reason rather than executed
unconditionally. Reading resumes after a word that draws the conclusion ("If I go north I
hit the wall, so east" is `east`), and after an `if` that only asks whether ("check if
north is open") at the end of that clause.
"""

from __future__ import annotations

import re

# A sentence: up to its end mark or the end of a line.
_SENTENCE = re.compile(r"[^.;!?\n]+[.;!?]*")
_QUESTION = re.compile(r"[^.;!?\n]*\?")
# Condition and hypothesis markers (matched on folded text: lower case, `-`/`_` as spaces).
_CONDITION = re.compile(
    r"\b(?:if|unless|otherwise|or\s+else|in\s+case|provided\s+that|providing\s+that"
    r"|as\s+long\s+as|assuming"
    r"|suppose|supposing|imagine|imagining|hypothetically|whether)\b"
)
# After these an `if` asks whether ("check if north is open"): only its clause is unread.
_ASKING = re.compile(
    r"\b(?:check|checking|see|seeing|know|wonder|wondering|ask|asking|test|testing|verify"
    r"|determine|sure|unsure|tell|find\s+out|decide|deciding|figure\s+out)\s+$"
)
_CLAUSE_END = re.compile(r"[,;:)\n]|\bthen\b")
# Words that draw the conclusion: what follows them is said outright.
_CONCLUSION = re.compile(r"\b(?:so|therefore|hence|thus|which\s+is\s+why)\b")


def _spans(folded: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in _QUESTION.finditer(folded)]
    for sentence in _SENTENCE.finditer(folded):
        start, end = sentence.span()
        marker = _CONDITION.search(folded, start, end)
        if marker is None:
            continue
        if marker.group(0) == "if" and _ASKING.search(folded, start, marker.start()):
            clause = _CLAUSE_END.search(folded, marker.end(), end)
            spans.append((marker.start(), clause.start() if clause else end))
            continue
        conclusion = _CONCLUSION.search(folded, marker.end(), end)
        spans.append((start, conclusion.start() if conclusion else end))
    return spans


def mask_conditions(text: str, folded: str, mask: str) -> str:
    """`text` with its questions, conditions and hypotheses replaced by `mask` characters
    (same length). `folded` is `text` folded to lower case, position by position."""
    for start, end in _spans(folded):
        text = text[:start] + mask * (end - start) + text[end:]
    return text
