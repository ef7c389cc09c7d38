"""Figures: one way to make them and one way to save them, and the generic plots.

Every figure of lostmid is a :class:`matplotlib.figure.Figure` on its own Agg canvas
(:func:`new_figure`; no pyplot state, nothing to close, headless) and is written by
:func:`save_figure` or :func:`figure_to_png` at :data:`DPI`. Each plot function takes
arrays, returns a Figure and never computes theory or measurements itself.

>>> fig = new_figure((2, 1.5))
>>> _ = fig.add_subplot().plot([1, 2, 3])
>>> figure_to_png(fig)[1:4]
b'PNG'
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from lostmid.files import write_bytes
from lostmid.stats.shape import MIDDLE_BAND

DPI = 120  # every PNG lostmid writes: files and figures embedded in reports


def new_figure(figsize: tuple[float, float]) -> Figure:
    """An empty figure on its own Agg canvas (constrained layout)."""
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Figure, path: Path) -> Path:
    """Write ``fig`` as a PNG file at :data:`DPI`, atomically
    (:func:`lostmid.files.write_bytes`); returns ``path``."""
    return write_bytes(Path(path), figure_to_png(fig))


def figure_to_png(fig: Figure) -> bytes:
    """The PNG bytes :func:`save_figure` would write."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def plot_theory(
    log10_influence: np.ndarray,
    *,
    target: int,
    title: str,
    continuum: np.ndarray | None = None,
    above_uniform_until: int | None = None,
    valley_position: int | None = None,
) -> Figure:
    """The U-curve on a log scale with the three regions marked and the continuum.

    Regions: primacy tail (positions 1..``above_uniform_until``, above a fair share 1/t),
    the dead zone (middle half), the recency anchor (the target t).
    """
    positions = np.arange(1, log10_influence.size + 1)
    fig = new_figure((11, 4.2))
    axes = fig.subplots(1, 2, sharey=True)
    finite = np.isfinite(log10_influence)
    c = None
    if continuum is not None:
        with np.errstate(divide="ignore"):
            c = np.log10(continuum)
    for ax, xscale in zip(axes, ("linear", "log"), strict=True):
        ax.plot(positions[finite], log10_influence[finite], lw=1.6, label="exact (discrete)")
        if c is not None:
            ok = np.isfinite(c)
            ax.plot(positions[ok], c[ok], "--", lw=1.2, color="tab:orange", label="continuum")
        ax.axhline(np.log10(1.0 / target), color="grey", lw=0.8, ls=":", label="uniform 1/t")
        if above_uniform_until:
            ax.axvspan(
                1,
                max(above_uniform_until, 1.5),
                color="tab:green",
                alpha=0.12,
                label="primacy tail (> 1/t)",
            )
        lo, hi = (1 + f * (target - 1) for f in MIDDLE_BAND)
        ax.axvspan(lo, hi, color="tab:red", alpha=0.08, label="dead zone (middle half)")
        ax.plot(
            [target], [log10_influence[target - 1]], "o", color="tab:purple", label="recency anchor"
        )
        if valley_position:
            ax.plot(
                [valley_position],
                [log10_influence[valley_position - 1]],
                "v",
                color="k",
                label=f"valley (j={valley_position})",
            )
        ax.set_xscale(xscale)
        ax.set_xlabel(f"input position j ({xscale} scale)")
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("log10 influence on target")
    axes[1].legend(fontsize=7, loc="lower left")
    fig.suptitle(title, fontsize=10)
    return fig


def plot_profiles(
    profiles: dict[str, np.ndarray],
    *,
    title: str,
    stderr: Mapping[str, np.ndarray | None] | None = None,
    normalise: bool = True,
) -> Figure:
    """Several profiles on one log-scale axis (each normalised to sum 1 by default),
    positions linear and log side by side, with +- stderr bands where given."""
    fig = new_figure((11, 4.2))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, xscale in zip(axes, ("linear", "log"), strict=True):
        for name, values in profiles.items():
            v = np.asarray(values, dtype=np.float64)
            scale = v.sum() if normalise and v.sum() > 0 else 1.0
            positions = np.arange(1, v.size + 1)
            (line,) = ax.plot(positions, v / scale, lw=1.4, label=name)
            if stderr is not None and stderr.get(name) is not None:
                se = np.asarray(stderr[name]) / scale
                lo = np.maximum(v / scale - se, (v / scale)[v > 0].min() * 0.5)
                ax.fill_between(
                    positions, lo, v / scale + se, color=line.get_color(), alpha=0.2, lw=0
                )
        ax.set_yscale("log")
        ax.set_xscale(xscale)
        ax.set_xlabel(f"input position j ({xscale} scale)")
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("influence (normalised to sum 1)" if normalise else "influence")
    axes[1].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    return fig


def plot_depth_growth(
    per_layer: np.ndarray,
    theory_rows: np.ndarray,
    *,
    layers: np.ndarray,
    spearman: np.ndarray,
    wasserstein1: np.ndarray,
    title: str,
) -> Figure:
    """Left: measured per-layer profiles (solid) and the theory at H = l (dashed), each
    normalised to sum 1, for a few layers. Right: Spearman and W1 against the layer.

    Args:
        per_layer: (H, L) measured profiles, NaN rows where a layer was not measured.
        theory_rows: (H, L) the theory at H = l in row l - 1.
        layers, spearman, wasserstein1: the agreement at each measured layer l.
    """
    measured = [i + 1 for i in range(per_layer.shape[0]) if np.all(np.isfinite(per_layer[i]))]
    picks = np.unique(np.round(np.linspace(0, len(measured) - 1, min(4, len(measured)))))
    shown = [measured[int(i)] for i in picks]
    fig = new_figure((11, 4.2))
    ax, ax2 = fig.subplots(1, 2)
    cmap = colormaps["viridis"]
    positions = np.arange(1, per_layer.shape[1] + 1)
    for i, layer in enumerate(shown):
        color = cmap(i / max(len(shown) - 1, 1))
        m, t = per_layer[layer - 1], theory_rows[layer - 1]
        ax.plot(positions, m / m.sum(), color=color, lw=1.4, label=f"measured, layer {layer}")
        ax.plot(positions, t / t.sum(), color=color, lw=1.0, ls="--")
    ax.set_yscale("log")
    ax.set_xlabel("input position j")
    ax.set_ylabel("influence (normalised); dashed: theory at H = l")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    ax2.plot(layers, spearman, "o-", label="Spearman")
    ax2.set_xlabel("layer l")
    ax2.set_ylabel("Spearman (measured vs theory at H = l)")
    ax3 = ax2.twinx()
    ax3.plot(layers, wasserstein1, "s--", color="tab:red", label="W1")
    ax3.set_ylabel("W1", color="tab:red")
    ax2.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    return fig
