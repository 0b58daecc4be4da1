"""`PhraseGrammar`: a scenario grammar that is a table of command phrases."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Generic, TypeVar

from textenvs.core.answer_format import fold, normalise
from textenvs.core.consumption import FILLERS, Found
from textenvs.core.parsing import memoise_parse, resolve

A = TypeVar("A", bound=Hashable)


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
        fillers: Sequence[str] = (),
        also: Mapping[A, Sequence[str]] | None = None,
    ):
        """`also`: phrases read like aliases but not listed in the valid forms an invalid
        command is answered with (the rules' own words: "turn 90 degrees right")."""
        self._describe = describe
        self._fillers = FILLERS | frozenset(fillers)
        # Parsing is a pure function of the text: memoised per grammar.
        self.parse: Callable[[str], A] = memoise_parse(self._parse)
        self._exact: dict[str, A] = {}
        self._weak = {normalise(w) for w in weak}
        self._spellings = [name for names in aliases.values() for name in names]
        for action, names in [*aliases.items(), *(also or {}).items()]:
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
            fillers=self._fillers,
        )
