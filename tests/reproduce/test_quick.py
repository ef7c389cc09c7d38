"""``lostmid reproduce --quick`` as a user runs it: the real Qwen2-0.5B and GPT-2 shapes
and 150 training steps of the tiny preset (minutes on 2 CPU cores, so marked slow:
``pytest -m slow``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lostmid.models.spec import model_slug
from lostmid.reproduce.config import DEFAULT_MODELS


@pytest.mark.slow
def test_quick_reproduce_fills_every_table_and_figure(run_cli, tmp_path: Path) -> None:
    code, _, err = run_cli("reproduce", "--quick", "--out", tmp_path)
    assert code == 0, err
    record = json.loads((tmp_path / "reproduce.json").read_text())
    table = record["training"]["table"]
    assert [row["step"] for row in table] == [0, 10, 30, 100, 150]
    assert [(r["step"], k) for r in table for k, v in r.items() if v is None] == []
    assert len(record["claims"]) == 7 * len(DEFAULT_MODELS) + 2
    figures = {p.name for p in (tmp_path / "figures").iterdir()}
    kinds = ("overlay", "positional", "depth")
    assert figures == {f"{k}-{model_slug(m)}.png" for k in kinds for m in DEFAULT_MODELS}
    html = (tmp_path / "report.html").read_text()
    assert html.count("<img ") == len(figures) + 3  # and the three training figures
