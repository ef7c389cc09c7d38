"""What is measured at each checkpoint: one record of ``dynamics.json``.

For the model at step s (positions 1-indexed in the text, 0-indexed in arrays):

* held-out loss per position: CE_t averaged over the fixed held-out windows, t = 1..T;
* influence profile: the measurement engine (:func:`lostmid.influence.influence_profile`)
  on held-out windows, target = the last position, and its summary (peak-to-valley);
* theory: :func:`lostmid.theory.influence_row` (rollout and jacobian kernels) with the
  residual strengths a_l measured at this checkpoint
  (:func:`lostmid.influence.residual_strength`), and its distance to the measurement;
* learning signal eta_j (:mod:`lostmid.train.learning_signal`) on the training batches
  of steps s .. s+k-1, compared with rho_H's cell masses at a = mean_l a_l.

Distances between profiles: Spearman over positions and W1 on the profiles normalised
to sum 1, positions mapped to [0, 1] (:mod:`lostmid.compare.metrics`).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lostmid.compare.metrics import spearman, wasserstein1
from lostmid.theory import influence_row, summarize_profile
from lostmid.train.config import TrainConfig
from lostmid.train.learning_signal import learning_signal, rho_cell_masses

THEORY_KERNELS = ("rollout", "jacobian")


@torch.no_grad()
def heldout_loss_per_position(
    model: nn.Module, windows: torch.Tensor, chunk: int = 16
) -> np.ndarray:
    """Mean next-token CE at each position t = 1..T over the held-out windows (T,).

    ``windows`` is (N, T + 1); position t predicts byte t + 1 from bytes 1..t.
    """
    was_training = model.training
    model.eval()
    device = model.get_input_embeddings().weight.device
    total = torch.zeros(windows.shape[1] - 1, dtype=torch.float64)
    for part in windows.split(chunk):
        part = part.to(device)
        logits = model(input_ids=part[:, :-1]).logits  # (n, T, V)
        ce = F.cross_entropy(logits.transpose(1, 2).float(), part[:, 1:], reduction="none")
        total += ce.double().sum(dim=0).cpu()  # (T,)
    model.train(was_training)
    return (total / windows.shape[0]).numpy()


def distances(measured: np.ndarray, theory: np.ndarray) -> dict[str, float | None]:
    """Spearman and W1 between two profiles; W1 also against a flat profile as baseline.

    ``w1_uniform`` is W1(measured, flat): a theory is informative only if its W1 is
    well below that.
    """
    flat = np.ones_like(measured)
    rho = spearman(measured, theory)
    return {
        "spearman": None if not np.isfinite(rho) else float(rho),
        "w1": float(wasserstein1(measured, theory)),
        "w1_uniform": float(wasserstein1(measured, flat)),
    }


def _summary(profile: np.ndarray) -> dict[str, Any]:
    """Peak-to-valley and friends (:func:`lostmid.theory.summarize_profile`), target = T."""
    s = summarize_profile(np.clip(profile, 0.0, None))
    keep = ("peak_to_valley", "log10_peak_to_valley", "valley_position", "peak_position")
    dead = s.dead_zone_level
    return {k: v for k, v in asdict(s).items() if k in keep} | {
        "primacy": s.primacy,
        "recency": s.recency,
        "dead_zone_level": dead,
        # peak / median of the middle half: a valley depth that one noisy minimum cannot set
        "peak_to_dead_zone": s.peak / dead if dead else None,
    }


def measure_influence(
    model: nn.Module, input_ids: torch.Tensor, *, probes: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Influence profile (T,), its standard error (T,), residual strengths (H,)."""
    from lostmid.influence import influence_profile, residual_strength
    from lostmid.train.model import as_loaded, frozen

    with frozen(model):
        loaded = as_loaded(model, seed)
        profile = influence_profile(
            loaded, input_ids, probes=probes, seed=seed, batch_size=input_ids.shape[0]
        )
        alphas = residual_strength(loaded, input_ids, batch_size=input_ids.shape[0])
    return (
        np.asarray(profile.influence, dtype=np.float64),
        np.asarray(profile.stderr, dtype=np.float64),
        np.asarray(alphas, dtype=np.float64),
    )


def measure_checkpoint(
    model: nn.Module,
    *,
    step: int,
    tokens_seen: int,
    lr: float,
    running_losses: list[float],
    signal_batches: list[torch.Tensor],
    heldout: torch.Tensor,
    config: TrainConfig,
) -> dict[str, Any]:
    """One dynamics record for the model as it is now (see the module docstring).

    Args:
        signal_batches: training batches (B, T + 1) of the steps after this checkpoint.
        heldout: fixed held-out windows (N, T + 1).
        running_losses: training losses of the steps since the previous checkpoint.
    """
    measure = config.measure
    timings: dict[str, float] = {}
    start = time.perf_counter()
    per_position = heldout_loss_per_position(model, heldout)
    timings["heldout_loss"] = time.perf_counter() - start

    start = time.perf_counter()
    eta, train_loss = learning_signal(model, signal_batches)
    timings["learning_signal"] = time.perf_counter() - start

    start = time.perf_counter()
    ids = heldout[: measure.influence_samples, :-1]
    influence, stderr, alphas = measure_influence(
        model, ids, probes=measure.influence_probes, seed=config.seed
    )
    timings["influence"] = time.perf_counter() - start

    length, layers = ids.shape[1], alphas.size
    theory = {k: influence_row(length, layers, alpha=alphas, kernel=k) for k in THEORY_KERNELS}
    alpha_mean = float(np.mean(alphas))
    rho = rho_cell_masses(length, layers, alpha_mean)
    influence_summary = _summary(influence)
    return {
        "step": step,
        "tokens_seen": tokens_seen,
        "lr": lr,
        "train_loss": train_loss,
        "train_loss_running": float(np.mean(running_losses)) if running_losses else None,
        "heldout_loss": float(per_position.mean()),
        "heldout_loss_per_position": per_position,
        "peak_to_valley": influence_summary["peak_to_valley"],
        "influence": {
            "profile": influence,
            "stderr": stderr,
            "summary": influence_summary,
        },
        "residual_strength": alphas,
        "theory": {k: row for k, row in theory.items()},
        "learning_signal": {
            "profile": eta,
            "summary": _summary(eta),
            "alpha_mean": alpha_mean,
            "rho": rho,
        },
        "distances": {
            "influence_vs_theory": {k: distances(influence, theory[k]) for k in THEORY_KERNELS},
            "learning_signal_vs_rho": distances(eta, rho),
            "learning_signal_vs_influence": distances(eta, influence),
        },
        "timings_s": timings,
    }
