"""Every candidate profile for one model's measurements, with its metrics: the given
theory, the predicted theory (from the measured a_l, per kernel, and any
position-resolved prediction), the fitted theory for each kernel, and the naive
baselines; with several seeds also the noise floor, the out-of-sample scores and the
verdicts on the paper's numbers.

Kinds: ``theory`` (a theory file) and ``predicted`` are zero-parameter candidates
(nothing fitted to the measurement; under the ``pinned`` spike policy their spike
share is taken from it); ``fitted`` and ``baseline`` are fitted families
(:mod:`lostmid.compare.fitting`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.checks import check_choice
from lostmid.compare.baselines import BASELINE_FAMILIES
from lostmid.compare.claims import (
    CLAIM_TOLERANCE,
    PAPER_SPEARMAN,
    PAPER_WASSERSTEIN1,
    Claim,
    format_interval,
    verdict_at_least,
    verdict_at_most,
    verdict_no_worse,
)
from lostmid.compare.config import FIT_METRICS, LOG_BINS, SPIKE_POLICIES
from lostmid.compare.fit import TheoryFamily, _log_scale
from lostmid.compare.fitting import Family, pin_spike, place
from lostmid.compare.inputs import TheoryProfile, check_same_model, check_theory_matches
from lostmid.compare.metrics import METRIC_RANGES, ProfileComparison, compare_profiles
from lostmid.compare.predicted import (
    Prediction,
    forward_ratio_prediction,
    pooled_measurement,
    positional_predictions,
    predicted_theory,
)
from lostmid.compare.scoring import (
    NoiseFloor,
    OutOfSample,
    noise_floor,
    per_seed,
    pool_profiles,
    score_out_of_sample,
)
from lostmid.errors import UserError
from lostmid.influence.record import MeasureRecord
from lostmid.recordable import fields_record
from lostmid.stats.intervals import MeanSpread
from lostmid.theory import KERNELS

KINDS = ("theory", "predicted", "fitted", "baseline")


@dataclass(frozen=True)
class Candidate:
    """One profile set beside the measurement.

    Attributes:
        name: unique key: ``theory``, ``predicted:<kernel>``, ``predicted:<name>``,
            ``fitted:<kernel>`` or ``baseline:<name>``.
        kind: one of ``KINDS``.
        kernel: the theory kernel, None for baselines and outside predictions.
        description: one line for tables and legends.
        parameters: the parameters it was made with (fitted values included).
        parameter_count: numbers taken from this measurement (0: a true prediction).
        profile: (L,) the profile on the measured scale, fitted to all seeds pooled.
        metrics: its :class:`ProfileComparison` against the pooled measurement
            (in sample for a fitted candidate).
        out_of_sample: its scores on held-out seeds (None with one measurement).
    """

    name: str
    kind: str
    kernel: str | None
    description: str
    parameters: dict[str, Any]
    parameter_count: int
    profile: np.ndarray
    metrics: ProfileComparison
    out_of_sample: OutOfSample | None = None

    def record(self) -> dict[str, Any]:
        """The JSON layout of one candidate (compare.json, reproduce.json)."""
        return fields_record(self, skip=("name",))

    @classmethod
    def from_record(cls, name: str, record: Mapping[str, Any]) -> Candidate:
        """Read back :meth:`record` of the candidate ``name``."""
        scores = record.get("out_of_sample")
        return cls(
            name=name,
            kind=str(record["kind"]),
            kernel=record["kernel"],
            description=str(record["description"]),
            parameters=dict(record["parameters"]),
            parameter_count=int(record["parameter_count"]),
            profile=np.asarray(record["profile"], dtype=np.float64),
            metrics=ProfileComparison.from_record(record["metrics"]),
            out_of_sample=None if scores is None else OutOfSample.from_record(name, scores),
        )

    def score(self, metric: str) -> MeanSpread:
        """``metric`` out of sample (mean and spread over held-out seeds) when there
        are several seeds, else in sample (spread 0, n 1)."""
        if self.out_of_sample is not None:
            return self.out_of_sample.metrics[metric]
        return MeanSpread.of([getattr(self.metrics, metric)], METRIC_RANGES[metric])


@dataclass(frozen=True)
class Scorecard:
    """Every candidate scored against the measurements of one model.

    Attributes:
        measured: the pooled measurement (one seed: that seed).
        seeds: the number of measurements S.
        candidates: every candidate by name, in a stable order.
        noise_floor: agreement between seeds (None with one measurement).
        claims: the paper's numbers judged for each zero-parameter candidate.
        notes: what could not be done and why (e.g. one seed: no out-of-sample fold).
        fit_metric, spike, bins: the scoring policy used.
    """

    measured: MeasureRecord
    seeds: int
    candidates: dict[str, Candidate]
    noise_floor: NoiseFloor | None
    claims: tuple[Claim, ...]
    notes: tuple[str, ...]
    fit_metric: str
    spike: str
    bins: int


def compare_measurement(
    measured: MeasureRecord,
    theory: TheoryProfile | None = None,
    predict: bool = False,
    kernels: Sequence[str] = KERNELS,
    baselines: bool = True,
    *,
    predicted: Mapping[str, np.ndarray] | None = None,
    fit_metric: str = "w1",
    spike: str = "free",
    bins: int = LOG_BINS,
) -> dict[str, Candidate]:
    """Build and score every candidate against one measurement, in a stable order:
    the given theory, predicted (per kernel, then ``predicted``), fitted (per kernel),
    baselines. See :func:`compare_measurements` for several seeds and the arguments.
    """
    return compare_measurements(
        [measured],
        theory,
        predict=predict,
        kernels=kernels,
        baselines=baselines,
        predicted=predicted,
        fit_metric=fit_metric,
        spike=spike,
        bins=bins,
    ).candidates


def compare_measurements(
    measurements: Sequence[MeasureRecord],
    theory: TheoryProfile | None = None,
    *,
    predict: bool = False,
    kernels: Sequence[str] = KERNELS,
    baselines: bool = True,
    predicted: Mapping[str, np.ndarray] | None = None,
    families: Sequence[Family] = (),
    fit_metric: str = "w1",
    spike: str = "free",
    bins: int = LOG_BINS,
) -> Scorecard:
    """Score every candidate against the measurements (seeds) of one model.

    In sample: each candidate against the pooled measurement (fitted ones fitted to
    it). With S >= 2 seeds also the noise floor and the out-of-sample scores
    (:mod:`lostmid.compare.scoring`), and the paper's claims are judged on the
    per-seed scores against that floor.

    Args:
        measurements: one :class:`MeasureRecord` per seed, all of one length, target,
            depth and mask.
        theory: a theory file's row, scored as a zero-parameter candidate.
        predict: add ``predicted:<kernel>`` from the measured residual strengths (each
            seed's own a_l for its fold; their mean in sample) and, where the measure
            files carry ``gain_per_position`` and :mod:`lostmid.theory` has
            ``positional_influence_row``, ``predicted:positional`` (jacobian kernel)
            and ``predicted:positional-rollout``.
        kernels: the kernels of the predicted and fitted theory.
        baselines: add the naive baselines.
        predicted: more zero-parameter candidates by name, e.g.
            ``{"predicted:positional": row}``: (L,) for every seed or (S, L) per seed.
        families: more fitted candidates (:class:`~lostmid.compare.fitting.Family`).
        fit_metric, spike: the objective and spike policy of every fit.
        bins: log bins of the binned metrics.

    Raises :class:`UserError` when the measurements or the theory disagree on the
    length or the target, or when ``predict`` is asked without residual strengths.
    """
    check_choice("fit_metric", fit_metric, FIT_METRICS)
    check_choice("spike", spike, SPIKE_POLICIES)
    seeds = check_same_model(measurements)
    first = measurements[0]
    t = first.target
    rows = np.stack([m.influence for m in measurements])
    pooled = pooled_measurement(measurements)
    notes: list[str] = []
    fixed = _zero_parameter(measurements, theory, predict, kernels, predicted, notes)
    if first.layer_masks is not None and len(set(first.layer_masks)) > 1:
        notes.append(
            f"the layers have different masks ({', '.join(dict.fromkeys(first.layer_masks))}): "
            "the predictions use each layer's own, the fitted theory one mask for all "
            f"({first.mask})"
        )
    fitted: list[Family] = [TheoryFamily(k, first.layers, first.mask) for k in kernels]
    if baselines:
        fitted += BASELINE_FAMILIES
    fitted += families
    names = [*fixed, *(f.name for f in fitted)]
    if len(set(names)) != len(names):
        raise UserError(f"candidate names must be unique, got {names}")
    out = _in_sample(fixed, fitted, pooled.influence, t, seeds, fit_metric, spike, bins)

    floor = None
    if seeds > 1:
        floor = noise_floor(rows, target=t, bins=bins)
        scores = score_out_of_sample(
            rows,
            fitted,
            predicted={name: p.rows for name, p in fixed.items()},
            target=t,
            fit_metric=fit_metric,
            spike=spike,
            bins=bins,
        )
        out = {name: _with(c, scores[name]) for name, c in out.items()}
        notes += clipping_notes(floor, scores.values())
    else:
        notes.append(
            "one measurement: no held-out seed, so no out-of-sample scores and no noise "
            "floor (fitted candidates are scored in sample); give one measure.json per "
            "seed (--measured several times) to get them"
        )
    return Scorecard(
        measured=pooled,
        seeds=seeds,
        candidates=out,
        noise_floor=floor,
        claims=judge_predictions(out, floor),
        notes=tuple(notes),
        fit_metric=fit_metric,
        spike=spike,
        bins=bins,
    )


def _zero_parameter(
    measurements: Sequence[MeasureRecord],
    theory: TheoryProfile | None,
    predict: bool,
    kernels: Sequence[str],
    predicted: Mapping[str, np.ndarray] | None,
    notes: list[str],
) -> dict[str, Prediction]:
    """The zero-parameter candidates by name, one row per seed: the theory file's, the
    predicted theory (when ``predict``; what it skips is added to ``notes``) and the
    ``predicted`` profiles given."""
    seeds = len(measurements)
    first = measurements[0]
    fixed: dict[str, Prediction] = {}
    if theory is not None:
        check_theory_matches(theory, first)
        fixed["theory"] = Prediction(
            kind="theory",
            kernel=theory.kernel,
            description=f"theory file ({theory.kernel or 'unknown'} kernel)",
            parameters=dict(theory.params),
            rows=np.broadcast_to(theory.influence, (seeds, first.length)),
        )
    if predict:
        fixed.update(predicted_theory(measurements, kernels))
        if "jacobian" in kernels and first.residual_strength_method != "forward":
            fixed.update(forward_ratio_prediction(measurements))
        positional, skipped = positional_predictions(measurements, kernels)
        fixed.update(positional)
        notes += skipped
    for name, profile in (predicted or {}).items():
        if name in fixed:
            raise UserError(f"predicted candidate {name!r} is given twice; rename one")
        fixed[name] = Prediction(
            kind="predicted",
            kernel=None,
            description=f"{name}: given profile (nothing fitted)",
            parameters={},
            rows=per_seed(name, profile, seeds, first.length),
        )
    return fixed


def _in_sample(
    fixed: Mapping[str, Prediction],
    fitted: Sequence[Family],
    measured: np.ndarray,
    target: int,
    seeds: int,
    fit_metric: str,
    spike: str,
    bins: int,
) -> dict[str, Candidate]:
    """Every candidate against the pooled ``measured`` profile: the zero-parameter ones
    pooled over the ``seeds`` and put on its scale (their spike share pinned to it under the
    ``pinned`` policy), the fitted families fitted to it."""
    pooled_share = float(measured[target - 1] / measured.sum())
    out: dict[str, Candidate] = {}
    for name, p in fixed.items():
        profile = pool_profiles(p.rows) if seeds > 1 else np.array(p.rows[0])
        if spike == "pinned":
            profile = place(pin_spike(profile, pooled_share, target), measured)
        else:
            profile = profile * np.exp(_log_scale(_log(profile), measured))
        count = 1 if spike == "pinned" else 0
        metrics = compare_profiles(profile, measured, target=target, bins=bins)
        out[name] = Candidate(
            name, p.kind, p.kernel, p.description, p.parameters, count, profile, metrics
        )
    for family in fitted:
        fit = family.fit(measured, target, fit_metric=fit_metric, spike=spike)
        metrics = compare_profiles(fit.profile, measured, target=target, bins=bins)
        out[family.name] = Candidate(
            family.name,
            family.kind,
            family.kernel,
            fit.description,
            {**fit.parameters, "loss": fit.loss},
            fit.parameter_count,
            fit.profile,
            metrics,
        )
    return out


def judge_predictions(
    candidates: Mapping[str, Candidate], floor: NoiseFloor | None
) -> tuple[Claim, ...]:
    """The paper's step-0 numbers (Spearman >= 0.99, W1 <= 0.02, nothing fitted) for
    every zero-parameter candidate, and our check that the best of them is no worse
    than the best baseline on W1.

    Ours is the candidate's score per held-out seed as a 95% interval (t over seeds;
    in sample with one seed); the resolution is the noise floor's interval
    (:func:`lostmid.compare.claims.verdict_at_least`). The check: the paired difference
    of W1 (prediction - baseline, per held-out seed) lies wholly <= 0 (reproduced),
    wholly > 0 (not reproduced), or spans 0 (inconclusive).
    """
    claims = []
    zero = [c for c in candidates.values() if c.kind in ("theory", "predicted")]
    for c in zero:
        for metric, paper, judge, text in (
            ("spearman", PAPER_SPEARMAN, verdict_at_least, "Spearman"),
            ("wasserstein1", PAPER_WASSERSTEIN1, verdict_at_most, "W1"),
        ):
            ours = c.score(metric)
            floor_value = None if floor is None else floor.metrics[metric]
            verdict = judge(
                ours.interval(),
                paper,
                CLAIM_TOLERANCE[metric],
                floor=None if floor_value is None else floor_value.interval(),
            )
            where = "per seed" if c.out_of_sample is not None else "in sample"
            floor_text = (
                "" if floor_value is None else f"; seed-to-seed {format_interval(floor_value)}"
            )
            claims.append(
                Claim.judged(
                    f"{c.name} matches the measurement ({text}, nothing fitted)",
                    f"{paper:g}",
                    f"{format_interval(ours)} ({where})" + floor_text,
                    verdict,
                )
            )
    bases = [c for c in candidates.values() if c.kind == "baseline"]
    if zero and bases:
        best = min(zero, key=lambda c: _mean_or_inf(c.score("wasserstein1")))
        base = min(bases, key=lambda c: _mean_or_inf(c.score("wasserstein1")))
        ours, theirs = best.score("wasserstein1"), base.score("wasserstein1")
        claims.append(
            Claim.judged(
                f"{best.name} is no worse than the best fitted baseline on W1 "
                "(our check, not the paper's)",
                f"{base.name} {format_interval(theirs)}",
                format_interval(ours),
                verdict_no_worse(
                    w1_difference(best, base).interval(), f"W1 {best.name} - {base.name}"
                ),
            )
        )
    return tuple(claims)


def clipping_notes(floor: NoiseFloor | None, scores: Iterable[OutOfSample]) -> list[str]:
    """One note naming the intervals cut at their metric's range, if any: a 95% t
    interval over few seeds can pass a bound no value can (Spearman above 1, W1 below 0);
    each such interval is clipped to it (:meth:`MeanSpread.interval`) and its record
    says ``"clipped": true``."""
    cut = (
        [] if floor is None else [f"noise floor {m}" for m, v in floor.metrics.items() if v.clipped]
    )
    cut += [f"{s.name} {m}" for s in scores for m, v in s.metrics.items() if v.clipped]
    if not cut:
        return []
    shown = ", ".join(cut[:4]) + (f" and {len(cut) - 4} more" if len(cut) > 4 else "")
    return [
        f"{len(cut)} 95% interval(s) clipped to their metric's range (correlations to "
        f'[-1, 1], W1 and RMSE to >= 0; "clipped": true in compare.json): {shown}'
    ]


def w1_difference(ours: Candidate, theirs: Candidate) -> MeanSpread:
    """W1 of ``ours`` minus that of ``theirs``, paired by held-out seed (out of sample
    when both were scored so, else the in-sample difference as one value)."""
    if ours.out_of_sample is not None and theirs.out_of_sample is not None:
        pairs = zip(ours.out_of_sample.folds, theirs.out_of_sample.folds, strict=True)
        return MeanSpread.of([a.wasserstein1 - b.wasserstein1 for a, b in pairs])
    return MeanSpread.of([ours.metrics.wasserstein1 - theirs.metrics.wasserstein1])


# -- internals ---------------------------------------------------------------------------


def _log(profile: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(profile)


def _with(candidate: Candidate, scores: OutOfSample) -> Candidate:
    return Candidate(**{**candidate.__dict__, "out_of_sample": scores})


def _mean_or_inf(value: MeanSpread) -> float:
    return value.mean if np.isfinite(value.mean) else float("inf")
