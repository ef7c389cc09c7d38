"""Length x position grids: which examples fill which cell, every example's record, the
heatmap, and ``--design shared`` end to end."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from lostmid.behaviour.decoding.tokenizers import load_tokenizer
from lostmid.behaviour.retrieve.grid import gold_grid, grid_examples
from lostmid.behaviour.retrieve.plot import plot_heatmap
from lostmid.behaviour.tasks.kv import kv_example, kv_pairs_for_length
from lostmid.stats import wilson_interval

Cli = Callable[..., tuple[int, str, str]]


def test_gold_grid_rows_are_the_same_fractions_at_every_length() -> None:
    for pairs in (5, 12, 140):
        rows = [r for _, r in gold_grid(pairs)]
        assert rows == [0.0, 25.0, 50.0, 75.0, 100.0]
    assert [i for i, _ in gold_grid(140)] == [0, 34, 69, 104, 139]  # Liu et al.'s
    assert gold_grid(3, positions=5) == [(0, 0.0), (1, 50.0), (2, 100.0)]


@pytest.mark.parametrize("length", [40, 97, 300])
def test_kv_pairs_fill_the_length_and_one_more_would_not(length: int) -> None:
    def tokens(pairs: int) -> int:
        ex = kv_example(seed=2, index=0, pairs=pairs, gold_index=pairs - 1, key_chars=3,
                        style="compact")  # fmt: skip
        return len(ex.prompt)

    p = kv_pairs_for_length(length, len, seed=2, key_chars=3, style="compact", query_aware=False)
    assert tokens(p) <= length < tokens(p + 1)


def test_niah_grid_run_records_every_cell_and_example(
    bpe_model_dir: Path, tmp_path: Path, run_cli: Cli
) -> None:
    out = tmp_path / "g"
    code, stdout, err = run_cli(
        "retrieve", "--model", bpe_model_dir, "--task", "niah", "--lengths", "500,300",
        "--depth", "0,50,100", "--examples", "2", "--passes", "teacher", "--out", out,
    )  # fmt: skip
    assert code == 0, err
    result = json.loads((out / "retrieve.json").read_text())
    assert result["lengths"] == [300, 500] and len(result["cells"]) == 6
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 12
    for r in rows:  # its token count, depth and length cell, and the prompt fits the cell
        assert {"tokens", "depth", "depth_pct", "length", "item"} <= set(r)
        assert r["tokens"] <= r["length"] and r["depth"] in (0, 50, 100)
    for cell in result["cells"]:
        mine = [r for r in rows if (r["length"], r["depth"]) == (cell["length"], cell["depth"])]
        k = sum(r["teacher_correct"] for r in mine)
        assert cell["n"] == len(mine) == 2 and cell["teacher_correct"] == k
        lo, hi = wilson_interval(k, 2)
        assert (cell["teacher_ci_low"], cell["teacher_ci_high"]) == pytest.approx((lo, hi))
    # pooled over lengths by depth row; every length has its own summary and shape
    assert [p["depth"] for p in result["positions"]] == [0, 50, 100]
    assert [p["n"] for p in result["positions"]] == [4, 4, 4]
    assert {b["length"] for b in result["by_length"]} == {300, 500}
    assert "shape" in result["by_length"][0]["by_metric"]["teacher"]
    with (out / "retrieve.cells.csv").open() as f:
        table = list(csv.DictReader(f))
    assert [(int(t["length"]), int(t["depth"]), int(t["n"])) for t in table] == [
        (c["length"], c["depth"], c["n"]) for c in result["cells"]
    ]
    assert (out / "heatmap.png").stat().st_size > 1000 and "L = 300" in stdout


def test_kv_grid_examples_grow_with_the_length() -> None:
    common = dict(examples=2, seed=0, pairs=75, gold_index=None, depth=None, positions=None,
                  key_chars=2, style="compact", query_aware=False, haystack="repeat", vocab=64,
                  offset=128, niah_length=1024, design="moved", count_tokens=len)  # fmt: skip
    exs = grid_examples("kv", lengths=(60, 120), **common)
    by_length = {L: [e for e in exs if e.length == L] for L in (60, 120)}
    assert by_length[120][0].pairs > by_length[60][0].pairs
    for length, mine in by_length.items():
        assert sorted({e.depth_pct for e in mine}) == [0.0, 25.0, 50.0, 75.0, 100.0]
        assert all(len(e.prompt) <= length for e in mine)


def test_heatmap_holds_the_cells_and_leaves_missing_ones_blank() -> None:
    cells = [
        {"length": 256, "depth_pct": 0.0, "generate_accuracy": 1.0, "n": 4},
        {"length": 256, "depth_pct": 50.0, "generate_accuracy": 0.25, "n": 4},
        {"length": 512, "depth_pct": 0.0, "generate_accuracy": 0.5, "n": 4},
    ]
    fig = plot_heatmap(cells, metric="generate", title="t")
    grid = np.asarray(fig.axes[0].images[0].get_array(), dtype=float)
    np.testing.assert_array_equal(grid, [[1.0, 0.5], [0.25, np.nan]])
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels == ["1.00\nn=4", "0.50\nn=4", "0.25\nn=4"]


def test_shared_design_run_scores_each_question_as_its_full_prompt(
    bpe_model_dir: Path, tmp_path: Path, run_cli: Cli
) -> None:
    """Every record's key asked of one prefill per context; each example's log-probability
    is teacher forcing on context + question, computed here without the cache."""
    from lostmid.behaviour.decoding.generate import teacher_forced
    from lostmid.models import load_model

    out = tmp_path / "s"
    code, _, err = run_cli(
        "retrieve", "--model", bpe_model_dir, "--pairs", "5", "--key-chars", "4",
        "--design", "shared", "--examples", "2", "--positions", "5", "--out", out,
    )  # fmt: skip
    assert code == 0, err
    result = json.loads((out / "retrieve.json").read_text())
    assert result["design"] == "shared" and result["metadata"]["stages"]["computed"] == [
        "shared-one"
    ]
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 10 and {r["item"] for r in rows} == {0, 1}
    from lostmid.behaviour.tasks.kv import kv_query, kv_records

    tok = load_tokenizer(str(bpe_model_dir))
    model = load_model(str(bpe_model_dir), init="auto").model
    for r in rows:
        records = kv_records(0, r["item"], 5, 4)  # the drawn order: one context per item
        ex = kv_query(records, r["gold_index"])
        assert (ex.key, ex.value) == (r["key"], r["value"])
        cut = ex.query_start
        ids = tok.encode(ex.prompt[:cut], special=True) + tok.encode(ex.prompt[cut:])
        ref = teacher_forced(model, [ids], [tok.encode(ex.target)]).logprob[0]
        assert r["logprob"] == pytest.approx(ref, rel=1e-5)
