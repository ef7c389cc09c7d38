"""``lostmid compare``: score theories and naive baselines against the measured profiles
of one model (one measure.json per seed).

Writes ``OUT/compare.json`` (:meth:`CompareResult.record`: every candidate's
parameters, profile and metrics in and out of sample, the noise floor, the verdicts,
and the run's provenance under ``"metadata"``) and ``OUT/compare.png`` (the overlay
plot), and prints the tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from lostmid.compare.candidates import Candidate, Scorecard, compare_measurements
from lostmid.compare.config import LOG_BINS, CompareConfig
from lostmid.compare.inputs import check_one_setting, load_theory
from lostmid.compare.metrics import AGREEMENT_METRICS
from lostmid.compare.plot import plot_overlay
from lostmid.errors import UserError
from lostmid.files import schema_of
from lostmid.influence.record import read_measure
from lostmid.report.layout import fit_table
from lostmid.report.plots import save_figure
from lostmid.runinfo import Timer, write_json
from lostmid.runs.folder import RunFolder

OUTPUT_FILES = ["compare.json", "compare.png"]

METRIC_DEFINITIONS = {
    "spearman": "Spearman rank correlation over positions 1..L (average ranks for ties)",
    "wasserstein1": "W1 between the profiles normalised to sum 1, positions x=(j-1)/(L-1)",
    "binned_spearman": "Spearman of the log-binned profiles (see log_binning)",
    "binned_wasserstein1": "W1 of the log-binned profiles, bins equally spaced in [0, 1]",
    "log_correlation": "Pearson correlation of log10 profiles where both are > 0",
    "log10_peak_to_valley": "log10(peak / valley) of the candidate; valley excludes the target",
    "log10_peak_to_valley_measured": "the same for the measurement",
    "recency_error": "p_t/q_t - 1 at the target t, both normalised to sum 1",
    "primacy_error": "p_1/q_1 - 1 at position 1, both normalised to sum 1",
    "log10_rmse": "RMS of log10(p_j/q_j) about its mean (shape error in decades)",
}

POLICY_DEFINITIONS = {
    "log_binning": "sum of influence over bins of equal width in ln j for positions "
    "1..t-1 (bin k: t^(k/bins) <= j < t^((k+1)/bins)), the target t a bin of its own, "
    "positions after t one more bin; bins holding no position are dropped",
    "pooling": "several seeds: the mean of the profiles normalised to sum 1, times the "
    "mean total; fitted candidates are fitted to it in sample",
    "out_of_sample": "leave one seed out: every fitted candidate fitted on the pool of "
    "the other seeds, scored on the held-out seed; predictions scored on each seed "
    "(from that seed's own a_l); mean and spread (sample sd) over the held-out seeds",
    "noise_floor": "agreement between every pair of seeds (mean and spread over pairs)",
    "spike:free": "the share of the target in the profile is fitted with the shape, "
    "for every fitted candidate (theory fits included); predictions keep their own",
    "spike:pinned": "the share of the target is set to the measured share (of the "
    "fitting data) for every candidate, predictions included",
    "fit_metric:w1": "fitted candidates minimise W1, the metric they are judged by",
    "fit_metric:log-lsq": "fitted candidates minimise the squared log error off the target",
}


@dataclass(frozen=True)
class CompareResult:
    """Everything ``lostmid compare`` computed; :meth:`record` is compare.json.

    Attributes:
        config: the resolved config.
        scorecard: every candidate scored, the noise floor and the verdicts.
        metadata: provenance (:func:`lostmid.runinfo.run_metadata`), None until the run
            has finished.
    """

    config: CompareConfig
    scorecard: Scorecard
    metadata: dict[str, Any] | None = None

    @property
    def candidates(self) -> dict[str, Candidate]:
        return self.scorecard.candidates

    def record(self) -> dict[str, Any]:
        """The compare.json layout (docs/commands/compare.md)."""
        card = self.scorecard
        m = card.measured
        first = next(iter(card.candidates.values()), None)
        policies = (
            "log_binning",
            "pooling",
            "out_of_sample",
            "noise_floor",
            f"spike:{card.spike}",
            f"fit_metric:{card.fit_metric}",
        )
        ranked: dict[str, list[str] | None] = {
            k: _ranking(card.candidates, k) for k in AGREEMENT_METRICS
        }
        ranked["out_of_sample_wasserstein1"] = (
            None
            if card.noise_floor is None
            else _ranking(card.candidates, "wasserstein1", out_of_sample=True)
        )
        return {
            "measured": {
                "sources": [str(p) for p in self.config.measured],
                "seeds": card.seeds,
                "length": m.length,
                "layers": m.layers,
                "target": m.target,
                "mask": m.mask,
                "log10_peak_to_valley": (
                    None if first is None else first.metrics.log10_peak_to_valley_measured
                ),
                "influence": m.influence,
                "stderr": m.stderr,
                "residual_strength": m.residual_strength,
                "residual_strength_method": m.residual_strength_method,
                "branch_gain": m.branch_gain,
            },
            "theory_source": None if self.config.theory is None else str(self.config.theory),
            "settings": {
                "fit_metric": card.fit_metric,
                "spike": card.spike,
                "bins": card.bins,
                "kernels": list(self.config.kernels),
                "definitions": {k: POLICY_DEFINITIONS[k] for k in policies},
            },
            "metric_definitions": METRIC_DEFINITIONS,
            "noise_floor": None if card.noise_floor is None else card.noise_floor.record(),
            "candidates": {name: c.record() for name, c in card.candidates.items()},
            "ranking": ranked,
            "claims": [c.record() for c in card.claims],
            "notes": list(card.notes),
            "files": {"plot": "compare.png"},
            "metadata": self.metadata,
        }


FOLDER = RunFolder("compare", writes=tuple(OUTPUT_FILES))
"""What ``run_compare`` writes into ``--out``."""


@FOLDER.holds
def run_compare(
    config: CompareConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Console | None = None,
) -> CompareResult:
    """Read the inputs, score every candidate, write compare.json and compare.png.

    Args:
        config: what to compare (validated).
        out: output directory; existing results are kept unless ``overwrite``.
        console: where the tables go (None: print nothing).
    """
    timer = Timer()
    with timer("read"):
        measurements = [read_measure(path, option="--measured") for path in config.measured]
        theory = None if config.theory is None else load_theory(config.theory)
    pooled = check_one_setting(measurements, config.pool)
    before = max(len(m.influence) for m in measurements) - 1  # positions before the target
    if config.bins > max(before, LOG_BINS):  # the default stays usable at a short L
        raise UserError(
            f"--bins {config.bins:,}: more bins than the {before} positions before the target "
            f"(L = {before + 1}); give at most {max(before, LOG_BINS)}"
        )
    folder = FOLDER.open(out, overwrite=overwrite)
    with timer("compare"):
        card = compare_measurements(
            measurements,
            theory,
            predict=config.predict,
            kernels=config.kernels,
            fit_metric=config.fit_metric,
            spike=config.spike,
            bins=config.bins,
        )
    with timer("plot"):
        cands = card.candidates.values()
        m = card.measured
        seeds = f", {card.seeds} seeds pooled" if card.seeds > 1 else ""
        fig = plot_overlay(
            m.influence,
            {c.name: c.profile for c in cands if c.kind != "baseline"},
            {c.name: c.profile for c in cands if c.kind == "baseline"},
            stderr=m.stderr,
            title=f"Influence on position {m.target}: measured vs theory and baselines "
            f"(L = {m.length}{seeds})",
        )
        save_figure(fig, out / "compare.png")
    metadata = folder.metadata(
        {**config.record(), "out": str(out), "pooled_across": pooled},
        config.seed,
        timer.seconds,
    )
    result = CompareResult(config, card, metadata)
    write_json(out / "compare.json", {"schema": schema_of("compare"), **result.record()})
    if console is not None:
        console.print(fit_table(comparison_table(card)))
        console.print(fit_table(claims_table(card)))
        for note in [*pooled, *card.notes]:
            console.print(f"note: {note}")
        console.print(f"wrote {out / 'compare.json'} and {out / 'compare.png'}")
    return result


def comparison_table(card: Scorecard) -> Table:
    """Rows: candidates; columns: parameters and metrics, in sample and held out."""
    first = next(iter(card.candidates.values()), None)
    ptv = None if first is None else first.metrics.log10_peak_to_valley_measured
    m = card.measured
    floor = card.noise_floor
    floor_text = (
        "one seed: no noise floor, no held-out scores"
        if floor is None
        else f"noise floor ({floor.seeds} seeds): W1 {_pm(floor.wasserstein1, 4)}, "
        f"Spearman {_pm(floor.spearman, 3)}, binned W1 "
        f"{_pm(floor.metrics['binned_wasserstein1'], 4)}, binned Spearman "
        f"{_pm(floor.metrics['binned_spearman'], 3)}"
    )
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"Candidates against the measurement (L = {m.length}, H = {m.layers}, "
        f"measured log10 peak/valley = {_fmt(ptv, 2)}; fit {card.fit_metric}, "
        f"spike {card.spike})",
        caption=f"k: numbers taken from the measurement; bin: on {card.bins} log-position "
        f"bins; held out: W1 on held-out seeds, mean +- sd. {floor_text}",
    )
    # Short two-line headers keep the numbers whole on a 100-column terminal; long
    # candidate names fold instead.
    table.add_column("candidate", overflow="fold")
    for column in ("k", "W1", "Spear-\nman", "W1\nbin", "Spear.\nbin", "W1\nheld out"):
        table.add_column(column, justify="right", no_wrap=True)
    for c in card.candidates.values():
        x = c.metrics
        held = "-" if c.out_of_sample is None else _pm(c.out_of_sample.metrics["wasserstein1"], 4)
        table.add_row(
            c.name,
            str(c.parameter_count),
            _fmt(x.wasserstein1, 4),
            _fmt(x.spearman, 3),
            _fmt(x.binned_wasserstein1, 4),
            _fmt(x.binned_spearman, 3),
            held,
        )
    return table


def claims_table(card: Scorecard) -> Table:
    """The paper's numbers for every zero-parameter candidate, with their verdicts."""
    table = Table(box=box.SIMPLE_HEAD, title="Claims (rules in compare.json)")
    for column in ("claim", "paper", "ours", "verdict"):
        table.add_column(column, overflow="fold")
    for c in card.claims:
        table.add_row(c.claim, c.paper, c.ours, c.verdict)
    return table


def _ranking(
    candidates: dict[str, Candidate], metric: str, out_of_sample: bool = False
) -> list[str]:
    """Candidate names ordered best first by ``metric``; undefined values last."""
    lower_is_better = metric in ("wasserstein1", "binned_wasserstein1", "log10_rmse")

    def key(name: str) -> tuple[bool, float]:
        c = candidates[name]
        value = c.score(metric).mean if out_of_sample else getattr(c.metrics, metric)
        undefined = value is None or value != value
        return undefined, 0.0 if undefined else (value if lower_is_better else -value)

    return sorted(candidates, key=key)


def _pm(value: Any, digits: int) -> str:
    """A :class:`~lostmid.stats.intervals.MeanSpread` as text: mean +- spread."""
    return f"{_fmt(value.mean, digits)} +- {_fmt(value.spread, digits)}"


def _fmt(value: float | None, digits: int) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:.{digits}f}"
