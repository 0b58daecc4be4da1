"""Turning free text (typed by a person or written by an LLM) into one command.

The policy every scenario shares:

1. The reply is cleaned: `<think>` blocks dropped, control characters and NUL bytes turned
   into spaces, unicode folded (NFKC), case folded, `_`/`-` read as spaces.
2. If the whole reply is one command (ignoring markdown and trailing punctuation), that is it.
3. Otherwise the *marked* parts are read: `Action: ...` / `Command: ...` lines, `code` spans
   and **bold** text. If they name exactly one command, that is it.
4. Otherwise the whole reply is scanned for command phrases. Exactly one distinct command
   is accepted; two different ones are an ambiguity error, never a guess.

Scenarios with simple vocabularies use `PhraseGrammar`; richer ones (parameters, several
orders in one reply) pass their own `exact`/`scan` functions to `resolve`.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

A = TypeVar("A", bound=Hashable)

# Replies longer than this are rejected outright: no legitimate command needs more, and it
# keeps parsing cost bounded for megabyte inputs.
MAX_COMMAND_CHARS = 20_000

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_MARKED_LINE = re.compile(
    r"^[\s>*#_-]*(?:final\s+)?(?:action|command|answer|move|orders?)\s*[:=]\s*(.+)$",
    re.IGNORECASE | re.MULTILINE,
)
_CODE = re.compile(r"```[a-z]*\s*(.*?)```|`([^`\n]+)`", re.DOTALL | re.IGNORECASE)
_BOLD = re.compile(r"\*\*([^*\n]+)\*\*|__([^_\n]+)__")
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
    """Drop reasoning blocks and control characters; fold unicode look-alikes to ASCII."""
    text = _THINK.sub(" ", text)
    text = unicodedata.normalize("NFKC", text)
    text = text.translate(_QUOTES)
    return "".join(ch if ch in "\n\t" or unicodedata.category(ch)[0] != "C" else " " for ch in text)


_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-"})


def normalise(text: str) -> str:
    """Lower-case, `_`/`-` as spaces, single spaces, no markdown or punctuation at the edges."""
    text = re.sub(r"[_\-]+", " ", text.lower())
    text = re.sub(r"\s+", " ", text)
    return text.strip(_EDGE_NOISE)


def marked_segments(text: str) -> list[str]:
    """The parts of a reply that mark a command: `Action: x` lines, code spans, bold text."""
    found = [m.group(1) for m in _MARKED_LINE.finditer(text)]
    found += [m.group(1) or m.group(2) for m in _CODE.finditer(text)]
    found += [m.group(1) or m.group(2) for m in _BOLD.finditer(text)]
    return [s for s in found if s and s.strip()]


@dataclass(frozen=True)
class Found(Generic[A]):
    """One command phrase found in a text: where, and which command it names."""

    start: int
    end: int
    action: A
    phrase: str


def _non_overlapping(found: Iterable[Found[A]]) -> list[Found[A]]:
    """Longest match wins where phrases overlap ('move north' over 'north')."""
    kept: list[Found[A]] = []
    for item in sorted(found, key=lambda f: (f.start, -(f.end - f.start))):
        if not kept or item.start >= kept[-1].end:
            kept.append(item)
    return kept


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


def resolve(
    text: str,
    *,
    exact: Callable[[str], A | None],
    scan: Callable[[str], list[Found[A]]],
    valid: Sequence[str],
    vocabulary: Sequence[str] = (),
    describe: Callable[[A], str] = str,
) -> A:
    """Apply the shared policy (module docstring) with a scenario's own matchers.

    `exact(s)` reads a whole normalised segment as one command or returns None; `scan(s)`
    finds every command phrase inside a normalised text. `vocabulary` feeds suggestions.
    """
    cleaned, whole = prepare(text, valid)
    action = exact(whole)
    if action is not None:
        return action

    for source, pieces in (
        ("marked", [normalise(s) for s in marked_segments(cleaned)]),
        ("reply", [whole]),
    ):
        distinct: dict[A, str] = {}
        for piece in pieces:
            one = exact(piece)
            if one is not None:
                distinct.setdefault(one, piece)
                continue
            for item in _non_overlapping(scan(piece)):
                distinct.setdefault(item.action, item.phrase)
        if len(distinct) == 1:
            return next(iter(distinct))
        if len(distinct) > 1:
            names = ", ".join(f"'{describe(a)}'" for a in list(distinct)[:4])
            where = "the marked parts of the reply" if source == "marked" else "the reply"
            raise ParseError(
                f"{where} names {len(distinct)} different commands ({names}); "
                "send exactly one command.",
                valid,
            )
    raise ParseError(f"no command found in '{excerpt(whole)}'.", valid, suggest(whole, vocabulary))


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

    One-letter aliases (`n`, `e`) are only accepted as the whole reply or a whole marked
    segment: inside prose they are too easily part of ordinary words ("it's").
    """

    def __init__(self, aliases: dict[A, Sequence[str]], describe: Callable[[A], str] = str):
        self._describe = describe
        # Parsing is a pure function of the text: memoised per grammar.
        self.parse: Callable[[str], A] = memoise_parse(self._parse)
        self._exact: dict[str, A] = {}
        self._spellings = [name for names in aliases.values() for name in names]
        for action, names in aliases.items():
            for name in names:
                key = normalise(name)
                if self._exact.get(key, action) != action:
                    raise ValueError(f"alias {name!r} names two commands")
                self._exact[key] = action
        prose = sorted((k for k in self._exact if len(k) > 1), key=len, reverse=True)
        self._scan = re.compile(r"\b(" + "|".join(map(re.escape, prose)) + r")\b")
        self.valid = [_form(describe(a), names) for a, names in aliases.items()]

    def exact(self, segment: str) -> A | None:
        return self._exact.get(segment)

    def scan(self, text: str) -> list[Found[A]]:
        return [
            Found(m.start(), m.end(), self._exact[m.group(1)], m.group(1))
            for m in self._scan.finditer(text)
        ]

    def _parse(self, text: str) -> A:
        return resolve(
            text,
            exact=self.exact,
            scan=self.scan,
            valid=self.valid,
            vocabulary=self._spellings,
            describe=self._describe,
        )
