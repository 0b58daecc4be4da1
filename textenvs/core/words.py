"""The closed word lists of strict consumption: what a word is, the fillers that can
never change an order, and the words that schedule an order for a later turn."""

from __future__ import annotations

import re

WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
# Words that can never change an order: pronouns, articles, politeness, verbs of choosing
# and going, "now". Temporal words ("then", "next", "later", "once", ...) are not here.
FILLERS = frozenset({
    "please", "pls", "now", "i", "i'll", "ill", "i'm", "im", "i've", "i'd", "me", "my",
    "we", "we'll", "let", "let's", "lets", "us", "you", "it", "it's", "this", "the", "a",
    "an", "to", "will", "shall", "should", "must", "go", "going", "gonna", "move",
    "moving", "head", "heading", "proceed", "proceeding", "step", "travel", "walk", "try",
    "want", "wanna", "like", "do", "doing", "choose", "choosing", "chose", "pick", "select",
    "decide", "decided", "opt", "think", "guess", "best", "option", "choice", "action",
    "command", "answer", "final", "is", "be", "just", "simply", "ok", "okay", "alright",
    "sure", "yes", "yeah", "well", "so", "and", "again", "for", "with", "one", "single",
    "here", "turn", "time", "safely", "carefully", "cautiously", "quickly",
    "immediately", "straight", "run", "perform", "make", "execute", "send", "sending",
    "use", "using", "but", "instead", "would", "rather", "are", "hmm", "hm", "um", "uh",
    "ah", "oh", "put", "seems", "safe", "safest", "only", "good", "better", "looks",
    "promising", "optimal", "am", "ahead", "take", "decision", "route", "path", "way",
    "direction",
})  # fmt: skip
# Scheduling words: named in the rejection, since they make an order one for later.
TEMPORAL = frozenset({
    "then", "next", "later", "once", "when", "whenever", "after", "afterwards", "afterward",
    "eventually", "before", "until", "till", "soon", "first", "second", "third", "finally",
    "subsequently", "meanwhile", "twice", "thrice",
})  # fmt: skip
