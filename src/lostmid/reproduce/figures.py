"""The figures of the reproduce report, one PNG each under ``OUT/figures``.

Per model (``SLUG`` = :func:`~lostmid.models.spec.model_slug`):
``overlay-SLUG.png`` (measured against the zero-parameter theories, led by
``predicted:positional``, the fitted theories and every baseline),
``positional-SLUG.png`` (with against without the positional encoding) and
``depth-SLUG.png`` (per-layer profiles against the theory at H = l); the training
figures of ``lostmid train`` are listed as ``train-NAME``; ``behaviour.png`` is the
retrieval accuracy by gold index at each checkpoint with the link to influence;
``summary.png`` leads the report (a panel from each part of the run that gives one: each
model's step-0 profile against the uniform and the position-resolved theory, and the
behavioural section's U beside the record influence).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.compare.plot import plot_overlay
from lostmid.models.spec import model_slug
from lostmid.report.plots import plot_depth_growth, plot_profiles, save_figure
from lostmid.reproduce.analysis import FAITHFUL, ModelAnalysis
from lostmid.reproduce.plan import Panel

OVERLAY_THEORIES = (
    FAITHFUL,
    "predicted:positional-mlp",
    "predicted:jacobian",
    "predicted:rollout",
    "fitted:jacobian",
    "fitted:rollout",
)
"""The theories drawn in the overlay, in order (one colour each)."""


def overlay_key(model: str) -> str:
    return f"overlay-{model_slug(model)}"


def model_figures(a: ModelAnalysis, folder: Path) -> dict[str, Path]:
    """The overlay, positional and (when per-layer profiles exist) depth figures."""
    slug = model_slug(a.name)
    theories = {n: a.candidates[n].profile for n in OVERLAY_THEORIES if n in a.candidates}
    baselines = {n: c.profile for n, c in a.candidates.items() if c.kind == "baseline"}
    figures = {
        overlay_key(a.name): save_figure(
            plot_overlay(
                a.on.influence,
                theories,
                baselines,
                stderr=a.on.stderr,
                title=f"{a.name} at step 0 (mean of {len(a.seeds)} seeds): measured vs theory",
            ),
            folder / f"overlay-{slug}.png",
        )
    }
    with_, without = "with positional encoding", f"without ({a.switch})"
    figures[f"positional-{slug}"] = save_figure(
        plot_profiles(
            {with_: a.on.influence, without: a.off.influence},
            stderr={with_: a.on.stderr, without: a.off.stderr},
            title=f"{a.name}: influence with and without positional encoding (step 0)",
        ),
        folder / f"positional-{slug}.png",
    )
    if a.depth_growth is not None and a.depth_run.on.per_layer is not None:
        kernel = next(iter(a.depth_growth.points))  # positional when gains are per position
        points = a.depth_growth.points[kernel]
        figures[f"depth-{slug}"] = save_figure(
            plot_depth_growth(
                a.depth_run.on.per_layer,
                a.depth_growth.theory[kernel],
                layers=np.array([p.layer for p in points]),
                spearman=np.array([p.agreement.spearman for p in points]),
                wasserstein1=np.array([p.agreement.wasserstein1 for p in points]),
                title=f"{a.name}: growth with depth (seed {a.seeds[0]}), {kernel} theory",
            ),
            folder / f"depth-{slug}.png",
        )
    return figures


SUMMARY_THEORIES = (
    ("predicted:positional-mlp", "position-resolved theory (measured gains, nothing fitted)"),
    ("predicted:jacobian", "the paper's uniform theory (measured a_l)"),
)


def model_panel(a: ModelAnalysis, ax: Any) -> None:
    """A model's panel of ``summary.png``: its measured step-0 profile (seeds pooled)
    against the uniform and the position-resolved theory, on log axes."""
    measured = a.on.influence
    positions = np.arange(1, measured.size + 1)
    ax.loglog(positions, measured / measured.sum(), color="black", lw=2, label="measured")
    for (key, label), colour in zip(SUMMARY_THEORIES, ("#1f77b4", "#d62728"), strict=True):
        if key in a.candidates:
            row = a.candidates[key].profile
            ax.loglog(positions, row / row.sum(), color=colour, lw=1.3, label=label)
    ax.set_title(f"{a.name}, step 0 ({len(a.seeds)} seeds)", fontsize=10)
    ax.set_xlabel("position j")
    ax.set_ylabel("share of influence on the last position")
    ax.legend(fontsize=7, loc="lower left")


def summary_figure(panels: Sequence[Panel], folder: Path) -> dict[str, Path]:
    """``summary.png``, the report's lead, one panel side by side from each part of the
    run that gives one (:func:`lostmid.reproduce.plan.panels_of`: the core's one a model,
    then the behavioural U); none when no part gives a panel."""
    from lostmid.report.plots import new_figure

    if not panels:  # the trained-model sections alone: their own figures
        return {}
    fig = new_figure((4.6 * len(panels), 3.8))
    axes = np.atleast_1d(fig.subplots(1, len(panels)))
    for ax, draw in zip(axes, panels, strict=True):
        draw(ax)
    return {"summary": save_figure(fig, folder / "summary.png")}
