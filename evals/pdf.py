"""The report's SVG charts as one-page PDF files, without a drawing library.

`textenvs.evals.plots` draws with a small set of SVG elements (rect, line, polyline,
circle, text) styled by the classes of `plots.SVG_CSS`; this module writes exactly that
set as PDF vector operators, with the standard Helvetica fonts (nothing embedded). The
output is deterministic: no dates, the same chart gives the same bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
import zlib

SVG_NS = "{http://www.w3.org/2000/svg}"

# (font resource, size, fill) per text class, and (stroke, width) per line class:
# the values of plots.SVG_CSS.
TEXT_STYLES = {"t": ("F2", 13.0, "#222222"), "l": ("F1", 12.0, "#222222"),
               "a": ("F1", 11.0, "#555555")}  # fmt: skip
LINE_STYLES = {"g": ("#e3e3e3", 1.0), "w": ("#222222", 1.2)}
DEFAULT_TEXT = TEXT_STYLES["a"]

# Helvetica advance widths (1/1000 em) for ASCII 32-126, from the standard AFM metrics;
# enough to place centred and right-aligned labels.
_ASCII_WIDTHS = (
    "278 278 355 556 556 889 667 191 333 333 389 584 278 333 278 278 556 556 556 556 556 "
    "556 556 556 556 556 278 278 584 584 584 556 1015 667 667 722 722 667 611 778 722 278 "
    "500 667 556 833 722 778 667 778 722 667 611 722 667 944 667 667 611 278 278 278 469 "
    "556 333 556 556 500 556 556 278 556 556 222 222 500 222 833 556 556 556 556 333 500 "
    "278 556 500 722 500 500 500 334 260 334 584"
)
WIDTHS = {chr(32 + i): int(w) for i, w in enumerate(_ASCII_WIDTHS.split())}
# Characters outside WinAnsi (the fonts' encoding) that the charts use.
SUBSTITUTES = {"→": "->", "←": "<-", "−": "-"}


def _rgb(color: str) -> tuple[float, float, float]:
    color = color.lstrip("#")
    if len(color) == 3:
        color = "".join(c * 2 for c in color)
    return tuple(int(color[i : i + 2], 16) / 255 for i in (0, 2, 4))  # type: ignore[return-value]


def _color_op(color: str, op: str) -> str:
    r, g, b = _rgb(color)
    return f"{r:.3f} {g:.3f} {b:.3f} {op}"


def _text_width(text: str, size: float) -> float:
    return sum(WIDTHS.get(c, 556) for c in text) * size / 1000


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252", errors="replace")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _num(element: ET.Element, name: str, default: float = 0.0) -> float:
    return float(element.get(name, default))


class _Page:
    """PDF content for one chart, in SVG coordinates (the page is flipped once)."""

    def __init__(self, height: float) -> None:
        self.ops: list[bytes] = [f"1 0 0 -1 0 {height:.2f} cm".encode()]
        self.alphas: dict[str, str] = {}  # opacity -> ExtGState name

    def add(self, op: str) -> None:
        self.ops.append(op.encode())

    def opacity(self, element: ET.Element) -> None:
        value = element.get("opacity")
        if value is not None and float(value) < 1:
            name = self.alphas.setdefault(value, f"A{len(self.alphas)}")
            self.add(f"/{name} gs")

    def draw(self, element: ET.Element) -> None:
        tag = element.tag.removeprefix(SVG_NS)
        handler = getattr(self, f"_{tag}", None)
        if handler is not None:
            self.add("q")
            self.opacity(element)
            handler(element)
            self.add("Q")

    def _stroke(self, element: ET.Element) -> None:
        color, width = LINE_STYLES.get(element.get("class", ""), ("#222222", 1.0))
        color = element.get("stroke", color)
        width = float(element.get("stroke-width", width))
        self.add(f"{_color_op(color, 'RG')} {width:.2f} w")
        dash = element.get("stroke-dasharray")
        if dash:
            self.add(f"[{dash.replace(',', ' ')}] 0 d")

    def _rect(self, e: ET.Element) -> None:
        self.add(_color_op(e.get("fill", "#000000"), "rg"))
        self.add(f"{_num(e, 'x'):.2f} {_num(e, 'y'):.2f} {_num(e, 'width'):.2f} "
                 f"{_num(e, 'height'):.2f} re f")  # fmt: skip

    def _line(self, e: ET.Element) -> None:
        self._stroke(e)
        self.add(f"{_num(e, 'x1'):.2f} {_num(e, 'y1'):.2f} m {_num(e, 'x2'):.2f} "
                 f"{_num(e, 'y2'):.2f} l S")  # fmt: skip

    def _polyline(self, e: ET.Element) -> None:
        self._stroke(e)
        points = [p.split(",") for p in e.get("points", "").split()]
        path = " ".join(f"{x} {y} {'m' if i == 0 else 'l'}" for i, (x, y) in enumerate(points))
        self.add(f"{path} S")

    def _circle(self, e: ET.Element) -> None:
        cx, cy, r = _num(e, "cx"), _num(e, "cy"), _num(e, "r")
        k = 0.5523 * r  # the Bezier handle length of a quarter circle
        self.add(_color_op(e.get("fill", "#000000"), "rg"))
        self.add(
            f"{cx + r:.2f} {cy:.2f} m "
            f"{cx + r:.2f} {cy + k:.2f} {cx + k:.2f} {cy + r:.2f} {cx:.2f} {cy + r:.2f} c "
            f"{cx - k:.2f} {cy + r:.2f} {cx - r:.2f} {cy + k:.2f} {cx - r:.2f} {cy:.2f} c "
            f"{cx - r:.2f} {cy - k:.2f} {cx - k:.2f} {cy - r:.2f} {cx:.2f} {cy - r:.2f} c "
            f"{cx + k:.2f} {cy - r:.2f} {cx + r:.2f} {cy - k:.2f} {cx + r:.2f} {cy:.2f} c f"
        )

    def _text(self, e: ET.Element) -> None:
        text = "".join(e.itertext())
        for char, substitute in SUBSTITUTES.items():
            text = text.replace(char, substitute)
        font, size, fill = TEXT_STYLES.get(e.get("class", ""), DEFAULT_TEXT)
        x = _num(e, "x")
        anchor = e.get("text-anchor", "start")
        if anchor != "start":
            width = _text_width(text, size) * (1.05 if font == "F2" else 1.0)
            x -= width / 2 if anchor == "middle" else width
        self.add(f"{_color_op(e.get('fill', fill), 'rg')} BT /{font} {size:g} Tf "
                 f"1 0 0 -1 {x:.2f} {_num(e, 'y'):.2f} Tm")  # fmt: skip
        self.ops.append(_pdf_string(text) + b" Tj ET")


def svg_to_pdf(svg: str) -> bytes:
    """A one-page PDF of a chart drawn by `textenvs.evals.plots` (its element subset)."""
    root = ET.fromstring(svg)
    width, height = _num(root, "width"), _num(root, "height")
    page = _Page(height)
    for element in root.iter():
        if element is not root:
            page.draw(element)
    content = zlib.compress(b"\n".join(page.ops), 9)
    alphas = " ".join(f"/{name} << /ca {value} /CA {value} >>" for value, name in
                      page.alphas.items())  # fmt: skip
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width:g} {height:g}] /Contents 4 0 R "
        f"/Resources << /Font << /F1 5 0 R /F2 6 0 R >> /ExtGState << {alphas} >> >> >>".encode(),
        f"<< /Length {len(content)} /Filter /FlateDecode >>\nstream\n".encode()
        + content
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
            "%%EOF\n").encode()  # fmt: skip
    return bytes(out)
