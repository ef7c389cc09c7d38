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
    for run in record["training"]["seeds"]:  # every training run's table, every cell filled
        table = run["table"]
        assert [row["step"] for row in table] == [0, 10, 30, 100]
        assert [(r["step"], k) for r in table for k, v in r.items() if v is None] == []
    claims = record["claims"]
    assert json.loads((tmp_path / "claims.json").read_text()) == claims
    for model in DEFAULT_MODELS:  # the core's step-0 rows, each model's own
        assert sum(c["claim"].startswith(model) for c in claims) == 11
    # the real-checkpoint rows read every peak
    deepens = [c for c in claims if c["claim"] == "Pretraining deepens the valley"]
    assert deepens and all("first bin" in c["ours"] and "last" in c["ours"] for c in deepens)
    figures = {p.name for p in (tmp_path / "figures").iterdir()}
    kinds = ("overlay", "positional", "depth")
    assert {f"{k}-{model_slug(m)}.png" for k in kinds for m in DEFAULT_MODELS} <= figures
    assert {"summary.png", "checkpoints.png"} <= figures
    html = (tmp_path / "report.html").read_text()
    assert html.count("<img ") >= len(figures)  # and each training run's figures
