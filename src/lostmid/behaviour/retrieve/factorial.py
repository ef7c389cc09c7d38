"""``retrieve --needle-order factorial``'s analysis: the cells of the design, the model of
depth and rank with items as clusters (:mod:`lostmid.stats.factorial`, its rules in its
docstring), the two one-factor contrasts and the error-direction table; the record is
``retrieve.json``'s ``factorial``.

* ``distractors_moved``: at the run's depth nearest 50 that holds every rank, the gold
  fixed and the distractors moved: each rank against the others, paired by item
  (Newcombe's paired interval).
* ``gold_moved``: the ``ends`` arrangement (the distractors fixed at both ends, the gold
  the middle needle at every depth): accuracy by depth, and the first and last depths
  against the middle one, paired by item. The run's ``positions``, ``summary`` and
  ``shape`` are this curve's.
* ``errors``: for every cell, how many answers name the gold, a needle before it, a
  needle after it, or none (:func:`~lostmid.behaviour.tasks.needle_design.named_needle`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lostmid.behaviour.tasks.needle_design import NAMED, RANKS
from lostmid.stats.factorial import fit_factorial
from lostmid.stats.intervals import paired_counts, paired_difference_interval, wilson_interval


def curve_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of accuracy by position: all of them, or in the factorial design those of
    the gold moved between distractors fixed at both ends (its rank held)."""
    return [r for r in rows if r.get("arrangement", "ends") == "ends"]


def is_factorial(rows: Sequence[dict[str, Any]]) -> bool:
    return any(r.get("arrangement") == "factorial" for r in rows)


def _cell(rows: Sequence[dict[str, Any]], metric: str) -> dict[str, Any]:
    k = sum(bool(r[f"{metric}_correct"]) for r in rows)
    low, high = wilson_interval(k, len(rows))
    return {"n": len(rows), "correct": k, "accuracy": k / len(rows), "ci_low": low,
            "ci_high": high}  # fmt: skip


def _paired(
    a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], metric: str
) -> dict[str, Any]:
    """``a - b`` in accuracy over the items both hold, Newcombe's paired interval."""
    at_a = {r["item"]: bool(r[f"{metric}_correct"]) for r in a}
    at_b = {r["item"]: bool(r[f"{metric}_correct"]) for r in b}
    common = sorted(set(at_a) & set(at_b))
    table = paired_counts([at_a[i] for i in common], [at_b[i] for i in common])
    d, low, high = paired_difference_interval(*table)
    return {"estimate": d, "ci_low": low, "ci_high": high, "n": len(common)}


def factorial_record(
    rows: Sequence[dict[str, Any]], metric: str, margin: float, gap: int
) -> dict[str, Any]:
    """``retrieve.json``'s ``factorial`` from the prediction rows (module doc)."""
    grid = [r for r in rows if r.get("arrangement") == "factorial"]
    ends = [r for r in rows if r.get("arrangement") == "ends"]
    depths = sorted({int(r["depth"]) for r in grid})
    cells = []
    for d in depths:
        for rank in RANKS:
            mine = [r for r in grid if r["depth"] == d and r["rank"] == rank]
            if mine:
                cells.append({"depth": d, "rank": rank, **_cell(mine, metric)})
    left_out = [[d, rank] for d in depths for rank in RANKS
                if not any(c["depth"] == d and c["rank"] == rank for c in cells)]  # fmt: skip
    fit = fit_factorial(
        [r["depth"] for r in grid],
        [r["rank"] for r in grid],
        [bool(r[f"{metric}_correct"]) for r in grid],
        [r["item"] for r in grid],
        margin=margin,
    )
    full = [d for d in depths if all(any(c["depth"] == d and c["rank"] == k for c in cells)
                                     for k in RANKS)]  # fmt: skip
    moved: dict[str, Any] | None = None
    if full:
        at = min(full, key=lambda d: (abs(d - 50), d))
        by = {k: [r for r in grid if r["depth"] == at and r["rank"] == k] for k in RANKS}
        moved = {
            "depth": at,
            "contrasts": {
                f"{a} - {b}": _paired(by[a], by[b], metric)
                for a, b in (("first", "middle"), ("last", "middle"), ("last", "first"))
            },
        }
    gold_moved = _gold_moved(ends, metric)
    return {
        "metric": metric,
        "design": {
            "depths": depths,
            "ranks": list(RANKS),
            "cells": [[c["depth"], c["rank"]] for c in cells],
            "left_out": left_out,
            "items": len({r["item"] for r in grid}),
            "needles": len(grid[0]["needles"]) if grid else None,
            "gap_tokens": gap,
            "smallest_gap_placed": min(
                (r["gap_min"] for r in rows if "gap_min" in r), default=None
            ),  # fmt: skip
            "arrangements": {
                "factorial": "the gold at each depth crossed with its rank among the "
                "needles; the distractors on each side spread evenly to that end",
                "ends": "half the distractors (rounded down) at the start of the haystack, "
                "the rest at its end, fixed; the gold moved between them (middle rank)",
            },
        },
        "cells": cells,
        **{k: v for k, v in fit.record().items()},
        "distractors_moved": moved,
        "gold_moved": gold_moved,
        "errors": error_table(rows) if "named" in (rows[0] if rows else {}) else None,
    }


def _gold_moved(ends: Sequence[dict[str, Any]], metric: str) -> dict[str, Any] | None:
    if not ends:
        return None
    depths = sorted({int(r["depth"]) for r in ends})
    by = {d: [r for r in ends if r["depth"] == d] for d in depths}
    middle = min(depths, key=lambda d: (abs(d - 50), d))
    contrasts = {}
    for end in (depths[0], depths[-1]):
        if end != middle:
            contrasts[f"depth {end} - depth {middle}"] = _paired(by[end], by[middle], metric)
    return {
        "rank": "middle",
        "by_depth": [{"depth": d, **_cell(by[d], metric)} for d in depths],
        "gold_depth_placed": {
            str(d): float(np.mean([r["gold_depth"] for r in by[d]])) for d in depths
        },
        "contrasts": contrasts,
    }


def error_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per arrangement, depth and rank: the answers naming the gold, an earlier needle, a
    later one, or none (greedy answers)."""
    keys = sorted(
        {(r["arrangement"], int(r["depth"]), r["rank"]) for r in rows if "named" in r},
        key=lambda k: (k[0] != "factorial", k[1], RANKS.index(k[2])),
    )
    table = []
    for arrangement, depth, rank in keys:
        mine = [r for r in rows if (r.get("arrangement"), r["depth"], r.get("rank"))
                == (arrangement, depth, rank)]  # fmt: skip
        counts = {name: sum(r["named"] == name for r in mine) for name in NAMED}
        table.append({"arrangement": arrangement, "depth": depth, "rank": rank,
                      "n": len(mine), **counts})  # fmt: skip
    return table


def factorial_lines(record: dict[str, Any]) -> list[str]:
    """The printed summary: the two adjusted effects with their verdicts, the one-factor
    contrasts and the errors' directions."""

    def ci(e: dict[str, Any]) -> str:
        low, high = e["ci_low"], e["ci_high"]
        if e["estimate"] is None or low is None or high is None:
            return "undetermined"
        return f"{e['estimate']:+.3f} [{low:+.3f}, {high:+.3f}]"

    d, k = record["depth_effect"], record["rank_effect"]
    lines = [
        f"factorial ({record['metric']}): depth valley, rank held {ci(d)}: depth makes a "
        f"valley beyond rank: {d['verdict']}",
        f"factorial: rank valley, depth held {ci(k)}: rank makes a valley beyond depth: "
        f"{k['verdict']}",
        f"factorial: depth tilt {ci(record['depth_tilt'])}; rank tilt {ci(record['rank_tilt'])}",
    ]
    moved = record["distractors_moved"]
    if moved:
        parts = "; ".join(f"{name} {ci(c)}" for name, c in moved["contrasts"].items())
        lines.append(f"distractors moved, gold at depth {moved['depth']}: {parts}")
    gold = record["gold_moved"]
    if gold and gold["contrasts"]:
        parts = "; ".join(f"{name} {ci(c)}" for name, c in gold["contrasts"].items())
        lines.append(f"gold moved, distractors at both ends: {parts}")
    errors = record["errors"]
    if errors:
        wrong = [e for e in errors if e["arrangement"] == "factorial"]
        total = {n: sum(e[n] for e in wrong) for n in NAMED}
        lines.append(
            f"factorial errors: {total['earlier']} name an earlier needle, {total['later']} "
            f"a later one, {total['none']} none (by cell: retrieve.json factorial.errors)"
        )
    return lines
