"""Reading the `changes` view back: the observation a reader gets from the previous one
and the view, by the view's own rules (what the view tests check it against)."""

from __future__ import annotations

from textenvs.agents.llm.observation_view import (
    GONE,
    NEW_SECTION,
    UNCHANGED,
    VIEW_NOTE,
    sections,
    short_title,
)


def rebuild(previous: str, view: str) -> str:
    """The observation a reader gets from `previous` and `view` by the view's own rules."""
    if not view.startswith(VIEW_NOTE + "\n\n"):
        return view
    old = sections(previous)
    at = 0  # the next section of `previous` not yet accounted for
    rebuilt: list[str] = []
    for part in view.split("\n\n")[1:]:
        unchanged, gone = UNCHANGED.split("{}"), GONE.split("{}")
        if part.startswith(unchanged[0]) and part.endswith(unchanged[1]):
            count = part.count(", ") + 1
            rebuilt += old[at : at + count]
            at += count
        elif part.startswith(gone[0]) and part.endswith(gone[1]):
            at += part.count(", ") + 1
        elif part.startswith(NEW_SECTION + "\n"):
            rebuilt.append(part.removeprefix(NEW_SECTION + "\n"))
        else:  # the changed lines of the next section
            before = old[at].split("\n")
            at += 1
            title, *rest = part.split("\n")
            lines = [before[0] if title == short_title(before[0]) else title]
            for line in rest:
                if line.startswith("... ") and line.endswith(("line as before", "lines as before")):
                    count = int(line.split()[1])
                    lines += before[len(lines) : len(lines) + count]
                else:
                    lines.append(line)
            assert len(lines) == len(before)
            rebuilt.append("\n".join(lines))
    assert at == len(old), "every section of the previous observation is accounted for"
    return "\n\n".join(rebuilt)
