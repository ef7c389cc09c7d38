"""The trajectory figure of a checkpoint series: the change against the twins by step."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lostmid.compare.pretraining import DEEPENING, PEAKS
from lostmid.pretrained.series.trajectory import SeriesPoint

PEAK_COLOURS = dict(zip(PEAKS, ("tab:blue", "tab:orange", "tab:green", "tab:red"), strict=True))


def plot_trajectory(
    by_kind: Mapping[str, Sequence[SeriesPoint]], verdicts: Mapping[str, str]
) -> Any:
    """One panel per input kind: the training step on x, the change of log10
    peak-to-valley against the twins at each peak (:data:`PEAKS`) with its 95% interval
    as a band; 0 is the twins, the dotted line the boundary of "deepens". Steps spanning
    more than two decades are drawn on a symmetric log axis (step 0 kept)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = list(by_kind)
    fig, axes = plt.subplots(
        1, len(kinds), figsize=(5.5 * len(kinds), 4), squeeze=False, constrained_layout=True
    )
    for ax, kind in zip(axes[0], kinds, strict=True):
        points = by_kind[kind]
        steps = np.array([p.step for p in points], dtype=float)
        for peak, colour in PEAK_COLOURS.items():
            value = np.array([p.change[peak].value for p in points], dtype=float)
            low = np.array([p.change[peak].low for p in points], dtype=float)
            high = np.array([p.change[peak].high for p in points], dtype=float)
            wide = peak == "largest"  # drawn wide beneath: it coincides with an end's line
            ax.plot(
                steps,
                value,
                marker="o",
                ms=3,
                lw=4 if wide else 1.2,
                alpha=0.45 if wide else 1.0,
                color=colour,
                label=f"peak: {peak}",
            )
            ax.fill_between(steps, low, high, color=colour, alpha=0.15, lw=0)
        ax.axhline(0.0, color="0.3", lw=0.8)
        ax.axhline(DEEPENING, color="0.3", lw=0.8, ls=":", label=f"deepens: +{DEEPENING}")
        positive = steps[steps > 0]
        if positive.size and steps.max() / positive.min() > 100:
            ax.set_xscale("symlog", linthresh=float(positive.min()))
        ax.set_title(f"{kind} inputs: deepens along the series? {verdicts.get(kind, '-')}")
        ax.set_xlabel("training step")
        ax.set_ylabel("log10 peak / valley, checkpoint - twins")
        ax.legend(fontsize=7)
    return fig
