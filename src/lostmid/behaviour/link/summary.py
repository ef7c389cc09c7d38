"""A link study's readouts: per depth the accuracy (Wilson 95%) and the mean shares of
the pretrained model and its twin; the link rule on each share; the figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.behaviour.link.design import PRETRAINED, TWIN
from lostmid.report.html import model_label

SCORES = ("jacobian_share", "gradient_share")
"""The needle's shares the link rule is asked about (the claim reads the first)."""


def summarise(records: Sequence[Mapping[str, Any]], design: Mapping[str, Any]) -> dict[str, Any]:
    """Per depth: accuracy (Wilson 95%), mean shares of the pretrained model and the twin;
    the link rule on each share (:data:`SCORES`). Only the design's examples count."""
    from lostmid.stats import wilson_interval
    from lostmid.stats.link import link_verdict

    counts = {PRETRAINED: int(design["per_depth"]), TWIN: int(design["twin_per_depth"])}
    mine = [r for r in records if r["index"] < counts.get(r["model"], 0)]
    pre = sorted(
        (r for r in mine if r["model"] == PRETRAINED), key=lambda r: (r["depth"], r["index"])
    )
    twin = [r for r in mine if r["model"] == TWIN]

    def mean(rows: list[Mapping[str, Any]], key: str) -> float | None:
        return float(np.mean([r[key] for r in rows])) if rows else None

    by_depth = []
    for depth in design["depths"]:
        p = [r for r in pre if r["depth"] == depth]
        t = [r for r in twin if r["depth"] == depth]
        k = sum(bool(r["right"]) for r in p)
        low, high = wilson_interval(k, len(p)) if p else (None, None)
        by_depth.append(
            {
                "depth": depth,
                "n": len(p),
                "correct": k,
                "accuracy": k / len(p) if p else None,
                "ci_low": low,
                "ci_high": high,
                "answer_logp": mean(p, "answer_logp"),
                "jacobian_share": mean(p, "jacobian_share"),
                "gradient_share": mean(p, "gradient_share"),
                "twin_n": len(t),
                "twin_jacobian_share": mean(t, "jacobian_share"),
                "twin_gradient_share": mean(t, "gradient_share"),
            }
        )
    verdicts = {}
    if len(pre) >= 4:
        for score in SCORES:
            verdicts[score] = link_verdict(
                [r["depth"] for r in pre], [bool(r["right"]) for r in pre], [r[score] for r in pre]
            ).record()
    return {
        "model": design["model"],
        "design": dict(design),
        "by_depth": by_depth,
        "link": verdicts,
    }


def plot_link(summary: Mapping[str, Any], path: Path) -> Path:
    """Accuracy by depth (Wilson 95%) beside the needle's mean Jacobian and gradient
    shares by depth, pretrained and its random-init twin (log scale)."""
    from lostmid.report.plots import new_figure, save_figure

    rows = summary["by_depth"]
    depth = [r["depth"] for r in rows]
    fig = new_figure((9.0, 3.4))
    left, right = fig.subplots(1, 2)
    acc = [np.nan if r["accuracy"] is None else r["accuracy"] for r in rows]
    lo = [0.0 if r["ci_low"] is None else a - r["ci_low"] for a, r in zip(acc, rows, strict=True)]
    hi = [0.0 if r["ci_high"] is None else r["ci_high"] - a for a, r in zip(acc, rows, strict=True)]
    left.errorbar(depth, acc, yerr=[lo, hi], marker="o", capsize=3, color="tab:blue")
    left.set(xlabel="needle depth (%)", ylabel="greedy accuracy", ylim=(-0.02, 1.02))
    left.set_title(f"{model_label(str(summary['model']))}: accuracy", fontsize=9)
    for key, label, style in (
        ("jacobian_share", "Jacobian share", "-o"),
        ("gradient_share", "gradient share", "--s"),
        ("twin_jacobian_share", "Jacobian share, random-init twin", ":^"),
    ):
        values = [np.nan if r[key] is None else max(r[key], 1e-12) for r in rows]
        right.plot(depth, values, style, label=label)
    right.set(xlabel="needle depth (%)", ylabel="needle's share", yscale="log")
    right.set_title("the needle's reach on the answer", fontsize=9)
    right.legend(fontsize=7)
    return save_figure(fig, path)
