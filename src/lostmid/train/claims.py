"""The paper's two training claims, judged on a ``dynamics.json`` by stated rules.

Each claim is a :class:`lostmid.compare.Claim` with a verdict of its vocabulary
(``reproduced``, ``partly``, ``not reproduced``), judged on the measured checkpoints
(:class:`~lostmid.train.dynamics.Checkpoint`) of one run; every number behind it is in
``dynamics.json``.

1. Valley deepens with training (paper: peak-to-valley ~1e2 at init, ~1e3 after
   pretraining). Ours: peak-to-valley of the measured influence profile at step 0 and at
   the last checkpoint, g = final / initial, read by the ``binned`` readout of
   :func:`lostmid.compare.pretraining.readouts` (the valley is the lowest mean over a bin
   of positions, not the single smallest of T noisy numbers: a later profile measured
   with 3-4x the relative error of the first read 0.16-0.22 decades deeper by its single
   minimum on a null where it was only noisier, 0.04-0.09 by the bins;
   benchmarks/bench_training_readout.py), and read beyond what noise alone reads:
   g / g_noise, g_noise the growth of the step-0 profile drawn again with the last
   checkpoint's relative error (:func:`noise_growth`; on that null the pooled rule below
   said partly on 10% of 3-seed nulls and 48% of 10-seed ones when g was read raw,
   4.5% at both beyond noise). Our models are far smaller and shorter
   (H = 8, T = 128 for ``tiny``) than the paper's, so only the direction and size of the
   change are judged, not the absolute values.
   We also track the peak over the median of the middle half of the positions
   (peak-to-dead-zone, g_mid = final/initial).
   A deeper minimum is a deeper U only if both ends still stand above the middle, so we
   report primacy / dead zone and recency / dead zone at both ends of the run.
   Rule: reproduced if the model learned, g / g_noise >= 10^0.5 (at least half the
   paper's decade), g_mid > 1 and the final profile is still a U (primacy and recency
   above the dead-zone level); partly if it learned and g / g_noise > 1 (but not all of
   the above);
   otherwise not reproduced. "Learned" means the held-out loss fell by at least 10%.
2. eta(x) follows rho_H(x). Ours: Spearman S and W1 between the learning signal and
   rho_H's cell masses at each checkpoint, and W1_flat, W1 between the learning signal
   and a flat profile (the naive baseline; Spearman alone is weak evidence). The
   agreement "holds" at a checkpoint when S >= 0.9 and W1 <= W1_flat / 2.
   Rule: reproduced if it holds at step 0 and at the last checkpoint (the mechanism
   acts throughout training); partly if it holds at step 0 or at the last checkpoint
   but not both, or if at the last checkpoint S >= 0.5 and W1 < W1_flat; otherwise
   not reproduced.

Over seeds (:func:`pooled_training_claims`), decided by 95% Student-t intervals over the
seeds (:mod:`lostmid.stats`; every seed's own verdict is listed beside):

1. Valley: G, the interval of log10 growth of peak-to-valley beyond noise (log10 g -
   log10 g_noise, a seed each). Not reproduced if some seed did not learn or G lies
   wholly <= 0 (resolved: no deepening); reproduced if G lies wholly >= log10(sqrt 10)
   = 0.5 and on every seed the dead zone deepened and the final profile is still a U;
   partly if G lies wholly > 0 (resolved growth, but not all of that); otherwise
   inconclusive (G spans 0).
2. Learning signal, at step 0 and at the last checkpoint: the intervals of Spearman S
   and of r = W1 / W1_flat. It holds there if S lies wholly >= 0.9 and r wholly
   <= 1/2, fails if S lies wholly < 0.9 or r wholly > 1/2, else is unresolved there.
   Reproduced if it holds at both; not reproduced if it fails at both; partly if it
   holds at one and fails at the other; otherwise inconclusive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.compare.claims import Claim
from lostmid.compare.metrics import ProfileComparison
from lostmid.recordable import fields_record
from lostmid.stats import Interval, seed_interval
from lostmid.stats.verdicts import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
    UNRESOLVED,
)
from lostmid.theory import ProfileSummary
from lostmid.train.dynamics import Checkpoint, CheckpointMeasurement

DEEPEN_FACTOR = 10**0.5
LEARNED_DROP = 0.10
HOLDS_SPEARMAN = 0.9  # the learning signal "follows" rho_H at a checkpoint: S >= this
PARTLY_SPEARMAN = 0.5  # and W1 <= W1_flat / 2; partly at the end: S >= this, W1 < W1_flat

VALLEY_CLAIM = "Pretraining deepens the valley (peak-to-valley grows)"
SIGNAL_CLAIM = "Effective learning rate eta(x) follows rho_H(x)"


def _measured(checkpoints: Sequence[Checkpoint]) -> list[tuple[int, CheckpointMeasurement]]:
    found = [(c.step, c.measurement) for c in checkpoints if c.measurement is not None]
    return sorted(found, key=lambda pair: pair[0])


def valley_claim(checkpoints: Sequence[Checkpoint]) -> Claim:
    """Claim 1: the valley deepens with training (see the module docstring)."""
    records = _measured(checkpoints)
    paper = "~1e2 at init -> ~1e3 after pretraining"
    rule = (
        "peak-to-valley by the binned readout (the valley the lowest bin of positions "
        "2..T-1), its growth read beyond what noise alone reads (the step-0 profile "
        "drawn again with the last checkpoint's relative error); reproduced if held-out "
        f"loss fell >= {LEARNED_DROP:.0%}, it grew beyond noise by >= x{DEEPEN_FACTOR:.2f} "
        "(half a decade), peak-to-dead-zone grew too and the final profile is still a U "
        "(primacy and recency above the dead zone); partly if the model learned and "
        "peak-to-valley grew beyond noise at all; otherwise not reproduced"
    )
    if len(records) < 2 or records[0][0] != 0:
        return Claim(
            VALLEY_CLAIM,
            paper,
            "no measured checkpoints",
            NOT_REPRODUCED,
            rule + " (needs step 0 and a later step)",
        )
    (_, first), (last_step, last) = records[0], records[-1]
    s0, s1 = first.influence_summary, last.influence_summary
    p0, p1 = binned_peak_to_valley(first), binned_peak_to_valley(last)
    l0, l1 = first.heldout_loss, last.heldout_loss
    m0, m1 = peak_to_dead_zone(s0), peak_to_dead_zone(s1)
    ends0, ends1 = _ends(s0), _ends(s1)
    u_shaped = ends1 is not None and min(ends1) > 1
    learned = l1 <= (1 - LEARNED_DROP) * l0
    growth = p1 / p0 if p0 and p1 else None
    noise = noise_growth(first, last)
    beyond = None if growth is None or noise is None else growth / 10**noise
    growth_mid = m1 / m0 if m0 and m1 else None
    if beyond is None or not learned:
        verdict = NOT_REPRODUCED
    elif beyond >= DEEPEN_FACTOR and growth_mid is not None and growth_mid > 1 and u_shaped:
        verdict = REPRODUCED
    elif beyond > 1:
        verdict = PARTLY
    else:
        verdict = NOT_REPRODUCED
    ours = (
        f"{_g(p0)} at step 0 -> {_g(p1)} at step {last_step}"
        + (f" (x{growth:.2f})" if growth else "")
        + (f", noise alone x{10**noise:.2f}" if noise is not None else "")
        + f"; peak-to-dead-zone {_g(m0)} -> {_g(m1)}"
        + f"; primacy/dead zone {_g(ends0 and ends0[0])} -> {_g(ends1 and ends1[0])}"
        + f", recency/dead zone {_g(ends0 and ends0[1])} -> {_g(ends1 and ends1[1])}"
        + f"; held-out loss {l0:.2f} -> {l1:.2f}"
    )
    return Claim(VALLEY_CLAIM, paper, ours, verdict, rule)


def learning_signal_claim(checkpoints: Sequence[Checkpoint]) -> Claim:
    """Claim 2: the learning signal eta(x) follows rho_H(x) (see the module docstring)."""
    records = _measured(checkpoints)
    paper = "eta(x) ~ rho_H(x) (no number given)"
    rule = (
        f"holds at a checkpoint if Spearman >= {HOLDS_SPEARMAN} and W1 <= W1_flat/2; "
        "reproduced if it holds at step 0 and at the last checkpoint; partly if at only "
        f"one of them, or if at the last Spearman >= {PARTLY_SPEARMAN} and W1 < W1_flat; "
        "otherwise not reproduced"
    )
    if not records:
        return Claim(SIGNAL_CLAIM, paper, "no measured checkpoints", NOT_REPRODUCED, rule)
    (first_step, first), (last_step, last) = records[0], records[-1]
    d, flat = last.learning_signal_vs_rho, last.learning_signal_vs_flat.wasserstein1
    at_start = first_step == 0 and _holds(first)
    at_end = _holds(last)
    if at_start and at_end:
        verdict = REPRODUCED
    elif at_start or at_end or (d.spearman >= PARTLY_SPEARMAN and d.wasserstein1 < flat):
        verdict = PARTLY
    else:
        verdict = NOT_REPRODUCED
    ours = f"step {last_step}: {_agreement(last)}; step {first_step}: {_agreement(first)}"
    return Claim(SIGNAL_CLAIM, paper, ours, verdict, rule)


def training_claims(checkpoints: Sequence[Checkpoint]) -> list[Claim]:
    """Both training claims with our numbers and verdicts, for the reproduce report."""
    return [valley_claim(checkpoints), learning_signal_claim(checkpoints)]


@dataclass(frozen=True)
class SeedEvidence:
    """One training seed's two claims and the numbers the pooled claims summarise.

    log10_growth: log10 of the final over the initial peak-to-valley (None without two
    measured checkpoints); signal_*: Spearman and W1 of the learning signal against
    rho_H, and W1 against a flat profile, at the last measured checkpoint.
    """

    seed: int
    claims: tuple[Claim, ...]
    log10_growth: float | None
    signal_spearman: float | None
    signal_wasserstein1: float | None
    signal_flat_wasserstein1: float | None
    signal_start_spearman: float | None = None
    signal_start_ratio: float | None = None
    learned: bool | None = None
    deeper_and_u: bool | None = None
    log10_noise_growth: float | None = None

    @property
    def log10_growth_beyond_noise(self) -> float | None:
        """log10 growth less what noise alone reads (:func:`noise_growth`); None where
        either is unknown."""
        if self.log10_growth is None or self.log10_noise_growth is None:
            return None
        return self.log10_growth - self.log10_noise_growth

    @property
    def signal_ratio(self) -> float | None:
        """W1(eta, rho_H) / W1(eta, flat) at the last checkpoint (the rule holds <= 1/2)."""
        return _ratio(self.signal_wasserstein1, self.signal_flat_wasserstein1)

    @classmethod
    def of(cls, seed: int, checkpoints: Sequence[Checkpoint]) -> SeedEvidence:
        records = _measured(checkpoints)
        growth = signal = flat = spearman = start_s = start_r = learned = deeper = noise = None
        if records:
            last = records[-1][1]
            d = last.learning_signal_vs_rho
            spearman, signal = _finite(d.spearman), _finite(d.wasserstein1)
            flat = _finite(last.learning_signal_vs_flat.wasserstein1)
            if records[0][0] == 0:
                first = records[0][1]
                start_s = _finite(first.learning_signal_vs_rho.spearman)
                start_r = _ratio(
                    _finite(first.learning_signal_vs_rho.wasserstein1),
                    _finite(first.learning_signal_vs_flat.wasserstein1),
                )
            p0, p1 = binned_peak_to_valley(records[0][1]), binned_peak_to_valley(last)
            if len(records) > 1 and records[0][0] == 0 and p0 and p1:
                growth = float(np.log10(p1 / p0))
                noise = noise_growth(records[0][1], last)
                s0, s1 = records[0][1].influence_summary, last.influence_summary
                learned = last.heldout_loss <= (1 - LEARNED_DROP) * records[0][1].heldout_loss
                m0, m1 = peak_to_dead_zone(s0), peak_to_dead_zone(s1)
                ends = _ends(s1)
                deeper = bool(m0 and m1 and m1 > m0 and ends is not None and min(ends) > 1)
        return cls(
            seed,
            tuple(training_claims(checkpoints)),
            growth,
            spearman,
            signal,
            flat,
            start_s,
            start_r,
            learned,
            deeper,
            noise,
        )

    def record(self) -> dict[str, Any]:
        return fields_record(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SeedEvidence:
        fields = {k: v for k, v in record.items() if k != "claims"}
        return cls(claims=tuple(Claim(**c) for c in record["claims"]), **fields)


def valley_verdict(growth: Interval, learned: bool, deeper_and_u: bool) -> str:
    """The pooled valley rule (module docstring) on the interval of log10 growth.

    >>> from lostmid.stats import Interval
    >>> valley_verdict(Interval(1.0, 0.8, 1.2, 3), True, True)
    'reproduced'
    >>> valley_verdict(Interval(0.3, -0.1, 0.7, 3), True, True)
    'inconclusive'
    """
    if not learned or growth.ci_high <= 0:
        return NOT_REPRODUCED
    if growth.ci_low >= np.log10(DEEPEN_FACTOR) and deeper_and_u:
        return REPRODUCED
    if growth.ci_low > 0:
        return PARTLY
    return INCONCLUSIVE


def signal_state(spearman: Interval, ratio: Interval) -> str:
    """``holds``, ``fails`` or ``unresolved`` at one checkpoint (module docstring).

    >>> from lostmid.stats import Interval
    >>> signal_state(Interval(0.99, 0.95, 1.0, 3), Interval(0.2, 0.1, 0.3, 3))
    'holds'
    >>> signal_state(Interval(0.99, 0.95, 1.0, 3), Interval(1.2, 1.1, 1.3, 3))
    'fails'
    """
    if spearman.ci_low >= HOLDS_SPEARMAN and ratio.ci_high <= 0.5:
        return HOLDS
    if spearman.ci_high < HOLDS_SPEARMAN or ratio.ci_low > 0.5:
        return FAILS
    return UNRESOLVED


def signal_verdict(start: str, end: str) -> str:
    """The pooled learning-signal rule from the states at step 0 and at the end.

    >>> signal_verdict("holds", "fails"), signal_verdict("fails", "unresolved")
    ('partly', 'inconclusive')
    """
    if start == end == HOLDS:
        return REPRODUCED
    if start == end == FAILS:
        return NOT_REPRODUCED
    if {start, end} == {HOLDS, FAILS}:
        return PARTLY
    return INCONCLUSIVE


def interval_text(values: Sequence[float | None], digits: int = 3) -> str:
    """``mean [low, high]`` of the defined per-seed values (95% t over seeds).

    >>> interval_text([1.0, 2.0, 3.0], 2)
    '2.00 [-0.48, 4.48] (3 seeds)'
    >>> interval_text([0.5, None])
    '0.500 (1 seed)'
    """
    defined = [v for v in values if v is not None]
    if not defined:
        return "n/a"
    i: Interval = seed_interval(defined)
    if i.n == 1:
        return f"{i.estimate:.{digits}f} (1 seed)"
    return f"{i.estimate:.{digits}f} [{i.ci_low:.{digits}f}, {i.ci_high:.{digits}f}] ({i.n} seeds)"


def _interval(values: Sequence[float | None]) -> Interval:
    defined = [v for v in values if v is not None]
    if not defined:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    return seed_interval(defined)


def pooled_training_claims(seeds: Sequence[SeedEvidence]) -> list[Claim]:
    """Both training claims over seeds (module docstring): verdicts by 95% intervals over
    seeds, the numbers with those intervals, and each seed's own verdict."""
    if not seeds:
        raise ValueError("no training seeds to pool")
    if len(seeds) == 1:
        return list(seeds[0].claims)
    pooled = []
    for k, claim in enumerate(seeds[0].claims):
        per_seed = "; ".join(f"seed {s.seed}: {s.claims[k].verdict}" for s in seeds)
        if claim.claim == VALLEY_CLAIM:
            beyond = [s.log10_growth_beyond_noise for s in seeds]
            growth = _interval(beyond)
            learned = all(s.learned is not False for s in seeds) and growth.n == len(seeds)
            deeper = all(bool(s.deeper_and_u) for s in seeds)
            verdict = valley_verdict(growth, learned, deeper) if growth.n else NOT_REPRODUCED
            numbers = (
                "log10 growth of binned peak-to-valley beyond noise "
                + interval_text(beyond, 2)
                + " (read "
                + interval_text([s.log10_growth for s in seeds], 2)
                + ", noise alone "
                + interval_text([s.log10_noise_growth for s in seeds], 2)
                + ")"
            )
            numbers += "" if deeper else " (the dead zone did not deepen, or no U, on some seed)"
            rule = (
                "over seeds, by the 95% interval G of log10 growth beyond what noise alone "
                "reads (each seed's step-0 profile drawn again with its last checkpoint's "
                "relative error): not reproduced if a seed did not learn or G <= 0 wholly; "
                "reproduced if G >= 0.5 wholly and on every seed the dead zone deepened and "
                "the profile stayed a U; partly if G > 0 wholly; else inconclusive"
            )
        else:
            states = []
            for label, spearmans, ratios in (
                ("step 0", [s.signal_start_spearman for s in seeds],
                 [s.signal_start_ratio for s in seeds]),
                ("last", [s.signal_spearman for s in seeds], [s.signal_ratio for s in seeds]),
            ):  # fmt: skip
                si, ri = _interval(spearmans), _interval(ratios)
                state = UNRESOLVED if si.n == 0 or ri.n == 0 else signal_state(si, ri)
                states.append((label, state, spearmans, ratios))
            verdict = signal_verdict(states[0][1], states[1][1])
            numbers = "; ".join(
                f"{label}: Spearman {interval_text(sp)}, W1/W1_flat {interval_text(r)} ({state})"
                for label, state, sp, r in states
            )
            rule = (
                "over seeds, by 95% intervals of Spearman S and r = W1/W1_flat at step 0 "
                f"and at the last checkpoint: holds there if S >= {HOLDS_SPEARMAN} and "
                "r <= 1/2 wholly, fails if S < 0.9 or r > 1/2 wholly; reproduced if it "
                "holds at both, not reproduced if it fails at both, partly if it holds "
                "at one and fails at the other, else inconclusive"
            )
        pooled.append(
            Claim(
                claim.claim,
                claim.paper,
                f"{numbers}; {per_seed}. Seed {seeds[0].seed}: {claim.ours}",
                verdict,
                rule,
            )
        )
    return pooled


NOISE_DRAWS = 200
"""Draws of the noise null (:func:`noise_growth`) a seed's growth is read against."""


def noise_growth(
    first: CheckpointMeasurement,
    last: CheckpointMeasurement,
    *,
    draws: int = NOISE_DRAWS,
    seed: int = 0,
) -> float | None:
    """The log10 growth of binned peak-to-valley that noise alone reads: the step-0
    profile drawn again ``draws`` times with the last checkpoint's median relative
    standard error (log-normal, sigma = that error), each draw read against the step-0
    profile itself; their mean. A later profile measured with more relative error reads
    a deeper valley even by bins (the extreme of a noisy estimate is biased;
    benchmarks/bench_training_readout.py), so a seed's growth is read beyond this.
    None where either profile or the error is not usable.

    >>> import numpy as np
    >>> from lostmid.train.dynamics import CheckpointMeasurement as M
    >>> x = np.linspace(1.0, 0.01, 64) ** 2 + 0.01
    >>> m = lambda err: M(1.0, np.ones(64), x, err * x, np.ones(2), np.ones(64))
    >>> quiet, noisy = noise_growth(m(0.01), m(0.01)), noise_growth(m(0.01), m(0.3))
    >>> abs(quiet) < 0.01 < noisy
    True
    """
    from lostmid.compare.pretraining import readouts

    p0 = np.asarray(first.influence, dtype=np.float64)
    p1 = np.asarray(last.influence, dtype=np.float64)
    s1 = np.asarray(last.influence_stderr, dtype=np.float64)
    if binned_peak_to_valley(first) is None or binned_peak_to_valley(last) is None:
        return None
    relative = float(np.median(s1 / p1))
    if not np.isfinite(relative) or relative < 0:
        return None
    rng = np.random.default_rng(seed)
    start = readouts(p0, "binned")["log10_ptv"]
    reads = [
        readouts(p0 * np.exp(rng.normal(0.0, relative, p0.size)), "binned")["log10_ptv"]
        for _ in range(draws)
    ]
    return float(np.mean(reads) - start)


def binned_peak_to_valley(m: CheckpointMeasurement) -> float | None:
    """Peak-to-valley of a checkpoint's influence profile by the ``binned`` readout
    (:func:`lostmid.compare.pretraining.readouts`); None when it is not a positive
    finite number."""
    from lostmid.compare.pretraining import readouts

    profile = np.asarray(m.influence, dtype=np.float64)
    if profile.size < 3 or not np.all(np.isfinite(profile)) or np.any(profile <= 0):
        return None
    value = 10 ** readouts(profile, "binned")["log10_ptv"]
    return float(value) if np.isfinite(value) and value > 0 else None


def peak_to_dead_zone(summary: ProfileSummary) -> float | None:
    """peak / dead-zone level: a valley depth that one noisy minimum cannot set."""
    return summary.peak / summary.dead_zone_level if summary.dead_zone_level else None


def _holds(m: CheckpointMeasurement) -> bool:
    """S >= 0.9 and W1 <= W1_flat / 2: the theory places the signal, not just ranks it."""
    d: ProfileComparison = m.learning_signal_vs_rho
    return (
        d.spearman >= HOLDS_SPEARMAN
        and d.wasserstein1 <= m.learning_signal_vs_flat.wasserstein1 / 2
    )


def _agreement(m: CheckpointMeasurement) -> str:
    d = m.learning_signal_vs_rho
    return (
        f"Spearman {_f(d.spearman)}, W1 {d.wasserstein1:.3f} "
        f"(flat {m.learning_signal_vs_flat.wasserstein1:.3f})"
    )


def _ends(summary: ProfileSummary) -> tuple[float, float] | None:
    """(primacy, recency) over the dead-zone level of a profile."""
    dead = summary.dead_zone_level
    if not dead:
        return None
    return summary.primacy / dead, summary.recency / dead


def _g(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b <= 0 else a / b


def _finite(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _f(x: float) -> str:
    return f"{x:.3f}" if x == x else "n/a"
