"""``remedies.png``: accuracy by gold index per remedy, 95% bands over seeds, next to
its group's baseline (grey); the panel title gives the verdict."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from lostmid.behaviour.tasks.registry import is_depth_task
from lostmid.report.plots import new_figure


def _band(ax: Any, record: Any, **style: Any) -> None:
    x = np.array(record.positions)
    mean = np.array([a.estimate for a in record.accuracy])
    low = np.array([a.ci_low for a in record.accuracy])
    high = np.array([a.ci_high for a in record.accuracy])
    finite = np.isfinite(low) & np.isfinite(high)
    ax.plot(x, mean, marker="o", ms=3, lw=1.4, label=record.name, **style)
    if finite.any():
        ax.fill_between(
            x[finite],
            np.clip(low[finite], 0, 1),
            np.clip(high[finite], 0, 1),
            alpha=0.2,
            color=style.get("color"),
        )


def plot_remedies(result: Any) -> Figure:
    """One panel per remedy (a :class:`~lostmid.remedies.summary.RemediesResult`)."""
    records = list(result.remedies)
    structural = [r for r in records if r.theory and r.theory.get("measured_init_record_profile")]
    panels = len(records) + (1 if structural else 0)
    cols = min(4, panels)
    rows = math.ceil(panels / cols)
    fig = new_figure((3.4 * cols, 2.8 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    baselines = {r.kind: r for r in records if r.verdict is None}
    for ax, record in zip(axes.flat, records, strict=False):
        base = baselines.get(record.kind)
        if base is not None and base is not record:
            _band(ax, base, color="grey")
        _band(ax, record, color="tab:blue" if record.kind == "training" else "tab:green")
        gap = record.metrics.get("gap")
        title = f"{record.name}\n" + ("baseline" if record.verdict is None else record.verdict)
        if gap is not None:
            title += f", gap {gap.estimate:.2f}"
        ax.set_title(title, fontsize=8)
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    if structural:
        ax = axes.flat[len(records)]
        for i, r in enumerate(structural):
            color = f"C{i % 10}"
            x = np.array(r.positions)
            ax.plot(x, r.theory["measured_init_record_profile"], "o-", ms=3, color=color,
                    label=f"{r.name} measured")  # fmt: skip
            ax.plot(x, r.theory["record_profile"], "--", color=color, label=f"{r.name} theory")
        ax.set_title("influence of each record on the query\nat init (sum 1)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6)
        ax.grid(alpha=0.3)
    for ax in axes.flat[panels:]:
        ax.set_visible(False)
    needles = is_depth_task(result.config.task)
    seeds = len(result.config.resolved_seeds())
    for ax in axes[-1]:
        ax.set_xlabel("needle depth (%)" if needles else "gold index (0-indexed)", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("accuracy" + (" (95% over seeds)" if seeds > 1 else ""), fontsize=8)
    fig.suptitle(
        f"remedies at equal budget, {seeds} seed{'s' if seeds > 1 else ''} (grey: baseline)",
        fontsize=10,
    )
    return fig
