"""Squad Recon commands: text -> Orders (one order per squad, all in one reply).

Grammar: a list of `<squads> <order>` forms, e.g. `A north; B east; C attack`.
- squads: `A`/`B`/`C` (also `squad a`, `alpha`/`bravo`/`charlie`), or a group of them
  joined by `+ , / & and` (`A+B north`, `A and B north`, `Squads A and B hold`), or
  `all` (`all squads`, `everyone`); a bare order (`hold`) is an order for all squads;
- orders: `north`, `south`, `east`, `west`, `hold`, `attack` with aliases (`n`,
  `MoveNorth`, `HoldPosition`, `AttackEnemyCamp`, `C stays back`, ...); filler words
  between the squads and the order are allowed (`A should move north`); `keep <squads>`
  before where they stay holds them (`keep B and C in place`; `keep C north` is no order);
- forms are separated by `;`, `,`, `|`, `and` or a new line. A squad without an order holds.

The reply is cut into tokens (squad, order, joiner, separator, step word, other word) and
read left to right with a small table: squads gather until an order, which goes to all of
them. The whole reply (or its `Action:` line) is read strictly: every word must belong to
the grammar, lower-case squad letters are fine. In prose a squad must be written
`A`/`B`/`C` in capitals, `squad a` or by its call sign, one-letter orders are not read,
and every word must still be accounted for (`core.consumption`): a squad followed by a
word that is no order ("A regroup", "C joins the attack") rejects the reply. A squad
given two different orders, a choice (`A or B north`), an exception (`all north except
C`, `all but C north`), an order by reference (`A north, B as well`, `the rest too`),
an order word given to no squad (`A north. Actually, east`), a squad's place written as
its order (`C is east`; `C is weak` describes it, `C is to attack` orders it) and orders
for later turns (`A north, then next turn B east`) are rejected, never guessed or cut
short; `the rest hold` is what unordered squads do anyway.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from textenvs.core.parsing import (
    WORD,
    Found,
    JsonFields,
    ParseError,
    Reading,
    excerpt,
    fold,
    is_complement,
    is_mention,
    is_subject,
    memoise_parse,
    nothing_found,
    read,
    several_steps,
    suggest,
)
from textenvs.scenarios.squad_recon.state import SQUADS, Order, Orders
from textenvs.scenarios.squad_recon.vocabulary import (
    ALL,
    CALL_SIGNS,
    COPULAS,
    IGNORABLE,
    KEPT,
    ORDER_LIKE,
    ORDER_OF,
    PLACE_AFTER,
    READ_FILLERS,
    TOKEN,
    VALID,
    VOCABULARY,
    Item,
)

# A JSON action gives each squad its order under its letter: `{"a": "north"}` is `a north`
# (any one letter: an unknown squad is named in the rejection).
JSON_FIELDS = JsonFields(units=True)


def _unknown(name: str, valid: Sequence[str]) -> ParseError:
    return ParseError(
        f"unknown squad '{excerpt(name.upper(), 12)}': the squads are A, B and C.", valid
    )


@dataclass
class _Tally:
    """The state of one left-to-right read."""

    strict: bool
    valid: Sequence[str]
    pending: list[str]
    #: the pending squads already have an order (a second one is for them too)
    ordered: bool = False
    #: after `squad`/`squads`: lower-case letters and unknown names are squads
    keyword: bool = False
    #: a step word was passed after some order ("then", "next turn")
    step_seen: bool = False
    in_sequence: bool = False
    #: "B as well", "same for B": a squad's order is another's, by reference
    same: bool = False
    exception: str = ""
    #: order words given to no squad ("A north. Actually, east")
    stray: list[str] = field(default_factory=list)
    #: "the rest", "all else": the squads not named, whose only order can be to hold
    rest: bool = False
    #: where the squads of the pending group were first named
    group_start: int = -1
    #: where a "keep" was written whose squads wait for where they stay ("keep C back")
    keep: int = -1

    def clear(self) -> None:
        self.pending, self.ordered, self.keyword, self.rest = [], False, False, False
        self.group_start = -1

    def starts_group(self, at: int) -> None:
        if self.group_start < 0:
            self.group_start = at


def _tokens(text: str, strict: bool, valid: Sequence[str]) -> list[Found[tuple[Item, ...]]] | None:
    """Every order in `text`, each with its place; None when `strict` and some word is not
    part of the grammar."""
    folded = fold(text)
    tally = _Tally(strict, valid, [])
    found: list[Found[tuple[Item, ...]]] = []
    matches = list(TOKEN.finditer(folded))
    if strict and not all(
        IGNORABLE.fullmatch(folded, a.end() if a else 0, b.start() if b else len(folded))
        for a, b in itertools.pairwise([None, *matches, None])
    ):
        return None
    described = -1  # the order token a "C is east" description takes in
    kept_to = 0  # where the place a "keep" gives its squads ends ("keep C in place")
    for index, match in enumerate(matches):
        if index == described or match.start() < kept_to:
            continue
        kind, word = match.lastgroup, " ".join(match.group(0).split())
        following = matches[index + 1].lastgroup if index + 1 < len(matches) else None
        if kind == "order" and not strict and (len(word) == 1 or _is_place(folded, match)):
            kind = "word"  # "to the north", "north of B"; one letter is a word in prose
        if kind == "every" and word == "all" and not strict and following != "order":
            kind = "word"  # "all good"
        if kind == "squad" and not strict and not tally.keyword:
            original = text[match.start() : match.end()]
            if word not in CALL_SIGNS and original not in ("A", "B", "C"):
                kind = "word"
        previous = matches[index - 1].lastgroup if index else None
        if kind == "squad" and word not in CALL_SIGNS and word not in "abc":
            if previous == "keyword" or (following == "order" and strict):
                raise _unknown(word, valid)  # "squad d, move north", "d north"
            kind = "word"
        if kind == "word" and previous == "keyword" and following == "order":
            raise _unknown(word, valid)  # "squad delta east"
        if tally.keep >= 0 and kind not in ("squad", "every", "keyword", "join", "joiner"):
            start, kept = min(tally.keep, tally.group_start), KEPT.match(folded, match.start())
            if kind == "word" and kept and tally.pending and not tally.ordered:
                items = tuple((name, Order.HOLD) for name in tally.pending)  # "keep C back"
                found.append(Found(start, kept.end(), items, kept.group(0)))
                tally.ordered, tally.keep, kept_to = True, -1, kept.end()
                continue
            if kind == "order" and ORDER_OF[word] is Order.HOLD and tally.pending:
                tally.group_start = start  # "keep C holding position"
            elif strict:
                return None  # "keep C north", "keep going": read word by word
            elif tally.group_start < tally.keep:
                tally.clear()  # "A keep north" goes on north: "keep" is not read
            tally.keep = -1
        if kind == "keep":
            if tally.ordered:
                tally.clear()
            tally.keep = match.start()  # "keep C back", "C, keep back"
            continue

        if kind == "order":
            who = tally.pending or ([ALL] if strict else [])
            if tally.rest and not tally.pending:
                if ORDER_OF[word] is not Order.HOLD:
                    raise ParseError(
                        f"'the rest {word}' does not say which squads: give each squad its "
                        "own order (e.g. A north; B north; C hold).",
                        valid,
                    )
                tally.ordered = True  # "the rest hold": what unordered squads do anyway
                found.append(Found(tally.group_start, match.end(), None, word, consumed=True))
            elif who:
                order = ORDER_OF[word]
                items = tuple((name, order) for name in who)
                start = match.start() if tally.group_start < 0 else tally.group_start
                found.append(Found(start, match.end(), items, word))
                tally.pending, tally.ordered, tally.keyword = list(who), True, False
                tally.in_sequence = tally.in_sequence or tally.step_seen
            elif not is_mention(
                folded, Found(match.start(), match.end(), None, word, bare=True)
            ) and not _describes(folded, match.start(), match.end()):
                tally.stray.append(word)
                if not strict:
                    found.append(Found(match.start(), match.end(), None, word, _stray(word, valid)))
        elif kind == "rest":
            tally.clear()
            tally.rest = True
            tally.starts_group(match.start())
        elif kind in ("squad", "every"):
            name = ALL if kind == "every" else CALL_SIGNS.get(word, word.upper())
            if tally.ordered or name in tally.pending:
                tally.clear()
            tally.pending.append(name)
            tally.starts_group(match.start())
        elif kind == "keyword":
            if tally.ordered:
                tally.clear()
            tally.keyword = True
            tally.starts_group(match.start())
        elif kind == "choice" and tally.pending:
            raise ParseError(
                f"'{excerpt(match.group(0))}' leaves a choice open: give each squad its own "
                "order (e.g. A north; B hold).",
                valid,
            )
        elif kind == "exception":
            tally.exception = tally.exception or word
        elif kind == "same":
            tally.same = tally.same or not (previous == "order" and tally.ordered)
        elif kind == "step":
            if strict:
                return None  # read word by word: the scheduling word is named
            _check_clause(tally)
            tally.step_seen = tally.step_seen or bool(found)
            tally.clear()
        elif kind in ("sep", "mask"):
            if strict and tally.pending and not tally.ordered:
                raise _no_order(tally.pending, valid)
            _check_clause(tally)
            tally.clear()
        elif kind == "word" and word in COPULAS and tally.pending and not tally.ordered:
            after = _after_copula(matches, index)
            if after is not None and after.lastgroup == "order":
                # "C is east" says where squad C is, not where it goes ("C is to go east")
                problem = (
                    f"'{excerpt(word)}' before an order says where squad "
                    f"{' and '.join(tally.pending)} is, not an order: write e.g. "
                    f"'{tally.pending[0]} east'."
                )
                if strict:
                    raise ParseError(problem, valid)
                found.append(Found(tally.group_start, after.end(), None, word, problem))
                described = matches.index(after)
                tally.clear()
            elif after is not None and after.lastgroup == "word":
                tally.clear()  # "C is weak", "A and B are the scouts": a description
        elif kind == "word" and word not in READ_FILLERS:
            if strict:
                return None
            if tally.pending and not tally.ordered:
                # "C joins the attack": a squad followed by a word that is no order
                problem = (
                    f"'{excerpt(word, 24)}' is not an order: squad {' and '.join(tally.pending)}"
                    " can be given north, south, east, west, hold or attack."
                )
                if close := suggest(word, VOCABULARY):
                    problem += " Did you mean: " + ", ".join(f"'{c}'" for c in close) + "?"
                found.append(Found(tally.group_start, match.end(), None, word, problem))
            tally.clear()
    if strict and tally.pending and not tally.ordered:
        raise _no_order(tally.pending, valid)
    _check_clause(tally)
    if found and tally.exception:
        raise ParseError(
            f"exceptions ('{excerpt(tally.exception)}') are not read: give each squad its own "
            "order (e.g. A north; B north; C hold).",
            valid,
        )
    if found and tally.stray:
        raise ParseError(_stray(tally.stray[0], valid), valid)
    if strict and tally.in_sequence:
        raise ParseError(
            f"'{excerpt(text)}' gives orders for several turns; one reply is one turn: send "
            "only this turn's orders (e.g. A north; B east).",
            valid,
        )
    return found


def _stray(word: str, valid: Sequence[str]) -> str:
    return (
        f"'{word}' is given to no squad: write the squad before its order "
        f"(e.g. A {word}; all {word})."
    )


def _check_clause(tally: _Tally) -> None:
    """At the end of a clause: a squad named with "as well", "the same", "follows" but no
    order of its own is rejected, not left to hold."""
    if tally.same and (tally.pending or tally.rest) and not tally.ordered:
        who = f"squad {' and '.join(tally.pending)}" if tally.pending else "'the rest'"
        raise ParseError(
            f"{who} is given another squad's order by "
            "reference ('as well', 'the same'): give each squad its own order "
            "(e.g. A north; B north).",
            tally.valid,
        )
    tally.same = False


def _after_copula(matches: list[re.Match[str]], index: int) -> re.Match[str] | None:
    """What the copula at `index` links its squads to: the first token after it that is
    not filler (a few at most); None where an order follows ("C is to attack")."""
    for at, match in enumerate(matches[index + 1 : index + 5], index + 1):
        following = matches[at + 1].group(0) if at + 1 < len(matches) else ""
        if match.group(0) in ("to", "at") and following in ("the", "a", "an"):
            return match  # "C is to the east", "C is at the east edge": a place
        if match.lastgroup == "word" and ORDER_LIKE.match(match.group(0)):
            return None
        if match.group(0) == "too":
            continue  # "C is too weak"
        if match.lastgroup != "word" or match.group(0) not in READ_FILLERS:
            return match
    return None


_CLAUSE = re.compile(r"[\n.;:!?,()\x1f]")


def _describes(folded: str, start: int, end: int) -> bool:
    """A direction that is the subject of a description ("west are walls") or the place
    one names ("the camp is north"), not an order given to no squad."""
    after = [m.group(0) for m in itertools.islice(WORD.finditer(folded, end), 8)]
    clause = _CLAUSE.split(folded[max(0, start - 60) : start])[-1]
    before = WORD.findall(clause)[::-1]
    return is_subject(after, READ_FILLERS) or is_complement(before, READ_FILLERS)


def _is_place(folded: str, match: re.Match[str]) -> bool:
    """'north of B', 'the south edge': a direction used as a place."""
    return bool(PLACE_AFTER.match(folded, match.end()))


def _no_order(squads: list[str], valid: Sequence[str]) -> ParseError:
    names = " and ".join(squads)
    return ParseError(f"squad {names} has no order: write e.g. '{squads[0]} north'.", valid)


def _merge(items: list[Item], valid: Sequence[str]) -> Orders:
    """One order per squad; the same order twice is fine, two different ones are not."""
    everyone = {order for who, order in items if who == ALL}
    if len(everyone) > 1:
        names = ", ".join(f"'all {o.value}'" for o in sorted(everyone))
        raise ParseError(f"two different orders for all squads ({names}); send one.", valid)
    every = next(iter(everyone), None)
    chosen: dict[str, Order] = {}
    for who, order in items:
        if who == ALL:
            continue
        before = every if every is not None else chosen.get(who)
        if before is not None and before is not order:
            raise ParseError(
                f"squad {who} is given two different orders ('{before.value}' and "
                f"'{order.value}'); give each squad exactly one order.",
                valid,
            )
        chosen[who] = order
    if every is not None:
        return Orders(tuple((name, every) for name in SQUADS), everyone=every)
    return Orders(tuple(sorted(chosen.items())))


def parse(text: str, valid: Sequence[str] = VALID) -> Orders:
    """Read one reply of orders or raise `ParseError` (`valid` goes into its message)."""
    return _memoised_parse(text, tuple(valid))


def _parse(text: str, valid: Sequence[str]) -> Orders:
    def exact(segment: str) -> tuple[Item, ...] | None:
        found = _tokens(segment, True, valid)
        if not found:
            return None
        return tuple(item for each in found for item in each.action or ())

    def scan(text: str) -> list[Found[tuple[Item, ...]]]:
        return _tokens(text, False, valid) or []

    reading: Reading[tuple[Item, ...]] = read(
        text,
        exact=exact,
        scan=scan,
        valid=valid,
        listed=True,
        fillers=READ_FILLERS,
        json_fields=JSON_FIELDS,
    )
    if not reading.orders:
        raise nothing_found(reading, valid, VOCABULARY, what="orders")
    merged = _merge([item for group in reading.orders for item in group], valid)
    if reading.in_sequence:
        raise several_steps(reading, valid)
    return merged


# Pure in (text, valid): memoised for the few short replies agents keep sending.
_memoised_parse = memoise_parse(_parse)
