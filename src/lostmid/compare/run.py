"""``lostmid compare``: score theories and naive baselines against a measured profile.

Writes ``OUT/compare.json`` (every candidate's parameters, profile and metrics, plus
the run's provenance) and ``OUT/compare.png`` (the overlay plot), and prints a table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from lostmid.compare.candidates import Candidate, compare_measurement, parse_kernels
from lostmid.compare.inputs import MeasuredProfile, load_measured, load_theory
from lostmid.compare.plot import plot_overlay
from lostmid.runinfo import Timer, prepare_out, run_metadata, write_json

OUTPUT_FILES = ["compare.json", "compare.png"]

METRIC_DEFINITIONS = {
    "spearman": "Spearman rank correlation over positions 1..L (average ranks for ties)",
    "wasserstein1": "W1 between the profiles normalised to sum 1, positions x=(j-1)/(L-1)",
    "log_correlation": "Pearson correlation of log10 profiles where both are > 0",
    "log10_peak_to_valley": "log10(peak / valley) of the candidate; valley excludes the target",
    "log10_peak_to_valley_measured": "the same for the measurement",
    "recency_error": "p_t/q_t - 1 at the target t, both normalised to sum 1",
    "primacy_error": "p_1/q_1 - 1 at position 1, both normalised to sum 1",
    "log10_rmse": "RMS of log10(p_j/q_j) about its mean (shape error in decades)",
}


def run_compare(
    theory_path: Path | None,
    measured_path: Path,
    predict: bool,
    kernel: str,
    out: Path,
    overwrite: bool,
    console: Console | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """Read the inputs, score every candidate, write compare.json and compare.png.

    Args:
        theory_path: a theory.json to compare, or None.
        measured_path: the measure.json to compare against.
        predict: also build the theory from the measured residual strengths.
        kernel: ``rollout``, ``jacobian`` or ``both`` for the predicted and fitted theory.
        out: output directory; existing results are kept unless ``overwrite``.
        console: where the table goes (None: print nothing).
        seed: recorded for provenance (the comparison itself is deterministic).

    Returns:
        The content written to compare.json.
    """
    timer = Timer()
    kernels = parse_kernels(kernel)
    with timer("read"):
        measured = load_measured(Path(measured_path))
        theory = None if theory_path is None else load_theory(Path(theory_path))
    prepare_out(out, OUTPUT_FILES, overwrite)
    with timer("compare"):
        candidates = compare_measurement(measured, theory, predict=predict, kernels=kernels)
    with timer("plot"):
        theories = {c.name: c.profile for c in candidates.values() if c.kind != "baseline"}
        baselines = {c.name: c.profile for c in candidates.values() if c.kind == "baseline"}
        fig = plot_overlay(
            measured.influence,
            theories,
            baselines,
            stderr=measured.stderr,
            title=f"Influence on position {measured.target}: "
            f"measured vs theory and baselines (L = {measured.length})",
        )
        fig.savefig(out / "compare.png", dpi=120)
    config = {
        "theory": None if theory_path is None else str(theory_path),
        "measured": str(measured_path),
        "predict": predict,
        "kernel": kernel,
        "out": str(out),
    }
    result = compare_json(measured, candidates, theory_source=config["theory"])
    result["run"] = run_metadata("compare", config, seed, timer.seconds)
    write_json(out / "compare.json", result)
    if console is not None:
        console.print(comparison_table(candidates, measured))
        console.print(f"wrote {out / 'compare.json'} and {out / 'compare.png'}")
    return result


def compare_json(
    measured: MeasuredProfile, candidates: dict[str, Candidate], theory_source: str | None = None
) -> dict[str, Any]:
    """The compare.json layout (without the ``run`` block); see the README of compare."""
    ranked = {
        "wasserstein1": _ranking(candidates, "wasserstein1", ascending=True),
        "log10_rmse": _ranking(candidates, "log10_rmse", ascending=True),
        "log_correlation": _ranking(candidates, "log_correlation", ascending=False),
        "spearman": _ranking(candidates, "spearman", ascending=False),
    }
    first = next(iter(candidates.values()), None)
    return {
        "measured": {
            "source": measured.source,
            "length": measured.length,
            "layers": measured.layers,
            "target": measured.target,
            "mask": measured.mask,
            "log10_peak_to_valley": (
                None if first is None else first.metrics.log10_peak_to_valley_measured
            ),
            "influence": measured.influence,
            "stderr": measured.stderr,
            "residual_strength": measured.residual_strength,
        },
        "theory_source": theory_source,
        "metric_definitions": METRIC_DEFINITIONS,
        "candidates": {name: c.record() for name, c in candidates.items()},
        "ranking": ranked,
        "files": {"plot": "compare.png"},
    }


def comparison_table(candidates: dict[str, Candidate], measured: MeasuredProfile) -> Table:
    """Rows: candidates; columns: the metrics (best first is up to the reader)."""
    first = next(iter(candidates.values()), None)
    ptv = None if first is None else first.metrics.log10_peak_to_valley_measured
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"Candidates against the measurement (L = {measured.length}, "
        f"H = {measured.layers}, measured log10 peak/valley = {_fmt(ptv, 2)})",
        caption="k: parameters fitted to this measurement; recency, primacy err: "
        "relative error at the target and at position 1 (profiles normalised to sum 1)",
    )
    # Short two-line headers keep the numbers whole on an 80-column terminal; long
    # candidate names fold instead.
    table.add_column("candidate", overflow="fold")
    for column in (
        "k",
        "Spearman",
        "W1",
        "log\ncorr",
        "log10\nP/V",
        "recency\nerr",
        "primacy\nerr",
    ):
        table.add_column(column, justify="right", no_wrap=True)
    for c in candidates.values():
        m = c.metrics
        table.add_row(
            c.name,
            str(c.parameter_count),
            _fmt(m.spearman, 4),
            _fmt(m.wasserstein1, 4),
            _fmt(m.log_correlation, 4),
            _fmt(m.log10_peak_to_valley, 2),
            _fmt(m.recency_error, 3, signed=True),
            _fmt(m.primacy_error, 3, signed=True),
        )
    return table


def _ranking(candidates: dict[str, Candidate], metric: str, ascending: bool) -> list[str]:
    """Candidate names ordered best first by ``metric``; undefined values last."""

    def key(name: str) -> tuple[bool, float]:
        value = getattr(candidates[name].metrics, metric)
        undefined = value is None or value != value
        return undefined, 0.0 if undefined else (value if ascending else -value)

    return sorted(candidates, key=key)


def _fmt(value: float | None, digits: int, signed: bool = False) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
