"""The dose-response design's runs and what is read from them: each run's dose and
response (:class:`DoseRun`), the readouts of an arm (:func:`arm_readouts`) and the
summary over depths with its verdict (:class:`DoseSummary`, the rule in
:mod:`lostmid.behaviour.dose.verdict`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.behaviour.dose.verdict import LEARNT, DoseVerdict, dose_verdict
from lostmid.behaviour.training.learning import LearningReadouts
from lostmid.errors import UserError
from lostmid.files import schema_of
from lostmid.stats import paired_difference, reference_points, seed_interval

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
        """The run's :class:`~lostmid.behaviour.training.learning.LearningReadouts`."""
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
