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

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps

from lostmid.report.plots import new_figure, save_figure
from lostmid.train.dynamics import Checkpoint


def _normalised(values: Any) -> np.ndarray:
    v = np.clip(np.asarray(values, dtype=np.float64), 1e-300, None)
    return v / v.sum()


def _step_x(steps: list[int]) -> np.ndarray:
    """Steps on a log axis: step 0 is drawn at 1/3 of the first non-zero step (or 1)."""
    nonzero = [s for s in steps if s > 0]
    zero_at = (min(nonzero) / 3) if nonzero else 1.0
    return np.array([s if s > 0 else zero_at for s in steps], dtype=np.float64)


def plot_dynamics(checkpoints: Sequence[Checkpoint], out: Path) -> list[Path]:
    """Write the three figures into ``out``; returns their paths."""
    records = [(c.step, c.measurement) for c in checkpoints if c.measurement is not None]
    if not records:
        return []
    steps = [step for step, _ in records]
    colours = colormaps["viridis"](np.linspace(0, 1, len(records)))
    paths = []

    fig = new_figure((7, 4.2))
    ax = fig.add_subplot()
    for (step, m), c in zip(records, colours, strict=True):
        p = _normalised(m.influence)
        ax.plot(np.arange(1, p.size + 1), p, color=c, lw=1.2, label=f"step {step}")
    first, last = records[0], records[-1]
    for (step, m), style in ((first, ":"), (last, "--")):  # theory from that checkpoint's a_l
        t = _normalised(m.theory["rollout"])
        ax.plot(np.arange(1, t.size + 1), t, "k" + style, lw=1, label=f"theory, step {step}")
    ax.set_yscale("log")
    ax.set_xlabel("position j (1-indexed; target = last)")
    ax.set_ylabel("influence on the last position (normalised)")
    ax.set_title("Influence profile over training")
    ax.legend(fontsize=7, ncol=2)
    paths.append(save_figure(fig, out / "profiles.png"))

    fig = new_figure((6, 4))
    ax = fig.add_subplot()
    x = _step_x(steps)
    ptv = [m.influence_summary.peak_to_valley for _, m in records]
    ptv = [np.nan if v is None else v for v in ptv]
    ax.plot(x, ptv, "o-", color="C0", label="peak / valley (influence)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training step (step 0 drawn at the far left)")
    ax.set_ylabel("peak-to-valley ratio", color="C0")
    twin = ax.twinx()
    twin.plot(x, [m.heldout_loss for _, m in records], "s--", color="C3", label="held-out loss")
    twin.set_ylabel("held-out loss (nats/byte)", color="C3")
    ax.set_title("Does training deepen the valley?")
    paths.append(save_figure(fig, out / "peak_to_valley.png"))

    fig = new_figure((7, 4.2))
    ax = fig.add_subplot()
    for (step, m), c in zip(records, colours, strict=True):
        eta = _normalised(m.learning_signal)
        ax.plot(np.arange(1, eta.size + 1), eta, color=c, lw=1.2, label=f"eta, step {step}")
    rho = _normalised(last[1].rho)
    a = last[1].alpha_mean
    ax.plot(np.arange(1, rho.size + 1), rho, "k--", lw=1.2, label=f"rho_H cells, a={a:.2f}")
    ax.set_yscale("log")
    ax.set_xlabel("position j (1-indexed)")
    ax.set_ylabel("learning signal (normalised)")
    ax.set_title("Learning signal eta(x) against the theory rho_H(x)")
    ax.legend(fontsize=7, ncol=2)
    paths.append(save_figure(fig, out / "learning_signal.png"))
    return paths
