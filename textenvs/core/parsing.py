"""Turning free text (typed by a person or written by an LLM) into one command.

The reading invariant every scenario keeps: a reply is executed only if it has exactly one
reading, and that reading is everything the reply orders. Otherwise it is rejected with a
reason that says what was found and how to write it. The shared policy:

1. The reply is cleaned: `<think>` blocks dropped, control characters and NUL bytes turned
   into spaces, unicode folded (NFKC), curly quotes made straight.
2. `Action: <command>` lines (also `Command:`, `Answer:`, `Orders:`, `Final answer:`) are
   authoritative: when a reply has one, only those lines are read.
3. Otherwise, if the whole reply is one command (ignoring case, markdown and punctuation
   at the edges), that is it.
4. Otherwise the reply is read as prose. Text inside quotes and the rest of a clause after
   a negation ("not", "don't", "cannot", "instead of", ...) is not read, and a bare
   command word used as a noun or a place ("to my left", "the scan showed", "north of the
   wall") is not an order. Every order that remains counts:
   - an order written with an argument it cannot take (`excavate B3 C3`, `submit FAAE`)
     rejects the reply with that order's own reason; it is never shortened;
   - two different commands, or commands written as successive steps ("north, then
     north", "north twice"), reject the reply;
   - in scenarios whose one command carries several orders (Squad Recon) the orders are
     merged by the scenario, which rejects conflicts.

Scenarios with simple vocabularies use `PhraseGrammar`; richer ones (parameters, several
orders in one reply) pass their own `exact`/`scan` functions to `resolve` or `read`.
"""

from __future__ import annotations

import difflib
import itertools
import re
import unicodedata
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from textenvs.core.clauses import mask_conditions

A = TypeVar("A", bound=Hashable)

# Replies longer than this are rejected outright: no legitimate command needs more, and it
# keeps parsing cost bounded for megabyte inputs.
MAX_COMMAND_CHARS = 20_000

#: Stands in for text that is not read (quoted or negated). Cleaning turns every control
#: character into a space, so it never occurs in a reply; scanners treat it as a wall.
MASK = "\x1f"

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_ACTION_LINE = re.compile(
    r"^[ \t>*#_`{\"'-]*(?:(?:final|my|next|chosen)[ \t]+)?(?:action|command|answer|orders?|move)"
    r"[\"'*_` \t]*[:=][*_` \t]*(.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_QUOTED = re.compile(r"\"[^\"\n]*\"|(?<![\w'])'[^'\n]+'(?![\w'])")
_NEGATORS = (
    r"not|never|cannot|can'?t|don'?t|doesn'?t|didn'?t|won'?t|shouldn'?t|mustn'?t|isn'?t"
    r"|aren'?t|wasn'?t|no|avoid(?:ing)?|instead\s+of|rather\s+than|unable\s+to"
)
# A negation reaches to the end of its clause: punctuation, a new line, or a word that
# turns the sentence ("not north but east").
_NEGATED = re.compile(
    rf"\b(?:{_NEGATORS})\b.*?(?=[.;:!?,(\n]|\b(?:but|so|instead|therefore|because|hence"
    r"|thus|then|which)\b|$)",
    re.IGNORECASE,
)
# Between two orders, these make them successive steps rather than one command.
_STEPS = re.compile(
    r"\b(?:then|next\s+(?:turn|step|move|round)|after\s+(?:that|this)|afterwards?"
    r"|followed\s+by|later|first|second)\b"
)
_LISTED = re.compile(r"[\s,;/|&+*`]*(?:(?:and|or)[\s,;/|&+*`]*)?")
# After an order, these make it several turns ("north twice", "north 2 steps", "wait
# for 3 turns", "north until the wall"; a bare number only where its clause ends: "north
# 2", not "excavate B3 - 2 power").
_NUMBER = r"(?:[2-9]|[1-9]\d+|two|three|four|five|six|seven|eight|nine|ten)"
_UNIT = (
    r"(?:times|x|steps?|tiles?|squares?|cells?|spaces?|slots?|places?|positions?|turns?"
    r"|moves?|rounds?)"
)
_REPEATED = re.compile(
    r"[ \t*`]*(?:twice|thrice|repeatedly|until\b|till\b|all\s+the\s+way|x\s*\d"
    rf"|by\s+{_NUMBER}\b|for\s+{_NUMBER}\s*(?:more\s+)?{_UNIT}\b"
    rf"|(?:several|multiple|a\s+few|many)\s+(?:more\s+)?{_UNIT}\b"
    rf"|{_NUMBER}\s*(?:more\s+)?{_UNIT}\b|{_NUMBER}(?=\s*(?:[.,;:!)\n]|$)))"
)
# After an order, these leave a choice open ("north or east", "excavate B3 (or C3)").
_CHOICE = re.compile(r"[ \t]*[,(]?[ \t]*(?:or|either)\b")
# A bare command word after these (and nothing else) is a noun or a place, not an order...
_LEADS = frozenset({
    "the", "my", "your", "its", "our", "their", "this", "that", "his", "her", "to", "from",
    "of", "on", "at", "in", "into", "onto", "towards", "toward", "face", "faces", "facing",
    "than", "with",
})  # fmt: skip
# ...unless a verb of action comes first ("go to the north", "run a scan"), or "to" stands
# right before it ("time to submit").
_VERBS = frozenset({
    "go", "goes", "going", "move", "moves", "moving", "head", "heads", "heading", "walk",
    "step", "travel", "proceed", "do", "run", "perform", "take", "make", "start",
})  # fmt: skip
# ...and so is one after a counted noun ("40 steps left").
_COUNTED = frozenset({
    "steps", "moves", "turns", "tries", "attempts", "slots", "characters", "digits", "cells",
})  # fmt: skip
_NOUN_AFTER = re.compile(r"\s*(?:of|side|wall|edge|corner|border|part|half|neighbou?r)\b")
_EDGE_NOISE = " \t\n.,;:!?\"'`*_#>()[]{}<>~"


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


def clean(text: str) -> str:
    """Drop reasoning blocks and control characters; fold unicode (NFKC, curly quotes,
    Cyrillic and Greek look-alikes of Latin letters) towards ASCII."""
    text = _THINK.sub(" ", text)
    text = unicodedata.normalize("NFKC", text)
    text = text.translate(_QUOTES).translate(_LOOKALIKES)
    return "".join(ch if ch in "\n\t" or unicodedata.category(ch)[0] != "C" else " " for ch in text)


_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-", "→": "->"})
# Cyrillic and Greek letters that look like Latin ones: "nоt north" with a Cyrillic "о"
# is read as the reader sees it ("not north"), never as a bare "north".
_LOOKALIKES = str.maketrans(
    "АВЕКМНОРСТХаеорсухіјѕԁһӏΑΒΕΖΗΙΚΜΝΟΡΤΥΧοιν",
    "ABEKMHOPCTXaeopcyxijsdhlABEZHIKMNOPTYXoiv",
)


def normalise(text: str) -> str:
    """Lower-case, `_`/`-` as spaces, single spaces, no markdown or punctuation at the edges."""
    text = re.sub(r"[_\-]+", " ", text.lower())
    text = re.sub(r"\s+", " ", text)
    return text.strip(_EDGE_NOISE)


def fold(text: str) -> str:
    """Lower case with `_`/`-` as spaces, keeping every character where it was (so
    positions found in the folded text point into the original)."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters lower-case to two
        lowered = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)
    return lowered.replace("_", " ").replace("-", " ")


def action_lines(text: str) -> list[str]:
    """The contents of the `Action: <command>` lines. Under an empty `Action:` the lines
    that follow, up to a blank line, are its content."""
    lines: list[str] = []
    for match in _ACTION_LINE.finditer(text):
        content = match.group(1)
        if not content.strip(_EDGE_NOISE):
            below = text[match.end() :].lstrip("\n").split("\n\n", 1)[0]
            content = _ACTION_LINE.split(below, maxsplit=1)[0]
        lines.append(content)
    return lines


def mask_unread(text: str, *, keep_quotes: bool = False) -> str:
    """`text` with quoted passages, negated clauses, questions, conditions and hypotheses
    (`core.clauses`) replaced by `MASK` characters (same length, so positions still line
    up)."""

    def blank(match: re.Match[str]) -> str:
        return MASK * len(match.group(0))

    if not keep_quotes:
        text = _QUOTED.sub(blank, text)
    text = _NEGATED.sub(blank, text)
    return mask_conditions(text, fold(text), MASK)


@dataclass(frozen=True)
class Found(Generic[A]):
    """One command phrase found in a text: where, and which command it names.

    `action` is None for a phrase shaped like a command that cannot be executed as written
    (`excavate B3 C3`); `problem` then says why. `bare` marks a single command word that
    can also be a noun or a place ("the scan", "to my left"); `weak` one that is an order
    in prose only after a verb of action ("go left", not "pick up")."""

    start: int
    end: int
    action: A | None
    phrase: str
    problem: str = ""
    bare: bool = False
    weak: bool = False


def _non_overlapping(found: Iterable[Found[A]]) -> list[Found[A]]:
    """Longest match wins where phrases overlap ('move north' over 'north')."""
    kept: list[Found[A]] = []
    for item in sorted(found, key=lambda f: (f.start, -(f.end - f.start))):
        if not kept or item.start >= kept[-1].end:
            kept.append(item)
    return kept


def is_mention(folded: str, item: Found[A]) -> bool:
    """Whether a bare command word is used as a noun or a place rather than as an order."""
    if _NOUN_AFTER.match(folded, item.end):
        return True
    clause = re.split(r"[\n.;:!?,()\x1f]", folded[max(0, item.start - 60) : item.start])[-1]
    before = re.findall(r"[a-z']+", clause)
    if before and before[-1] in _COUNTED:
        return True
    leads = 0
    for word in reversed(before):
        if word in _VERBS or (word == "to" and leads == 0):
            return False
        if word not in _LEADS and (len(word) != 1 or word == "i"):  # "A north": a unit
            break
        leads += 1
    return leads > 0 or item.weak


def prepare(text: str, valid: Sequence[str]) -> tuple[str, str]:
    """The checks every parser starts with: text, not too long, not empty. Returns the
    cleaned reply and its normalised form."""
    if not isinstance(text, str):
        raise ParseError(f"a command must be text, not {type(text).__name__}.", valid)
    if len(text) > MAX_COMMAND_CHARS:
        raise ParseError(
            f"the reply is {len(text):,} characters long; the limit is "
            f"{MAX_COMMAND_CHARS:,}. Send one short command.",
            valid,
        )
    cleaned = clean(text)
    whole = normalise(cleaned)
    if not whole:
        raise ParseError("the command is empty.", valid)
    return cleaned, whole


@dataclass(frozen=True)
class Reading(Generic[A]):
    """Every order a reply gives, before a scenario decides whether they make one command."""

    orders: list[A]
    #: "the marked parts ..." when the reply has `Action:` lines (then nothing else was
    #: read), else "the reply"
    where: str
    #: orders written as successive steps ("north, then east", "north twice")
    in_sequence: bool
    #: some text was skipped because it was quoted or negated
    skipped: bool
    #: the normalised reply, for messages
    whole: str


def read(
    text: str,
    *,
    exact: Callable[[str], A | None],
    scan: Callable[[str], list[Found[A]]],
    valid: Sequence[str],
    listed: bool = False,
) -> Reading[A]:
    """Find every order in a reply by the shared policy (module docstring).

    `exact(s)` reads a whole normalised segment as one command or returns None (it may raise
    `ParseError` for a precise complaint); `scan(s)` finds command phrases in a cleaned text
    whose unread parts are masked (case kept; `fold` it to match case-blind). With
    `listed`, orders side by side ("A north, B east") are one command, not a sequence.
    Raises the reason of the first order that cannot be executed as written.
    """
    cleaned, whole = prepare(text, valid)
    marked = action_lines(cleaned)
    # "north?" is the command, edge punctuation aside; "Should A go north?" is a question.
    asks = cleaned.rstrip(_EDGE_NOISE.replace("?", "")).endswith("?") and " " in whole
    if not marked and not asks:
        action = exact(whole)
        if action is not None:
            return Reading([action], "the reply", False, False, whole)
    orders: list[A] = []
    in_sequence = skipped = False
    for segment in marked or [cleaned]:
        one = exact(normalise(segment)) if marked else None
        if one is not None:
            orders.append(one)
            continue
        visible = mask_unread(segment, keep_quotes=bool(marked))
        skipped = skipped or MASK in visible
        folded = fold(visible)
        found = [
            item
            for item in _non_overlapping(scan(visible))
            if not ((item.bare or item.weak) and is_mention(folded, item))
        ]
        for item in found:
            if item.action is None:
                raise ParseError(item.problem, valid)
            if _CHOICE.match(folded, item.end):
                raise ParseError(
                    f"'{excerpt(segment[item.start : item.end + 12].strip())}' leaves a "
                    "choice open: decide, and send exactly one command.",
                    valid,
                )
            orders.append(item.action)
            in_sequence = in_sequence or bool(_REPEATED.match(folded, item.end))
        for before, after in itertools.pairwise(found):
            gap = folded[before.end : after.start]
            in_sequence = in_sequence or bool(_STEPS.search(gap))
            in_sequence = in_sequence or (not listed and bool(_LISTED.fullmatch(gap)))
    where = "the marked parts of the reply (Action: lines)" if marked else "the reply"
    return Reading(orders, where, in_sequence, skipped, whole)


def nothing_found(
    reading: Reading[A], valid: Sequence[str], vocabulary: Sequence[str], what: str = "command"
) -> ParseError:
    """The rejection for a reply that gives no order."""
    where = "" if reading.where == "the reply" else f"{reading.where}: "
    reason = f"no {what} found in {where}'{excerpt(reading.whole)}'."
    if reading.skipped:
        reason += (
            " Text in quotes, questions, conditions ('if ...', 'unless ...') and what "
            "follows a negation ('not', 'don't', ...) are not read."
        )
    # Skipped words are often the command itself: suggesting it back would mislead.
    return ParseError(reason, valid, () if reading.skipped else suggest(reading.whole, vocabulary))


def several_steps(reading: Reading[A], valid: Sequence[str]) -> ParseError:
    """The rejection for orders written as successive steps."""
    return ParseError(
        f"{reading.where} gives orders for several turns ('{excerpt(reading.whole)}'); "
        "one reply is one turn: send only this turn's command, on a final line "
        "'Action: <command>'.",
        valid,
    )


def resolve(
    text: str,
    *,
    exact: Callable[[str], A | None],
    scan: Callable[[str], list[Found[A]]],
    valid: Sequence[str],
    vocabulary: Sequence[str] = (),
    describe: Callable[[A], str] = str,
) -> A:
    """The one command a reply gives, by the shared policy (module docstring); see `read`
    for `exact` and `scan`. `vocabulary` feeds suggestions."""
    reading = read(text, exact=exact, scan=scan, valid=valid)
    distinct = list(dict.fromkeys(reading.orders))
    if len(distinct) > 1:
        names = ", ".join(f"'{describe(a)}'" for a in distinct[:4])
        raise ParseError(
            f"{reading.where} names {len(distinct)} different commands ({names}); send "
            "exactly one command, on a final line 'Action: <command>'.",
            valid,
        )
    if not distinct:
        raise nothing_found(reading, valid, vocabulary)
    if reading.in_sequence:
        raise several_steps(reading, valid)
    return distinct[0]


def suggest(text: str, vocabulary: Sequence[str], limit: int = 3) -> list[str]:
    """Close spellings of known phrases for the words in `text` ('nrth' -> 'north'),
    compared in normalised form and given back as the vocabulary spells them."""
    spelled = {normalise(v): v for v in vocabulary}
    words = [w for w in re.findall(r"[a-z0-9]+", text)[:50] if len(w) >= 3]
    out: list[str] = []
    for word in words:
        for match in difflib.get_close_matches(word, list(spelled), n=2, cutoff=0.75):
            if spelled[match] not in out:
                out.append(spelled[match])
    return out[:limit]


@dataclass(frozen=True)
class _Rejected:
    """A memoised parse failure (a fresh ParseError is raised from it each time)."""

    reason: str
    valid: list[str]
    suggestions: list[str]


_CACHED_TEXT_CHARS = 200
_CACHE_ENTRIES = 4096


def memoise_parse(parse: Callable[..., A]) -> Callable[..., A]:
    """Memoise a pure parse function of (text, *hashable args): agents repeat the same few
    short replies, so short texts are remembered, failures included (a fresh ParseError is
    raised from a remembered one each time). Bounded: the memo is dropped when full."""
    memo: dict[tuple[object, ...], A | _Rejected] = {}

    def memoised(text: str, *args: Hashable) -> A:
        key = (text, *args)
        cached = memo.get(key) if isinstance(text, str) else None
        if cached is None:
            try:
                cached = parse(text, *args)
            except ParseError as exc:
                cached = _Rejected(exc.reason, exc.valid, exc.suggestions)
            if isinstance(text, str) and len(text) <= _CACHED_TEXT_CHARS:
                if len(memo) >= _CACHE_ENTRIES:
                    memo.clear()
                memo[key] = cached
        if isinstance(cached, _Rejected):
            raise ParseError(cached.reason, cached.valid, cached.suggestions)
        return cached

    memoised.__doc__ = parse.__doc__
    memoised.__wrapped__ = parse  # type: ignore[attr-defined]
    return memoised


def _form(main: str, aliases: Sequence[str]) -> str:
    """'north (n, MoveNorth)': the main spelling, then the other accepted ones."""
    others = [a for a in aliases if normalise(a) != normalise(main)]
    return f"{main} ({', '.join(others)})" if others else main


class PhraseGrammar(Generic[A]):
    """A fixed vocabulary: each command has aliases, any of which names it.

    One-letter aliases (`n`, `e`) are only accepted as the whole reply or a whole `Action:`
    line: inside prose they are too easily part of ordinary words ("it's"). In prose a
    one-word alias is not read where it is a noun or a place ("to my left"), and the
    `weak` ones (`up`, `left`) only after a verb of action ("go left", not "pick up").
    """

    def __init__(
        self,
        aliases: dict[A, Sequence[str]],
        describe: Callable[[A], str] = str,
        weak: Sequence[str] = (),
    ):
        self._describe = describe
        # Parsing is a pure function of the text: memoised per grammar.
        self.parse: Callable[[str], A] = memoise_parse(self._parse)
        self._exact: dict[str, A] = {}
        self._weak = {normalise(w) for w in weak}
        self._spellings = [name for names in aliases.values() for name in names]
        for action, names in aliases.items():
            for name in names:
                key = normalise(name)
                if self._exact.get(key, action) != action:
                    raise ValueError(f"alias {name!r} names two commands")
                self._exact[key] = action
        prose = sorted((k for k in self._exact if len(k) > 1), key=len, reverse=True)
        alternation = "|".join(re.escape(k).replace(r"\ ", r"\s+") for k in prose)
        self._scan = re.compile(rf"\b({alternation})\b")
        self.valid = [_form(describe(a), names) for a, names in aliases.items()]

    def exact(self, segment: str) -> A | None:
        return self._exact.get(segment)

    def scan(self, text: str) -> list[Found[A]]:
        found = []
        for match in self._scan.finditer(fold(text)):
            phrase = " ".join(match.group(1).split())
            found.append(
                Found(
                    match.start(),
                    match.end(),
                    self._exact[phrase],
                    phrase,
                    bare=" " not in phrase,
                    weak=phrase in self._weak,
                )
            )
        return found

    def _parse(self, text: str) -> A:
        return resolve(
            text,
            exact=self.exact,
            scan=self.scan,
            valid=self.valid,
            vocabulary=self._spellings,
            describe=self._describe,
        )
