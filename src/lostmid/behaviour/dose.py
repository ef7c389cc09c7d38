"""The depth dose-response: does the structure at birth shape the order of learning?

The design: retrieval models trained from scratch with the gold record drawn
uniformly, at several depths H (the dose), the same width, task, steps and tokens for
every depth, several seeds each (seed s uses the same batches and held-out examples at
every depth). Per run (:mod:`lostmid.behaviour.learning`):

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

from lostmid.behaviour.learning import LearningReadouts
from lostmid.errors import UserError
from lostmid.files import schema_of
from lostmid.stats import Interval, paired_difference, reference_points, seed_interval
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


# -- the design's runs and readouts ------------------------------------------------------

BASE = "base"


def variant_name(no_rope: bool, mix: float) -> str:
    """The arm's variant: ``base``, ``no-rope``, ``mix 0.5`` or both joined by ``+``.

    >>> variant_name(False, 0.0), variant_name(True, 0.0), variant_name(False, 0.5)
    ('base', 'no-rope', 'mix 0.5')
    """
    parts = (["no-rope"] if no_rope else []) + ([f"mix {mix:g}"] if mix > 0 else [])
    return "+".join(parts) or BASE


def rho_over_records(
    prompt_length: int, spans: Sequence[tuple[int, int]], residual_strength: Sequence[float]
) -> np.ndarray:
    """rho_H over the records: the theory's continuum masses per prompt position on the
    last one (:func:`lostmid.theory.continuum_row`, rollout kernel, a_l as measured per
    layer), averaged over each record's tokens (spans 0-indexed, end exclusive).

    >>> r = rho_over_records(10, [(0, 2), (4, 6)], [0.5, 0.5])
    >>> bool(r[0] > r[1])
    True
    """
    from lostmid.theory.continuum import continuum_row

    row = continuum_row(prompt_length, len(residual_strength), np.asarray(residual_strength))
    return np.array([float(np.mean(row[a:b])) for a, b in spans])


@dataclass(frozen=True)
class DoseRun:
    """One run of the design, reduced to what the readouts need.

    tokens (K,), accuracy and probability (K, P): every checkpoint (the first at step
    0); influence_init, eta_init, rho_init (P,): record influence, learning signal and
    rho_H over the records at step 0 (eta and rho None when not measured).
    """

    layers: int
    variant: str
    seed: int
    tokens: tuple[float, ...]
    accuracy: tuple[tuple[float, ...], ...]
    probability: tuple[tuple[float, ...], ...] | None
    influence_init: tuple[float, ...]
    eta_init: tuple[float, ...] | None
    rho_init: tuple[float, ...] | None
    cpu_seconds: float
    wall_seconds: float
    folder: str

    @property
    def arm(self) -> str:
        return f"H={self.layers}" + ("" if self.variant == BASE else f" {self.variant}")

    @property
    def final(self) -> np.ndarray:
        return np.asarray(self.accuracy[-1], dtype=np.float64)

    @property
    def learnt(self) -> bool:
        """Whether the run learnt retrieval: final mean accuracy >= ``LEARNT`` (rule 2)."""
        return float(self.final.mean()) >= LEARNT

    def learning(self) -> LearningReadouts:
        """The run's :class:`~lostmid.behaviour.learning.LearningReadouts`."""
        return LearningReadouts.of(
            self.tokens,
            np.asarray(self.accuracy, dtype=np.float64),
            self.influence_init,
            None if self.probability is None else np.asarray(self.probability),
        )

    @classmethod
    def from_retrieval(cls, document: Mapping[str, Any], folder: str = "") -> DoseRun:
        """From a ``retrieval.json`` (``lostmid train --task``) document."""
        config = document["config"]
        checkpoints = document["checkpoints"]
        if len(checkpoints) < 2 or checkpoints[0]["step"] != 0:
            raise UserError(f"{folder or 'a run'}: needs step 0 and a later checkpoint")
        first = checkpoints[0]
        signal = first.get("learning_signal")
        strength = first.get("residual_strength")
        spans = [tuple(s) for s in document.get("record_spans", [])]
        rho = None
        if strength and spans:
            rho = tuple(rho_over_records(len(first["influence"]), spans, strength).tolist())
        probability = None
        if all(c.get("probability") for c in checkpoints):
            probability = tuple(tuple(c["probability"]) for c in checkpoints)
        return cls(
            layers=int(config["train"]["model"]["layers"]),
            variant=variant_name(bool(config.get("no_rope")), float(config["task"]["mix"])),
            seed=int(config["train"]["seed"]),
            tokens=tuple(float(c["tokens_seen"]) for c in checkpoints),
            accuracy=tuple(tuple(p["accuracy"] for p in c["positions"]) for c in checkpoints),
            probability=probability,
            influence_init=tuple(first["record_influence"]),
            eta_init=None if signal is None else tuple(signal["eta"]),
            rho_init=rho,
            cpu_seconds=float(document.get("cpu_seconds", 0.0)),
            wall_seconds=float(document.get("wall_seconds", 0.0)),
            folder=folder,
        )

    def record(self) -> dict[str, Any]:
        return {
            "layers": self.layers,
            "variant": self.variant,
            "seed": self.seed,
            "tokens": list(self.tokens),
            "accuracy": [list(a) for a in self.accuracy],
            "probability": None
            if self.probability is None
            else [list(p) for p in self.probability],
            "influence_init": list(self.influence_init),
            "eta_init": None if self.eta_init is None else list(self.eta_init),
            "rho_init": None if self.rho_init is None else list(self.rho_init),
            "cpu_seconds": self.cpu_seconds,
            "wall_seconds": self.wall_seconds,
            "folder": self.folder,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> DoseRun:
        def rows(v: Any) -> Any:
            return None if v is None else tuple(tuple(r) for r in v)

        def flat(v: Any) -> Any:
            return None if v is None else tuple(v)

        return cls(
            layers=record["layers"],
            variant=record["variant"],
            seed=record["seed"],
            tokens=tuple(record["tokens"]),
            accuracy=rows(record["accuracy"]),
            probability=rows(record["probability"]),
            influence_init=tuple(record["influence_init"]),
            eta_init=flat(record["eta_init"]),
            rho_init=flat(record["rho_init"]),
            cpu_seconds=record["cpu_seconds"],
            wall_seconds=record["wall_seconds"],
            folder=record["folder"],
        )


def _interval(values: Sequence[float | None]) -> dict[str, Any] | None:
    """The 95% t interval over the seeds where the value is defined (None: none is)."""
    defined = [float(v) for v in values if v is not None and np.isfinite(v)]
    return seed_interval(defined).record() if defined else None


def _per_record(
    rows: Sequence[Sequence[float] | np.ndarray], records: int | None = None
) -> list[dict[str, Any] | None]:
    """Per record, the interval over seeds of ``rows`` (seeds, P); all None when there
    is no row (then ``records`` says how many)."""
    if len(rows) == 0:
        return [None] * int(records or 0)
    table = np.asarray(rows, dtype=np.float64)
    return [_interval(table[:, r].tolist()) for r in range(table.shape[1])]


def _contrasts(accuracy: np.ndarray) -> dict[str, float]:
    """gap = max - min, primacy = first - middle, recency = last - middle."""
    middle = accuracy[reference_points(range(accuracy.size))[1]]
    return {
        "mean": float(accuracy.mean()),
        "gap": float(accuracy.max() - accuracy.min()),
        "primacy": float(accuracy[0] - middle),
        "recency": float(accuracy[-1] - middle),
    }


def _relative(times: np.ndarray) -> np.ndarray:
    """Half-times over their mean (NaN where undefined; all NaN when none is)."""
    defined = times[np.isfinite(times)]
    if defined.size == 0 or defined.mean() <= 0:
        return np.full(times.shape, np.nan)
    return times / defined.mean()


def _normalised(values: Sequence[float]) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return v / v.sum()


def arm_readouts(runs: Sequence[DoseRun]) -> dict[str, Any]:
    """Readouts 1-4 of one arm (one depth and variant), each with its 95% t interval
    over the arm's seeds; readout 2 (half-times, B, the midpoint) over the seeds that
    learnt (:attr:`DoseRun.learnt`, the rule's condition), the others over every seed."""
    from lostmid.compare.metrics import wasserstein1
    from lostmid.stats import spearman

    structure = [r.learning() for r in runs]  # S and the span: every run
    learnt = [r for r in runs if r.learnt]
    records = len(runs[0].influence_init)
    learning = [r.learning() for r in learnt]  # readout 2: the runs that learnt only
    final = [_contrasts(r.final) for r in runs]
    mid = [m.midpoint_accuracy for m in learning]
    mid_contrasts = [None if m is None else _contrasts(m) for m in mid]

    def link(a: Sequence[float] | None, b: Sequence[float] | None) -> tuple[Any, Any]:
        if a is None or b is None:
            return None, None
        s = spearman(np.asarray(a), np.asarray(b))
        return (None if not np.isfinite(s) else float(s)), wasserstein1(
            np.asarray(a), np.asarray(b)
        )

    eta_rho = [link(r.eta_init, r.rho_init) for r in runs]
    eta_influence = [link(r.eta_init, r.influence_init) for r in runs]
    influence_rho = [link(r.influence_init, r.rho_init) for r in runs]
    return {
        "arm": runs[0].arm,
        "layers": runs[0].layers,
        "variant": runs[0].variant,
        "seeds": [r.seed for r in runs],
        "records": len(runs[0].influence_init),
        "cpu_seconds": _interval([r.cpu_seconds for r in runs]),
        "wall_seconds": _interval([r.wall_seconds for r in runs]),
        "structural": {  # readout 1: the dose
            "primacy": _interval([m.structural_primacy for m in structure]),
            "span": _interval([m.structural_span for m in structure]),
            "log10_span": _interval([float(np.log10(m.structural_span)) for m in structure]),
            "profile": _per_record([_normalised(r.influence_init) for r in runs]),
        },
        "learning": {  # readout 2: behavioural primacy during learning (learnt runs)
            "learnt_seeds": [r.seed for r in learnt],
            "order": _interval([m.order for m in learning]),
            "order_probability": _interval([m.order_probability for m in learning]),
            "time_slope_tokens_per_record": _interval([m.time_slope for m in learning]),
            "half_time_tokens": _per_record([m.half_time for m in learning], records),
            "half_time_relative": _per_record([_relative(m.half_time) for m in learning], records),
            "midpoint_accuracy": None
            if not mid or any(m is None for m in mid)
            else _per_record([m for m in mid if m is not None]),
            "midpoint": {
                k: _interval([None if c is None else c[k] for c in mid_contrasts])
                for k in ("mean", "gap", "primacy", "recency")
            },
        },
        "final": {  # readout 3: the final accuracy by record
            "accuracy": _per_record([r.final for r in runs]),
            **{k: _interval([c[k] for c in final]) for k in ("mean", "gap", "primacy", "recency")},
        },
        "signal": {  # readout 4: the learning signal at init
            "eta_profile": None
            if any(r.eta_init is None for r in runs)
            else _per_record([_normalised(r.eta_init) for r in runs if r.eta_init is not None]),
            "rho_profile": None
            if any(r.rho_init is None for r in runs)
            else _per_record([_normalised(r.rho_init) for r in runs if r.rho_init is not None]),
            "eta_vs_rho": {
                "spearman": _interval([x[0] for x in eta_rho]),
                "w1": _interval([x[1] for x in eta_rho]),
            },
            "eta_vs_influence": {
                "spearman": _interval([x[0] for x in eta_influence]),
                "w1": _interval([x[1] for x in eta_influence]),
            },
            "influence_vs_rho": {
                "spearman": _interval([x[0] for x in influence_rho]),
                "w1": _interval([x[1] for x in influence_rho]),
            },
        },
    }


def _paired(a: Sequence[DoseRun], b: Sequence[DoseRun], value: Any) -> dict[str, Any] | None:
    """The paired t interval of value(run) between arms a and b over their common seeds."""
    left = {r.seed: value(r) for r in a}
    right = {r.seed: value(r) for r in b}
    seeds = [s for s in left if s in right and left[s] is not None and right[s] is not None]
    if not seeds:
        return None
    return paired_difference([left[s] for s in seeds], [right[s] for s in seeds]).record()


@dataclass(frozen=True)
class DoseSummary:
    """Every run of the design, its readouts by arm, the variants against the base arm
    of their depth, and the verdict of the pre-stated rule (readout 5) over the base
    arms."""

    runs: tuple[DoseRun, ...]

    def __post_init__(self) -> None:
        if not self.runs:
            raise UserError("the dose-response summary needs at least one run")
        records = {len(r.influence_init) for r in self.runs}
        if len(records) != 1:
            raise UserError("every run of the design needs the same records (one task)")

    def arms(self) -> dict[str, list[DoseRun]]:
        """Runs by arm (depth, then variant), seeds sorted."""
        out: dict[str, list[DoseRun]] = {}
        for run in sorted(
            self.runs, key=lambda r: (r.variant != BASE, r.variant, r.layers, r.seed)
        ):
            out.setdefault(run.arm, []).append(run)
        return out

    def base_depths(self) -> dict[int, list[DoseRun]]:
        out: dict[int, list[DoseRun]] = {}
        for run in sorted(self.runs, key=lambda r: (r.layers, r.seed)):
            if run.variant == BASE:
                out.setdefault(run.layers, []).append(run)
        return out

    def verdict(self) -> DoseVerdict | None:
        """Readout 5 on the base arms' common seeds; None with fewer than 2 depths."""
        depths = self.base_depths()
        if len(depths) < 2:
            return None
        common = sorted(set.intersection(*({r.seed for r in runs} for runs in depths.values())))
        if not common:
            return None
        structural: dict[int, list[float | None]] = {}
        behavioural: dict[int, list[float | None]] = {}
        for h, runs in depths.items():
            by_seed = {r.seed: r.learning() for r in runs}
            learnt = {r.seed: r.learnt for r in runs}
            structural[h] = [by_seed[s].structural_primacy for s in common]
            behavioural[h] = [by_seed[s].order if learnt[s] else None for s in common]
        return dose_verdict(structural, behavioural)

    def variants(self) -> list[dict[str, Any]]:
        """Each variant arm against the base arm of its depth: paired differences."""
        arms = self.arms()
        base = self.base_depths()
        out = []
        for name, runs in arms.items():
            if runs[0].variant == BASE or runs[0].layers not in base:
                continue
            ref = base[runs[0].layers]
            out.append(
                {
                    "arm": name,
                    "against": f"H={runs[0].layers}",
                    "structural_primacy": _paired(
                        runs, ref, lambda r: r.learning().structural_primacy
                    ),
                    "order": _paired(runs, ref, lambda r: r.learning().order if r.learnt else None),
                    "final_mean": _paired(runs, ref, lambda r: float(r.final.mean())),
                    "final_gap": _paired(runs, ref, lambda r: _contrasts(r.final)["gap"]),
                }
            )
        return out

    def record(self) -> dict[str, Any]:
        verdict = self.verdict()
        return {
            "schema": schema_of("dose"),
            "arms": [arm_readouts(runs) for runs in self.arms().values()],
            "variants": self.variants(),
            "dose_response": None if verdict is None else verdict.record(),
            "runs": [r.record() for r in self.runs],
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> DoseSummary:
        return cls(tuple(DoseRun.from_record(r) for r in record["runs"]))
