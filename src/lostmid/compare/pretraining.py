"""Does pretraining deepen the valley? Readouts of a trained model against its twins at birth.

The design: one pretrained model and S random-init twins of the same architecture (one
per seed), each measured on the same N inputs, one influence profile per input
(``profiles[n, j]``, position j = 1..L at index j - 1). Readouts are taken on the mean
profile over inputs with :func:`lostmid.theory.summarise_profile` (the one home of
peak, valley and peak-to-valley; the valley excludes the target, the last position):

* ``log10_ptv``: log10 peak-to-valley;
* ``valley_fraction``: where the valley sits, (position - 1) / (L - 1) in [0, 1];
* ``sink_share``: the influence of position 1 over the profile's sum;
* ``last_share``: the influence of position L (the target) over the sum.

Intervals are percentile bootstraps (95%). The pretrained model's: over inputs. The
twins': over seeds and inputs (draw S seeds with replacement, then inputs), each twin
read on its own mean profile (so a twin's readout has the noise of N inputs, as the
pretrained one has) and the readouts averaged over seeds. The paired difference
pretrained - twins draws one set of input indices for both (the inputs are shared).

Verdict rules, stated before any run and fed constructed data in the tests:

* "pretraining deepens the valley" (the paper: about 10^2 at birth, 10^3 trained): the
  difference of log10 peak-to-valley, with boundary ``DEEPENING = 0.5`` (half an order
  of magnitude, midway between no change and the paper's +1): reproduced when the
  whole interval lies above it, not reproduced when it lies below, else inconclusive.
* "the valley is in the middle": the valley fraction of the pretrained model, in the
  middle half [0.25, 0.75]: reproduced when the whole interval lies inside, not
  reproduced when it lies wholly outside, else inconclusive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.compare.claims import Verdict
from lostmid.errors import UserError
from lostmid.stats.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, side_of
from lostmid.theory import summarise_profile
from lostmid.typing import Float

READOUTS = ("log10_ptv", "valley_fraction", "sink_share", "last_share")
DEEPENING = 0.5
"""The boundary of "deepens": log10 peak-to-valley grows by more than half a decade."""
MIDDLE = (0.25, 0.75)
"""The middle half of the context, as fractions of (position - 1) / (L - 1)."""


def readouts(profile: Float[np.ndarray, " L"]) -> dict[str, float]:
    """The four readouts of one (mean) influence profile.

    >>> r = readouts(np.array([10.0, 1.0, 0.1, 1.0, 5.0]))
    >>> round(r["log10_ptv"], 3), r["valley_fraction"], round(r["sink_share"], 3)
    (2.0, 0.5, 0.585)
    """
    values = np.asarray(profile, dtype=np.float64)
    if values.ndim != 1 or values.size < 3:
        raise UserError("a profile for readouts is 1-D with at least 3 positions")
    summary = summarise_profile(values)
    total = float(values.sum())
    position = summary.valley_position
    return {
        "log10_ptv": float("nan")
        if summary.log10_peak_to_valley is None
        else float(summary.log10_peak_to_valley),
        "valley_fraction": float("nan") if position is None else (position - 1) / (values.size - 1),
        "sink_share": float(values[0] / total) if total > 0 else float("nan"),
        "last_share": float(values[-1] / total) if total > 0 else float("nan"),
    }


@dataclass(frozen=True)
class Estimate:
    """A readout: its value on the full data and a 95% bootstrap interval."""

    value: float
    low: float
    high: float

    def record(self) -> dict[str, float | None]:
        def clean(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {"value": clean(self.value), "low": clean(self.low), "high": clean(self.high)}

    @property
    def span(self) -> tuple[float, float]:
        return (self.low, self.high)


def _estimate(value: float, draws: np.ndarray) -> Estimate:
    finite = draws[np.isfinite(draws)]
    if finite.size < 0.9 * draws.size:
        return Estimate(value, float("nan"), float("nan"))
    low, high = np.percentile(finite, [2.5, 97.5])
    return Estimate(value, float(low), float(high))


def _twin_readouts(twins: np.ndarray, inputs: np.ndarray) -> dict[str, float]:
    per_seed = [readouts(t[inputs].mean(axis=0)) for t in twins]
    return {k: float(np.mean([r[k] for r in per_seed])) for k in READOUTS}


@dataclass(frozen=True)
class PretrainingComparison:
    """Readouts of the pretrained model, of its twins and their paired differences."""

    inputs: int
    seeds: int
    length: int
    pretrained: dict[str, Estimate]
    twins: dict[str, Estimate]
    difference: dict[str, Estimate]
    deepens: Verdict
    middle: Verdict

    def record(self) -> dict[str, Any]:
        def block(d: dict[str, Estimate]) -> dict[str, Any]:
            return {k: v.record() for k, v in d.items()}

        return {
            "inputs": self.inputs,
            "seeds": self.seeds,
            "length": self.length,
            "interval": "95% percentile bootstrap: pretrained over inputs; twins over "
            "seeds and inputs; difference paired over inputs",
            "pretrained": block(self.pretrained),
            "twins": block(self.twins),
            "difference": block(self.difference),
            "deepens": {"verdict": self.deepens.verdict, "rule": self.deepens.rule},
            "middle": {"verdict": self.middle.verdict, "rule": self.middle.rule},
        }


def compare_pretraining(
    pretrained: Float[np.ndarray, "N L"],
    twins: Sequence[Float[np.ndarray, "N L"]] | Float[np.ndarray, "S N L"],
    *,
    draws: int = 2000,
    seed: int = 0,
) -> PretrainingComparison:
    """Readouts with intervals and the two verdicts for one family, length and input kind.

    Args:
        pretrained: (N, L) per-input influence profiles of the pretrained model.
        twins: (S, N, L) the same inputs through S random-init twins.
        draws: bootstrap draws.
    """
    pre = np.asarray(pretrained, dtype=np.float64)
    tw = np.asarray(twins, dtype=np.float64)
    if pre.ndim != 2 or tw.ndim != 3 or tw.shape[1:] != pre.shape:
        raise UserError(
            f"pretrained profiles (N, L) and twins (S, N, L) on the same inputs; got "
            f"{pre.shape} and {tw.shape}"
        )
    n, length = pre.shape
    s = tw.shape[0]
    if n < 2:
        raise UserError("at least 2 inputs are needed for an interval over inputs")
    rng = np.random.default_rng(seed)
    everything = np.arange(n)
    pre_full = readouts(pre.mean(axis=0))
    twin_full = _twin_readouts(tw, everything)
    boot_pre = {k: np.empty(draws) for k in READOUTS}
    boot_twin = {k: np.empty(draws) for k in READOUTS}
    boot_diff = {k: np.empty(draws) for k in READOUTS}
    for b in range(draws):
        idx = np.asarray(rng.integers(0, n, size=n))
        seeds = np.asarray(rng.integers(0, s, size=s))
        r_pre = readouts(pre[idx].mean(axis=0))
        r_twin = _twin_readouts(tw[seeds], idx)
        for k in READOUTS:
            boot_pre[k][b] = r_pre[k]
            boot_twin[k][b] = r_twin[k]
            boot_diff[k][b] = r_pre[k] - r_twin[k]
    est_pre = {k: _estimate(pre_full[k], boot_pre[k]) for k in READOUTS}
    est_twin = {k: _estimate(twin_full[k], boot_twin[k]) for k in READOUTS}
    est_diff = {k: _estimate(pre_full[k] - twin_full[k], boot_diff[k]) for k in READOUTS}
    return PretrainingComparison(
        inputs=n,
        seeds=s,
        length=length,
        pretrained=est_pre,
        twins=est_twin,
        difference=est_diff,
        deepens=deepening_verdict(est_diff["log10_ptv"].span),
        middle=middle_verdict(est_pre["valley_fraction"].span),
    )


def deepening_verdict(difference: tuple[float, float], boundary: float = DEEPENING) -> Verdict:
    """ "Pretraining deepens the valley" from the 95% interval of the change in log10
    peak-to-valley (pretrained - twins).

    >>> deepening_verdict((0.8, 1.3)).verdict, deepening_verdict((-0.4, 0.2)).verdict
    ('reproduced', 'not reproduced')
    >>> deepening_verdict((0.1, 0.9)).verdict
    'inconclusive'
    """
    low, high = difference
    rule = (
        f"reproduced if the 95% interval of the change in log10 peak-to-valley lies above "
        f"+{boundary} (deeper by more than 10^{boundary}), not reproduced if it lies below, "
        "else inconclusive"
    )
    if not (np.isfinite(low) and np.isfinite(high)):
        return Verdict(INCONCLUSIVE, rule + " (no interval)")
    side = side_of(low, high, boundary)
    return Verdict({"above": REPRODUCED, "below": NOT_REPRODUCED}.get(side, INCONCLUSIVE), rule)


def middle_verdict(fraction: tuple[float, float], middle: tuple[float, float] = MIDDLE) -> Verdict:
    """ "The valley is in the middle" from the 95% interval of the valley's position as a
    fraction of the context.

    >>> middle_verdict((0.4, 0.6)).verdict, middle_verdict((0.9, 0.99)).verdict
    ('reproduced', 'not reproduced')
    >>> middle_verdict((0.1, 0.5)).verdict
    'inconclusive'
    """
    low, high = fraction
    lo, hi = middle
    rule = (
        f"reproduced if the 95% interval of the valley's position (fraction of the "
        f"context) lies inside [{lo}, {hi}], not reproduced if wholly outside, else "
        "inconclusive"
    )
    if not (np.isfinite(low) and np.isfinite(high)):
        return Verdict(INCONCLUSIVE, rule + " (no interval)")
    if lo <= low and high <= hi:
        return Verdict(REPRODUCED, rule)
    if high < lo or low > hi:
        return Verdict(NOT_REPRODUCED, rule)
    return Verdict(INCONCLUSIVE, rule)
