"""Marked regions of a Markdown file: the parts a script writes.

    <!-- generated: NAME -->
    ... what the generator NAME prints (checked by the tests) ...
    <!-- end generated -->

    the eval's <!-- generated: NAME -->500<!-- end generated --> episodes   (inline)

`measured` regions mark the same way what depends on the machine (timings, sizes):
written by a measurement, never compared. The comments do not render.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

KINDS = ("generated", "measured")
_REGION = re.compile(
    r"<!-- (?P<kind>generated|measured): (?P<name>[a-z0-9-]+) -->(?P<body>.*?)"
    r"<!-- end (?P=kind) -->",
    re.DOTALL,
)
_STRAY = re.compile(r"<!-- (?:(?:generated|measured): \S+|end (?:generated|measured)) -->")


@dataclass(frozen=True)
class Region:
    kind: str
    name: str
    body: str  # as written, with its surrounding line breaks when a block
    start: int
    end: int

    @property
    def block(self) -> bool:
        return self.body.startswith("\n")

    @property
    def content(self) -> str:
        """The body without the line breaks a block puts around it."""
        return self.body[1:-1] if self.block else self.body


def regions(text: str) -> list[Region]:
    """Every marked region of `text`, in order. A marker without its partner is a
    `ValueError` (the region it should mark would be silently skipped)."""
    found = [
        Region(m["kind"], m["name"], m["body"], m.start(), m.end()) for m in _REGION.finditer(text)
    ]
    unmatched = _STRAY.findall(_REGION.sub("", text))
    if unmatched:
        raise ValueError(f"a region marker without its partner: {unmatched[0]}")
    for region in found:
        if region.block and not region.body.endswith("\n"):
            raise ValueError(f"region {region.name}: a block's end marker needs a line of its own")
        if not region.block and "\n" in region.body:
            raise ValueError(f"region {region.name}: an inline region must stay on one line")
    return found


def replace(text: str, kind: str, content_for: Callable[[str], str | None]) -> str:
    """`text` with the content of each `kind` region set to `content_for(name)` (None:
    left as it is); blocks stay blocks, inline regions stay inline."""
    out, last = [], 0
    for region in regions(text):
        content = content_for(region.name) if region.kind == kind else None
        if content is None:
            continue
        if "\n" in content and not region.block:
            raise ValueError(f"region {region.name}: inline, but its content has line breaks")
        body = f"\n{content}\n" if region.block else content
        head = f"<!-- {kind}: {region.name} -->"
        out += [text[last : region.start], head, body, f"<!-- end {kind} -->"]
        last = region.end
    return "".join([*out, text[last:]])
