"""The summary over seeds: one :class:`RemedyRecord` per remedy (metrics with 95%
intervals, paired differences to the baseline, the verdict), the finished comparison
(:class:`RemediesResult`) and its table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.errors import UserError
from lostmid.files import schema_of
from lostmid.remedies.base import Remedy
from lostmid.remedies.config import RemediesConfig
from lostmid.remedies.stats import RULE, gap_margin, halves_gap, verdict
from lostmid.remedies.training import unit_sum
from lostmid.stats import (
    Interval,
    item_bootstrap,
    paired_difference,
    reference_points,
    seed_interval,
)
from lostmid.stats.verdicts import WORKS

SCHEMA = schema_of("remedies")
METRICS = ("mean_accuracy", "gap", "primacy", "recency", "log10_peak_to_valley")


@dataclass(frozen=True)
class RemedyRecord:
    """One remedy over seeds: metrics with 95% intervals, differences to its group's
    baseline (paired by seed), the verdict (with ``margin``, the reduction of the gap
    that counts, :func:`~lostmid.remedies.stats.gap_margin`), the budget and the
    theory's prediction.

    ``parameters``: trainable parameter count (the model's, once: all seeds are equal);
    ``extra_parameters``: parameters - the baseline's; ``tokens``: training input tokens
    per seed; ``accuracy``: by gold index (0-indexed), an interval per position.
    """

    name: str
    kind: str
    description: str
    knobs: dict[str, Any]
    seeds: tuple[int, ...]
    positions: tuple[int, ...]
    accuracy: tuple[Interval, ...]
    metrics: dict[str, Interval]
    differences: dict[str, Interval] | None
    verdict: str | None
    margin: float | None
    halves_gap: bool | None
    parameters: int | None
    extra_parameters: int | None
    tokens: int | None
    steps: int | None
    extra_forward_passes: int
    theory: dict[str, Any] | None
    measured_init_log10_peak_to_valley: Interval | None
    seconds: float

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "description": self.description,
            "knobs": self.knobs,
            "seeds": list(self.seeds),
            "tokens": self.tokens,
            "steps": self.steps,
            "parameters": self.parameters,
            "extra_parameters": self.extra_parameters,
            "extra_forward_passes": self.extra_forward_passes,
        }
        out |= {k: v.record() for k, v in self.metrics.items()}
        out["difference_to_baseline"] = (
            None
            if self.differences is None
            else {k: v.record() for k, v in self.differences.items()}
        )
        out["verdict"] = self.verdict
        out["margin"] = self.margin
        out["halves_gap"] = self.halves_gap
        out["accuracy_by_position"] = [
            {"index": p, **a.record()} for p, a in zip(self.positions, self.accuracy, strict=True)
        ]
        out["theory"] = self.theory
        out["measured_init_log10_peak_to_valley"] = (
            None
            if self.measured_init_log10_peak_to_valley is None
            else self.measured_init_log10_peak_to_valley.record()
        )
        out["seconds"] = self.seconds
        return out


def summarise_runs(
    remedy: Remedy,
    runs: list[dict[str, Any]],
    baseline_runs: list[dict[str, Any]] | None,
    theory: dict[str, Any] | None = None,
) -> RemedyRecord:
    """The :class:`RemedyRecord` of per-seed records (``baseline_runs`` None: this is
    the baseline). Metrics whose value is missing in some seed (e.g. no valley) are
    summarised over the seeds that have it."""
    if not runs:
        raise UserError(f"remedy {remedy.spec} has no finished seed")
    positions = tuple(runs[0]["positions"])
    accuracy = np.array([r["accuracy"] for r in runs])  # (S, G)

    def values(rs: list[dict[str, Any]], key: str) -> list[float]:
        return [float(r[key]) for r in rs if r.get(key) is not None]

    metrics = {k: seed_interval(values(runs, k)) for k in METRICS if values(runs, k)}
    differences = chosen = halves = margin = None
    if baseline_runs is not None:
        by_seed = {r["seed"]: r for r in baseline_runs}
        pairs = [(r, by_seed[r["seed"]]) for r in runs if r["seed"] in by_seed]
        differences = {}
        for key in METRICS:
            both = [
                (a[key], b[key])
                for a, b in pairs
                if a.get(key) is not None and b.get(key) is not None
            ]
            if both:
                differences[key] = paired_difference([a for a, _ in both], [b for _, b in both])
        by_item = item_differences(runs, baseline_runs)
        if by_item is not None:  # inference: paired by example, not by seed
            differences |= by_item
        if "gap" in differences and "mean_accuracy" in differences:
            base_gap = seed_interval(values(baseline_runs, "gap"))
            margin = gap_margin(base_gap)
            chosen = verdict(differences["gap"], differences["mean_accuracy"], margin)
            halves = halves_gap(metrics["gap"], base_gap)
    parameters = runs[0].get("parameters")
    base_parameters = baseline_runs[0].get("parameters") if baseline_runs else parameters
    init = values(runs, "init_log10_peak_to_valley")
    return RemedyRecord(
        name=remedy.spec,
        kind=remedy.kind,
        description=remedy.describe(),
        knobs=remedy.parameters(),
        seeds=tuple(int(r["seed"]) for r in runs),
        positions=positions,
        accuracy=tuple(seed_interval(accuracy[:, g].tolist()) for g in range(accuracy.shape[1])),
        metrics=metrics,
        differences=differences,
        verdict=chosen,
        margin=margin,
        halves_gap=halves,
        parameters=parameters,
        extra_parameters=(
            None if parameters is None or base_parameters is None else parameters - base_parameters
        ),
        tokens=runs[0].get("tokens"),
        steps=runs[0].get("steps"),
        extra_forward_passes=remedy.extra_forward_passes,
        theory=None if theory is None else theory | _measured_beside_theory(runs),
        measured_init_log10_peak_to_valley=seed_interval(init) if init else None,
        seconds=float(sum(r.get("wall_seconds", 0.0) for r in runs)),
    )


def outcome_matrix(runs: list[dict[str, Any]]) -> tuple[list[tuple[int, Any]], np.ndarray]:
    """(units, outcomes): one row per (seed, item) of per-example inference records, one
    column per gold position (sorted), 1.0 where the example was right."""
    positions = sorted(runs[0]["positions"])
    column = {p: j for j, p in enumerate(positions)}
    rows: dict[tuple[int, Any], np.ndarray] = {}
    for run in runs:
        for item, position, right in zip(
            run["items"], run["example_positions"], run["correct"], strict=True
        ):
            row = rows.setdefault((int(run["seed"]), item), np.full(len(positions), np.nan))
            row[column[position]] = float(right)
    units = sorted(rows, key=str)
    return units, np.array([rows[u] for u in units])


def _statistics(positions: int) -> dict[str, Any]:
    """The metrics of an (items, positions) outcome array, defined as
    :func:`lostmid.behaviour.score.summarise_positions` defines them on the curve of
    column means (gap: best - worst position; primacy and recency against the middle)."""
    first, middle, last = reference_points(range(positions))
    return {
        "mean_accuracy": lambda a: a.mean(),
        "gap": lambda a: a.mean(axis=0).max() - a.mean(axis=0).min(),
        "primacy": lambda a: a[:, first].mean() - a[:, middle].mean(),
        "recency": lambda a: a[:, last].mean() - a[:, middle].mean(),
    }


def item_differences(
    runs: list[dict[str, Any]], baseline_runs: list[dict[str, Any]]
) -> dict[str, Interval] | None:
    """Remedy - baseline differences paired by example (:func:`~lostmid.stats.item_bootstrap`
    over the (seed, item) units both arms scored at every position), or None when the
    records carry no per-example outcomes (training runs, older files)."""
    if not all("correct" in r for r in [*runs, *baseline_runs]):
        return None
    units, remedy = outcome_matrix(runs)
    base_units, baseline = outcome_matrix(baseline_runs)
    shared = [u for u in units if u in set(base_units)]
    a = remedy[[units.index(u) for u in shared]]
    b = baseline[[base_units.index(u) for u in shared]]
    complete = ~(np.isnan(a).any(axis=1) | np.isnan(b).any(axis=1))
    a, b = a[complete], b[complete]
    if a.shape[0] == 0:
        return None
    return {
        key: item_bootstrap(a, b, statistic) for key, statistic in _statistics(a.shape[1]).items()
    }


def _measured_beside_theory(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The measured influence of each record on the query at init and at the end, each
    normalised to sum 1 and averaged over seeds, to set beside the theory's profile."""
    out: dict[str, Any] = {}
    for key, name in (
        ("init_record_influence", "measured_init_record_profile"),
        ("record_influence", "measured_final_record_profile"),
    ):
        profiles = [unit_sum(r[key]) for r in runs if r.get(key)]
        if profiles:
            out[name] = np.mean(profiles, axis=0).tolist()
    return out


@dataclass(frozen=True)
class RemediesResult:
    """A finished comparison: one :class:`RemedyRecord` per remedy (baselines first)."""

    config: RemediesConfig
    remedies: tuple[RemedyRecord, ...]
    seconds: float

    def by_name(self, name: str, kind: str = "training") -> RemedyRecord:
        for r in self.remedies:
            if r.name == name and r.kind == kind:
                return r
        raise KeyError(name)

    def record(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "remedies": [r.record() for r in self.remedies],
            "config": self.config.record(),
            "rule": RULE,
            "seconds": self.seconds,
        }


def _fmt(i: Interval | None, signed: bool = False) -> str:
    """``estimate±half-width`` (t intervals are symmetric); the estimate alone for one seed."""
    if i is None:
        return "-"
    sign = "+" if signed else ""
    if not np.isfinite(i.ci_low):
        return f"{i.estimate:{sign}.2f}"
    half = f"{(i.ci_high - i.ci_low) / 2:.2f}".removeprefix("0")
    return f"{i.estimate:{sign}.2f}±{half}"


def remedies_table(result: RemediesResult) -> Any:
    """One row per remedy: mean accuracy, gap, their differences to the baseline (95%
    intervals over seeds), primacy, recency, log10 peak-to-valley of the influence
    profile, parameters added, verdict."""
    from rich import box
    from rich.table import Table

    table = Table(
        title="remedies at equal budget (mean ± 95% over seeds)",
        header_style="bold",
        box=box.SIMPLE_HEAD,
    )
    for name in ("remedy", "acc", "Δacc", "gap", "Δgap", "prim", "rec", "lgP/V", "+par", "verdict"):
        left = name in ("remedy", "verdict")
        table.add_column(name, justify="left" if left else "right", no_wrap=True)
    for r in result.remedies:
        d = r.differences or {}
        table.add_row(
            r.name if r.kind == "training" else f"{r.name} (inf.)",
            _fmt(r.metrics.get("mean_accuracy")),
            _fmt(d.get("mean_accuracy"), True),
            _fmt(r.metrics.get("gap")),
            _fmt(d.get("gap"), True),
            _fmt(r.metrics.get("primacy"), True),
            _fmt(r.metrics.get("recency"), True),
            _fmt(r.metrics.get("log10_peak_to_valley")),
            str(r.extra_parameters or 0),
            (r.verdict or "baseline")
            + (", halves gap" if r.verdict == WORKS and r.halves_gap else ""),
        )
    return table


def verdict_lines(result: RemediesResult) -> list[str]:
    """Plain sentences: which remedies work by the rule, which are inconclusive, which
    halve the gap, and the margin the rule used."""
    lines = []
    for kind in ("training", "inference"):
        group = [r for r in result.remedies if r.kind == kind and r.verdict is not None]
        if not group:
            continue

        def named(chosen: list[RemedyRecord]) -> str:
            return ", ".join(r.name for r in chosen) or "none"

        works = [r for r in group if r.verdict == WORKS]
        lines.append(
            f"{kind} (margin m = {group[0].margin:.3g}): works by the rule: {named(works)}; "
            f"inconclusive: {named([r for r in group if r.verdict == 'inconclusive'])}; "
            "halves the baseline gap without lowering accuracy: "
            f"{named([r for r in works if r.halves_gap])}"
        )
    return lines
