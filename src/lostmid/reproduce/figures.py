"""The figures of the reproduce report, one PNG each under ``OUT/figures``.

Per model (``SLUG`` = :func:`~lostmid.reproduce.config.model_slug`):
``overlay-SLUG.png`` (measured against the zero-parameter theories, led by
``predicted:positional``, the fitted theories and every baseline),
``positional-SLUG.png`` (with against without the positional encoding) and
``depth-SLUG.png`` (per-layer profiles against the theory at H = l); the training
figures of ``lostmid train`` are listed as ``train-NAME``; ``behaviour.png`` is the
retrieval accuracy by gold index at each checkpoint with the link to influence.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from lostmid.compare.plot import plot_overlay
from lostmid.report.plots import plot_depth_growth, plot_profiles, save_figure
from lostmid.reproduce.analysis import FAITHFUL, ModelAnalysis
from lostmid.reproduce.behaviour import Behaviour, behaviour_figure
from lostmid.reproduce.config import model_slug
from lostmid.reproduce.training import Training

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


def make_figures(
    analyses: Mapping[str, ModelAnalysis],
    training: Training | None,
    behaviour: Behaviour | None,
    folder: Path,
) -> dict[str, Path]:
    """All report figures; returns name -> path (training figures as ``train-NAME``,
    the behavioural one as ``behaviour``)."""
    figures: dict[str, Path] = {}
    for analysis in analyses.values():
        figures |= model_figures(analysis, folder)
    if training is not None:
        figures |= {f"train-{name}": path for name, path in training.figures.items()}
    if behaviour is not None:
        figures["behaviour"] = behaviour_figure(behaviour, folder)
    return figures
