"""What ``lostmid compare`` compares: :class:`CompareConfig`, its options' help, and the
fitting and binning choices it names. Light to import (the CLI reads it at start-up).

>>> CompareConfig(measured="m.json", kernels="both").kernels
('rollout', 'jacobian')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lostmid.checks import check_choice, check_seed
from lostmid.errors import UserError
from lostmid.theory.exact import KERNELS

FIT_METRICS = ("w1", "log-lsq")
"""What a fitted candidate minimises (see :mod:`lostmid.compare.fitting`)."""
SPIKE_POLICIES = ("free", "pinned")
"""How every candidate treats the target's share (see :mod:`lostmid.compare.fitting`)."""
LOG_BINS = 32
"""Log-position bins before the target (see :func:`lostmid.compare.metrics.log_bin`)."""

HELP = {  # the CLI's help for each option, and the meaning of each CompareConfig field
    "measured": "measure.json written by lostmid measure; repeat the option for several "
    "seeds of one model (noise floor and out-of-sample scores need at least 2).",
    "theory": "theory.json written by lostmid theory.",
    "predict": "Also predict the theory from the measured a_l and, where measured, the "
    "per-position gains (nothing fitted).",
    "kernels": "rollout | jacobian | both (or rollout,jacobian): the kernels of the predicted "
    "and fitted theory.",
    "fit_metric": "w1 | log-lsq: what the fitted candidates minimise (w1: the metric they "
    "are judged by).",
    "spike": "free | pinned: the target's share is fitted for every fitted candidate "
    "(free), or set to the measured share for every candidate (pinned).",
    "bins": "Log-position bins for the binned Spearman and W1.",
    "seed": "Random seed (recorded; the comparison draws nothing).",
    "pool": "Pool measurements of different models or settings (default: refuse them; "
    "lengths and targets must agree either way).",
}


def parse_kernels(kernel: str) -> tuple[str, ...]:
    """``rollout``, ``jacobian``, ``rollout,jacobian`` or ``both`` as a tuple of kernels.

    >>> parse_kernels("both"), parse_kernels("jacobian")
    (('rollout', 'jacobian'), ('jacobian',))
    """
    names = [k.strip() for k in kernel.split(",") if k.strip()]
    if names == ["both"]:
        return KERNELS
    return tuple(check_choice("--kernel", k, (*KERNELS, "both")) for k in names if k != "both")


@dataclass(frozen=True)
class CompareConfig:
    """What ``lostmid compare`` compares; validated on construction, values parsed.

    Attributes:
        measured: the measure.json files, one per seed of one model (paths).
        theory: a theory.json to compare too, or None.
        predict: also predict the theory from the measured residual strengths.
        kernels: the kernels of the predicted and fitted theory; ``"both"``,
            ``"rollout"`` or ``"jacobian"`` are parsed into a tuple.
        fit_metric: ``w1`` or ``log-lsq`` (:mod:`lostmid.compare.fitting`).
        spike: ``free`` or ``pinned`` (:mod:`lostmid.compare.fitting`).
        bins: log-position bins of the binned metrics.
        pool: accept measurements of different models or settings and pool them
            (default: refuse them; lengths and targets must agree either way).
        seed: recorded for provenance (the comparison itself is deterministic).

    >>> CompareConfig(measured="m.json", kernels="both").kernels
    ('rollout', 'jacobian')
    """

    measured: tuple[Path, ...]
    theory: Path | None = None
    predict: bool = False
    kernels: tuple[str, ...] = KERNELS
    fit_metric: str = "w1"
    spike: str = "free"
    bins: int = LOG_BINS
    seed: int = 0
    pool: bool = False

    def __post_init__(self) -> None:
        check_seed(self.seed)
        measured = (self.measured,) if isinstance(self.measured, str | Path) else self.measured
        if not measured:
            raise UserError("--measured: give at least one measure.json")
        measured = tuple(Path(m) for m in measured)
        if len(set(measured)) != len(measured):
            raise UserError("--measured: the same file is given twice; give one per seed")
        object.__setattr__(self, "measured", measured)
        if self.theory is not None:
            object.__setattr__(self, "theory", Path(self.theory))
        kernels = parse_kernels(self.kernels) if isinstance(self.kernels, str) else self.kernels
        kernels = tuple(check_choice("--kernel", k, KERNELS) for k in kernels)
        if not kernels:
            raise UserError("--kernel: give at least one kernel (rollout, jacobian or both)")
        object.__setattr__(self, "kernels", kernels)
        check_choice("--fit-metric", self.fit_metric, FIT_METRICS)
        check_choice("--spike", self.spike, SPIKE_POLICIES)
        if self.bins < 2:  # one bin + the target's: a Spearman of 2 points, always +-1
            raise UserError(
                f"--bins must be at least 2, got {self.bins}: with one bin the binned "
                "Spearman ranks two points (always +1 or -1) and W1 has no shape to compare"
            )

    def record(self) -> dict[str, Any]:
        """The resolved config as JSON (paths as text)."""
        return {
            "measured": [str(m) for m in self.measured],
            "theory": None if self.theory is None else str(self.theory),
            "predict": self.predict,
            "kernels": list(self.kernels),
            "fit_metric": self.fit_metric,
            "spike": self.spike,
            "bins": self.bins,
            "seed": self.seed,
            "pool": self.pool,
        }
