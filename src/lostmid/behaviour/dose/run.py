"""The depth dose-response from finished retrieval runs: ``dose.json`` and ``dose.png``.

Reads each run's ``retrieval.json`` (``lostmid train --task``), reduces it to a
:class:`~lostmid.behaviour.dose.summary.DoseRun`, and writes the
:class:`~lostmid.behaviour.dose.summary.DoseSummary` (readouts 1-5 with 95% t intervals over
seeds, the variants against their base arm, the verdict of the pre-stated rule) and one
figure. ``lostmid sweep --task train-retrieval`` calls it on its finished units.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from lostmid.behaviour.dose.summary import BASE, DoseRun, DoseSummary
from lostmid.errors import UserError
from lostmid.files import read_json_object
from lostmid.runinfo import run_metadata, write_json

DOSE_JSON = "dose.json"
DOSE_FIGURE = "dose.png"


def read_dose_runs(folders: Sequence[Path]) -> list[DoseRun]:
    """One :class:`DoseRun` per folder holding a finished ``retrieval.json``."""
    runs = []
    for folder in folders:
        document = read_json_object(Path(folder) / "retrieval.json")
        runs.append(DoseRun.from_retrieval(document, str(folder)))
    if not runs:
        raise UserError("no finished retrieval runs to summarise")
    return runs


def write_dose_summary(folders: Sequence[Path], out: Path) -> dict[str, Any]:
    """``out/dose.json`` and ``out/dose.png`` from the runs in ``folders``; returns
    ``{"file": "dose.json", "verdict": ..., "runs": n}``."""
    summary = DoseSummary(tuple(read_dose_runs(folders)))
    record = summary.record()
    record["metadata"] = run_metadata(
        "dose-summary", {"folders": [str(f) for f in folders]}, None, {}
    )
    write_json(Path(out) / DOSE_JSON, record)
    from lostmid.report.plots import save_figure

    save_figure(plot_dose(record), Path(out) / DOSE_FIGURE)
    verdict = record["dose_response"]
    return {
        "file": DOSE_JSON,
        "figure": DOSE_FIGURE,
        "runs": len(summary.runs),
        "verdict": None if verdict is None else verdict["verdict"],
    }


def _estimates(rows: Sequence[dict[str, Any] | None]) -> tuple[np.ndarray, np.ndarray]:
    """(estimate, half-width) per record from interval records (NaN where missing)."""
    est = np.array([np.nan if r is None else r["estimate"] for r in rows])
    low = np.array([np.nan if r is None or r["ci_low"] is None else r["ci_low"] for r in rows])
    return est, est - low


def plot_dose(record: dict[str, Any]) -> Figure:
    """Four panels: (a) record influence at init by record, per arm (log scale); (b) the
    half-accuracy time by record relative to the run's mean (runs that learnt); (c) B
    against S, one point per run, coloured by arm, hollow where the run did not learn
    (the rule does not count it), the line the mean per-seed slope through the counted
    base runs; (d) final accuracy by record per arm. Bars: 95% t intervals over seeds."""
    from lostmid.report.plots import new_figure

    fig = new_figure((11.0, 8.0))
    axes = fig.subplots(2, 2)
    arms = record["arms"]
    colours = colormaps["viridis"](np.linspace(0.1, 0.85, max(len(arms), 1)))
    shown: set[int] = set()  # the panels (by id) that received a finite point
    for colour, arm in zip(colours, arms, strict=True):
        style = "-" if arm["variant"] == BASE else "--"
        x = np.arange(1, arm["records"] + 1)
        for ax, rows in (
            (axes[0, 0], arm["structural"]["profile"]),
            (axes[0, 1], arm["learning"]["half_time_relative"]),
            (axes[1, 1], arm["final"]["accuracy"]),
        ):
            est, half = _estimates(rows)
            if np.isfinite(est).any():
                shown.add(id(ax))
            ax.errorbar(x, est, yerr=half, ls=style, marker="o", ms=3, capsize=2,
                        color=colour, label=arm["arm"])  # fmt: skip
    axes[0, 0].set_yscale("log")
    axes[0, 0].set_title("(a) record influence at init (sum 1)", fontsize=9)
    axes[0, 1].set_title("(b) half-accuracy time / run mean", fontsize=9)
    axes[1, 1].set_title("(d) final accuracy by record", fontsize=9)
    axes[1, 1].set_ylim(-0.03, 1.03)
    ax = axes[1, 0]
    by_arm = {a["arm"]: c for a, c in zip(arms, colours, strict=True)}
    base_points = []
    labelled: set[str] = set()
    for run in record["runs"]:
        summary = DoseRun.from_record(run)
        learning = summary.learning()
        if learning.order is None:
            continue
        marker = "o" if summary.variant == BASE else "s"
        label = None if summary.arm in labelled else summary.arm
        labelled.add(summary.arm)
        colour = by_arm[summary.arm]
        face = colour if summary.learnt else "none"  # hollow: did not learn, not counted
        ax.plot(learning.structural_primacy, learning.order, marker, color=colour,
                markerfacecolor=face, label=label)  # fmt: skip
        if summary.variant == BASE and summary.learnt:
            base_points.append((learning.structural_primacy, learning.order))
    verdict = record.get("dose_response")
    if verdict is not None and verdict["slope"] is not None and base_points:
        slope = verdict["slope"]["estimate"]
        centre = np.mean(np.array(base_points), axis=0)  # the line through the base runs' mean
        xs = np.array(ax.get_xlim())
        ax.plot(xs, centre[1] + slope * (xs - centre[0]), color="grey", lw=0.8, ls=":",
                label=f"mean per-seed slope {slope:.2f}: {verdict['verdict']}")  # fmt: skip
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
        shown.add(id(ax))
    empty = {
        id(axes[0, 1]): "no run reached half accuracy on a record:\nno learning times to show",
        id(ax): "no run has a fitted order of learning:\nnothing to place on S and B",
    }
    for panel in (axes[0, 1], ax):
        if id(panel) not in shown:  # say why, rather than show an empty axis
            panel.text(0.5, 0.5, empty[id(panel)], ha="center", va="center", fontsize=8,
                       color="grey", transform=panel.transAxes)  # fmt: skip
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel("S = ln(I first / I last) at init")
    ax.set_ylabel("B = ln(T last / T first), fitted")
    ax.set_title("(c) dose-response: one point per run (hollow: did not learn)", fontsize=9)
    for a in axes.flat:
        a.grid(alpha=0.3)
    for a in (axes[0, 0], axes[0, 1], axes[1, 1]):
        a.set_xlabel("record (1 = first)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("depth dose-response: structure at birth and the order of learning", fontsize=10)
    return fig
