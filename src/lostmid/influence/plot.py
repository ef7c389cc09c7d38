"""Figure of a measured influence profile (:mod:`lostmid.report.plots`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lostmid.influence.profile import InfluenceProfile
from lostmid.report.plots import new_figure, save_figure


def plot_influence(profile: InfluenceProfile, path: Path, title: str = "") -> Path:
    """Influence vs position (1-indexed), log y, band = +/- 1 standard error; per-layer faint."""
    fig = new_figure((7, 4))
    ax = fig.add_subplot()
    pos = np.arange(1, profile.influence.size + 1)
    keep = profile.influence > 0  # zeros (after the target) cannot sit on a log axis
    if profile.per_layer is not None:
        depth = profile.per_layer.shape[0]
        for index, row in enumerate(profile.per_layer):
            ok = row > 0
            label = f"residual after layers 1..{depth}" if index == 0 else None
            shade = 0.25 + 0.5 * (index + 1) / depth
            ax.plot(pos[ok], row[ok], color="0.6", lw=0.6, alpha=shade, label=label)
    lo = np.maximum(profile.influence - profile.stderr, profile.influence * 1e-3)
    hi = profile.influence + profile.stderr
    ax.fill_between(pos[keep], lo[keep], hi[keep], color="C0", alpha=0.3, lw=0, label="± 1 s.e.")
    ax.plot(pos[keep], profile.influence[keep], color="C0", lw=1.2, label=f"{profile.output}")
    ax.set_yscale("log")
    ax.set_xlabel("input position j (1-indexed)")
    ax.set_ylabel(f"||d h_{profile.target} / d x_j||_F")
    ax.set_title(title or f"influence on position {profile.target}")
    ax.legend(loc="best", fontsize=8)
    return save_figure(fig, path)
