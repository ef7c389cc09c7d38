"""What the numbers of the stages say, per architecture (pure numpy over stage results).

Agreement between two profiles is always :class:`lostmid.compare.ProfileComparison`
(built by :func:`lostmid.compare.compare_profiles`); over seeds it is summarised as a
mean and a sample standard deviation (:class:`Spread`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.compare.candidates import Candidate, compare_measurement
from lostmid.compare.claims import Claim
from lostmid.compare.fit import predict_theory
from lostmid.compare.inputs import MeasuredProfile
from lostmid.compare.metrics import ProfileComparison, compare_profiles
from lostmid.reproduce.config import ReproduceConfig
from lostmid.reproduce.stages import ProfileRun, SeedMeasurement, TrainingSummary
from lostmid.theory import KERNELS, influence_row, summarize_profile
from lostmid.typing import Float


@dataclass(frozen=True)
class Spread:
    """Mean and sample standard deviation over seeds (sd 0 for one value), and n.

    >>> Spread.over([1.0, 3.0, None]).text(2)
    '2.00 +- 1.41 (n=2)'
    """

    mean: float
    sd: float
    n: int

    @classmethod
    def over(cls, values: Sequence[float | None]) -> Spread:
        """Over the finite values (None and nan are left out)."""
        v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
        if v.size == 0:
            return cls(float("nan"), float("nan"), 0)
        return cls(float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0, int(v.size))

    def text(self, digits: int = 4) -> str:
        if self.n == 0:
            return "n/a"
        return f"{self.mean:.{digits}f} +- {self.sd:.{digits}f} (n={self.n})"

    def record(self) -> dict[str, Any]:
        return {"mean": self.mean, "sd": self.sd, "n": self.n}


@dataclass(frozen=True)
class AgreementSpread:
    """Spearman and W1 of several :class:`ProfileComparison` (one per seed or pair)."""

    spearman: Spread
    wasserstein1: Spread

    @classmethod
    def over(cls, comparisons: Sequence[ProfileComparison]) -> AgreementSpread:
        return cls(
            spearman=Spread.over([c.spearman for c in comparisons]),
            wasserstein1=Spread.over([c.wasserstein1 for c in comparisons]),
        )

    def record(self) -> dict[str, Any]:
        return {"spearman": self.spearman.record(), "wasserstein1": self.wasserstein1.record()}


@dataclass(frozen=True, eq=False)
class SeedAverage:
    """Profiles averaged over seeds (positions 1..L at 0..L-1, layers 1..H)."""

    influence: Float[np.ndarray, " L"]
    stderr: Float[np.ndarray, " L"]
    residual_strength: Float[np.ndarray, " H"]

    def record(self) -> dict[str, Any]:
        return {
            "influence": self.influence,
            "stderr": self.stderr,
            "residual_strength": self.residual_strength,
        }


def seed_average(runs: Sequence[ProfileRun]) -> SeedAverage:
    """Average over seeds: influence = sqrt(mean over seeds of E||J_j||^2), with the
    standard error of that mean across seeds (delta method: se(sqrt m) = se(m) / (2 sqrt m));
    residual strengths averaged. One seed keeps its own standard error."""
    sq = np.array([r.mean_sq for r in runs], dtype=np.float64)  # (S, L)
    influence = np.sqrt(sq.mean(axis=0))
    if len(runs) == 1:
        stderr = np.asarray(runs[0].stderr, dtype=np.float64)
    else:
        se_sq = sq.std(axis=0, ddof=1) / np.sqrt(len(runs))
        with np.errstate(divide="ignore", invalid="ignore"):
            stderr = np.where(influence > 0, se_sq / (2 * influence), 0.0)
    strength = np.mean([r.residual_strength for r in runs], axis=0)
    return SeedAverage(influence=influence, stderr=stderr, residual_strength=strength)


def predicted_agreement(run: ProfileRun, kernel: str) -> ProfileComparison:
    """The predicted theory (this seed's own residual strengths, nothing fitted) against
    this seed's profile."""
    fit = predict_theory(run.influence.size, run.residual_strength, kernel)
    return compare_profiles(fit.influence, run.influence)


@dataclass(frozen=True)
class DepthPoint:
    """The per-layer profile of layer l against the theory at H = l."""

    layer: int
    agreement: ProfileComparison

    def record(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "spearman": self.agreement.spearman,
            "wasserstein1": self.agreement.wasserstein1,
            "log10_ptv_measured": self.agreement.log10_peak_to_valley_measured,
            "log10_ptv_theory": self.agreement.log10_peak_to_valley,
        }


def depth_theory(run: ProfileRun, kernel: str) -> Float[np.ndarray, "H L"]:
    """Row l: the theory at H = l with the first l measured residual strengths."""
    length, layers = run.influence.size, run.residual_strength.size
    return np.stack(
        [
            influence_row(length, h, run.residual_strength[:h], kernel=kernel)
            for h in range(1, layers + 1)
        ]
    )


def depth_growth(run: ProfileRun, kernel: str) -> tuple[DepthPoint, ...]:
    """Every measured layer of ``run.per_layer`` against :func:`depth_theory`."""
    if run.per_layer is None:
        return ()
    theory = depth_theory(run, kernel)
    return tuple(
        DepthPoint(layer, compare_profiles(theory[layer - 1], measured))
        for layer, measured in enumerate(run.per_layer, start=1)
        if np.all(np.isfinite(measured))
    )


@dataclass(frozen=True, eq=False)
class ModelAnalysis:
    """Everything the report says about one architecture.

    Attributes:
        name: the model spec.
        model: the model's resolved facts (first seed's ``LoadedModel.describe()``).
        seeds: the seeds measured.
        switch: which positional encoding was switched off.
        on, off: seed averages with and without the positional encoding.
        candidates: theories and baselines scored on the seed-averaged profile.
        per_seed_prediction: per kernel, the predicted theory against each seed.
        positional_on_vs_off: each seed's profile with against without the encoding.
        seed_noise_floor: every pair of seeds against each other.
        log10_peak_to_valley: of each seed's profile.
        depth: the first seed's run that carries the per-layer profiles (or None), and
            ``depth_growth`` its agreement with the theory per kernel.
    """

    name: str
    model: Mapping[str, Any]
    seeds: tuple[int, ...]
    switch: str
    on: SeedAverage
    off: SeedAverage
    candidates: Mapping[str, Candidate]
    per_seed_prediction: Mapping[str, AgreementSpread]
    positional_on_vs_off: AgreementSpread
    seed_noise_floor: AgreementSpread
    log10_peak_to_valley: Spread
    depth: ProfileRun | None
    depth_growth: Mapping[str, tuple[DepthPoint, ...]] | None

    @property
    def best_baseline(self) -> Candidate:
        """The baseline with the smallest W1 (the bar a theory has to clear)."""
        baselines = [c for c in self.candidates.values() if c.kind == "baseline"]
        return min(baselines, key=lambda c: c.metrics.wasserstein1)

    def predicted(self, kernel: str) -> Candidate:
        """The theory predicted from the measured residual strengths, nothing fitted."""
        return self.candidates[f"predicted:{kernel}"]

    def record(self) -> dict[str, Any]:
        best = self.best_baseline
        return {
            "model": dict(self.model),
            "seeds": list(self.seeds),
            "switch": self.switch,
            "on": self.on.record(),
            "off": self.off.record(),
            "candidates": {name: c.record() for name, c in self.candidates.items()},
            "per_seed_prediction": {k: a.record() for k, a in self.per_seed_prediction.items()},
            "positional_on_vs_off": self.positional_on_vs_off.record(),
            "seed_noise_floor": self.seed_noise_floor.record(),
            "log10_peak_to_valley": self.log10_peak_to_valley.record(),
            "log10_peak_to_valley_theory": {
                k: self.predicted(k).metrics.log10_peak_to_valley for k in KERNELS
            },
            "best_baseline": {
                "name": best.name,
                "wasserstein1": best.metrics.wasserstein1,
                "spearman": best.metrics.spearman,
            },
            "depth_growth": None
            if self.depth_growth is None
            else {k: [p.record() for p in points] for k, points in self.depth_growth.items()},
            "depth_profiles": None
            if self.depth is None
            else {
                "per_layer": self.depth.per_layer,
                "residual_strength": self.depth.residual_strength,
            },
        }


def analyse_model(name: str, runs: Sequence[SeedMeasurement]) -> ModelAnalysis:
    """Everything the report says about one architecture, from its per-seed stages."""
    on = seed_average([r.on for r in runs])
    measured = MeasuredProfile(
        influence=on.influence,
        stderr=on.stderr,
        residual_strength=on.residual_strength,
        layers=int(runs[0].model["layers"]),
        target=on.influence.size,
        source=f"{name}, {len(runs)} seeds",
    )
    pairs = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1 :]]
    depth = runs[0].on if runs[0].on.per_layer is not None else None  # the first seed's
    return ModelAnalysis(
        name=name,
        model=runs[0].model,
        seeds=tuple(r.seed for r in runs),
        switch=runs[0].switch,
        on=on,
        off=seed_average([r.off for r in runs]),
        candidates=compare_measurement(measured, predict=True, kernels=KERNELS),
        per_seed_prediction={
            k: AgreementSpread.over([predicted_agreement(r.on, k) for r in runs]) for k in KERNELS
        },
        positional_on_vs_off=AgreementSpread.over(
            [compare_profiles(r.off.influence, r.on.influence) for r in runs]
        ),
        seed_noise_floor=AgreementSpread.over(
            [compare_profiles(b.on.influence, a.on.influence) for a, b in pairs]
        ),
        log10_peak_to_valley=Spread.over(
            [summarize_profile(r.on.influence).log10_peak_to_valley for r in runs]
        ),
        depth=depth,
        depth_growth=None if depth is None else {k: depth_growth(depth, k) for k in KERNELS},
    )


@dataclass(frozen=True, eq=False)
class ReproduceResult:
    """Everything one reproduce run found; its record is ``reproduce.json``.

    Attributes:
        config: the run's configuration.
        models: the analysis of each model, by spec.
        training: the training stage's summary (None when training was skipped).
        claims: the claims table, in order.
        figures: figure name -> PNG path.
        metadata: provenance (:func:`lostmid.runinfo.run_metadata`), with the stages
            computed and reused.
    """

    config: ReproduceConfig
    models: Mapping[str, ModelAnalysis]
    training: TrainingSummary | None
    claims: tuple[Claim, ...]
    figures: Mapping[str, Path]
    metadata: Mapping[str, Any]

    def record(self) -> dict[str, Any]:
        return {
            "scale": self.config.record()["scale"],
            "models": {m: a.record() for m, a in self.models.items()},
            "training": None if self.training is None else self.training.record(),
            "claims": list(self.claims),
            "figures": {k: str(v) for k, v in self.figures.items()},
            "metadata": dict(self.metadata),
        }
