"""The ``lostmid theory`` job: compute, summarise, write theory.json and theory.png.

:func:`compute_theory` is pure (arrays in, a frozen result out); :func:`run_theory` is
the thin shell that writes files and prints the table.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from lostmid.errors import UserError
from lostmid.runinfo import Timer, prepare_out, run_metadata, write_json
from lostmid.theory.continuum import (
    ContinuumError,
    Regions,
    continuum_error,
    continuum_row,
    regions,
)
from lostmid.theory.exact import KERNELS, influence_row, log_influence_row, path_weights
from lostmid.theory.masks import Causal, parse_mask
from lostmid.theory.schedules import parse_schedule
from lostmid.theory.summary import ProfileSummary, summarize_profile

# Below this, float64 results lose relative precision (subnormals) or flush to zero.
_TINY = 1e-290
_CONTINUUM_MAX_LENGTH = 2_000_000


@dataclass(frozen=True)
class TheoryConfig:
    """Parameters of one theory computation (the CLI options, resolved)."""

    layers: int = 24
    length: int = 2048
    alpha: float = 0.1
    mask: str = "causal"
    kernel: str = "rollout"
    alpha_schedule: str | None = None
    target: int | None = None
    log_domain: str = "auto"  # auto | on | off


@dataclass(frozen=True)
class TheoryResult:
    """Everything ``lostmid theory`` computes. Arrays hold positions 1..L in order."""

    config: TheoryConfig
    alphas: np.ndarray
    target: int
    influence: np.ndarray
    log10_influence: np.ndarray
    log_domain_used: bool
    path_weights: np.ndarray
    summary: ProfileSummary
    continuum: np.ndarray | None
    continuum_error: ContinuumError | None
    regions: Regions | None


def compute_theory(config: TheoryConfig) -> TheoryResult:
    """Exact row, summary, and (causal rollout/jacobian) continuum and regions.

    >>> r = compute_theory(TheoryConfig(layers=4, length=64, alpha=0.5))
    >>> r.summary.valley_position
    63
    """
    if config.log_domain not in ("auto", "on", "off"):
        raise UserError(f"log_domain must be auto, on or off, got '{config.log_domain}'")
    if config.kernel not in KERNELS:
        raise UserError(f"unknown kernel '{config.kernel}'; use one of: {', '.join(KERNELS)}")
    alphas = parse_schedule(config.alpha_schedule, config.alpha, config.layers)
    mask = parse_mask(config.mask)
    args = (config.length, config.layers, alphas, mask, config.kernel, config.target)
    target = config.length if config.target is None else config.target
    use_log = config.log_domain == "on"
    if not use_log:
        influence = influence_row(*args)
        support = mask.support(config.length, target, config.layers)
        inside = influence[support[0] - 1 : support[1]]
        use_log = config.log_domain == "auto" and bool(np.any(inside < _TINY))
    if use_log:
        log10 = log_influence_row(*args) / np.log(10.0)
        influence = 10.0**log10
    else:
        with np.errstate(divide="ignore"):
            log10 = np.log10(influence)
    summary = summarize_profile(
        log10_influence=log10,
        target=target,
        support=mask.support(config.length, target, config.layers),
    )
    cont = cerr = reg = None
    if isinstance(mask, Causal) and config.length <= _CONTINUUM_MAX_LENGTH:
        cont = continuum_row(config.length, config.layers, alphas, config.kernel, target)
        if not use_log:  # a float64 comparison is meaningless once values underflow
            cerr = continuum_error(influence, cont, target)
        if config.kernel == "rollout" and config.layers > 0:
            reg = regions(influence, config.layers, alphas, target)
    return TheoryResult(
        config=config,
        alphas=alphas,
        target=target,
        influence=influence,
        log10_influence=log10,
        log_domain_used=use_log,
        path_weights=path_weights(alphas),
        summary=summary,
        continuum=cont,
        continuum_error=cerr,
        regions=reg,
    )


def theory_record(result: TheoryResult) -> dict[str, Any]:
    """The JSON layout of theory.json (without run metadata)."""
    return {
        "influence": result.influence,
        "log10_influence": result.log10_influence,
        "peak_to_valley": result.summary.peak_to_valley,
        "log10_peak_to_valley": result.summary.log10_peak_to_valley,
        "params": {
            "length": result.config.length,
            "layers": result.config.layers,
            "alphas": result.alphas,
            "mask": parse_mask(result.config.mask).spec(),
            "kernel": result.config.kernel,
            "target": result.target,
            "log_domain": result.log_domain_used,
        },
        "summary": asdict(result.summary),
        "path_weights": result.path_weights,
        "continuum": result.continuum,
        "continuum_error": result.continuum_error,
        "regions": result.regions,
    }


def run_theory(
    config: TheoryConfig,
    *,
    out: Path,
    overwrite: bool = False,
    seed: int = 0,
    console: Console | None = None,
) -> TheoryResult:
    """Compute the theory and write ``out/theory.json`` and ``out/theory.png``."""
    from lostmid.report.plots import plot_theory, save_figure

    prepare_out(out, ["theory.json", "theory.png"], overwrite)
    timer = Timer()
    with timer("compute"):
        result = compute_theory(config)
    record = theory_record(result)
    with timer("plot"):
        s = result.summary
        title = (
            f"{config.mask} mask, {config.kernel} kernel, H={config.layers}, "
            f"L={config.length}, a={_alpha_text(result.alphas)}, t={result.target}; "
            f"peak/valley = 10^{_fmt(s.log10_peak_to_valley)}"
        )
        fig = plot_theory(
            result.log10_influence,
            target=result.target,
            title=title,
            continuum=result.continuum,
            above_uniform_until=result.regions.above_uniform_until if result.regions else None,
            valley_position=s.valley_position,
        )
        save_figure(fig, out / "theory.png")
    record["metadata"] = run_metadata("theory", asdict(config), seed, timer.seconds)
    write_json(out / "theory.json", record)
    if console is not None:
        console.print(summary_table(result))
        console.print(f"wrote {out / 'theory.json'} and {out / 'theory.png'}")
    return result


def summary_table(result: TheoryResult) -> Table:
    """A readable table of the regions, valley and peak-to-valley."""
    s = result.summary
    table = Table(title="lostmid theory", show_header=True, header_style="bold")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("meaning")
    rows = [
        ("primacy", _num(s.primacy, s.log10_primacy), f"influence of position {s.support[0]}"),
        ("recency", _num(s.recency, s.log10_recency), f"influence of the target t={s.target}"),
        ("valley", _num(s.valley, s.log10_valley), f"minimum, at position {s.valley_position}"),
        ("peak / valley", _num(s.peak_to_valley, s.log10_peak_to_valley), "log10 in brackets"),
        (
            "dead-zone level",
            _num(s.dead_zone_level, s.log10_dead_zone_level),
            f"median over the middle half (uniform = {s.uniform_level:.3g})",
        ),
    ]
    if result.regions is not None:
        r = result.regions
        rows += [
            ("recency anchor weight", f"{r.recency_anchor_weight:.4g}", "b_0 = prod (1 - a_l)"),
            ("primacy tail extent", f"{r.above_uniform_until}", "positions above 1/t"),
            (
                "tail term dominates",
                f"{r.tail_dominates_positions}",
                "positions where the k=H term is the largest",
            ),
            (
                "dominant hops (start/mid/end)",
                f"{r.dominant_hops_start}/{r.dominant_hops_middle}/{r.dominant_hops_end}",
                "path length carrying most weight",
            ),
            (
                "pure-attention dead zone",
                f"{r.dead_zone_pure_attention:.3g}",
                "(ln 2)^(H-1)/(H-1)!",
            ),
        ]
    if result.continuum_error is not None:
        e = result.continuum_error
        rows.append(
            (
                "continuum max rel. error",
                f"{e.max_rel_error:.3g}",
                f"at position {e.worst_position}; L1 {e.l1_rel_error:.2g}",
            )
        )
    rows.append(("log domain", "yes" if result.log_domain_used else "no", ""))
    for row in rows:
        table.add_row(*row)
    return table


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _num(value: float | None, log10: float | None) -> str:
    if log10 is None:
        return "n/a"
    if value is not None and value > 1e-300:
        return f"{value:.4g} [{log10:.2f}]"
    return f"10^{log10:.2f}"


def _alpha_text(alphas: np.ndarray) -> str:
    if alphas.size and np.all(alphas == alphas[0]):
        return f"{alphas[0]:g}"
    return "schedule" if alphas.size else "-"
