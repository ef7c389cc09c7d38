"""Tables on a narrow console (``COLUMNS=80``, a log) read: no cell split, nothing lost;
on a wide one rich's table as it was; every printed table goes through fit_table."""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

import lostmid
from lostmid.compare.claims import Claim
from lostmid.report.layout import fit_table, header_text
from lostmid.reproduce.claims import claims_table

# Rows as long as reproduce's (the claim, the paper's number with its source, ours with
# every candidate and the noise floor): rich's own table folds them mid-word at 80.
CLAIMS = [
    Claim(
        claim="gpt2-tiny: predicted:rollout matches the measurement at step 0 "
        "(Wasserstein-1 between normalised profiles, nothing fitted)",
        paper="W1 <= 0.02 (their Fig. 3, step 0)",
        ours="predicted:rollout 0.00825 [0, 0.0568] (n=2); predicted:jacobian "
        "0.0112 [0.0031, 0.0193] (n=2); noise floor (between seeds) 0.0024 "
        "[0.0011, 0.0037] (n=1); ours is above the floor",
        verdict="inconclusive",
        rule="95% intervals",
    ),
    Claim(
        claim="gpt2-tiny: predicted:rollout ranks positions as the measurement does "
        "(Spearman, nothing fitted)",
        paper="Spearman >= 0.99 (their Table 1)",
        ours="predicted:rollout 0.943 [0.85, 1] (n=2); noise floor (between seeds) "
        "0.981 [0.95, 1] (n=1); ours is below the floor",
        verdict="below resolution",
        rule="95% intervals",
    ),
    Claim(
        claim="the valley of the trained model lies in the middle third of the context",
        paper="middle third",
        ours="valley at 0.47 of the context",
        verdict="not reproduced",
        rule="position",
    ),
]


def printed(table: Table, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(fit_table(table))
    out = console.file.getvalue()
    assert isinstance(out, str)
    return out


def cell_words(table: Table) -> list[str]:
    words = []
    for column in table.columns:
        for cell in column.cells:
            words += re.sub(r"\[/?\w*\]", "", str(cell)).split()  # markup off
    return words


def printed_words(out: str) -> set[str]:
    return set(re.split(r"[\s│┃|]+", out))


@pytest.mark.parametrize("width", [80, 200])
def test_the_claims_table_keeps_every_word_whole(width: int) -> None:
    table = claims_table(CLAIMS)
    out = printed(table, width)
    assert max(len(line.rstrip()) for line in out.splitlines()) <= width
    missing = [w for w in cell_words(table) if w not in printed_words(out)]
    assert missing == []  # every word of every cell, unsplit
    for header in ("claim", "paper", "ours", "verdict"):
        assert header in printed_words(out) or f"{header}:" in printed_words(out)


def test_at_80_columns_each_row_is_a_block_of_header_value_lines() -> None:
    out = printed(claims_table(CLAIMS), 80)
    lines = [line.rstrip() for line in out.splitlines()]
    assert lines[0] == "claims"
    assert sum(line.startswith("verdict: ") for line in lines) == len(CLAIMS)
    assert "verdict: not reproduced" in lines
    assert "│" not in out and "┃" not in out  # no grid squeezed into 80 columns


def test_a_table_that_fits_is_rich_s_own_and_one_that_does_not_is_blocks() -> None:
    short = [Claim(c.claim[:60], c.paper, c.ours[:60], c.verdict, c.rule) for c in CLAIMS]
    table = claims_table(short)  # about 170 columns wide
    wide = Console(file=io.StringIO(), width=200, color_system=None)
    wide.print(table)
    assert printed(table, 200) == wide.file.getvalue()
    header = next(line for line in printed(table, 200).splitlines() if "verdict" in line)
    assert re.search(r"claim\s+┃\s+paper\s+┃\s+ours\s+┃\s+verdict", header)
    assert "verdict:" not in printed(table, 200)
    assert "verdict: below resolution" in printed(claims_table(CLAIMS), 200)  # 300 wide


def test_a_two_line_header_becomes_one_key_and_a_caption_is_kept() -> None:
    table = Table(title="Candidates", caption="k: numbers taken from the measurement")
    table.add_column("candidate")
    table.add_column("Spear-\nman", no_wrap=True)
    table.add_row("predicted:rollout " * 5, "0.943")
    table.add_row("baseline:power-law", "")  # an empty cell is left out of its block
    out = printed(table, 60)
    assert header_text("Spear-\nman") == "Spearman"
    assert re.search(r"^Spearman: +0\.943", out, re.MULTILINE)
    assert out.count("Spearman:") == 1
    assert out.rstrip().endswith("k: numbers taken from the measurement")


def test_every_table_a_command_prints_goes_through_fit_table() -> None:
    """``console.print(x_table(...))`` anywhere in the package bypasses the layout."""
    bare = []
    for path in Path(lostmid.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "print"
                and node.args
                and isinstance(node.args[0], ast.Call)
                and ast.unparse(node.args[0].func).endswith("table")
                and ast.unparse(node.args[0].func) != "fit_table"
            ):
                bare.append(f"{path.name}:{node.lineno}")
    assert bare == []
