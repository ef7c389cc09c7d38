"""Tables as files: every table a command prints is also written as CSV beside its JSON.

One row is a mapping column -> value; the columns are the keys in the order they first
appear over the rows (a row without a column leaves its cell empty). Values are written
as text: ``None`` and non-finite floats as an empty cell, floats with ``repr``
precision (they read back to the same number), bools as ``true``/``false``, anything
else with ``str``. The file is written atomically (a temp file, then a rename).

>>> import tempfile
>>> from pathlib import Path
>>> path = write_table(Path(tempfile.mkdtemp()) / "cells", [{"a": 1, "b": 0.5}, {"a": 2}])
>>> path.name, path.read_text().splitlines()
('cells.csv', ['a,b', '1,0.5', '2,'])
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from lostmid.errors import UserError

Cell = str | int | float | bool | None


def _text(value: Cell) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    return str(value)


def table_text(rows: Sequence[Mapping[str, Cell]]) -> str:
    """The CSV text of ``rows`` (module doc), header first."""
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(_text(row.get(column)) for column in columns)
    return buffer.getvalue()


def write_table(path_stem: Path, rows: Sequence[Mapping[str, Cell]]) -> Path:
    """Write ``rows`` to ``path_stem`` + ``.csv`` (beside ``path_stem.json``).

    Raises:
        UserError: no rows (an empty table says nothing; the caller skips it).
    """
    if not rows:
        raise UserError(f"table {Path(path_stem).name}: no rows to write")
    path = Path(path_stem)
    path = path.with_name(path.name + ".csv")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(table_text(rows), encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_table(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV written by :func:`write_table`, every value as text."""
    with Path(path).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))
