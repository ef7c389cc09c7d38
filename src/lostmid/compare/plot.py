"""Overlay plot: the measured profile with its error band, theories and baselines."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def plot_overlay(
    measured: np.ndarray,
    theories: Mapping[str, np.ndarray],
    baselines: Mapping[str, np.ndarray] | None = None,
    stderr: np.ndarray | None = None,
    title: str = "Influence profile: measured against theory and baselines",
) -> Figure:
    """Two panels on a log influence axis: positions linear (the U-shape) and positions
    on a log axis (the primacy tail). The measured profile is black with a band of
    +- one standard error (the lower edge clipped to stay positive on the log axis);
    theories are solid coloured lines, baselines thin grey lines, each with its own dash pattern.

    All profiles should already be on the measured scale (``TheoryFit.profile``).
    Returns a Figure on the Agg canvas; the caller saves it (``fig.savefig(path)``).
    """
    measured = np.asarray(measured, dtype=np.float64)
    positions = np.arange(1, measured.size + 1)
    positive = measured[measured > 0]
    floor = 0.5 * float(positive.min()) if positive.size else 1e-300
    fig = Figure(figsize=(12, 5.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2, sharey=True)
    dashes = ["--", ":", "-.", (0, (6, 2, 1, 2, 1, 2))]
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    for ax, xscale in zip(axes, ("linear", "log"), strict=True):
        if stderr is not None:
            se = np.asarray(stderr, dtype=np.float64)
            lower = np.maximum(measured - se, floor)
            ax.fill_between(
                positions,
                lower,
                measured + se,
                color="0.6",
                alpha=0.4,
                lw=0,
                label="measured +- 1 s.e.",
            )
        ax.plot(
            positions,
            np.where(measured > 0, measured, np.nan),
            color="black",
            lw=1.6,
            label="measured",
        )
        for i, (name, profile) in enumerate(theories.items()):
            p = np.asarray(profile, dtype=np.float64)
            ax.plot(
                positions,
                np.where(p > 0, p, np.nan),
                color=colors[i % len(colors)],
                lw=1.3,
                label=name,
            )
        for i, (name, profile) in enumerate((baselines or {}).items()):
            p = np.asarray(profile, dtype=np.float64)
            ax.plot(
                positions,
                np.where(p > 0, p, np.nan),
                color="0.45",
                lw=0.9,
                ls=dashes[i % len(dashes)],
                label=name,
            )
        ax.set_xscale(xscale)
        ax.set_yscale("log")
        ax.set_xlabel("position j (1-indexed)" + (", log axis" if xscale == "log" else ""))
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("influence on the target")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=5, fontsize=8, frameon=False)
    fig.suptitle(title)
    return fig
