"""Figures of retrieval behaviour: accuracy by gold position with intervals, its course
over training, and its link to the influence profile. Arrays in, Figure out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lostmid.behaviour.score import PositionScore
from lostmid.report.plots import new_figure


def _errorbar(ax: Axes, scores: Sequence[PositionScore], label: str, **style: Any) -> None:
    x = np.array([s.position for s in scores])
    acc = np.array([s.accuracy for s in scores])
    err = np.array(
        [[s.accuracy - s.ci_low for s in scores], [s.ci_high - s.accuracy for s in scores]]
    )
    ax.errorbar(x, acc, yerr=err, marker="o", capsize=3, lw=1.4, label=label, **style)


def plot_accuracy_by_position(
    series: dict[str, Sequence[PositionScore]],
    *,
    xlabel: str,
    title: str,
    chance: float | None = None,
) -> Figure:
    """Accuracy by gold position (Wilson 95 % bars), one line per metric; the mean
    log-probability of the target by position on the right when it was measured."""
    logprob = next((s for s in series.values() if all(p.mean_logprob is not None for p in s)), None)
    ncols = 2 if logprob is not None else 1
    fig = new_figure((5.5 * ncols, 4.0))
    axes = fig.subplots(1, ncols, squeeze=False)
    ax = axes[0, 0]
    for name, scores in series.items():
        _errorbar(ax, scores, name)
    if chance is not None:
        ax.axhline(chance, color="grey", ls=":", lw=0.8, label="chance")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("accuracy (Wilson 95 %)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if logprob is not None:
        ax2 = axes[0, 1]
        ax2.plot(
            [p.position for p in logprob], [p.mean_logprob for p in logprob], "s-", color="tab:red"
        )
        ax2.set_xlabel(xlabel)
        ax2.set_ylabel("mean log p(target | prompt)")
        ax2.ticklabel_format(axis="y", useOffset=False)
        ax2.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    return fig


def plot_training(
    steps: Sequence[int],
    by_step: Sequence[Sequence[PositionScore]],
    influence: Sequence[np.ndarray],
    *,
    title: str,
) -> Figure:
    """Left: teacher-forced accuracy by gold index at each checkpoint (intervals).
    Right: the influence of each record on the query (normalised to sum 1) at init and
    at the end, next to accuracy at the end: the structural and behavioural profiles."""
    fig = new_figure((11, 4.2))
    ax, ax2 = fig.subplots(1, 2)
    cmap = colormaps["viridis"]
    for i, (step, scores) in enumerate(zip(steps, by_step, strict=True)):
        _errorbar(ax, scores, f"step {step}", color=cmap(i / max(len(steps) - 1, 1)))
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("gold index (0-indexed record)")
    ax.set_ylabel("teacher-forced argmax accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    x = np.array([s.position for s in by_step[-1]])
    for label, values, style in (
        (f"influence, step {steps[0]}", influence[0], "--"),
        (f"influence, step {steps[-1]}", influence[-1], "-"),
    ):
        v = np.asarray(values, dtype=np.float64)
        ax2.plot(x, v / v.sum() if v.sum() > 0 else v, style, marker="o", label=label)
    ax2.set_xlabel("gold index (0-indexed record)")
    ax2.set_ylabel("influence of the record on the query (sum 1)")
    ax2.grid(alpha=0.3)
    ax3 = ax2.twinx()
    ax3.plot(x, [s.accuracy for s in by_step[-1]], "s:", color="tab:red", label="accuracy, end")
    ax3.set_ylabel("accuracy at the end", color="tab:red")
    ax3.set_ylim(-0.03, 1.03)
    lines = ax2.get_legend_handles_labels()[0] + ax3.get_legend_handles_labels()[0]
    ax2.legend(lines, [str(line.get_label()) for line in lines], fontsize=7)
    fig.suptitle(title, fontsize=10)
    return fig


def plot_heatmap(cells: Sequence[Mapping[str, Any]], *, metric: str, title: str) -> Figure:
    """The needle-in-a-haystack figure: context length on x, depth (% of the context:
    the gold record's fraction for kv, the needle's depth for niah) on y, accuracy as
    colour (0 red .. 1 green), each cell annotated with its accuracy and n; a cell no
    example filled stays blank."""
    lengths = sorted({c["length"] for c in cells}, key=lambda v: (v is None, v or 0))
    rows = sorted({int(round(float(c["depth_pct"]))) for c in cells})
    grid = np.full((len(rows), len(lengths)), np.nan)
    counts = np.zeros_like(grid, dtype=int)
    for c in cells:
        i, j = rows.index(int(round(float(c["depth_pct"])))), lengths.index(c["length"])
        grid[i, j] = float(c[f"{metric}_accuracy"])
        counts[i, j] = int(c["n"])
    fig = new_figure((1.3 * len(lengths) + 2.6, 0.45 * len(rows) + 1.8))
    ax = fig.subplots()
    image = ax.imshow(grid, cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(lengths)):
            if np.isfinite(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}\nn={counts[i, j]}", ha="center",
                        va="center", fontsize=7)  # fmt: skip
    ax.set_xticks(range(len(lengths)), ["one" if v is None else str(v) for v in lengths])
    ax.set_yticks(range(len(rows)), [f"{r}%" for r in rows])
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("depth (% of the context)")
    fig.colorbar(image, ax=ax, label=f"{metric} accuracy")
    ax.set_title(title, fontsize=9)
    return fig
