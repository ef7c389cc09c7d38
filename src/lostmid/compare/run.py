"""``lostmid compare``: score theories and naive baselines against a measured profile.

Writes ``OUT/compare.json`` (every candidate's parameters, profile and metrics, plus
the run's provenance under ``"metadata"``) and ``OUT/compare.png`` (the overlay plot),
and prints a table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from lostmid.checks import check_choice
from lostmid.compare.candidates import Candidate, compare_measurement, parse_kernels
from lostmid.compare.inputs import MeasuredProfile, load_measured, load_theory
from lostmid.compare.plot import plot_overlay
from lostmid.errors import UserError
from lostmid.report.plots import save_figure
from lostmid.runinfo import Timer, prepare_out, run_metadata, write_json
from lostmid.theory import KERNELS

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


# Help text for each option, shared by the config's docs and the CLI (one wording).
OPTION_HELP = {
    "measured": "measure.json written by lostmid measure.",
    "theory": "theory.json written by lostmid theory.",
    "predict": "Also predict the theory from the measured a_l (nothing fitted).",
    "kernel": "rollout | jacobian | both: the kernels of the predicted and fitted theory.",
}


@dataclass(frozen=True)
class CompareConfig:
    """What ``lostmid compare`` compares; validated on construction, values parsed.

    Attributes:
        measured: the measure.json files (paths).
        theory: a theory.json to compare too, or None.
        predict: also predict the theory from the measured residual strengths.
        kernels: the kernels of the predicted and fitted theory; ``"both"``,
            ``"rollout"`` or ``"jacobian"`` are parsed into a tuple.
        seed: recorded for provenance (the comparison itself is deterministic).

    >>> CompareConfig(measured="m.json", kernels="both").kernels
    ('rollout', 'jacobian')
    """

    measured: tuple[Path, ...]
    theory: Path | None = None
    predict: bool = False
    kernels: tuple[str, ...] = KERNELS
    seed: int = 0

    def __post_init__(self) -> None:
        measured = (self.measured,) if isinstance(self.measured, str | Path) else self.measured
        if len(measured) != 1:
            raise UserError(f"--measured: give exactly one measure.json, got {len(measured)}")
        object.__setattr__(self, "measured", tuple(Path(m) for m in measured))
        if self.theory is not None:
            object.__setattr__(self, "theory", Path(self.theory))
        kernels = parse_kernels(self.kernels) if isinstance(self.kernels, str) else self.kernels
        kernels = tuple(check_choice("--kernel", k, KERNELS) for k in kernels)
        if not kernels:
            raise UserError("--kernel: give at least one kernel (rollout, jacobian or both)")
        object.__setattr__(self, "kernels", kernels)

    def record(self) -> dict[str, Any]:
        """The resolved config as JSON (paths as text)."""
        return {
            "measured": [str(m) for m in self.measured],
            "theory": None if self.theory is None else str(self.theory),
            "predict": self.predict,
            "kernels": list(self.kernels),
            "seed": self.seed,
        }


@dataclass(frozen=True)
class CompareResult:
    """Everything ``lostmid compare`` computed; :meth:`record` is compare.json.

    Attributes:
        config: the resolved config.
        measured: the measurement the candidates were scored against.
        candidates: every candidate by name, in a stable order.
        metadata: provenance (:func:`lostmid.runinfo.run_metadata`), None before the run
            wrote it.
    """

    config: CompareConfig
    measured: MeasuredProfile
    candidates: dict[str, Candidate]
    metadata: dict[str, Any] | None = None

    def record(self) -> dict[str, Any]:
        """The compare.json layout."""
        return {
            **compare_json(
                self.measured,
                self.candidates,
                theory_source=None if self.config.theory is None else str(self.config.theory),
            ),
            "metadata": self.metadata,
        }


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
        console: where the table goes (None: print nothing).
    """
    timer = Timer()
    with timer("read"):
        measured = load_measured(config.measured[0])
        theory = None if config.theory is None else load_theory(config.theory)
    prepare_out(out, OUTPUT_FILES, overwrite)
    with timer("compare"):
        candidates = compare_measurement(
            measured, theory, predict=config.predict, kernels=config.kernels
        )
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
        save_figure(fig, out / "compare.png")
    metadata = run_metadata(
        "compare", {**config.record(), "out": str(out)}, config.seed, timer.seconds
    )
    result = CompareResult(config, measured, candidates, metadata)
    write_json(out / "compare.json", result.record())
    if console is not None:
        console.print(comparison_table(candidates, measured))
        console.print(f"wrote {out / 'compare.json'} and {out / 'compare.png'}")
    return result


def compare_json(
    measured: MeasuredProfile, candidates: dict[str, Candidate], theory_source: str | None = None
) -> dict[str, Any]:
    """The compare.json layout without the ``metadata`` block."""
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
