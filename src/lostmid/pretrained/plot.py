"""The study's figure: each cell's mean profiles, pretrained against its twins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from lostmid.pretrained.cells import profiles_path, read_rows
from lostmid.pretrained.inputs import INPUT_KINDS, INPUT_LABELS
from lostmid.pretrained.study import StudyConfig
from lostmid.report.html import model_label


def plot_study(folder: Path, config: StudyConfig) -> Any:
    """One panel per checkpoint and length, one colour per input kind: the pretrained
    model's mean profile (solid) and the twins' (dashed), each divided by its sum,
    against the position as a fraction of the context, on a log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(n, length) for n in config.checkpoints for length in config.lengths]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False, constrained_layout=True
    )
    colours = dict(
        zip(INPUT_KINDS, ("tab:blue", "tab:orange", "tab:green", "tab:red"), strict=True)
    )
    for ax, (name, length) in zip(axes[0], panels, strict=True):
        x = np.arange(length) / max(length - 1, 1)
        for kind in config.kinds:
            pre = read_rows(profiles_path(folder, name, length, kind, "pretrained"))
            if pre.shape[0] == 0:
                continue
            mean = pre.mean(axis=0)
            said = INPUT_LABELS[kind]
            ax.plot(x, mean / mean.sum(), color=colours[kind], lw=1.2, label=f"{said}, the model")
            twins = [
                read_rows(profiles_path(folder, name, length, kind, f"twin{s}"))
                for s in range(config.twins)
            ]
            twins = [t for t in twins if t.shape[0]]
            if twins:
                tw = np.mean([t.mean(axis=0) / t.mean(axis=0).sum() for t in twins], axis=0)
                ax.plot(x, tw, color=colours[kind], lw=1, ls="--", label=f"{said}, twins")
        ax.set_yscale("log")
        ax.set_title(f"{model_label(name)}, L = {length}")
        ax.set_xlabel("position j / L")
        ax.set_ylabel("influence share")
        ax.legend(fontsize=7)
    return fig
