"""Figures of a training run: thin shells over its checkpoints (:mod:`lostmid.report.plots`).

* ``profiles.png``: influence profiles at every checkpoint on one log-scale axis
  (each normalised to sum 1, colour = step), with the rollout theory from the residual
  strengths measured at the first and at the last checkpoint;
* ``peak_to_valley.png``: peak-to-valley of the influence profile against step, with
  the held-out loss on a second axis;
* ``learning_signal.png``: the learning signal eta_j (normalised to sum 1) at every
  checkpoint against rho_H's cell masses at the last checkpoint's mean residual strength.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from lostmid.report.plots import new_figure, save_figure
from lostmid.train.dynamics import Checkpoint, CheckpointMeasurement


def _normalised(values: Any) -> np.ndarray:
    v = np.clip(np.asarray(values, dtype=np.float64), 1e-300, None)
    return v / v.sum()


def _step_x(steps: list[int]) -> np.ndarray:
    """Steps on a log axis: step 0 is drawn at 1/3 of the first non-zero step (or 1)."""
    nonzero = [s for s in steps if s > 0]
    zero_at = (min(nonzero) / 3) if nonzero else 1.0
    return np.array([s if s > 0 else zero_at for s in steps], dtype=np.float64)


def _over_training(
    records: Sequence[tuple[int, CheckpointMeasurement]],
    profile_of: Callable[[CheckpointMeasurement], np.ndarray],
    label: str,
    references: Sequence[tuple[np.ndarray, str, str]],
    *,
    ylabel: str,
    title: str,
) -> Figure:
    """One profile per checkpoint (each normalised to sum 1, colour = step) on a log axis,
    with black reference lines ``(profile, line style, label)``."""
    fig = new_figure((7, 4.2))
    ax = fig.add_subplot()
    colours = colormaps["viridis"](np.linspace(0, 1, len(records)))
    for (step, m), colour in zip(records, colours, strict=True):
        p = _normalised(profile_of(m))
        ax.plot(np.arange(1, p.size + 1), p, color=colour, lw=1.2, label=f"{label}step {step}")
    for values, style, name in references:
        r = _normalised(values)
        ax.plot(np.arange(1, r.size + 1), r, style, lw=1.1, label=name)
    ax.set_yscale("log")
    ax.set_xlabel("position j (1-indexed; target = last)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    return fig


def _peak_to_valley(records: Sequence[tuple[int, CheckpointMeasurement]]) -> Figure:
    """Peak-to-valley of the influence against step, the held-out loss on a second axis."""
    fig = new_figure((6, 4))
    ax = fig.add_subplot()
    x = _step_x([step for step, _ in records])
    ptv = [m.influence_summary.peak_to_valley for _, m in records]
    ax.plot(x, [np.nan if v is None else v for v in ptv], "o-", color="C0")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training step (step 0 drawn at the far left)")
    ax.set_ylabel("peak-to-valley ratio (influence)", color="C0")
    twin = ax.twinx()
    twin.plot(x, [m.heldout_loss for _, m in records], "s--", color="C3")
    twin.set_ylabel("held-out loss (nats/byte)", color="C3")
    ax.set_title("Does training deepen the valley?")
    return fig


def plot_dynamics(checkpoints: Sequence[Checkpoint], out: Path) -> list[Path]:
    """Write the three figures into ``out``; returns their paths."""
    records = [(c.step, c.measurement) for c in checkpoints if c.measurement is not None]
    if not records:
        return []
    (first_step, first), (last_step, last) = records[0], records[-1]
    profiles = _over_training(
        records,
        lambda m: m.influence,
        "",
        [  # the theory from that checkpoint's measured a_l
            (first.theory["rollout"], "k:", f"theory, step {first_step}"),
            (last.theory["rollout"], "k--", f"theory, step {last_step}"),
        ],
        ylabel="influence on the last position (normalised)",
        title="Influence profile over training",
    )
    signal = _over_training(
        records,
        lambda m: m.learning_signal,
        "eta, ",
        [(last.rho, "k--", f"rho_H cells, a={last.alpha_mean:.2f}")],
        ylabel="learning signal (normalised)",
        title="Learning signal eta(x) against the theory rho_H(x)",
    )
    return [
        save_figure(profiles, out / "profiles.png"),
        save_figure(_peak_to_valley(records), out / "peak_to_valley.png"),
        save_figure(signal, out / "learning_signal.png"),
    ]
