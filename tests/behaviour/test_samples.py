"""``lostmid score`` (lostmid.behaviour.samples): logged samples of another tool read
back into accuracy by position, on constructed logs whose answer is known (a U, a flat
curve, an undecided one; per length cell), and every malformed log one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lostmid.behaviour.samples import ScoreConfig, read_lm_eval_samples, score_rows
from lostmid.errors import UserError


def _log(path: Path, accuracy: dict[int, tuple[int, int]], length: int | None = 512) -> Path:
    """A samples file with ``correct`` of ``n`` right at each depth."""
    lines = []
    for depth, (correct, n) in accuracy.items():
        for item in range(n):
            doc = {"depth": depth, "gold_index": None, "length_cell": length, "item": item}
            lines.append(json.dumps({"doc": doc, "acc": 1.0 if item < correct else 0.0}))
    with path.open("a") as f:
        f.write("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("accuracy", "shape"),
    [
        ({0: (38, 40), 50: (8, 40), 100: (36, 40)}, "U"),  # yes
        ({0: (1000, 2000), 50: (1000, 2000), 100: (1000, 2000)}, "flat"),  # no
        ({0: (3, 4), 50: (2, 4), 100: (3, 4)}, "undetermined"),  # too few to say
    ],
)
def test_the_shape_comes_out_each_way(tmp_path: Path, accuracy, shape) -> None:
    rows = read_lm_eval_samples(_log(tmp_path / "s.jsonl", accuracy))
    scored = score_rows(rows, margin=0.05)
    assert scored["shape"]["shape"] == shape
    assert [(p["depth"], p["correct"], p["n"]) for p in scored["positions"]] == [
        (d, c, n) for d, (c, n) in accuracy.items()
    ]
    first = scored["positions"][0]
    assert first["ci_low"] <= first["accuracy"] <= first["ci_high"]  # Wilson, around it


def test_length_cells_are_scored_apart_and_together(tmp_path: Path) -> None:
    path = _log(tmp_path / "s.jsonl", {0: (10, 10), 50: (0, 10), 100: (10, 10)}, 512)
    _log(path, {0: (5, 10), 50: (5, 10), 100: (5, 10)}, 2048)
    scored = score_rows(read_lm_eval_samples(path), margin=0.05)
    assert set(scored["by_length"]) == {"512", "2048"}
    assert scored["by_length"]["512"]["shape"]["shape"] == "U"
    assert [p["correct"] for p in scored["positions"]] == [15, 5, 15]  # pooled


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 1: not JSON"),
        ('{"acc": 1}', "no 'doc' object"),
        ('{"doc": {"item": 0}, "acc": 1}', "no depth or gold_index"),
        ('{"doc": {"depth": 10}, "acc": 0.5}', r"expected 1 \(correct\) or 0"),
        ('{"doc": {"depth": 10}, "acc": true}', "no number under 'acc'"),
        ('{"doc": {"depth": 10}}', "no number under 'acc'"),
        ('{"doc": {"depth": -3}, "acc": 1}', "is not a position"),
        ('{"doc": {"depth": 1' + "0" * 5000 + '}, "acc": 1}', "not JSON"),
        ("", "no samples"),
    ],
)
def test_a_malformed_log_is_one_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(UserError, match=message):
        read_lm_eval_samples(path)


def test_mixed_tasks_and_missing_files_are_refused(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"doc": {"depth": 0}, "acc": 1}\n{"doc": {"gold_index": 2}, "acc": 1}\n')
    with pytest.raises(UserError, match="mixed"):
        read_lm_eval_samples(path)
    code, _, err = run_cli("score", tmp_path / "nowhere.jsonl", "--out", tmp_path / "o")
    assert code == 2 and "no such file" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(UserError, match="--margin"):
        ScoreConfig(path, margin=1.5)
