"""``lostmid score SAMPLES``: accuracy by position from per-sample results another tool
wrote, with lostmid's intervals and verdict.

A model served where lostmid cannot load it (vLLM, llama.cpp's server, an API) still
gets lostmid's analysis: export a task with ``lostmid retrieve --export-lm-eval DIR``,
run it with lm-evaluation-harness and ``--log_samples``, and give the logged samples
(``samples_lostmid_TASK_*.jsonl``) to ``lostmid score``. Each sample's document carries
the position fields the export wrote (``depth`` for a needle task, ``gold_index`` for a
task placed by index, ``length_cell``, ``item``) and lm-eval's score (``acc``): lostmid
pools them by position into Wilson intervals, the primacy and recency contrasts and the
shape class (:mod:`lostmid.stats.shape`), per length cell and over all, exactly as
``retrieve`` does for a model it runs itself.

The config and the readers are torch-free.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lostmid.errors import UserError
from lostmid.runs.folder import RunFolder

FORMATS = ("lm-eval",)
HELP = {
    "samples": "Per-sample results: lm-eval's samples_*.jsonl (--log_samples) of a task "
    "lostmid retrieve --export-lm-eval wrote.",
    "format": "The file's format: lm-eval.",
    "metric": "The per-sample score to read (lm-eval's metric name; 1 correct, 0 not).",
    "margin": "Primacy/recency margin of the shape class (as lostmid retrieve --margin).",
    "seed": "Recorded with the run (nothing here is random).",
    "overwrite": "Replace an earlier score.json in --out.",
}
OUTPUT_FILES = ["score.json"]


@dataclass(frozen=True)
class ScoreConfig:
    """What to score (module doc); checked when made."""

    samples: Path
    format: str = "lm-eval"
    metric: str = "acc"
    margin: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        from lostmid.checks import check_choice

        object.__setattr__(self, "samples", Path(self.samples))
        check_choice("--format", self.format, FORMATS)
        if not self.samples.is_file():
            raise UserError(
                f"--samples {self.samples}: no such file; give lm-eval's samples_*.jsonl "
                "(lm_eval ... --log_samples --output_path DIR writes it under DIR)"
            )
        if not 0.0 <= self.margin < 1.0:
            raise UserError(f"--margin must be in [0, 1), got {self.margin}")

    def record(self) -> dict[str, Any]:
        return asdict(self) | {"samples": str(self.samples)}


def read_lm_eval_samples(path: Path, metric: str = "acc") -> list[dict[str, Any]]:
    """One row per logged sample: ``axis`` (``depth`` or ``index``), ``position``,
    ``length`` (the length cell, None when the run had one length), ``item`` and
    ``correct``. Anything else is one line naming the line and what was wrong.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "s.jsonl"
    >>> doc = {"depth": 50, "gold_index": None, "length_cell": 512, "item": 3}
    >>> _ = path.write_text(json.dumps({"doc": doc, "acc": 1.0}) + "\\n")
    >>> read_lm_eval_samples(path)
    [{'axis': 'depth', 'position': 50, 'length': 512, 'item': 3, 'correct': True}]
    """
    rows = []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            sample = json.loads(line)
        except (json.JSONDecodeError, ValueError) as err:
            raise UserError(f"{where}: not JSON ({str(err)[:120]})") from None
        doc = sample.get("doc") if isinstance(sample, dict) else None
        if not isinstance(doc, dict):
            raise UserError(f"{where}: no 'doc' object; is this lm-eval's --log_samples file?")
        if doc.get("depth") is not None:
            axis, position = "depth", doc["depth"]
        elif doc.get("gold_index") is not None:
            axis, position = "index", doc["gold_index"]
        else:
            raise UserError(
                f"{where}: its document has no depth or gold_index; score reads the "
                "samples of a task lostmid retrieve --export-lm-eval wrote"
            )
        score = sample.get(metric)
        if isinstance(score, list) and len(score) == 1:
            score = score[0]
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise UserError(f"{where}: no number under {metric!r} (--metric names lm-eval's)")
        if not math.isfinite(score) or score not in (0, 1):
            raise UserError(f"{where}: {metric} = {score!r}; expected 1 (correct) or 0")
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise UserError(f"{where}: {axis} = {position!r} is not a position")
        length = doc.get("length_cell")
        rows.append(
            {
                "axis": axis,
                "position": position,
                "length": length if isinstance(length, int) else None,
                "item": doc.get("item"),
                "correct": score == 1,
            }
        )
    if not rows:
        raise UserError(f"{path}: no samples in the file")
    if len({r["axis"] for r in rows}) > 1:
        raise UserError(f"{path}: samples of a depth task and an index task mixed; one task a file")
    return rows


def score_rows(rows: Sequence[Mapping[str, Any]], margin: float) -> dict[str, Any]:
    """Accuracy by position with Wilson intervals, the summary (primacy, recency, gap
    with Newcombe intervals, paired by the samples' item ids where they pair up) and the
    shape class (primacy and recency paired likewise), over all rows and per length
    cell."""
    from lostmid.behaviour.score import score_positions, shape_of, summarise_positions

    def one(part: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        import numpy as np

        axis = part[0]["axis"]
        positions = np.array([int(r["position"]) for r in part])
        correct = np.array([bool(r["correct"]) for r in part])
        # the export's item ids pair the contrasts by item (one per length cell), when
        # every sample has one
        items = None
        if all(isinstance(r["item"], int | str) and not isinstance(r["item"], bool) for r in part):
            items = [(r["length"], r["item"]) for r in part]
        scores = score_positions(positions, correct, None, axis, items)
        summary = summarise_positions(scores, "generate")
        return {
            "positions": [s.record() for s in scores],
            "summary": summary.record(),
            "shape": shape_of(scores, summary, margin).record(),
        }

    lengths = sorted({r["length"] for r in rows if r["length"] is not None})
    result = {"axis": rows[0]["axis"], "samples": len(rows), **one(rows)}
    if len(lengths) > 1:
        result["by_length"] = {str(n): one([r for r in rows if r["length"] == n]) for n in lengths}
    return result


FOLDER = RunFolder("score", writes=tuple(OUTPUT_FILES))
"""What ``run_score`` writes into ``--out``."""


@FOLDER.holds
def run_score(
    config: ScoreConfig, *, out: Path, overwrite: bool = False, console: Any = None
) -> dict[str, Any]:
    """Read the samples, score them by position, write ``score.json``; returns its
    record (``schema`` ``lostmid.score/1``)."""
    import time

    from lostmid.files import schema_of
    from lostmid.runinfo import write_json

    start = time.perf_counter()
    rows = read_lm_eval_samples(config.samples, config.metric)
    folder = FOLDER.open(out, overwrite=overwrite)
    scored = score_rows(rows, config.margin)
    metadata = folder.metadata(
        {**config.record(), "out": str(out)},
        config.seed,
        {"total": time.perf_counter() - start},
    )
    record = {"schema": schema_of("score"), "source": str(config.samples), **scored}
    write_json(out / "score.json", record | {"metadata": metadata})
    if console is not None:
        from rich.table import Table

        from lostmid.report.layout import fit_table

        axis = scored["axis"]
        table = Table(title=f"lostmid score: {config.samples.name}")
        for column in (config_axis(axis), "n", "correct", "accuracy [Wilson 95%]"):
            table.add_column(column)
        for p in scored["positions"]:
            table.add_row(
                str(p[axis]),
                str(p["n"]),
                str(p["correct"]),
                f"{p['accuracy']:.2f} [{p['ci_low']:.2f}, {p['ci_high']:.2f}]",
            )
        console.print(fit_table(table))
        console.print(f"shape {scored['shape']['shape']}; wrote {out / 'score.json'}")
    return record


def config_axis(axis: str) -> str:
    """The column name of a position axis."""
    return "depth %" if axis == "depth" else "gold index"
