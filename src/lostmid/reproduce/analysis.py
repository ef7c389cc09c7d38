"""What the numbers of the stages say, per architecture (numpy over stage results).

Everything is scored by :mod:`lostmid.compare`, the way ``lostmid compare`` scores
several measure.json files of one model: each seed's measurement becomes a
:class:`~lostmid.compare.inputs.MeasureRecord` in memory, and
:func:`~lostmid.compare.candidates.compare_measurements` returns a
:class:`~lostmid.compare.candidates.Scorecard`: every fitted candidate (theory fits and
naive baselines alike) scored out of sample (leave one seed out), every zero-parameter
candidate scored on each seed as it is, the noise floor between seeds, each metric
also on log-binned profiles. The policy is one for every model (:data:`SCORING`).

Zero-parameter candidates (nothing is fitted to the profile; a global scale only):

* ``predicted:positional``: the position-resolved theory (jacobian kernel) with each
  seed's measured branch gains s_l(j) per layer and source position: the faithful one;
  ``predicted:positional-rollout`` the same through the rollout kernel;
* ``predicted:positional-mlp``: the same with the measured per-position MLP gain and
  coherence (coherence clipped to [0, 1]; the measurement is signed);
* ``predicted:jacobian`` / ``predicted:rollout``: the uniform theory with a_l = s_l/(1+s_l)
  from the branch gains (one number per layer);
* ``predicted:jacobian-forward``: the uniform theory (jacobian kernel) with the peer's
  forward ratio as a_l, to show what that quantity predicts.

All of them are built by :func:`~lostmid.compare.candidates.compare_measurements` from
the records alone, so ``lostmid compare --predict`` on the saved per-seed files gives
the same candidates and numbers.

The depth-1 check scores the layer-1 profile of every seed (the residual stream after
block 1) against the same candidates at H = 1, where the theory is exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from lostmid.compare.candidates import Candidate, Scorecard, compare_measurements
from lostmid.compare.claims import Claim
from lostmid.compare.config import LOG_BINS
from lostmid.compare.metrics import METRIC_RANGES, compare_profiles
from lostmid.compare.predicted import pooled_measurement
from lostmid.compare.scoring import NoiseFloor, summarise
from lostmid.files import schema_of
from lostmid.influence.record import MeasureRecord
from lostmid.reproduce.config import ReproduceConfig
from lostmid.reproduce.depth import DepthGrowth, LayerStrengths, depth_growth
from lostmid.reproduce.stages import SeedMeasurement
from lostmid.stats.intervals import MeanSpread
from lostmid.theory import KERNELS, summarise_profile


class ScoringPolicy(TypedDict):
    """The keyword arguments of :func:`~lostmid.compare.compare_measurements` that set
    how candidates are scored."""

    fit_metric: str
    spike: str
    bins: int


SCORING: ScoringPolicy = {"fit_metric": "w1", "spike": "free", "bins": LOG_BINS}
"""The scoring policy of every scorecard: fitted candidates minimise W1 (the metric they
are judged by), every candidate's last-token share is free (fitted with the shape;
predictions keep their own), 32 log-position bins for the binned metrics."""

FAITHFUL = "predicted:positional"
"""The zero-parameter candidate the claims judge first: the paper's model (attention
and residual only) with its missing ingredient, the per-position gains, measured."""
WITH_MLP = "predicted:positional-mlp"
"""The same with the MLP's measured per-position gain and coherence: the theory of the
whole block, also judged."""
UNIFORM = "predicted:jacobian"
"""The paper's own, uniform theory as the claims judge it: one residual strength a_l per
layer, a_l = s_l/(1+s_l) from each seed's measured branch gains, the Jacobian-norm
kernel, nothing fitted."""
UNIFORM_ROLLOUT = "predicted:rollout"
"""The same a_l through the rollout kernel (the paper's N^H read literally), shown
beside :data:`UNIFORM`."""
SHOWN_BESIDE = (UNIFORM, UNIFORM_ROLLOUT)
"""The uniform-theory predictions the claims show next to the judged ones."""


def scorecard_record(card: Scorecard) -> dict[str, Any]:
    """The JSON form of a scorecard (the compare.json keys that describe the scoring)."""
    return {
        "seeds": card.seeds,
        "fit_metric": card.fit_metric,
        "spike": card.spike,
        "bins": card.bins,
        "measured": {
            "influence": card.measured.influence,
            "stderr": card.measured.stderr,
            "residual_strength": card.measured.residual_strength,
            "residual_strength_method": card.measured.residual_strength_method,
        },
        "noise_floor": None if card.noise_floor is None else card.noise_floor.record(),
        "candidates": {name: c.record() for name, c in card.candidates.items()},
        "claims": [c.record() for c in card.claims],
        "notes": list(card.notes),
    }


def scorecard_from_record(record: Mapping[str, Any]) -> Scorecard:
    """Read back :func:`scorecard_record` (reproduce.json's ``scorecard`` and ``depth1``):
    every candidate with its scores, the noise floor's summaries (not its pairs), the
    pooled measurement's profile and residual strengths; what the step-0 claims read."""
    measured = record["measured"]
    influence = np.asarray(measured["influence"], dtype=np.float64)
    strength = measured.get("residual_strength")
    floor = record.get("noise_floor")
    return Scorecard(
        measured=MeasureRecord(
            influence=influence,
            stderr=None
            if measured.get("stderr") is None
            else np.asarray(measured["stderr"], dtype=np.float64),
            layers=0 if strength is None else len(strength),
            target=influence.size,
            residual_strength=None if strength is None else np.asarray(strength, dtype=float),
            residual_strength_method=measured.get("residual_strength_method"),
        ),
        seeds=int(record["seeds"]),
        candidates={
            name: Candidate.from_record(name, c) for name, c in record["candidates"].items()
        },
        noise_floor=None if floor is None else NoiseFloor.from_record(floor),
        claims=tuple(Claim(**c) for c in record["claims"]),
        notes=tuple(record["notes"]),
        fit_metric=str(record["fit_metric"]),
        spike=str(record["spike"]),
        bins=int(record["bins"]),
    )


def measured_profiles(
    name: str, runs: Sequence[SeedMeasurement], layer: int | None = None
) -> list[MeasureRecord] | None:
    """One :class:`MeasureRecord` per seed (:meth:`MeasureRecord.from_gains`: every gain
    the predictions need), the records ``lostmid compare`` reads back from the saved
    ``seed-S/measure.json``.

    ``layer`` None: the final profile (depth H); ``layer`` l: the per-layer profile of
    layer l as a depth-l model (the first l layers' gains), or None when some seed did
    not measure it.
    """
    out = []
    for r in runs:
        influence = r.on.influence if layer is None else r.on.layer(layer)
        if influence is None:
            return None
        out.append(
            MeasureRecord.from_gains(
                influence=influence,
                stderr=r.on.stderr if layer is None else None,
                target=influence.size,
                layers=r.gains.gain.size,
                depth=layer,
                gains=r.gains,
                forward=r.residual_strength_forward,
                facts=dict(r.model),
                source=f"{name}, seed {r.seed}" + ("" if layer is None else f", layer {layer}"),
            )
        )
    return out


def score(name: str, runs: Sequence[SeedMeasurement], layer: int | None = None) -> Scorecard | None:
    """The scorecard of the final profile (``layer`` None) or of one layer's profile as a
    depth-``layer`` model; None when that layer was not measured on every seed."""
    measurements = measured_profiles(name, runs, layer)
    if measurements is None:
        return None
    return compare_measurements(measurements, predict=True, kernels=KERNELS, **SCORING)


@dataclass(frozen=True)
class FloorBudget:
    """The noise floor split into sampling noise and model-to-model differences, and
    the inputs per seed that would bring it to ``target``.

    Each seed's n inputs are measured in two parts of n_1 and n_2 = n - n_1 inputs. With
    F the W1 floor between seeds and h the W1 between the two parts of one seed (mean
    over seeds), and the sampling noise of W1 ~ sqrt(1/n_a + 1/n_b) between two
    measurements of n_a and n_b inputs:

        sampling part at n inputs   sigma = h sqrt(2/n) / sqrt(1/n_1 + 1/n_2)
                                    (= h / sqrt(2) for two equal halves)
        model-to-model part         B = sqrt(max(F^2 - sigma^2, 0))
        floor at n' inputs          F(n') = sqrt(B^2 + sigma^2 n / n')
        inputs for F(n') = target   n' = n sigma^2 / (target^2 - B^2), none if B >= target

    (W1 adds only roughly in quadrature; treat n' as an estimate.)

    >>> b = FloorBudget.of(floor=0.01, between_parts=0.01, parts=(3, 3), target=0.005)
    >>> round(b.sampling, 5), round(b.model, 5), b.samples_needed
    (0.00707, 0.00707, None)
    >>> FloorBudget.of(floor=0.009, between_parts=0.0127, parts=(3, 3), target=0.005).samples_needed
    20
    """

    floor: float
    between_parts: float
    parts: tuple[int, int]
    target: float
    sampling: float
    model: float
    samples_needed: int | None

    @property
    def samples(self) -> int:
        return sum(self.parts)

    @classmethod
    def of(
        cls, floor: float, between_parts: float, parts: tuple[int, int], target: float
    ) -> FloorBudget:
        n1, n2 = parts
        n = n1 + n2
        sampling = float(between_parts * np.sqrt(2.0 / n) / np.sqrt(1.0 / n1 + 1.0 / n2))
        model = float(np.sqrt(max(floor**2 - sampling**2, 0.0)))
        needed = None
        if model < target:
            needed = int(np.ceil(n * sampling**2 / (target**2 - model**2) - 1e-9))
        return cls(floor, between_parts, (n1, n2), target, sampling, model, needed)

    def record(self) -> dict[str, Any]:
        return {
            **{name: getattr(self, name) for name in self.__dataclass_fields__},
            "parts": list(self.parts),
            "samples": self.samples,
        }


FLOOR_TARGET = 0.005
"""The target for the W1 noise floor between seeds (the paper's tolerance)."""


@dataclass(frozen=True, eq=False)
class ModelAnalysis:
    """Everything the report says about one architecture.

    Attributes:
        name: the model spec.
        model: the model's resolved facts (first seed's ``LoadedModel.describe()``).
        seeds: the seeds measured.
        switch: which positional encoding was switched off.
        scorecard: the step-0 profile (with the positional encoding) of every seed,
            every candidate scored (:data:`SCORING`), the noise floor between seeds.
        off: the seeds pooled without the positional encoding.
        positional_on_vs_off: each seed's profile with against without the encoding (on
            the same inputs: the first part's), each metric as mean and spread over seeds.
        sampling_floor: each seed's two parts of the inputs against each other, each
            agreement metric as mean and spread over seeds (None with one input);
            ``budget`` what it says about the floor between seeds (:class:`FloorBudget`).
        log10_peak_to_valley: of each seed's profile.
        strengths: residual strengths and gains per layer, mean over seeds.
        depth1: the layer-1 profiles of every seed scored as a depth-1 model (None when
            layer 1 was not measured).
        depth_run: the first seed's measurement (its per-layer profiles), and
            ``depth_growth`` their agreement with the theory at H = l per kernel.
    """

    name: str
    model: Mapping[str, Any]
    seeds: tuple[int, ...]
    switch: str
    scorecard: Scorecard
    off: MeasureRecord
    positional_on_vs_off: Mapping[str, MeanSpread]
    sampling_floor: Mapping[str, MeanSpread] | None
    budget: FloorBudget | None
    log10_peak_to_valley: MeanSpread
    strengths: LayerStrengths
    depth1: Scorecard | None
    depth_run: SeedMeasurement
    depth_growth: DepthGrowth | None

    @property
    def on(self) -> MeasureRecord:
        """The seeds pooled, with the positional encoding (what the candidates fit)."""
        return self.scorecard.measured

    @property
    def candidates(self) -> Mapping[str, Candidate]:
        return self.scorecard.candidates

    def record(self) -> dict[str, Any]:
        return {
            "model": dict(self.model),
            "seeds": list(self.seeds),
            "switch": self.switch,
            "scoring": dict(SCORING),
            "scorecard": scorecard_record(self.scorecard),
            "off": {"influence": self.off.influence, "stderr": self.off.stderr},
            "positional_on_vs_off": {k: v.record() for k, v in self.positional_on_vs_off.items()},
            "sampling_floor": None
            if self.sampling_floor is None
            else {k: v.record() for k, v in self.sampling_floor.items()},
            "floor_budget": None if self.budget is None else self.budget.record(),
            "log10_peak_to_valley": self.log10_peak_to_valley.record(),
            "strengths": self.strengths.record(),
            "depth1": None if self.depth1 is None else scorecard_record(self.depth1),
            "depth_growth": None
            if self.depth_growth is None
            else {k: [p.record() for p in pts] for k, pts in self.depth_growth.points.items()},
            "depth_profiles": None
            if self.depth_growth is None
            else {"seed": self.depth_run.seed, "per_layer": self.depth_run.on.per_layer},
        }


@dataclass(frozen=True, eq=False)
class SavedModel:
    """What the step-0 claims read of one model, read back from a finished run's
    reproduce.json (``models.NAME``, :meth:`ModelAnalysis.record`) without its stages: a
    saved run is judged again by today's rules from the numbers it saved (the attributes
    are :class:`ModelAnalysis`'s of the same names)."""

    name: str
    switch: str
    scorecard: Scorecard
    positional_on_vs_off: Mapping[str, MeanSpread]
    sampling_floor: Mapping[str, MeanSpread] | None
    log10_peak_to_valley: MeanSpread
    depth1: Scorecard | None

    @property
    def candidates(self) -> Mapping[str, Candidate]:
        return self.scorecard.candidates

    @classmethod
    def from_record(cls, name: str, record: Mapping[str, Any]) -> SavedModel:
        def metrics(block: Mapping[str, Any]) -> dict[str, MeanSpread]:
            return {m: MeanSpread.from_record(v, METRIC_RANGES[m]) for m, v in block.items()}

        sampling, depth1 = record.get("sampling_floor"), record.get("depth1")
        return cls(
            name=name,
            switch=str(record["switch"]),
            scorecard=scorecard_from_record(record["scorecard"]),
            positional_on_vs_off=metrics(record["positional_on_vs_off"]),
            sampling_floor=None if sampling is None else metrics(sampling),
            log10_peak_to_valley=MeanSpread.from_record(record["log10_peak_to_valley"]),
            depth1=None if depth1 is None else scorecard_from_record(depth1),
        )


def analyse_model(name: str, runs: Sequence[SeedMeasurement]) -> ModelAnalysis:
    """Everything the report says about one architecture, from its per-seed stages."""
    card = score(name, runs)
    assert card is not None  # the final profile is always measured
    first = runs[0]
    off = [
        MeasureRecord(
            influence=r.off.influence,
            stderr=r.off.stderr,
            layers=r.gains.gain.size,
            target=r.off.influence.size,
            source=f"{name}, seed {r.seed}, {r.switch}",
        )
        for r in runs
    ]
    halves = [r.on.halves for r in runs if r.on.halves is not None]
    sampling = None
    if len(halves) == len(runs):
        sampling = summarise(
            [compare_profiles(np.sqrt(h[1]), np.sqrt(h[0]), bins=SCORING["bins"]) for h in halves]
        )
    budget = None
    if sampling is not None and card.noise_floor is not None:
        budget = FloorBudget.of(
            floor=card.noise_floor.wasserstein1.mean,
            between_parts=sampling["wasserstein1"].mean,
            parts=runs[0].on.parts,
            target=FLOOR_TARGET,
        )
    return ModelAnalysis(
        name=name,
        model=first.model,
        seeds=tuple(r.seed for r in runs),
        switch=first.switch,
        scorecard=card,
        off=pooled_measurement(off),
        positional_on_vs_off=summarise(
            [
                compare_profiles(r.off.influence, r.on.first_part(), bins=SCORING["bins"])
                for r in runs
            ]
        ),
        sampling_floor=sampling,
        budget=budget,
        log10_peak_to_valley=MeanSpread.of(
            [summarise_profile(r.on.influence).log10_peak_to_valley for r in runs]
        ),
        strengths=LayerStrengths.over(runs),
        depth1=score(name, runs, layer=1),
        depth_run=first,
        depth_growth=depth_growth(first),
    )


@dataclass(frozen=True, eq=False)
class ReproduceResult:
    """Everything one reproduce run found; its record is ``reproduce.json``.

    Attributes:
        config: the run's configuration.
        sections: each part's result by its key: the core's under ``models``
            (:data:`lostmid.reproduce.core.SECTION`), each section's under its own
            (:data:`lostmid.reproduce.sections.SECTIONS`; None, or absent, when the run
            had none).
        claims: the claims table, in order.
        figures: figure name -> PNG path.
        metadata: provenance (:func:`lostmid.runinfo.run_metadata`), with the stages
            computed and reused.
    """

    config: ReproduceConfig
    sections: Mapping[str, Any]
    claims: tuple[Claim, ...]
    figures: Mapping[str, Path]
    metadata: Mapping[str, Any]

    def section(self, key: str) -> Any:
        """The result of the section ``key`` (None when the run had none)."""
        return self.sections.get(key)

    @property
    def models(self) -> Mapping[str, ModelAnalysis]:
        """The analysis of each model measured at init, by spec (the core's)."""
        core = self.section("models")
        return {} if core is None else core.models

    def record(self) -> dict[str, Any]:
        from lostmid.reproduce.sections import SECTIONS

        return {
            "schema": schema_of("reproduce"),
            "scale": self.config.record()["scale"],
            "models": {} if self.section("models") is None else self.section("models").record(),
            **{
                s.key: None if self.section(s.key) is None else s.record(self.section(s.key))
                for s in SECTIONS
            },
            "claims": list(self.claims),
            "figures": {k: str(v) for k, v in self.figures.items()},
            "metadata": dict(self.metadata),
        }
