"""The `changes` view of an observation: only what differs from the one before it.

Observations repeat most of themselves from turn to turn (Magnetic Field's grid and
hints never change; a Squad Recon map changes a few rows), and a model that keeps the
conversation has the earlier ones in its context already. With `observations =
"changes"` each observation after an episode's first is sent as its changed parts,
which cuts the tokens a server evaluates per turn several times over (prefill is most of
a small local model's turn). The history still opens with a whole observation whenever
older turns are cut (`history.py`), so every view refers to one the prompt holds.

An observation is read as sections separated by blank lines. Against the previous one:

- sections that are the same are left out, in place, as one line naming them:
  `[unchanged: Magnetic field, 9x9, level 0 ... | Encoding hints ...]`;
- a section with the same number of lines shows its first line (a title or a column
  header row follows it in every scenario, so the first two lines are kept), each
  changed line, and `... N lines as before` for each run of unchanged lines between;
- a section that is gone is named (`[gone: Enemy camps seen ...]`), and a new one is
  shown whole after a `[new section]` line; a section whose length changed is both.

The view says how it reads in its first line. It is exact: the previous observation and
the view give back the current one (`tests/agents/test_observation_view.py` rebuilds
every observation of whole episodes of all five scenarios). When the view would not be
clearly shorter, the whole observation is sent instead.
"""

from __future__ import annotations

from difflib import SequenceMatcher

VIEW_NOTE = "(Changes since your last observation; lines not shown are as they were there.)"
UNCHANGED = "[unchanged: {}]"
GONE = "[gone: {}]"
NEW_SECTION = "[new section]"
#: leading lines of a changed section always shown: its title and column header
KEPT_HEAD_LINES = 2
#: characters of a section's first line used to name it in `[unchanged: ...]`
NAME_CHARS = 40
#: the view is used only when at most this share of the whole observation's characters
WORTH_IT = 0.8


def sections(text: str) -> list[str]:
    """`text`'s sections: runs of lines separated by blank lines."""
    return [part for part in text.split("\n\n") if part.strip()]


def section_name(section: str) -> str:
    first = section.split("\n", 1)[0].strip()
    return first if len(first) <= NAME_CHARS else first[: NAME_CHARS - 4].rstrip() + " ..."


def gone(removed: list[str]) -> str:
    return GONE.format(" | ".join(map(section_name, removed)))


def changed_lines(before: str, after: str) -> str:
    """`after` (a section with as many lines as `before`) as its first lines, its
    changed lines, and a count for each run of unchanged lines between them."""
    old, new = before.split("\n"), after.split("\n")
    shown: list[str] = []
    same = 0
    for index, (was, line) in enumerate(zip(old, new, strict=True)):
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
    matcher = SequenceMatcher(a=old, b=new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            parts.append(UNCHANGED.format(" | ".join(map(section_name, old[i1:i2]))))
        elif op == "replace" and i2 - i1 == j2 - j1:
            for before, after in zip(old[i1:i2], new[j1:j2], strict=True):
                if before.count("\n") == after.count("\n"):
                    parts.append(changed_lines(before, after))
                else:
                    parts += [gone([before]), NEW_SECTION + "\n" + after]
        else:  # sections gone, new, or regrouped
            if i2 > i1:
                parts.append(gone(old[i1:i2]))
            parts += [NEW_SECTION + "\n" + section for section in new[j1:j2]]
    view = "\n\n".join(parts)
    return view if len(view) <= WORTH_IT * len(current) else current
