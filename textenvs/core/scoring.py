"""What a scenario scores, said by the scenario itself.

Each scenario package has a `scoring` module with a `Scoring` subclass, which the
registry reaches as it reaches the env (`Scenario.scoring`). It names:

- the headline metric (`headline`): a summary key, or `skills.<name>` for a skill figure;
- the skill metrics: `measure` reads one played episode (the trajectory form: `turns`
  with their `events`, and `final_info_observation`, the data form of the last
  observation) into a flat `{name: number | bool | None}`, None where the episode does
  not say (an old record, a redesigned scenario without that field); `aggregate` turns
  scored episode records into the figures a report shows, and `labels` says what each
  figure is;
- the ceiling: the best known headline value on a set of seeds, and how it is known.

Shared eval code only dispatches to these. Hidden state may be read here (through
`TextEnv.world_for`): a score or a ceiling is a fact about a seed, never an agent's input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

Skills = dict[str, Any]
Episode = dict[str, Any]
Record = dict[str, Any]
#: (value, kind, method): `kind` is `exact` (proven), `bound` (no agent can do better; it
#: may not be reachable) or `estimate` (measured with a stronger-than-possible player,
#: so read as approximate)
Ceiling = tuple[float, str, str]
#: aggregate figure -> (what it is, its kind: "share", "count" or "mean")
Labels = Mapping[str, tuple[str, str]]


@dataclass(frozen=True)
class Headline:
    field: str  # a summary key, or "skills.<name>"
    label: str


SUCCESS_RATE = Headline("success_rate", "success rate")


class Scoring:
    """A scenario's scores. The defaults suit a scenario scored by success alone whose
    observation proves a perfect score reachable: no skill metrics, a ceiling of 1."""

    headline: ClassVar[Headline] = SUCCESS_RATE
    labels: ClassVar[Labels] = {}

    def measure(self, seed: int | None, episode: Episode) -> Skills:
        """The skill fields of one episode."""
        return {}

    def aggregate(self, records: Sequence[Record]) -> dict[str, Any]:
        """The skill figures over scored episode records (None where no episode says).
        Keys are stable: they name CSV columns."""
        return {}

    def ceiling(self, seeds: Sequence[int], scripted: float) -> Ceiling:
        """The best known headline value on `seeds`; `scripted` is the scripted agent's."""
        if scripted >= 1.0:
            return (1.0, "exact", "the scripted agent reaches 1.0 on every band seed")
        return (
            1.0,
            "bound",
            f"the most the headline metric allows (scripted reaches {scripted:.3f})",
        )


def skill_values(records: Sequence[Record], field: str) -> list[Any]:
    """The values of one skill field over episode records, leaving out those that do not
    say."""
    return [v for r in records if (v := (r.get("skills") or {}).get(field)) is not None]


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
