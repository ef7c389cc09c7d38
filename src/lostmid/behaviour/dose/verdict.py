"""The depth dose-response: does the structure at birth shape the order of learning?

The design: retrieval models trained from scratch with the gold record drawn
uniformly, at several depths H (the dose), the same width, task, steps and tokens for
every depth, several seeds each (seed s uses the same batches and held-out examples at
every depth). Per run (:mod:`lostmid.behaviour.training.learning`):

* the dose, S = ln(I(1) / I(P)): the structural primacy at initialisation, the log
  ratio of the first to the last record's influence on the query at step 0;
* the response, B = the slope of ln T(r) on the record's place x_r in [0, 1], T(r) the
  time (tokens) at which record r first reaches half its final argmax accuracy: the log
  ratio of the fitted last to first half-time, > 0 when the first records are learnt
  first (behavioural primacy during learning).

Reading the theory literally (the gradient that teaches a record is attenuated like its
influence, eta ~ rho_H, and the time to learn goes like 1 / eta), B would follow S
one for one: slope 1. No order of learning at all is slope 0.

The verdict rule (:func:`dose_verdict`), stated before the full run (the commit that
added it is the pre-registration):

1. Per seed s with S and B defined at every depth, beta_s = the least-squares slope of
   B(H, s) on S(H, s) over the depths. The slope's interval is the 95% Student-t
   interval of beta_s over seeds (:func:`lostmid.stats.seed_interval`).
2. ``inconclusive`` when there is no dose to respond to: the paired 95% t interval of
   S(deepest) - S(shallowest) over seeds does not lie above 0; or when fewer than 2
   seeds have B at every depth. A run has B only if it learnt: its final mean argmax
   accuracy over the records is at least ``LEARNT`` = 0.5 (chance, a value of the
   context picked at random, is 1/P), so that its half-times time real learning.
3. ``supported`` when the slope's interval lies above 0 (behavioural primacy grows with
   structural primacy);
4. else ``not supported`` when it lies below ``MIN_SLOPE`` = 0.1 (any growth is smaller
   than a tenth of the theory's one-for-one: a 10x larger structural ratio would move
   the learning-time ratio by less than 10^0.1 = 1.26x), which includes no growth and
   a reversal;
5. else ``inconclusive`` (the interval spans both 0 and ``MIN_SLOPE``).

>>> S = {2: [1.2, 1.3, 1.1], 8: [2.4, 2.5, 2.3]}
>>> dose_verdict(S, {2: [0.1, 0.2, 0.0], 8: [1.3, 1.4, 1.2]}).verdict
'supported'
>>> dose_verdict(S, {2: [0.0, 0.01, -0.01], 8: [0.0, -0.01, 0.01]}).verdict
'not supported'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.errors import UserError
from lostmid.stats import Interval, paired_difference, seed_interval
from lostmid.stats.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED

VERDICTS = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE)
MIN_SLOPE = 0.1
"""The smallest slope of B on S worth calling a response (module docstring, rule 4)."""
LEARNT = 0.5
"""The final mean accuracy a run needs for its B to count (module docstring, rule 2)."""

DOSE_RULE = (
    "per seed, beta_s = least-squares slope of B (ln ratio of the fitted last to first "
    "record's half-accuracy time) on S (ln ratio of the first to the last record's "
    "influence at init) over the depths; 95% t interval over seeds. Inconclusive if the "
    "paired t interval of S(deepest) - S(shallowest) does not lie above 0 or fewer than 2 "
    f"seeds have B at every depth (a run has B only if its final mean accuracy >= {LEARNT}); "
    "supported if the slope's interval lies above 0; not "
    f"supported if it lies below {MIN_SLOPE}; otherwise inconclusive"
)

PerDepth = Mapping[int, Sequence[float | None]]
"""depth H -> one value per seed, in the same seed order at every depth (None: undefined)."""


@dataclass(frozen=True)
class DoseVerdict:
    """The rule's outcome: the verdict, why, the slope over seeds (None when fewer than
    2 seeds have one), each seed's slope, and the dose S(deepest) - S(shallowest)."""

    verdict: str
    reason: str
    slope: Interval | None
    seed_slopes: tuple[float | None, ...]
    dose: Interval
    depths: tuple[int, ...]

    def record(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "rule": DOSE_RULE,
            "min_slope": MIN_SLOPE,
            "learnt": LEARNT,
            "slope": None if self.slope is None else self.slope.record(),
            "seed_slopes": list(self.seed_slopes),
            "dose": self.dose.record(),
            "depths": list(self.depths),
        }


def _table(name: str, values: PerDepth) -> tuple[list[int], np.ndarray]:
    depths = sorted(values)
    if len(depths) < 2:
        raise UserError(f"the dose-response needs at least 2 depths, got {len(depths)} for {name}")
    seeds = {len(values[h]) for h in depths}
    if len(seeds) != 1 or seeds == {0}:
        raise UserError(f"{name}: every depth needs one value per seed, the same seeds")
    table = np.array(
        [[np.nan if v is None else float(v) for v in values[h]] for h in depths]
    )  # (depths, seeds)
    return depths, table


def _slope(x: np.ndarray, y: np.ndarray) -> float | None:
    xc = x - x.mean()
    denominator = float(np.dot(xc, xc))
    if denominator == 0:
        return None
    return float(np.dot(xc, y - y.mean()) / denominator)


def dose_verdict(structural: PerDepth, behavioural: PerDepth) -> DoseVerdict:
    """The pre-stated rule of the module docstring.

    Args:
        structural: depth -> S per seed (defined for every run).
        behavioural: depth -> B per seed (None where a run has no half-times).

    >>> S = {2: [1.0, 1.1, 1.2], 8: [2.0, 2.2, 2.1]}
    >>> dose_verdict(S, {2: [0.0, 0.3, -0.3], 8: [0.4, -0.2, 0.5]}).verdict
    'inconclusive'
    """
    depths, s = _table("structural primacy", structural)
    depths_b, b = _table("behavioural primacy", behavioural)
    if depths_b != depths or b.shape != s.shape:
        raise UserError("structural and behavioural primacy need the same depths and seeds")
    if not np.all(np.isfinite(s)):
        raise UserError("structural primacy must be defined for every run")
    dose = paired_difference(s[-1].tolist(), s[0].tolist())
    slopes: list[float | None] = []
    for k in range(s.shape[1]):
        slopes.append(_slope(s[:, k], b[:, k]) if np.all(np.isfinite(b[:, k])) else None)
    defined = [v for v in slopes if v is not None]
    slope = seed_interval(defined) if len(defined) >= 2 else None

    def verdict(name: str, reason: str) -> DoseVerdict:
        return DoseVerdict(name, reason, slope, tuple(slopes), dose, tuple(depths))

    if not dose.ci_low > 0:
        return verdict(
            INCONCLUSIVE,
            f"no dose: S(H={depths[-1]}) - S(H={depths[0]}) = {dose.estimate:.2f} "
            f"[{dose.ci_low:.2f}, {dose.ci_high:.2f}] does not lie above 0",
        )
    if slope is None:
        return verdict(
            INCONCLUSIVE,
            f"only {len(defined)} seed(s) learnt at every depth (B needs half-times)",
        )
    text = f"slope {slope.estimate:.2f} [{slope.ci_low:.2f}, {slope.ci_high:.2f}]"
    if slope.ci_low > 0:
        return verdict(SUPPORTED, f"{text} lies above 0")
    if slope.ci_high < MIN_SLOPE:
        return verdict(NOT_SUPPORTED, f"{text} lies below {MIN_SLOPE}")
    return verdict(INCONCLUSIVE, f"{text} spans 0 and {MIN_SLOPE}")
