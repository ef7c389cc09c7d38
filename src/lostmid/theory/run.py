"""The ``lostmid theory`` job: compute, summarise, write theory.json and theory.png.

:class:`TheoryConfig` checks the options once and holds them parsed (a :class:`Mask`,
the alphas, the kernel, the resolved target); :func:`compute_theory` is pure (a config
in, a frozen :class:`TheoryResult` out) and does not re-check; :func:`run_theory` is the
thin shell that writes files and prints the table. :data:`HELP` is the help of each
option (the CLI's); this module imports scipy (through the continuum) only when it
computes, so ``lostmid --help`` can read it quickly.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.console import Console
from rich.table import Table

from lostmid.checks import check_choice, check_position, check_positive, check_seed
from lostmid.errors import UserError
from lostmid.files import schema_of
from lostmid.report.layout import fit_table
from lostmid.runinfo import Timer, to_jsonable, write_json
from lostmid.runs.budget import SIZE_CHECK_HELP, check_budget
from lostmid.runs.folder import RunFolder
from lostmid.theory._ops import LinearOps, LogOps
from lostmid.theory.exact import KERNELS, _influence, _path_weights
from lostmid.theory.masks import MASK_HELP, Causal, MaskLike, parse_mask
from lostmid.theory.schedules import SCHEDULE_HELP, parse_schedule
from lostmid.theory.summary import ProfileSummary, _summarise
from lostmid.typing import Float

if TYPE_CHECKING:  # the continuum imports scipy: loaded by compute_theory when needed
    from lostmid.theory.continuum import ContinuumError, Regions

LOG_DOMAINS = ("auto", "on", "off")
# Below this, float64 results lose relative precision (subnormals) or flush to zero.
_TINY = 1e-290
_CONTINUUM_MAX_LENGTH = 2_000_000


SCHEMA = schema_of("theory")  # the kind of theory.json (lostmid.files.RESULT_KINDS)

HELP = {  # the CLI's help for each option, and the meaning of each TheoryConfig field
    "layers": "Depth H (layers).",
    "length": "Sequence length L.",
    "alpha": "Residual strength a in [0, 1].",
    "mask": MASK_HELP,
    "kernel": " | ".join(KERNELS),
    "alpha_schedule": SCHEDULE_HELP,
    "target": "Target position t, 1-indexed (default L).",
    "log_domain": " | ".join(LOG_DOMAINS) + ": compute in the log domain.",
    "seed": "Random seed (recorded; the theory itself draws nothing).",
    "no_size_check": SIZE_CHECK_HELP,
}


def theory_budget(
    layers: int, length: int, *, kernel: str, causal: bool, log: bool, target: int | None
) -> tuple[float, float]:
    """(bytes, seconds): a rough upper bound on the peak memory and the one-core time of
    ``lostmid theory`` (compute, continuum, figure), from its sizes alone.

    Calibrated on the development box (tracemalloc peaks, 2026-12-01): the rows hold
    about 7 float64 vectors of L; the continuum (causal, L <= 2e6) 8 float64 arrays of
    H x t; the figure about 400 bytes and 60 us per position; the path weights take
    O(H^2) time. Rows cost about 20 ns per layer and position (200 ns in the log domain
    or with the jacobian kernel), the continuum 500 ns per H x t cell.

    >>> need, seconds = theory_budget(24, 2048, kernel="rollout", causal=True, log=False,
    ...                               target=None)
    >>> 1e6 < need < 2e8 and seconds < 10
    True
    """
    t = length if target is None else target
    cells = layers * t if causal and length <= _CONTINUUM_MAX_LENGTH else 0
    need = 8.0 * (7 * length + 8 * cells + 4 * layers) + 400.0 * length + 50e6
    per_cell = 200e-9 if log or kernel == "jacobian" else 20e-9
    seconds = per_cell * layers * length + 500e-9 * cells + 20e-9 * layers**2 + 60e-6 * length
    return need, seconds


@dataclass(frozen=True)
class TheoryConfig:
    """Parameters of one theory computation, checked once here and held parsed.

    ``mask`` may be given as a spec string and is stored as a :class:`Mask`; ``alphas``
    (one per layer, from ``alpha`` and ``alpha_schedule``) and ``target_position`` (the
    1-indexed target, ``target`` or L) are derived. Raises :class:`UserError` with the
    :mod:`lostmid.checks` messages.

    >>> c = TheoryConfig(layers=2, length=8, mask="sliding:3", alpha_schedule="list:0.2,0.4")
    >>> c.mask, c.alphas.tolist(), c.target_position
    (SlidingWindow(width=3), [0.2, 0.4], 8)
    """

    layers: int = 24
    length: int = 2048
    alpha: float = 0.1
    mask: MaskLike = "causal"  # stored as a Mask
    kernel: str = "rollout"
    alpha_schedule: str | None = None
    target: int | None = None
    log_domain: str = "auto"  # auto | on | off
    seed: int = 0  # recorded with the results; the theory itself draws nothing
    no_size_check: bool = False
    alphas: Float[np.ndarray, " H"] = field(init=False, repr=False, compare=False)
    target_position: int = field(init=False)

    def __post_init__(self) -> None:
        check_seed(self.seed)
        check_positive("length", self.length)
        if isinstance(self.layers, int) and self.layers < 1:
            raise UserError(f"--layers must be at least 1 (a depth H of layers), got {self.layers}")
        if self.length < 2:
            raise UserError(
                f"--length must be at least 2 (one position is only the target), got {self.length}"
            )
        if not self.no_size_check and isinstance(self.layers, int) and self.layers >= 0:
            need, seconds = theory_budget(
                self.layers,
                self.length,
                kernel=self.kernel,
                causal=self.mask == "causal" or isinstance(self.mask, Causal),
                log=self.log_domain == "on",
                target=self.target,
            )
            what = f"theory --length {self.length} --layers {self.layers}"
            check_budget(what, need_bytes=need, seconds=seconds)
        alphas = parse_schedule(self.alpha_schedule, self.alpha, self.layers)
        check_choice("kernel", self.kernel, KERNELS)
        check_choice("log_domain", self.log_domain, LOG_DOMAINS)
        mask = parse_mask(self.mask)
        mask.validate(self.length)
        object.__setattr__(self, "mask", mask)
        object.__setattr__(self, "alphas", alphas)
        position = check_position("target", self.target, self.length)
        object.__setattr__(self, "target_position", position)

    def record(self) -> dict[str, Any]:
        """The JSON form: the options as given (mask as its spec) and the alphas used."""
        return {
            "layers": self.layers,
            "length": self.length,
            "alpha": self.alpha,
            "mask": parse_mask(self.mask).spec(),  # a Mask since __post_init__: as is
            "kernel": self.kernel,
            "alpha_schedule": self.alpha_schedule,
            "target": self.target,
            "log_domain": self.log_domain,
            "seed": self.seed,
            "alphas": self.alphas.tolist(),
        }


@dataclass(frozen=True)
class TheoryResult:
    """Everything ``lostmid theory`` computes. Arrays hold positions 1..L in order."""

    config: TheoryConfig
    influence: Float[np.ndarray, " L"]
    log10_influence: Float[np.ndarray, " L"]
    log_domain_used: bool
    path_weights: Float[np.ndarray, " K"]
    summary: ProfileSummary
    continuum: Float[np.ndarray, " L"] | None
    continuum_error: ContinuumError | None
    regions: Regions | None

    @property
    def alphas(self) -> Float[np.ndarray, " H"]:
        return self.config.alphas

    @property
    def target(self) -> int:
        """The 1-indexed target position."""
        return self.config.target_position

    def record(self) -> dict[str, Any]:
        """The JSON layout of theory.json (without run metadata)."""
        c = self.config
        return to_jsonable(
            {
                "schema": SCHEMA,
                "influence": self.influence,
                "log10_influence": self.log10_influence,
                "peak_to_valley": self.summary.peak_to_valley,
                "log10_peak_to_valley": self.summary.log10_peak_to_valley,
                "params": {
                    "length": c.length,
                    "layers": c.layers,
                    "alphas": c.alphas,
                    "mask": c.record()["mask"],
                    "kernel": c.kernel,
                    "target": self.target,
                    "log_domain": self.log_domain_used,
                },
                "summary": self.summary.record(),
                "path_weights": self.path_weights,
                "continuum": self.continuum,
                "continuum_error": self.continuum_error,
                "regions": self.regions,
            }
        )


def compute_theory(config: TheoryConfig) -> TheoryResult:
    """Exact row, summary, and (causal rollout/jacobian) continuum and regions.

    >>> r = compute_theory(TheoryConfig(layers=4, length=64, alpha=0.5))
    >>> r.summary.valley_position
    63
    """
    from lostmid.theory.continuum import _continuum_row, _regions, continuum_error

    mask = parse_mask(config.mask)  # parsed in TheoryConfig.__post_init__: returned as is
    alphas, t = config.alphas, config.target_position
    length, kernel = config.length, config.kernel
    support = mask.support(length, t, config.layers)
    use_log = config.log_domain == "on"
    if not use_log:
        influence = _influence(mask, length, alphas, kernel, t, LinearOps)
        inside = influence[support[0] - 1 : support[1]]
        use_log = config.log_domain == "auto" and bool(np.any(inside < _TINY))
    if use_log:
        log10 = _influence(mask, length, alphas, kernel, t, LogOps) / np.log(10.0)
        influence = 10.0**log10
    else:
        with np.errstate(divide="ignore"):
            log10 = np.log10(influence)
    summary = _summarise(log10, None, t, support)
    cont = cerr = reg = None
    if isinstance(mask, Causal) and length <= _CONTINUUM_MAX_LENGTH:
        cont = _continuum_row(length, alphas, kernel, t)
        if not use_log:  # a float64 comparison is meaningless once values underflow
            cerr = continuum_error(influence, cont, t)
        if kernel == "rollout" and config.layers > 0:
            reg = _regions(influence, alphas, t)
    return TheoryResult(
        config=config,
        influence=influence,
        log10_influence=log10,
        log_domain_used=use_log,
        path_weights=_path_weights(alphas),
        summary=summary,
        continuum=cont,
        continuum_error=cerr,
        regions=reg,
    )


FOLDER = RunFolder("theory", writes=("theory.json", "theory.png"))
"""What ``run_theory`` writes into ``--out``."""


@FOLDER.holds
def run_theory(
    config: TheoryConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Console | None = None,
    seed: int | None = None,
) -> TheoryResult:
    """Compute the theory and write ``out/theory.json`` and ``out/theory.png``.

    The seed lives in ``config``; the ``seed`` keyword is kept only for callers written
    before that and, when given, replaces ``config.seed``.
    """
    from lostmid.report.plots import plot_theory, save_figure

    if seed is not None:
        config = replace(config, seed=seed)
    folder = FOLDER.open(out, overwrite=overwrite)
    timer = Timer()
    with timer("compute"):
        result = compute_theory(config)
    record = result.record()
    with timer("plot"):
        s = result.summary
        title = (
            f"{record['params']['mask']} mask, {config.kernel} kernel, H={config.layers}, "
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
    record["metadata"] = folder.metadata(config.record(), config.seed, timer.seconds)
    write_json(out / "theory.json", record)
    if console is not None:
        console.print(fit_table(summary_table(result)))
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
