"""The `changes` view of an observation: only what differs from the one before it.

Observations repeat most of themselves from turn to turn (Magnetic Field's grid and
hints never change; a Squad Recon map changes a few rows), and a model that keeps the
conversation has the earlier ones in its context already. With `observations =
"changes"` each observation after an episode's first is sent as its changed parts,
which cuts the tokens a server evaluates per turn several times over (prefill is most of
a small local model's turn). The history still opens with a whole observation whenever
older turns are cut (`history.py`), so every view refers to one the prompt holds.

An observation is read as sections separated by blank lines, each named by its first
line up to its first colon, comma or parenthesis (`Rock stress`, `Airflow`). Against the
previous one:

- a run of sections that are the same is one line naming them, in place:
  `[unchanged: Sites, Airflow, Components]`;
- a section with the same number of lines shows its first two lines (a title and, in
  every grid, the column header row), each changed line, and `... N lines as before` for
  each run of unchanged lines between; an unchanged title is shortened to its name and
  ` ...` (`Rock stress ...`);
- a section that is gone is named (`[gone: Enemy camps seen]`), and a new one is shown
  whole after a `[new section]` line; a section whose length changed is both.

The view's first line says what it is. Markers and titles are kept short because every
token counts: a small local model spends most of a turn evaluating the new part of its
prompt. The view is exact: the previous observation and the view give back the current
one (`tests/agents/test_observation_view.py` rebuilds every observation of whole episodes
of all five scenarios). When the view would not be clearly shorter, the whole observation
is sent instead.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

VIEW_NOTE = "(changes since your last observation)"
UNCHANGED = "[unchanged: {}]"
GONE = "[gone: {}]"
NEW_SECTION = "[new section]"
#: leading lines of a changed section always shown: its title and column header
KEPT_HEAD_LINES = 2
#: a section's name: its first line up to the first of these (at most `NAME_CHARS`)
NAME_ENDS = re.compile(r":|,| \(")
NAME_CHARS = 30
#: an unchanged title, shortened to its name
SHORT_TITLE = "{} ..."
#: the view is used only when at most this share of the whole observation's characters
WORTH_IT = 0.8


def sections(text: str) -> list[str]:
    """`text`'s sections: runs of lines separated by blank lines."""
    return [part for part in text.split("\n\n") if part.strip()]


def section_name(section: str) -> str:
    first = section.split("\n", 1)[0].strip()
    name = NAME_ENDS.split(first, maxsplit=1)[0].strip() or first
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 4].rstrip() + " ..."


def names(some: list[str]) -> str:
    return ", ".join(map(section_name, some))


def short_title(line: str) -> str:
    """A title line as its name and ` ...`, where that is shorter."""
    title = SHORT_TITLE.format(section_name(line))
    return title if NAME_ENDS.search(line) and len(title) < len(line) else line


def changed_lines(before: str, after: str) -> str:
    """`after` (a section with as many lines as `before`) as its first lines, its
    changed lines, and a count for each run of unchanged lines between them."""
    old, new = before.split("\n"), after.split("\n")
    shown = [short_title(new[0]) if new[0] == old[0] else new[0]]
    same = 0
    for index in range(1, len(new)):
        was, line = old[index], new[index]
        if index >= KEPT_HEAD_LINES and line == was:
            same += 1
            continue
        if same:
            shown.append(f"... {same} {'line' if same == 1 else 'lines'} as before")
            same = 0
        shown.append(line)
    if same:
        shown.append(f"... {same} {'line' if same == 1 else 'lines'} as before")
    return "\n".join(shown)


def changes_view(previous: str, current: str) -> str:
    """`current` as the changes since `previous`, or whole when that is not shorter."""
    old, new = sections(previous), sections(current)
    if "\n\n".join(new) != current.strip("\n"):
        return current  # odd spacing (several blank lines): not worth a careful view
    parts: list[str] = [VIEW_NOTE]
    for op, i1, i2, j1, j2 in SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(UNCHANGED.format(names(old[i1:i2])))
        else:
            parts += changed_sections(old[i1:i2], new[j1:j2])
    view = "\n\n".join(parts)
    return view if len(view) <= WORTH_IT * len(current) else current


def changed_sections(old: list[str], new: list[str]) -> list[str]:
    """The parts of a view for a run of changed sections. Sections are paired by name (a
    `Last step` section put in front of a changed one leaves it paired), and by place
    where as many change names as replace them."""
    parts: list[str] = []
    by_name = SequenceMatcher(a=list(map(section_name, old)), b=list(map(section_name, new)))
    for op, i1, i2, j1, j2 in by_name.get_opcodes():
        if op in ("equal", "replace") and i2 - i1 == j2 - j1:
            for before, after in zip(old[i1:i2], new[j1:j2], strict=True):
                if before.count("\n") == after.count("\n"):
                    parts.append(changed_lines(before, after))
                else:
                    parts += [GONE.format(section_name(before)), NEW_SECTION + "\n" + after]
        else:  # sections gone, new, or regrouped
            if i2 > i1:
                parts.append(GONE.format(names(old[i1:i2])))
            parts += [NEW_SECTION + "\n" + section for section in new[j1:j2]]
    return parts
