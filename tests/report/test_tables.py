"""Tables as CSV: columns in first-seen order, values that read back, bad input."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from lostmid.errors import UserError
from lostmid.report.tables import read_table, table_text, write_table


def test_rows_read_back_with_the_same_values(tmp_path: Path) -> None:
    rows = [
        {"length": 256, "depth": 0, "accuracy": 1 / 3, "note": 'a "quoted", comma'},
        {"length": 512, "accuracy": float("nan"), "done": True, "depth": 50},
    ]
    path = write_table(tmp_path / "sub" / "retrieve.cells", rows)
    assert path == tmp_path / "sub" / "retrieve.cells.csv"
    back = read_table(path)
    assert list(back[0]) == ["length", "depth", "accuracy", "note", "done"]
    assert float(back[0]["accuracy"]) == 1 / 3  # repr precision: the same float
    assert back[0]["note"] == 'a "quoted", comma' and back[0]["done"] == ""
    assert back[1] == {"length": "512", "depth": "50", "accuracy": "", "note": "", "done": "true"}
    with path.open(newline="") as f:  # a plain CSV any reader takes
        assert len(list(csv.reader(f))) == 3
    assert not list(tmp_path.glob("sub/*.tmp"))


def test_text_and_empty_table() -> None:
    assert table_text([{"a": None, "b": False}]) == "a,b\n,false\n"
    with pytest.raises(UserError, match="table t: no rows to write"):
        write_table(Path("t"), [])
