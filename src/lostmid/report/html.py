"""A small, self-contained HTML report: sections of text, tables, figures and verdicts.

No server, no external assets: CSS is inline and figures are embedded as base64 PNG
data URIs, so the one file opens anywhere. All text is escaped; there is no way to
inject raw HTML.

>>> report = Report("Position bias at birth")
>>> _ = report.add_section("Summary", paragraphs=["Spearman 0.99 < 1"],
...                        table=[{"model": "gpt2", "W1": 0.021}])
>>> html = report.render()
>>> "Spearman 0.99 &lt; 1" in html and '<td class="num">0.021</td>' in html
True
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from html import escape
from pathlib import Path
from typing import Any

from lostmid.errors import UserError
from lostmid.files import read_bytes, write_text
from lostmid.report.plots import figure_to_png

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

FigureLike = Any  # a PNG path, PNG bytes, or a matplotlib Figure
TableLike = Sequence[Mapping[str, Any]] | tuple[Sequence[str], Sequence[Sequence[Any]]]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #1d1d1f; line-height: 1.45; }
h1 { border-bottom: 2px solid #ddd; padding-bottom: .3em; }
h2 { margin-top: 2em; border-bottom: 1px solid #eee; }
nav ol { columns: 2; }
table { border-collapse: collapse; margin: 1em 0; font-size: .92em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f5; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: .9em; }
pre { background: #f6f8fa; padding: .8em; overflow-x: auto; }
.verdict { font-weight: 600; padding: .1em .5em; border-radius: .3em; white-space: nowrap; }
.verdict-reproduced { background: #d4f4dd; color: #0b5d1e; }
.verdict-partly { background: #fff1c2; color: #6b4e00; }
.verdict-not-reproduced { background: #ffd9d6; color: #8a1c12; }
.verdict-inconclusive { background: #eadcff; color: #4b2a82; }
.verdict-below-resolution { background: #d6ecff; color: #0b4a7a; }
.verdict-not-robust { background: #ffe4c7; color: #7a3b00; }
.verdict-not-applicable { background: #eeeeee; color: #555555; }
.rule { color: #555; font-size: .85em; }
table.claims td.detail { border-top: none; padding-top: 0; background: #fafafa; }
details summary { cursor: pointer; color: #555; font-size: .85em; }
details p { margin: .3em 0; font-size: .88em; }
.subtitle { color: #555; }
""".strip()


@dataclass
class Section:
    """One section of a report; see :meth:`Report.add_section`."""

    heading: str
    paragraphs: list[str] = field(default_factory=list)
    table: tuple[list[str], list[list[Any]]] | None = None
    figures: list[tuple[bytes, str]] = field(default_factory=list)
    verdicts: list[Mapping[str, Any]] = field(default_factory=list)
    code: str | None = None
    literal: bool = False


class Report:
    """A self-contained HTML document built section by section.

    Args:
        title: the page title and top heading.
        subtitle: an optional line under the title.
        labels: long names (a model's path as typed) -> the short label every section
            shows instead, but a ``literal`` one (provenance, where the full name is
            said once): a path repeated in every row would widen every table.
    """

    def __init__(
        self, title: str, subtitle: str | None = None, labels: Mapping[str, str] | None = None
    ) -> None:
        self.title = title
        self.subtitle = subtitle
        self.labels = dict(labels or {})
        self.sections: list[Section] = []

    def add_section(
        self,
        heading: str,
        paragraphs: Sequence[str] | str = (),
        table: TableLike | None = None,
        figures: Sequence[FigureLike | tuple[FigureLike, str]] = (),
        verdicts: Sequence[Any] = (),
        code: str | None = None,
        literal: bool = False,
    ) -> Report:
        """Append a section; returns the report so calls can be chained.

        Args:
            heading: section heading (also its anchor in the contents).
            paragraphs: plain-text paragraphs (a single string is one paragraph).
            table: a list of dicts (columns: the keys, in first-seen order) or a
                ``(columns, rows)`` pair. Floats print with 4 significant digits,
                None as an em dash.
            figures: PNG file paths, PNG bytes or matplotlib Figures, each optionally
                paired with a caption as ``(figure, caption)``.
            verdicts: claims with ``claim``, ``paper``, ``ours``, ``verdict`` and an
                optional ``rule`` (dicts or dataclasses such as
                :class:`lostmid.compare.claims.Claim`), shown as a claims table.
            code: preformatted text, e.g. the command that made the section.
            literal: show every name as given (the report's ``labels`` not applied).
        """
        if isinstance(paragraphs, str):
            paragraphs = [paragraphs]
        section = Section(
            heading=heading,
            paragraphs=[str(p) for p in paragraphs],
            table=None if table is None else _normalise_table(table),
            figures=[_figure_entry(f) for f in figures],
            verdicts=[_verdict_entry(v) for v in verdicts],
            code=code,
            literal=literal,
        )
        self.sections.append(section)
        return self

    def render(self) -> str:
        """The whole document as one HTML string."""
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(self.title)}</title>",
            f"<style>\n{_CSS}\n</style>",
            "</head>",
            "<body>",
            f"<h1>{escape(self.title)}</h1>",
        ]
        if self.subtitle:
            parts.append(f'<p class="subtitle">{escape(self.subtitle)}</p>')
        anchors = _anchors([s.heading for s in self.sections])
        if len(self.sections) > 1:
            parts.append("<nav><h2>Contents</h2><ol>")
            for section, anchor in zip(self.sections, anchors, strict=True):
                parts.append(f'<li><a href="#{anchor}">{escape(section.heading)}</a></li>')
            parts.append("</ol></nav>")
        for section, anchor in zip(self.sections, anchors, strict=True):
            html = _render_section(section, anchor)
            parts.append(html if section.literal else self.labelled(html))
        parts += ["</body>", "</html>"]
        return "\n".join(parts) + "\n"

    def labelled(self, html: str) -> str:
        """``html`` with each long name of :attr:`labels` (escaped as rendered) replaced
        by its label, the longest first.

        >>> Report("t", labels={"/home/me/m1": "m1"}).labelled("<td>/home/me/m1/L64</td>")
        '<td>m1/L64</td>'
        """
        for long in sorted(self.labels, key=len, reverse=True):
            html = html.replace(escape(long), escape(self.labels[long]))
        return html

    def write(self, path: Path) -> Path:
        """Write the rendered document to ``path`` (atomically: temp file, then rename)."""
        return write_text(Path(path), self.render())


def model_label(name: str) -> str:
    """A model as a figure or a report's text names it: a path by its last part (the
    full path is said once, in the report's provenance), anything else as it is.

    >>> model_label("/data/ckpt/qwen3-0.6b"), model_label("smollm2-135m")
    ('qwen3-0.6b', 'smollm2-135m')
    """
    last = Path(name).name
    return last if "/" in name and last else name


def png_data_uri(png: bytes) -> str:
    """A ``data:image/png;base64,...`` URI for PNG bytes.

    >>> png_data_uri(PNG_SIGNATURE)[:30]
    'data:image/png;base64,iVBORw0K'
    """
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


# -- internals ---------------------------------------------------------------------------


def _render_section(section: Section, anchor: str) -> str:
    out = [f'<section id="{anchor}">', f"<h2>{escape(section.heading)}</h2>"]
    out += [f"<p>{escape(p)}</p>" for p in section.paragraphs]
    if section.code:
        out.append(f"<pre><code>{escape(section.code)}</code></pre>")
    if section.table is not None:
        out.append(_render_table(*section.table))
    if section.verdicts:
        out.append(_render_verdicts(section.verdicts))
    for png, caption in section.figures:
        alt = escape(caption or section.heading, quote=True)
        out.append(f'<figure><img src="{png_data_uri(png)}" alt="{alt}">')
        if caption:
            out.append(f"<figcaption>{escape(caption)}</figcaption>")
        out.append("</figure>")
    out.append("</section>")
    return "\n".join(out)


def _render_table(columns: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for value in row:
            cls = ' class="num"' if _is_number(value) else ""
            cells.append(f"<td{cls}>{escape(_format_cell(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
        + "\n".join(body)
        + "\n</tbody>\n</table>"
    )


def short_text(text: str, limit: int = 160) -> str:
    """The first clause of a claim's 'ours' text (up to the first '; '), cut at
    ``limit`` characters: what the compact claims table shows; the rest is in the row's
    details.

    >>> short_text("0.0076 [0.0031, 0.012] per seed; noise floor 0.0105")
    '0.0076 [0.0031, 0.012] per seed'
    """
    first = text.split("; ")[0]
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "\u2026"


def _render_verdicts(verdicts: list[Mapping[str, Any]]) -> str:
    rows = []
    for v in verdicts:
        verdict = str(v["verdict"])
        css = "verdict-" + re.sub(r"[^a-z]+", "-", verdict.lower()).strip("-")
        ours = str(v["ours"])
        rows.append(
            f"<tr><td>{escape(str(v['claim']))}</td><td>{escape(str(v['paper']))}</td>"
            f"<td>{escape(short_text(ours))}</td>"
            f'<td><span class="verdict {escape(css, quote=True)}">{escape(verdict)}</span>'
            "</td></tr>"
        )
        rule = f'<p class="rule">Rule: {escape(str(v["rule"]))}</p>' if v.get("rule") else ""
        rows.append(
            '<tr><td class="detail" colspan="4"><details><summary>all numbers and the '
            f"rule</summary><p>{escape(ours)}</p>{rule}</details></td></tr>"
        )
    head = "<tr><th>Claim</th><th>Paper</th><th>Ours</th><th>Verdict</th></tr>"
    return (
        f'<table class="claims">\n<thead>{head}</thead>\n<tbody>\n'
        + "\n".join(rows)
        + ("\n</tbody>\n</table>")
    )


def _normalise_table(table: TableLike) -> tuple[list[str], list[list[Any]]]:
    if isinstance(table, tuple) and len(table) == 2 and not isinstance(table[0], Mapping):
        columns = [str(c) for c in table[0]]
        rows = [list(r) for r in table[1]]
        for i, row in enumerate(rows):
            if len(row) != len(columns):
                raise UserError(
                    f"table row {i + 1} has {len(row)} cells but there are {len(columns)} columns"
                )
        return columns, rows
    records = list(table)
    if not all(isinstance(r, Mapping) for r in records):
        raise UserError("a table is a list of dicts or a (columns, rows) pair")
    columns = list(dict.fromkeys(k for r in records for k in r))
    return [str(c) for c in columns], [[r.get(c) for c in columns] for r in records]


def _figure_entry(item: FigureLike | tuple[FigureLike, str]) -> tuple[bytes, str]:
    caption = ""
    if isinstance(item, tuple):
        item, caption = item
    if isinstance(item, str | Path):
        path = Path(item)
        if not path.is_file():
            raise UserError(f"figure {path}: no such file")
        png = read_bytes(path, what="a PNG figure")
    elif isinstance(item, bytes | bytearray):
        png = bytes(item)
    elif hasattr(item, "savefig"):
        png = figure_to_png(item)
    else:
        raise UserError(f"a figure is a PNG path, PNG bytes or a matplotlib Figure, got {item!r}")
    if not png.startswith(PNG_SIGNATURE):
        raise UserError("figures are embedded as PNG; this figure is not PNG data")
    return png, str(caption)


def _verdict_entry(item: Any) -> Mapping[str, Any]:
    if is_dataclass(item) and not isinstance(item, type):
        item = asdict(item)
    if not isinstance(item, Mapping) or not {"claim", "paper", "ours", "verdict"} <= set(item):
        raise UserError("a verdict needs the fields claim, paper, ours and verdict")
    return item


def _anchors(headings: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for heading in headings:
        base = re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-") or "section"
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _format_cell(value: Any) -> str:
    if value is None:
        return "\u2014"
    if isinstance(value, float):
        if value != value:  # nan
            return "nan"
        return f"{value:.4g}"
    return str(value)
