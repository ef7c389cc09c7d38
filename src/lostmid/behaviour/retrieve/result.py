"""What a ``lostmid retrieve`` run found and the files it writes: accuracy by position
under each metric, by length, the printed table and the summary lines.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.behaviour.decoding.tokenizers import Tokenizer
from lostmid.behaviour.retrieve.config import RetrieveConfig
from lostmid.behaviour.retrieve.factorial import (
    curve_rows,
    factorial_lines,
    factorial_record,
    is_factorial,
)
from lostmid.behaviour.score import (
    PositionScore,
    RetrievalSummary,
    score_positions,
    shape_of,
    summarise_positions,
)
from lostmid.behaviour.tasks.example import RetrievalExample
from lostmid.behaviour.tasks.registry import index_task
from lostmid.files import write_text
from lostmid.recordable import fields_record
from lostmid.report.html import model_label
from lostmid.runinfo import Timer
from lostmid.stats.shape import ShapeIndices


@dataclass(frozen=True)
class ScoreSet:
    """Accuracy by position, its summary and shape under one metric (``generate``: the
    ``--scoring`` rule on the greedy answer; ``teacher``: all target tokens argmax)."""

    metric: str
    positions: tuple[PositionScore, ...]
    summary: RetrievalSummary
    shape: ShapeIndices

    def record(self) -> dict[str, Any]:
        return fields_record(self)


@dataclass(frozen=True)
class LengthScores:
    """The score sets of one length cell (``length`` None: the run's one length)."""

    length: int | None
    pairs: int | None
    scores: tuple[ScoreSet, ...]

    def record(self) -> dict[str, Any]:
        return {
            "length": self.length,
            "pairs": self.pairs,
            "by_metric": {s.metric: s.record() for s in self.scores},
        }


@dataclass(frozen=True)
class RetrieveResult:
    """What ``run_retrieve`` measured; ``scores[0]`` is the primary metric (pooled over
    lengths by heatmap row when there are several)."""

    config: RetrieveConfig
    task: str
    axis: str
    scores: tuple[ScoreSet, ...]
    by_length: tuple[LengthScores, ...]
    cells: tuple[dict[str, Any], ...]
    model: dict[str, Any]
    tokenizer: str | None
    examples: int
    seconds: float
    rule: str
    prompt: dict[str, Any]
    data: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None
    factorial: dict[str, Any] | None = None

    @property
    def primary(self) -> ScoreSet:
        return self.scores[0]

    def record(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "axis": self.axis,
            "metric": self.primary.metric,
            "positions": [p.record() for p in self.primary.positions],
            "summary": self.primary.summary.record(),
            "shape": self.primary.shape.record(),
            "by_metric": {s.metric: s.record() for s in self.scores},
            "lengths": [b.length for b in self.by_length],
            "by_length": [b.record() for b in self.by_length],
            "cells": list(self.cells),
            "scoring": {
                "rule": self.rule,
                "requested": self.config.scoring,
                "passes": self.config.passes,
            },
            "prompt": self.prompt,
            "calibration": self.calibration,
            "design": self.config.design,
            "data": self.data,
            "model": self.model,
            "tokenizer": self.tokenizer,
            "examples": self.examples,
            "seconds": self.seconds,
            "config": self.config.record(),
            **({} if self.factorial is None else {"factorial": self.factorial}),
        }


def score_set(
    metric: str, rows: Sequence[dict[str, Any]], key: str, axis: str, margin: float
) -> ScoreSet:
    positions = np.array([int(r[key]) for r in rows])
    correct = np.array([bool(r[f"{metric}_correct"]) for r in rows])
    logprob = np.array([r["logprob"] for r in rows]) if "logprob" in rows[0] else None
    # an item is one haystack, needle and question of one length cell, read at every
    # position: the contrasts pair by it (lostmid.behaviour.score)
    items = [(r["length"], r["item"]) for r in rows]
    scores = score_positions(positions, correct, logprob, axis, items)
    summary = summarise_positions(scores, metric)
    return ScoreSet(metric, scores, summary, shape_of(scores, summary, margin))


def build_result(
    config: RetrieveConfig,
    examples: Sequence[RetrievalExample],
    rows: list[dict[str, Any]],
    passes: Sequence[str],
    loaded: Any,
    tokenizer: Tokenizer | None,
    rule: str,
    timer: Timer,
) -> RetrieveResult:
    task = examples[0].task
    axis = "index" if examples[0].gold_index is not None else "depth"
    metrics = [m for m in ("generate", "teacher") if m in passes]
    factorial = None
    if is_factorial(rows):  # the cells apart; the curve is the gold moved, its rank held
        factorial = factorial_record(rows, metrics[0], config.margin, config.needle_gap)
        rows = curve_rows(rows)
    lengths = list(dict.fromkeys(r["length"] for r in rows))
    for r in rows:
        r["row"] = int(round(r["depth_pct"])) if r["depth_pct"] is not None else r["position"]
    by_length = []
    cells: list[dict[str, Any]] = []
    for length in lengths:
        mine = [r for r in rows if r["length"] == length]
        sets = tuple(score_set(m, mine, "position", axis, config.margin) for m in metrics)
        pairs = mine[0]["pairs"]
        by_length.append(LengthScores(length, pairs, sets))
        depth_of = {r["position"]: r["depth_pct"] for r in mine}
        for i, p in enumerate(sets[0].positions):
            cell: dict[str, Any] = {
                "length": length,
                "pairs": pairs,
                axis: p.position,
                "depth_pct": depth_of[p.position],
                "n": p.n,
            }
            for s in sets:
                q = s.positions[i]
                cell[f"{s.metric}_correct"] = q.correct
                cell[f"{s.metric}_accuracy"] = q.accuracy
                cell[f"{s.metric}_ci_low"] = q.ci_low
                cell[f"{s.metric}_ci_high"] = q.ci_high
            cell["mean_logprob"] = p.mean_logprob
            cell["logprob_ci_low"] = p.logprob_ci_low
            cell["logprob_ci_high"] = p.logprob_ci_high
            cells.append(cell)
    if len(lengths) == 1:
        pooled = by_length[0].scores
    else:  # pooled over lengths by heatmap row (depth in %)
        pooled = tuple(score_set(m, rows, "row", "depth", config.margin) for m in metrics)
    return RetrieveResult(
        config=config,
        task=task,
        axis=axis if len(lengths) == 1 else "depth",
        scores=pooled,
        by_length=tuple(by_length),
        cells=tuple(cells),
        model=loaded.describe(),
        tokenizer=None if tokenizer is None else tokenizer.name,
        examples=len(examples),
        seconds=timer.seconds["total"],
        rule=rule,
        prompt={},
        factorial=factorial,
    )


def write_outputs(out: Path, result: RetrieveResult, rows: list[dict[str, Any]]) -> None:
    from lostmid.behaviour.retrieve.plot import plot_accuracy_by_position, plot_heatmap
    from lostmid.report.plots import save_figure
    from lostmid.report.tables import write_table

    lines = []
    for row in rows:
        clean = {k: v for k, v in row.items() if k != "row" and v is not None}
        lines.append(json.dumps(clean, ensure_ascii=False) + "\n")
    write_text(out / "predictions.jsonl", "".join(lines))
    write_table(out / "retrieve.cells", list(result.cells))
    config = result.config
    indexed = index_task(result.task)
    chance = indexed.chance(config) if indexed is not None else None
    model = model_label(config.model)  # a path by its last part: the title stays short
    label = f"{result.task} retrieval, {model} ({result.examples} examples)"
    series: dict[str, Sequence[PositionScore]]
    if len(result.by_length) == 1:
        series = {s.metric: s.positions for s in result.scores}
        xlabel = "gold index (0-indexed)" if result.axis == "index" else "depth (%)"
    else:
        metric = result.primary.metric
        series = {}
        for b in result.by_length:
            s = next(x for x in b.scores if x.metric == metric)
            series[f"L = {b.length}"] = as_rows(s.positions, result.cells, b.length)
        xlabel = "gold position (% of the context)"
    save_figure(
        plot_accuracy_by_position(series, xlabel=xlabel, title=label, chance=chance),
        out / "retrieve.png",
    )
    metric = result.primary.metric
    save_figure(
        plot_heatmap(result.cells, metric=metric, title=f"{label}: {metric} accuracy"),
        out / "heatmap.png",
    )


def axis_key(cell: dict[str, Any]) -> str:
    return "index" if "index" in cell else "depth"


def as_rows(
    positions: Sequence[PositionScore], cells: Sequence[dict[str, Any]], length: int | None
) -> tuple[PositionScore, ...]:
    """Position scores of one length with the heatmap row (depth %) as their position."""
    depth = {c[axis_key(c)]: c["depth_pct"] for c in cells if c["length"] == length}
    return tuple(replace(p, position=int(round(depth[p.position]))) for p in positions)


def cells_table(result: RetrieveResult) -> Any:
    from rich.table import Table

    table = Table(title=f"lostmid retrieve: {result.task} on {result.config.model}")
    several = len(result.by_length) > 1
    key = "index" if "index" in result.cells[0] else "depth"
    if several:
        table.add_column("length", justify="right")
    table.add_column(key, justify="right")
    if key == "index" and several:
        table.add_column("depth %", justify="right")
    table.add_column("n", justify="right")
    metrics = [s.metric for s in result.scores]
    for m in metrics:
        table.add_column(f"{m} acc [95% CI]", justify="right")
    has_lp = result.cells[0]["mean_logprob"] is not None
    if has_lp:
        table.add_column("mean log p [95% t]", justify="right")
    for c in result.cells:
        row = [str(c["length"])] if several else []
        row.append(str(c[key]))
        if key == "index" and several:
            row.append(f"{c['depth_pct']:.0f}")
        row.append(str(c["n"]))
        for m in metrics:
            row.append(
                f"{c[f'{m}_accuracy']:.3f} [{c[f'{m}_ci_low']:.3f}, {c[f'{m}_ci_high']:.3f}]"
            )
        if has_lp:
            low, high = c["logprob_ci_low"], c["logprob_ci_high"]
            ci = "" if low is None else f" [{low:.2f}, {high:.2f}]"
            row.append(f"{c['mean_logprob']:.3f}{ci}")
        table.add_row(*row)
    return table


def summary_lines(result: RetrieveResult) -> list[str]:
    """One line per metric (and length when several): mean accuracy, gap, primacy and
    recency with intervals, and the shape class the intervals decide."""
    lines = [f"scoring: {result.rule} (greedy), design {result.config.design}"]
    groups: list[tuple[str, tuple[ScoreSet, ...]]] = [("", result.scores)]
    if len(result.by_length) > 1:
        groups += [(f"L = {b.length}, ", b.scores) for b in result.by_length]
    for prefix, sets in groups:
        for s in sets:
            m, shape = s.summary, s.shape
            lines.append(
                f"{prefix}{s.metric}: mean {m.mean_accuracy:.3f} [{m.mean_ci_low:.3f}, "
                f"{m.mean_ci_high:.3f}]; gap {m.gap.estimate:+.3f}; primacy "
                f"{m.primacy.estimate:+.3f} [{m.primacy.ci_low:+.3f}, {m.primacy.ci_high:+.3f}]"
                f"; recency {m.recency.estimate:+.3f} [{m.recency.ci_low:+.3f}, "
                f"{m.recency.ci_high:+.3f}]; shape {shape.shape}"
            )
    lines += readout_disagreement(result.scores)
    if result.factorial is not None:
        lines[1:1] = ["positions: the gold moved between distractors fixed at both ends"]
        lines += factorial_lines(result.factorial)
    return lines


def readout_disagreement(sets: Sequence[ScoreSet]) -> list[str]:
    """One line when greedy accuracy lies above teacher-forced accuracy (their Wilson
    intervals apart): the model writes something before the answer that the teacher
    target lacks (a base model's ``: 9440050`` after "... is"), so the teacher readout
    is not this model's behaviour under this prompt; else nothing."""
    by = {s.metric: s.summary for s in sets}
    g, t = by.get("generate"), by.get("teacher")
    if g is None or t is None or not t.mean_ci_high < g.mean_ci_low:
        return []
    return [
        f"note: teacher forcing reads {t.mean_accuracy:.3f} where greedy decoding reads "
        f"{g.mean_accuracy:.3f}: the model's replies put text before the answer that the "
        "teacher target lacks (see predictions.jsonl), so the teacher readout does not "
        "measure this model here: read the generate rows"
    ]
