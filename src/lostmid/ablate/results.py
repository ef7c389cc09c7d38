"""Scoring the ablation ladder (:mod:`lostmid.ablate.run`): every candidate on
each rung against its seeds (:func:`score_rung`), the ladder's result
(:class:`AblationResult`, ablation.json), its table and its figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich import box
from rich.table import Table

from lostmid.ablate.config import AblationConfig
from lostmid.ablate.rungs import RUNG_SPECS, RungMeasurement, RungSpec
from lostmid.compare.candidates import Candidate, compare_measurements
from lostmid.compare.scoring import NoiseFloor
from lostmid.files import schema_of
from lostmid.recordable import fields_record
from lostmid.report.plots import new_figure
from lostmid.stats.intervals import MeanSpread
from lostmid.theory import KERNELS, summarise_profile
from lostmid.typing import Float

GAP_FACTOR = 2.0
"""A rung "opens the gap" when its best prediction's W1 exceeds this times the floor..."""
GAP_MIN_W1 = 0.005
"""... and this (W1 differences below it are under the resolution target)."""
PREDICTIONS = (
    "predicted:rollout",
    "predicted:jacobian",
    "predicted:positional-rollout",
    "predicted:positional",
)


@dataclass(frozen=True)
class CandidateScore:
    """One candidate on one rung.

    Attributes:
        name, kind: the candidate (:class:`lostmid.compare.Candidate`).
        parameter_count: numbers taken from the measurement (0: a prediction).
        wasserstein1, binned_wasserstein1: its score (per seed for a prediction and out
            of sample for a fitted candidate with 2+ seeds; in sample with one seed).
        profile: (L,) the candidate on the pooled measurement's axis.
    """

    name: str
    kind: str
    parameter_count: int
    wasserstein1: MeanSpread
    binned_wasserstein1: MeanSpread
    profile: Float[np.ndarray, " L"]

    @classmethod
    def of(cls, candidate: Candidate) -> CandidateScore:
        return cls(
            name=candidate.name,
            kind=candidate.kind,
            parameter_count=candidate.parameter_count,
            wasserstein1=candidate.score("wasserstein1"),
            binned_wasserstein1=candidate.score("binned_wasserstein1"),
            profile=candidate.profile,
        )

    def record(self) -> dict[str, Any]:
        return fields_record(self, skip=("name",))


@dataclass(frozen=True)
class RungResult:
    """One rung over its seeds.

    Attributes:
        spec: what the rung is.
        seeds: the measurements, one per seed.
        measured: (L,) the seeds pooled (mean of the normalised profiles).
        log10_peak_to_valley: of ``measured``.
        candidates: every candidate's score, by name.
        noise_floor: W1 between seeds (None with one seed).
        notes: what the comparison could not do.
    """

    spec: RungSpec
    seeds: tuple[RungMeasurement, ...]
    measured: Float[np.ndarray, " L"]
    log10_peak_to_valley: float | None
    candidates: dict[str, CandidateScore]
    noise_floor: NoiseFloor | None
    notes: tuple[str, ...]

    @property
    def best_prediction(self) -> CandidateScore:
        """The zero-parameter candidate with the lowest mean W1."""
        return _best([c for c in self.candidates.values() if c.kind == "predicted"])

    @property
    def best_baseline(self) -> CandidateScore | None:
        """The naive baseline with the lowest mean W1 (out of sample with 2+ seeds)."""
        bases = [c for c in self.candidates.values() if c.kind == "baseline"]
        return _best(bases) if bases else None

    @property
    def opens_gap(self) -> bool | None:
        """Whether the best prediction's W1 exceeds :data:`GAP_FACTOR` x the noise
        floor's (None without a floor)."""
        if self.noise_floor is None:
            return None
        return (
            self.best_prediction.wasserstein1.mean > GAP_FACTOR * self.noise_floor.wasserstein1.mean
        )

    def record(self) -> dict[str, Any]:
        first = self.seeds[0]
        floor = self.noise_floor
        return {
            "rung": self.spec.name,
            "label": self.spec.label,
            "ingredient": self.spec.ingredient,
            "ingredients": {
                "positions": self.spec.positions,
                "attention_logits": self.spec.logits,
                "mlp": self.spec.mlp,
                "frozen_norm": self.spec.frozen_norm,
                "scaled_embeddings": self.spec.scaled_embeddings,
            },
            "switches": list(first.switches),
            "seeds": [m.seed for m in self.seeds],
            "measured": self.measured,
            "log10_peak_to_valley": self.log10_peak_to_valley,
            "residual_strength": np.mean(
                _gains([m.measurement.residual_strength for m in self.seeds]), axis=0
            ),
            "mlp_gain": np.mean(_gains([m.measurement.mlp_gain for m in self.seeds]), axis=0),
            "mlp_coherence": _nanmean(_gains([m.measurement.mlp_coherence for m in self.seeds])),
            "layer_masks": list(first.measurement.layer_masks or ()),
            "candidates": {name: c.record() for name, c in self.candidates.items()},
            "best_prediction": self.best_prediction.name,
            "best_baseline": None if self.best_baseline is None else self.best_baseline.name,
            "noise_floor": None
            if floor is None
            else {
                "seeds": floor.seeds,
                "wasserstein1": floor.wasserstein1.record(),
                "binned_wasserstein1": floor.metrics["binned_wasserstein1"].record(),
            },
            "opens_gap": self.opens_gap,
            "per_seed": [m.record() for m in self.seeds],
            "notes": list(self.notes),
        }


def score_rung(spec: RungSpec, measurements: Sequence[RungMeasurement]) -> RungResult:
    """Every candidate of :func:`lostmid.compare.compare_measurements` on one rung."""
    card = compare_measurements(
        [m.measurement for m in measurements], predict=True, kernels=KERNELS
    )
    summary = summarise_profile(card.measured.influence, target=card.measured.target)
    return RungResult(
        spec=spec,
        seeds=tuple(measurements),
        measured=card.measured.influence,
        log10_peak_to_valley=summary.log10_peak_to_valley,
        candidates={name: CandidateScore.of(c) for name, c in card.candidates.items()},
        noise_floor=card.noise_floor,
        notes=card.notes,
    )


@dataclass(frozen=True)
class AblationResult:
    """The ladder; :meth:`record` is ablation.json.

    Attributes:
        config: what was asked.
        rungs: one :class:`RungResult` per rung, in ladder order.
        metadata: provenance (:func:`lostmid.runinfo.run_metadata`), stages reused and
            computed.
        skipped: rungs that could not be measured, with why (a switched model whose
            activations overflow: e.g. SwiGLU blocks with frozen norm scales, where
            nothing renormalises the stream and the MLP is quadratic in it).
    """

    config: AblationConfig
    rungs: tuple[RungResult, ...]
    metadata: Mapping[str, Any]
    skipped: Mapping[str, str] = field(default_factory=dict)

    @property
    def gap_rung(self) -> str | None:
        """The first rung of the ladder (i)-(iv), in order, whose best prediction leaves
        the noise floor (:attr:`RungResult.opens_gap`); None if none does or there is
        no floor."""
        ladder = [r for r in self.rungs if r.spec.label != "cross"]
        return next((r.spec.name for r in ladder if r.opens_gap), None)

    def record(self) -> dict[str, Any]:
        return {
            "schema": schema_of("ablation"),
            "config": self.config.record(),
            "definitions": {
                "rungs": {name: f"{s.label} {s.ingredient}" for name, s in RUNG_SPECS.items()},
                "score": "W1 between the profiles normalised to sum 1 (positions "
                "x = (j-1)/(L-1)); predictions per seed, fitted candidates out of sample "
                "(leave one seed out), mean and spread over seeds; in sample with one seed",
                "noise_floor": "W1 between every pair of seeds (mean and spread)",
                "opens_gap": f"best prediction's W1 > {GAP_FACTOR:g} x the noise floor's "
                f"and > {GAP_MIN_W1:g}; gap_rung: the first such rung of (i)-(iv)",
            },
            "rungs": [r.record() for r in self.rungs],
            "skipped": dict(self.skipped),
            "gap_rung": self.gap_rung,
            "files": {"plot": "ablation.png"},
            "metadata": dict(self.metadata),
        }


TABLE_COLUMNS = {  # candidate -> column of the printed table (all are in ablation.json)
    "predicted:rollout": "rollout",
    "predicted:jacobian": "jacobian",
    "predicted:positional": "positional",
}


def ablation_table(result: AblationResult) -> Table:
    """Rows: rungs; columns: W1 of the predictions, the best baseline and the floor."""
    seeds = len(result.config.seed_list())
    where = "per seed" if seeds > 1 else "in sample (one seed)"
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"Ablation ladder of {result.config.model} (L = {result.config.length}, "
        f"{seeds} seed{'s' if seeds > 1 else ''}): W1 to the measurement",
        caption=f"W1 mean and sd over seeds ({where}), log-binned W1 in brackets. "
        "baseline: the best naive baseline (out of sample with 2+ seeds); floor: W1 "
        "between seeds; p/v: log10 peak/valley of the measurement",
    )
    table.add_column("rung", overflow="fold", max_width=18)
    table.add_column("p/v", justify="right", no_wrap=True)
    for column in (*TABLE_COLUMNS.values(), "baseline", "floor"):
        table.add_column(column, justify="right", no_wrap=True)
    for r in result.rungs:
        base = r.best_baseline
        floor = r.noise_floor
        table.add_row(
            f"{r.spec.label} {r.spec.name}",
            _fmt(r.log10_peak_to_valley, 2),
            *[_cell(r.candidates.get(name)) for name in TABLE_COLUMNS],
            _cell(base) + ("" if base is None else f"\n{base.name.removeprefix('baseline:')}"),
            "-"
            if floor is None
            else _cell_of(floor.wasserstein1, floor.metrics["binned_wasserstein1"]),
        )
    return table


def ablation_figure(result: AblationResult) -> Any:
    """Top: measured vs predicted per rung (normalised, log y). Bottom: W1 per rung per
    candidate, with the seed noise floor."""
    rungs = result.rungs
    fig = new_figure((max(8.0, 2.6 * len(rungs)), 6.5))
    grid = fig.add_gridspec(2, len(rungs), height_ratios=(1.2, 1.0))
    shown = ("predicted:jacobian", "predicted:positional")
    for index, r in enumerate(rungs):
        ax = fig.add_subplot(grid[0, index])
        pos = np.arange(1, r.measured.size + 1)
        m = r.measured / r.measured.sum()
        ok = m > 0
        ax.plot(pos[ok], m[ok], color="k", lw=1.2, label="measured")
        for color, name in zip(("C0", "C3"), shown, strict=True):
            c = r.candidates.get(name)
            if c is None:
                continue
            p = c.profile / c.profile.sum()
            keep = p > 0
            ax.plot(pos[keep], p[keep], color=color, lw=0.9, ls="--", label=name)
        ax.set_yscale("log")
        ax.set_title(f"{r.spec.label} {r.spec.name}", fontsize=9)
        ax.set_xlabel("position j", fontsize=8)
        ax.tick_params(labelsize=7)
        if index == 0:
            ax.set_ylabel("share of influence", fontsize=8)
            ax.legend(fontsize=6, loc="best")
    ax = fig.add_subplot(grid[1, :])
    x = np.arange(len(rungs))
    names = [p for p in PREDICTIONS if any(p in r.candidates for r in rungs)] + ["best baseline"]
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        scores = [
            r.best_baseline if name == "best baseline" else r.candidates.get(name) for r in rungs
        ]
        mean = [np.nan if s is None else s.wasserstein1.mean for s in scores]
        spread = [0.0 if s is None else s.wasserstein1.spread for s in scores]
        ax.bar(x - 0.4 + (k + 0.5) * width, mean, width, yerr=spread, label=name, color=f"C{k}")
    floors = [np.nan if r.noise_floor is None else r.noise_floor.wasserstein1.mean for r in rungs]
    ax.hlines(floors, x - 0.42, x + 0.42, color="k", lw=2, zorder=3, label="seed noise floor")
    ax.set_xticks(x, [f"{r.spec.label}\n{r.spec.name}" for r in rungs], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("W1 to the measurement")
    ax.legend(fontsize=7, ncols=len(names) + 1, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    seeds = len(result.config.seed_list())
    fig.suptitle(
        f"Ablation ladder: {result.config.model}, L = {result.config.length}, "
        f"{seeds} seed{'s' if seeds > 1 else ''}",
        fontsize=10,
    )
    return fig


# -- internals ---------------------------------------------------------------------------


def _best(scores: Sequence[CandidateScore]) -> CandidateScore:
    def key(c: CandidateScore) -> float:
        value = c.wasserstein1.mean
        return value if np.isfinite(value) else float("inf")

    return min(scores, key=key)


def _gains(per_seed: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Per-layer arrays that every rung measurement has (:func:`measure_rung` measures the
    branch gains), narrowed from the measurement record's optional fields."""
    found = [a for a in per_seed if a is not None]
    if len(found) < len(per_seed):
        raise ValueError("a rung measurement lacks its branch gains")
    return found


def _nanmean(rows: Sequence[np.ndarray]) -> np.ndarray:
    stacked = np.array(rows, dtype=np.float64)
    out = np.full(stacked.shape[1:], np.nan)
    seen = np.isfinite(stacked).any(axis=0)
    out[seen] = np.nanmean(stacked[:, seen], axis=0)
    return out


def _cell(score: CandidateScore | None) -> str:
    if score is None:
        return "-"
    return _cell_of(score.wasserstein1, score.binned_wasserstein1)


def _cell_of(w1: MeanSpread, binned: MeanSpread) -> str:
    """mean, then +-sd (with 2+ values), then [binned mean], one per line."""
    spread = f"\n+-{_fmt(w1.spread, 4)}" if w1.n > 1 else ""
    return f"{_fmt(w1.mean, 4)}{spread}\n[{_fmt(binned.mean, 4)}]"


def _fmt(value: float | None, digits: int) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:.{digits}f}"
