"""The paper's two training claims, judged on a ``dynamics.json`` by stated rules.

Each claim is a :class:`lostmid.compare.Claim` with a verdict of its vocabulary
(``reproduced``, ``partly``, ``not reproduced``), judged on the measured checkpoints
(:class:`~lostmid.train.dynamics.Checkpoint`) of one run; every number behind it is in
``dynamics.json``.

1. Valley deepens with training (paper: peak-to-valley ~1e2 at init, ~1e3 after
   pretraining). Ours: peak-to-valley of the measured influence profile at step 0 and at
   the last checkpoint, g = final / initial. Our models are far smaller and shorter
   (H = 8, T = 128 for ``tiny``) than the paper's, so only the direction and size of the
   change are judged, not the absolute values.
   The valley is a minimum over noisy estimates, so we also track the peak over the
   median of the middle half of the positions (peak-to-dead-zone, g_mid = final/initial).
   A deeper minimum is a deeper U only if both ends still stand above the middle, so we
   report primacy / dead zone and recency / dead zone at both ends of the run.
   Rule: reproduced if the model learned, g >= 10^0.5 (at least half the paper's
   decade), g_mid > 1 and the final profile is still a U (primacy and recency above the
   dead-zone level); partly if it learned and g > 1 (but not all of the above);
   otherwise not reproduced. "Learned" means the held-out loss fell by at least 10%.
2. eta(x) follows rho_H(x). Ours: Spearman S and W1 between the learning signal and
   rho_H's cell masses at each checkpoint, and W1_flat, W1 between the learning signal
   and a flat profile (the naive baseline; Spearman alone is weak evidence). The
   agreement "holds" at a checkpoint when S >= 0.9 and W1 <= W1_flat / 2.
   Rule: reproduced if it holds at step 0 and at the last checkpoint (the mechanism
   acts throughout training); partly if it holds at step 0 or at the last checkpoint
   but not both, or if at the last checkpoint S >= 0.5 and W1 < W1_flat; otherwise
   not reproduced.

Over seeds (:func:`pooled_training_claims`): each claim is judged on every seed by the
rule above; the pooled verdict is ``reproduced`` when every seed's is, ``not
reproduced`` when no seed's is reproduced or partly, and ``partly`` otherwise. Its numbers
are means with 95% Student-t intervals over seeds (:mod:`lostmid.compare.seeds`): the
valley's log10 growth of peak-to-valley, and the last checkpoint's Spearman and W1 of
the learning signal against rho_H (and W1 against flat).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.compare.claims import NOT_REPRODUCED, PARTLY, REPRODUCED, Claim
from lostmid.compare.metrics import ProfileComparison
from lostmid.stats import Interval, seed_interval
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
        f"reproduced if held-out loss fell >= {LEARNED_DROP:.0%}, peak-to-valley grew by "
        f">= x{DEEPEN_FACTOR:.2f} (half a decade), peak-to-dead-zone grew too and the final "
        "profile is still a U (primacy and recency above the dead zone); partly if the "
        "model learned and peak-to-valley grew at all; otherwise not reproduced"
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
    p0, p1 = s0.peak_to_valley, s1.peak_to_valley
    l0, l1 = first.heldout_loss, last.heldout_loss
    m0, m1 = peak_to_dead_zone(s0), peak_to_dead_zone(s1)
    ends0, ends1 = _ends(s0), _ends(s1)
    u_shaped = ends1 is not None and min(ends1) > 1
    learned = l1 <= (1 - LEARNED_DROP) * l0
    growth = p1 / p0 if p0 and p1 else None
    growth_mid = m1 / m0 if m0 and m1 else None
    if growth is None or not learned:
        verdict = NOT_REPRODUCED
    elif growth >= DEEPEN_FACTOR and growth_mid is not None and growth_mid > 1 and u_shaped:
        verdict = REPRODUCED
    elif growth > 1:
        verdict = PARTLY
    else:
        verdict = NOT_REPRODUCED
    ours = (
        f"{_g(p0)} at step 0 -> {_g(p1)} at step {last_step}"
        + (f" (x{growth:.2f})" if growth else "")
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

    @classmethod
    def of(cls, seed: int, checkpoints: Sequence[Checkpoint]) -> SeedEvidence:
        records = _measured(checkpoints)
        growth = signal = flat = spearman = None
        if records:
            last = records[-1][1]
            d = last.learning_signal_vs_rho
            spearman, signal = _finite(d.spearman), _finite(d.wasserstein1)
            flat = _finite(last.learning_signal_vs_flat.wasserstein1)
            p0 = records[0][1].influence_summary.peak_to_valley
            p1 = last.influence_summary.peak_to_valley
            if len(records) > 1 and records[0][0] == 0 and p0 and p1:
                growth = float(np.log10(p1 / p0))
        return cls(seed, tuple(training_claims(checkpoints)), growth, spearman, signal, flat)

    def record(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "claims": [c.record() for c in self.claims],
            "log10_growth": self.log10_growth,
            "signal_spearman": self.signal_spearman,
            "signal_wasserstein1": self.signal_wasserstein1,
            "signal_flat_wasserstein1": self.signal_flat_wasserstein1,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SeedEvidence:
        fields = {k: v for k, v in record.items() if k != "claims"}
        return cls(claims=tuple(Claim(**c) for c in record["claims"]), **fields)


def pooled_verdict(verdicts: Sequence[str]) -> str:
    """The verdict over seeds: reproduced if every seed's is, not reproduced if no seed's
    is reproduced or partly, partly otherwise.

    >>> pooled_verdict(["reproduced", "partly", "reproduced"])
    'partly'
    >>> pooled_verdict(["not reproduced", "not reproduced"])
    'not reproduced'
    """
    if verdicts and all(v == REPRODUCED for v in verdicts):
        return REPRODUCED
    if not any(v in (REPRODUCED, PARTLY) for v in verdicts):
        return NOT_REPRODUCED
    return PARTLY


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


def pooled_training_claims(seeds: Sequence[SeedEvidence]) -> list[Claim]:
    """Both training claims over seeds (module docstring): pooled verdict, numbers with
    95% intervals over seeds, and each seed's verdict."""
    if not seeds:
        raise ValueError("no training seeds to pool")
    if len(seeds) == 1:
        return list(seeds[0].claims)
    pooled = []
    for k, claim in enumerate(seeds[0].claims):
        verdicts = [s.claims[k].verdict for s in seeds]
        if claim.claim == VALLEY_CLAIM:
            numbers = "log10 growth of peak-to-valley " + interval_text(
                [s.log10_growth for s in seeds], 2
            )
        else:
            numbers = (
                "last checkpoint: Spearman "
                + interval_text([s.signal_spearman for s in seeds])
                + ", W1 "
                + interval_text([s.signal_wasserstein1 for s in seeds])
                + " (flat "
                + interval_text([s.signal_flat_wasserstein1 for s in seeds])
                + ")"
            )
        per_seed = "; ".join(f"seed {s.seed}: {s.claims[k].verdict}" for s in seeds)
        pooled.append(
            Claim(
                claim.claim,
                claim.paper,
                f"{numbers}; {per_seed}. Seed {seeds[0].seed}: {claim.ours}",
                pooled_verdict(verdicts),
                claim.rule + "; over seeds: reproduced if every seed is, not reproduced "
                "if none is reproduced or partly, else partly",
            )
        )
    return pooled


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


def _finite(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _f(x: float) -> str:
    return f"{x:.3f}" if x == x else "n/a"
