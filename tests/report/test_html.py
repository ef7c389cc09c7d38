"""The HTML report: valid, self-contained, escaped, with decodable embedded PNGs."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure

from lostmid.compare.claims import Claim
from lostmid.errors import UserError
from lostmid.report.html import PNG_SIGNATURE, Report
from lostmid.report.plots import figure_to_png, new_figure

VOID = {"meta", "img", "br", "hr", "link", "input"}


class TagChecker(HTMLParser):
    """Records every tag and fails on a close tag that does not match the open one."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.images: list[str] = []
        self.external: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "img":
            self.images.append(attr.get("src") or "")
        for key in ("src", "href"):
            value = attr.get(key) or ""
            if value and not value.startswith(("data:", "#")):
                self.external.append(value)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def tiny_figure() -> Figure:
    fig = new_figure((2, 1.5))
    fig.add_subplot().plot(np.arange(5), np.arange(5) ** 2)
    return fig


def check(html: str) -> TagChecker:
    checker = TagChecker()
    checker.feed(html)
    checker.close()
    assert checker.errors == []
    assert checker.stack == [], f"unclosed tags: {checker.stack}"
    return checker


def full_report(tmp_path: Path) -> Report:
    png_path = tmp_path / "fig.png"
    png_path.write_bytes(figure_to_png(tiny_figure()))
    report = Report("Lost in the middle <at birth>", subtitle="quick run & friends")
    report.add_section(
        "Profiles",
        paragraphs=["Spearman > 0.99 & W1 < 0.02", "second"],
        table=[{"model": "gpt2", "W1": 0.0213456, "note": None}, {"model": "qwen2", "x": 3}],
        figures=[tiny_figure(), (png_path, "from a <file>"), png_path.read_bytes()],
        code="lostmid compare --measured m.json --out <dir>",
    )
    report.add_section(
        "Claims",
        verdicts=[
            Claim("U-shape <matches>", "0.99", "0.97 +- 0.01", "partly", "rule <text>"),
            {"claim": "W1", "paper": "0.02", "ours": "0.05", "verdict": "not reproduced"},
            {"claim": "P/V", "paper": "1e2", "ours": "1.3e2", "verdict": "reproduced"},
        ],
    )
    report.add_section("Profiles", table=(["a", "b"], [[1, 2.5], ["x", None]]))
    return report


def test_renders_valid_self_contained_html(tmp_path: Path) -> None:
    html = full_report(tmp_path).render()
    assert html.startswith("<!DOCTYPE html>")
    checker = check(html)
    assert checker.external == []  # no external assets: only data URIs and anchors
    assert len(checker.images) == 3
    for src in checker.images:
        prefix = "data:image/png;base64,"
        assert src.startswith(prefix)
        assert base64.b64decode(src[len(prefix) :], validate=True).startswith(PNG_SIGNATURE)


def test_all_text_is_escaped(tmp_path: Path) -> None:
    html = full_report(tmp_path).render()
    for raw in ("<at birth>", "<matches>", "<text>", "<dir>", "<file>", "> 0.99 &"):
        assert raw not in html
    assert "Lost in the middle &lt;at birth&gt;" in html
    assert "Spearman &gt; 0.99 &amp; W1 &lt; 0.02" in html
    injected = Report("<script>alert(1)</script>").add_section("<b>x</b>", "<i>y</i>")
    out = injected.render()
    assert "<script>" not in out and "<b>" not in out and "<i>" not in out
    check(out)


def test_tables_and_verdicts(tmp_path: Path) -> None:
    html = full_report(tmp_path).render()
    # Columns of a list of dicts: the union of keys in first-seen order.
    assert "<th>model</th><th>W1</th><th>note</th><th>x</th>" in html
    assert '<td class="num">0.02135</td>' in html  # 4 significant digits
    assert "<td>\u2014</td>" in html  # None
    for verdict in ("partly", "not-reproduced", "reproduced"):
        assert f'class="verdict verdict-{verdict}"' in html
    assert '<p class="rule">Rule: rule &lt;text&gt;</p>' in html  # in the row's details
    assert html.count("<details>") == html.count('class="verdict verdict-')
    # Duplicate headings get distinct anchors.
    ids = re.findall(r'<section id="([^"]+)">', html)
    assert ids == ["profiles", "claims", "profiles-2"]


def test_write_replaces_atomically_in_utf8(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "report.html"
    Report("first").write(path)
    Report("Sécurité — µ").add_section("naïve").write(path)  # replaces, creates no .tmp
    assert sorted(p.name for p in path.parent.iterdir()) == ["report.html"]
    html = path.read_bytes().decode("utf-8")
    assert "<title>Sécurité — µ</title>" in html and "first" not in html
    assert '<meta charset="utf-8">' in html


def test_bad_sections() -> None:
    report = Report("r")
    with pytest.raises(UserError, match="table row 1 has 1 cells but there are 2 columns"):
        report.add_section("s", table=(["a", "b"], [[1]]))
    with pytest.raises(UserError, match="not PNG data"):
        report.add_section("s", figures=[b"GIF89a"])
    with pytest.raises(UserError, match="no such file"):
        report.add_section("s", figures=[Path("/nonexistent/fig.png")])
    with pytest.raises(UserError, match="claim, paper, ours and verdict"):
        report.add_section("s", verdicts=[{"claim": "x"}])
    assert report.sections == []


def test_the_compact_claims_table_shows_the_first_clause_and_keeps_the_rest() -> None:
    from lostmid.report.html import short_text

    long = "0.0076 [0.0031, 0.012] per seed; on 32 log bins 0.004; noise floor 0.0105"
    html = (
        Report("t")
        .add_section(
            "c",
            verdicts=[{"claim": "W1", "paper": "0.02", "ours": long, "verdict": "inconclusive"}],
        )
        .render()
    )
    assert "<td>0.0076 [0.0031, 0.012] per seed</td>" in html  # the compact cell
    assert "noise floor 0.0105</p>" in html  # everything, in the details
    assert 'class="verdict verdict-inconclusive"' in html and ".verdict-inconclusive" in html
    assert short_text("x" * 300).endswith("\u2026") and len(short_text("x" * 300)) == 160


def test_a_long_name_is_its_label_everywhere_but_a_literal_section() -> None:
    from lostmid.report.html import Report

    path = "/data/models/<qwen3>-0.6b"  # escaped as rendered, brackets and all
    report = Report("t", labels={path: "<qwen3>-0.6b"})
    report.add_section("A", paragraphs=[f"{path}: 5/6"], table=[{"model": f"{path}/L64"}])
    report.add_section("Provenance", table=[{"what": "model", "value": path}], literal=True)
    html = report.render()
    body, provenance = html.split('<section id="provenance">')
    assert "/data/models" not in body and "&lt;qwen3&gt;-0.6b: 5/6" in body
    assert "<td>&lt;qwen3&gt;-0.6b/L64</td>" in body
    assert provenance.count("/data/models/&lt;qwen3&gt;-0.6b") == 1
