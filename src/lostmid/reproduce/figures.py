"""The figures of the reproduce report, one PNG each under ``OUT/figures``.

Per model (``SLUG`` = :func:`~lostmid.models.spec.model_slug`):
``overlay-SLUG.png`` (measured against the zero-parameter theories, led by
``predicted:positional``, the fitted theories and every baseline),
``positional-SLUG.png`` (with against without the positional encoding) and
``depth-SLUG.png`` (per-layer profiles against the theory at H = l); the training
figures of ``lostmid train`` are listed as ``train-NAME``; ``behaviour.png`` is the
retrieval accuracy by gold index at each checkpoint with the link to influence;
``summary.png`` leads the report (both models' step-0 profiles against the uniform and
the position-resolved theory, and the behavioural U beside the record influence).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from lostmid.compare.plot import plot_overlay
from lostmid.models.spec import model_slug
from lostmid.report.plots import plot_depth_growth, plot_profiles, save_figure
from lostmid.reproduce.analysis import FAITHFUL, ModelAnalysis
from lostmid.reproduce.behaviour import Behaviour

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


def summary_figure(
    analyses: Mapping[str, ModelAnalysis], behaviour: Behaviour | None, folder: Path
) -> Path:
    """``summary.png``, the report's lead: per model, the measured step-0 profile (seeds
    pooled) against the uniform and the position-resolved theory on log axes; and the
    behavioural U at the end of training (accuracy by gold record, Wilson intervals,
    seeds pooled) beside the record influence at initialisation (share of the sum)."""
    from lostmid.report.plots import new_figure

    panels = len(analyses) + (behaviour is not None)
    fig = new_figure((4.6 * panels, 3.8))
    axes = np.atleast_1d(fig.subplots(1, panels))
    for ax, (name, a) in zip(axes, analyses.items(), strict=False):
        measured = a.on.influence
        positions = np.arange(1, measured.size + 1)
        ax.loglog(positions, measured / measured.sum(), color="black", lw=2, label="measured")
        for (key, label), colour in zip(SUMMARY_THEORIES, ("#1f77b4", "#d62728"), strict=True):
            if key in a.candidates:
                row = a.candidates[key].profile
                ax.loglog(positions, row / row.sum(), color=colour, lw=1.3, label=label)
        ax.set_title(f"{name}, step 0 ({len(a.seeds)} seeds)", fontsize=10)
        ax.set_xlabel("position j")
        ax.set_ylabel("share of influence on the last position")
        ax.legend(fontsize=7, loc="lower left")
    if behaviour is not None:
        ax = axes[-1]
        final = behaviour.pooled(len(behaviour.steps) - 1)
        x = np.arange(len(final))
        acc = np.array([p.accuracy for p in final])
        err = np.array(
            [[p.accuracy - p.ci_low for p in final], [p.ci_high - p.accuracy for p in final]]
        )
        ax.errorbar(x, acc, yerr=err, color="black", marker="o", capsize=3, label="accuracy (end)")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("gold record (0-indexed)")
        ax.set_ylabel("retrieval accuracy")
        twin = ax.twinx()
        twin.plot(x, behaviour.mean_influence(0), color="#2ca02c", marker="s", lw=1.2,
                  label="record influence at init")  # fmt: skip
        twin.set_ylabel("record influence at init (share)", color="#2ca02c")
        first = behaviour.seeds[0]
        ax.set_title(f"behaviour: {first.preset} (gold law {first.gold})", fontsize=10)
        lines = ax.get_legend_handles_labels()
        more = twin.get_legend_handles_labels()
        ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="lower center")
    return save_figure(fig, folder / "summary.png")


def make_figures(
    analyses: Mapping[str, ModelAnalysis], behaviour: Behaviour | None, folder: Path
) -> dict[str, Path]:
    """The core's figures: the summary (with the behavioural U when the run has one) and
    each model's; returns name -> path. Each section adds its own
    (:meth:`lostmid.reproduce.plan.Section.figures`)."""
    if not analyses and behaviour is None:  # the trained-model sections alone: their own
        return {}
    figures: dict[str, Path] = {"summary": summary_figure(analyses, behaviour, folder)}
    for analysis in analyses.values():
        figures |= model_figures(analysis, folder)
    return figures
