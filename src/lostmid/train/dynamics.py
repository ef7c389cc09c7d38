"""What is measured at each checkpoint: one :class:`Checkpoint`, one record of ``dynamics.json``.

For the model at step s (positions 1-indexed in the text, 0-indexed in arrays):

* held-out loss per position: CE_t averaged over the fixed held-out windows, t = 1..T;
* influence profile: the measurement engine (:func:`lostmid.influence.influence_profile`)
  on held-out windows, target = the last position, and its summary (peak-to-valley);
* theory: :func:`lostmid.theory.influence_row` (every kernel) with the residual
  strengths a_l measured at this checkpoint (:func:`lostmid.influence.residual_strength`),
  and its agreement with the measurement;
* learning signal eta_j (:mod:`lostmid.train.signal`) on the training batches
  of steps s .. s+k-1, compared with rho_H's cell masses at a = mean_l a_l, and with a
  flat profile (the naive baseline: a theory is informative only if it beats it).

Agreement between two profiles is :class:`lostmid.compare.ProfileComparison` (Spearman,
W1 on the profiles normalised to sum 1 over positions mapped to [0, 1], ...), the one
agreement record of the package; its JSON form is its ``record()``. Everything derived
(theory rows, summaries, agreements) is computed from the measured arrays, so a
checkpoint read back from ``dynamics.json`` gives the same numbers as the one written.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F

from lostmid.compare.metrics import ProfileComparison, compare_profiles
from lostmid.influence import influence_profile, residual_strength
from lostmid.theory import KERNELS, ProfileSummary, influence_row, summarise_profile
from lostmid.train.config import TrainConfig
from lostmid.train.model import as_loaded, frozen
from lostmid.train.signal import learning_signal, rho_cell_masses
from lostmid.typing import Float

if TYPE_CHECKING:
    from transformers import PreTrainedModel


@torch.no_grad()
def heldout_loss_per_position(
    model: PreTrainedModel, windows: torch.Tensor, chunk: int = 16
) -> Float[np.ndarray, " L"]:
    """Mean next-token CE at each position t = 1..T over the held-out windows (T,).

    ``windows`` is (N, T + 1); position t predicts byte t + 1 from bytes 1..t.
    """
    was_training = model.training
    model.eval()
    device = model.get_input_embeddings().get_parameter("weight").device
    total = torch.zeros(windows.shape[1] - 1, dtype=torch.float64)
    for part in windows.split(chunk):
        part = part.to(device)
        logits = model(input_ids=part[:, :-1]).logits  # (n, T, V)
        ce = F.cross_entropy(logits.transpose(1, 2).float(), part[:, 1:], reduction="none")
        total += ce.double().sum(dim=0).cpu()  # (T,)
    model.train(was_training)
    return (total / windows.shape[0]).numpy()


@dataclass(frozen=True, eq=False)
class CheckpointMeasurement:
    """What was measured on the model at one checkpoint; the rest is derived from it.

    Arrays over positions hold position j (1-indexed) at index j - 1; L is the
    training context (T in the formulas), H the depth.

    Attributes:
        train_loss: mean next-token loss over the learning-signal batches.
        heldout_loss_per_position: (L,) mean held-out CE at each position.
        influence: (L,) influence of each position on the last one, and its
            standard error ``influence_stderr``.
        residual_strength: (H,) a_l measured on the held-out windows.
        learning_signal: (L,) eta_j.
        timings_s: seconds per measurement.
    """

    train_loss: float
    heldout_loss_per_position: Float[np.ndarray, " L"]
    influence: Float[np.ndarray, " L"]
    influence_stderr: Float[np.ndarray, " L"]
    residual_strength: Float[np.ndarray, " H"]
    learning_signal: Float[np.ndarray, " L"]
    timings_s: Mapping[str, float] = field(default_factory=dict)

    @property
    def heldout_loss(self) -> float:
        return float(np.mean(self.heldout_loss_per_position))

    @property
    def alpha_mean(self) -> float:
        """Mean residual strength over layers: the a of rho_H."""
        return float(np.mean(self.residual_strength))

    @cached_property
    def theory(self) -> dict[str, Float[np.ndarray, " L"]]:
        """The theory row of each kernel with this checkpoint's measured a_l."""
        length, layers = self.influence.size, self.residual_strength.size
        return {
            k: influence_row(length, layers, alpha=self.residual_strength, kernel=k)
            for k in KERNELS
        }

    @cached_property
    def rho(self) -> Float[np.ndarray, " L"]:
        """rho_H's cell masses at a = :attr:`alpha_mean`."""
        return rho_cell_masses(self.influence.size, self.residual_strength.size, self.alpha_mean)

    @cached_property
    def influence_summary(self) -> ProfileSummary:
        return summarise_profile(np.clip(self.influence, 0.0, None))

    @cached_property
    def learning_signal_summary(self) -> ProfileSummary:
        return summarise_profile(np.clip(self.learning_signal, 0.0, None))

    @cached_property
    def influence_vs_theory(self) -> dict[str, ProfileComparison]:
        """Each kernel's theory (candidate) against the measured influence."""
        return {k: compare_profiles(row, self.influence) for k, row in self.theory.items()}

    @cached_property
    def learning_signal_vs_rho(self) -> ProfileComparison:
        return compare_profiles(self.rho, self.learning_signal)

    @cached_property
    def learning_signal_vs_flat(self) -> ProfileComparison:
        """A flat profile against the learning signal: the bar rho_H has to clear."""
        return compare_profiles(np.ones_like(self.learning_signal), self.learning_signal)

    @cached_property
    def learning_signal_vs_influence(self) -> ProfileComparison:
        return compare_profiles(self.influence, self.learning_signal)

    def record(self) -> dict[str, Any]:
        """The JSON form (the measured part of one ``dynamics.json`` record)."""
        return {
            "train_loss": self.train_loss,
            "heldout_loss": self.heldout_loss,
            "heldout_loss_per_position": self.heldout_loss_per_position,
            "peak_to_valley": self.influence_summary.peak_to_valley,
            "influence": {
                "profile": self.influence,
                "stderr": self.influence_stderr,
                "summary": self.influence_summary,
            },
            "residual_strength": self.residual_strength,
            "theory": self.theory,
            "learning_signal": {
                "profile": self.learning_signal,
                "summary": self.learning_signal_summary,
                "alpha_mean": self.alpha_mean,
                "rho": self.rho,
            },
            "agreement": {
                "influence_vs_theory": {k: c.record() for k, c in self.influence_vs_theory.items()},
                "learning_signal_vs_rho": self.learning_signal_vs_rho.record(),
                "learning_signal_vs_flat": self.learning_signal_vs_flat.record(),
                "learning_signal_vs_influence": self.learning_signal_vs_influence.record(),
            },
            "timings_s": dict(self.timings_s),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> CheckpointMeasurement:
        """Read back what :meth:`record` wrote (derived numbers are recomputed)."""

        def array(values: Any) -> np.ndarray:
            return np.asarray(values, dtype=np.float64)

        return cls(
            train_loss=float(record["train_loss"]),
            heldout_loss_per_position=array(record["heldout_loss_per_position"]),
            influence=array(record["influence"]["profile"]),
            influence_stderr=array(record["influence"]["stderr"]),
            residual_strength=array(record["residual_strength"]),
            learning_signal=array(record["learning_signal"]["profile"]),
            timings_s=dict(record.get("timings_s", {})),
        )


@dataclass(frozen=True, eq=False)
class Checkpoint:
    """One checkpoint of a training run: counters, and what was measured there.

    Attributes:
        step: optimizer updates done before this checkpoint.
        tokens_seen: input tokens consumed so far.
        lr: the learning rate of step ``step``.
        train_loss_running: mean training loss of the steps since the previous
            checkpoint (None at the first).
        measurement: None when measurement is switched off (``config.probe.enabled``).
    """

    step: int
    tokens_seen: int
    lr: float
    train_loss_running: float | None
    measurement: CheckpointMeasurement | None = None

    def record(self) -> dict[str, Any]:
        """One record of ``dynamics.json``: the counters, then the measurement's fields."""
        counters = {
            "step": self.step,
            "tokens_seen": self.tokens_seen,
            "lr": self.lr,
            "train_loss_running": self.train_loss_running,
        }
        return counters | ({} if self.measurement is None else self.measurement.record())

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Checkpoint:
        """A checkpoint from one record of ``dynamics.json`` (inverse of :meth:`record`).

        >>> c = Checkpoint(step=10, tokens_seen=640, lr=1e-3, train_loss_running=2.5)
        >>> Checkpoint.from_record(c.record()).record() == c.record()
        True
        """
        running = record.get("train_loss_running")
        return cls(
            step=int(record["step"]),
            tokens_seen=int(record["tokens_seen"]),
            lr=float(record["lr"]),
            train_loss_running=None if running is None else float(running),
            measurement=CheckpointMeasurement.from_record(record)
            if "influence" in record
            else None,
        )


def measure_influence(
    model: PreTrainedModel, input_ids: torch.Tensor, *, probes: int, seed: int
) -> tuple[Float[np.ndarray, " L"], Float[np.ndarray, " L"], Float[np.ndarray, " H"]]:
    """Influence profile (L,), its standard error (L,), residual strengths (H,)."""
    with frozen(model):
        loaded = as_loaded(model, seed)
        profile = influence_profile(
            loaded, input_ids, probes=probes, seed=seed, batch_size=input_ids.shape[0]
        )
        # the theory's a_l (the branch's Jacobian gain): rho_H and every prediction use it
        alphas = residual_strength(
            loaded, input_ids, batch_size=input_ids.shape[0], method="jacobian", seed=seed
        )
    return (
        np.asarray(profile.influence, dtype=np.float64),
        np.asarray(profile.stderr, dtype=np.float64),
        np.asarray(alphas, dtype=np.float64),
    )


def measure_checkpoint(
    model: PreTrainedModel,
    *,
    signal_batches: list[torch.Tensor],
    heldout: torch.Tensor,
    config: TrainConfig,
) -> CheckpointMeasurement:
    """Measure the model as it is now (see the module docstring).

    Args:
        signal_batches: training batches (B, T + 1) of the steps after this checkpoint.
        heldout: fixed held-out windows (N, T + 1).
    """
    probe = config.probe
    timings: dict[str, float] = {}
    start = time.perf_counter()
    per_position = heldout_loss_per_position(model, heldout)
    timings["heldout_loss"] = time.perf_counter() - start

    start = time.perf_counter()
    eta, train_loss = learning_signal(model, signal_batches)
    timings["learning_signal"] = time.perf_counter() - start

    start = time.perf_counter()
    ids = heldout[: probe.influence_samples, :-1]
    influence, stderr, alphas = measure_influence(
        model, ids, probes=probe.influence_probes, seed=config.seed
    )
    timings["influence"] = time.perf_counter() - start
    return CheckpointMeasurement(
        train_loss=train_loss,
        heldout_loss_per_position=per_position,
        influence=influence,
        influence_stderr=stderr,
        residual_strength=alphas,
        learning_signal=eta,
        timings_s=timings,
    )
