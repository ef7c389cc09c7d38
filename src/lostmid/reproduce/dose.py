"""The depth dose-response section of ``lostmid reproduce``.

The claim "structural primacy at birth predicts behavioural primacy during learning":
retrieval models trained from scratch at several depths (the dose), gold record drawn
uniformly, the same task, width, steps and tokens at every depth; its verdict is the
pre-stated rule of :mod:`lostmid.behaviour.dose.verdict`
(:func:`~lostmid.behaviour.dose.verdict.dose_verdict`),
whose three answers map onto the claims table's words: ``supported`` -> reproduced,
``not supported`` -> not reproduced, ``inconclusive`` -> inconclusive (the rule's own
word is in the claim's numbers too).

Scales (:data:`DOSE_SCALES`; the claim names the one it ran):

* ``quick`` (about 35 s of one core): depths 2 and 3, one seed, 250 steps of the small
  setting (``retrieval-depth-small``: 6 records, width 128). One seed gives no
  interval, so the rule says ``inconclusive`` by construction: a smoke run of the
  design;
* ``default`` (about 3 min of one core): depths 2 and 3, 3 seeds, 500 steps of the
  small setting (depth 4 did not learn in 400 steps, and 500 steps at depth 4 would not
  fit the budget);
* ``full``: the whole design of ``benchmarks/depth_dose.toml``: depths 2, 4, 8
  (``retrieval-depth-H``: 12 records, 2000 steps), 3 seeds, and at depth 8 the same
  without positional encoding and with half the rows stdlib text (about 1.7 CPU hours);
* a folder holding ``dose.json`` (a finished ``lostmid sweep --task train-retrieval``,
  e.g. the full design): its runs, read back, nothing trained.

Each run is one stage (``dose-SCALE-H{H}-{variant}-seed{S}``, resumable) whose files are
under ``OUT/dose/H{H}-{variant}/seed-S/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lostmid.behaviour.dose.summary import BASE, DoseRun, DoseSummary
from lostmid.behaviour.dose.verdict import DOSE_RULE
from lostmid.compare.claims import Claim
from lostmid.reproduce.plan import PlannedStage, StandardSection, preset_threads
from lostmid.stats.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_SUPPORTED,
    REPRODUCED,
    SUPPORTED,
)

if TYPE_CHECKING:
    from lostmid.reproduce.config import ReproduceConfig

DOSE_CLAIM = "Structural primacy at birth predicts behavioural primacy during learning"
DOSE_PAPER = (
    "implied: eta ~ rho_H, so records with less influence at init are learnt later "
    "(slope 1 read literally; no number given)"
)
CLAIM_VERDICT = {
    SUPPORTED: REPRODUCED,
    NOT_SUPPORTED: NOT_REPRODUCED,
    INCONCLUSIVE: INCONCLUSIVE,
}
DOSE_JSON = "dose.json"


@dataclass(frozen=True)
class DoseScale:
    """One scale of the section: a retrieval preset (whose task, width and optimiser
    every arm shares; depth from ``depths``), the seeds, the steps (None: the preset's)
    and the variants at the deepest depth (``no-rope``, ``mix 0.5``)."""

    name: str
    preset: str
    depths: tuple[int, ...]
    seeds: int
    steps: int | None
    variants: tuple[str, ...] = ()
    presets_by_depth: bool = False

    def preset_at(self, depth: int) -> str:
        return f"retrieval-depth-{depth}" if self.presets_by_depth else self.preset


DOSE_SCALES = {
    "quick": DoseScale("quick", "retrieval-depth-small", (2, 3), 1, 250),
    "default": DoseScale("default", "retrieval-depth-small", (2, 3), 3, 500),
    "full": DoseScale(
        "full",
        "retrieval-depth-8",
        (2, 4, 8),
        3,
        None,
        variants=("no-rope", "mix 0.5"),
        presets_by_depth=True,
    ),
}


def _variant_changes(variant: str) -> dict[str, Any]:
    if variant == BASE:
        return {}
    if variant == "no-rope":
        return {"no_rope": True}
    if variant.startswith("mix "):
        return {"mix": float(variant.split()[1])}
    raise ValueError(f"unknown dose variant {variant!r}")


def dose_run(
    preset: str, layers: int, variant: str, steps: int | None, seed: int, folder: Path
) -> DoseRun:
    """Train one arm's run into ``folder`` (resuming a run left there) and reduce it."""
    from lostmid.behaviour.training.config import resolve_retrieval_config
    from lostmid.behaviour.training.run import RESULT, can_resume, run_retrieval_training
    from lostmid.files import read_json_object

    config = resolve_retrieval_config(
        preset, layers=layers, steps=steps, seed=seed, **_variant_changes(variant)
    )
    resume = can_resume(config, folder)
    run_retrieval_training(config, out=folder, overwrite=not resume, resume=resume)
    return DoseRun.from_retrieval(read_json_object(folder / RESULT), str(folder))


def dose_stages(dose: str, seed: int, out: Path) -> list[PlannedStage]:
    """The stages of the section at scale ``dose`` (none for ``off`` or a folder)."""
    from lostmid.behaviour.training import retrieval_preset

    scale = DOSE_SCALES.get(dose)
    if scale is None:
        return []
    arms = [(h, BASE) for h in scale.depths] + [(max(scale.depths), v) for v in scale.variants]
    stages: list[PlannedStage] = []
    for layers, variant in arms:
        slug = f"H{layers}-{variant.replace(' ', '')}"
        preset = scale.preset_at(layers)
        spec = replace(retrieval_preset(preset).train.model, layers=layers)
        for s in range(seed, seed + scale.seeds):
            folder = out / "dose" / slug / f"seed-{s}"
            stages.append(
                PlannedStage(
                    f"dose-{scale.name}-{slug}-seed{s}",
                    {
                        "preset": preset,
                        "layers": layers,
                        "variant": variant,
                        "steps": scale.steps,
                        "seed": s,
                        "record": 1,
                    },
                    partial(dose_run, preset, layers, variant, scale.steps, s, folder),
                    DoseRun.from_record,
                    threads=preset_threads(spec),
                )
            )
    return stages


@dataclass(frozen=True)
class DoseSection:
    """The section: where its runs came from (a scale or a folder) and their summary."""

    source: str
    summary: DoseSummary

    @classmethod
    def of(cls, dose: str, results: Mapping[str, Any], seed: int) -> DoseSection | None:
        """From the stage results of :func:`dose_stages`, or read from a folder; None
        for ``off``."""
        if dose == "off":
            return None
        if dose in DOSE_SCALES:
            names = [stage.name for stage in dose_stages(dose, seed, Path("."))]
            runs = tuple(results[n] for n in names if n in results)
            return cls(f"{dose} scale", DoseSummary(runs)) if runs else None
        from lostmid.files import read_json_object

        record = read_json_object(Path(dose) / DOSE_JSON)
        return cls(f"the runs of {dose}", DoseSummary.from_record(record))

    @property
    def claims(self) -> tuple[Claim, ...]:
        verdict = self.summary.verdict()
        depths = sorted({r.layers for r in self.summary.runs if r.variant == BASE})
        seeds = sorted({r.seed for r in self.summary.runs})
        scale = (
            f"{self.source}: depths {', '.join(map(str, depths))}, {len(seeds)} seed(s), "
            f"{len(self.summary.runs[0].influence_init)} records"
        )
        if verdict is None:
            ours = f"{scale}; fewer than 2 depths: no dose-response"
            return (Claim(DOSE_CLAIM, DOSE_PAPER, ours, INCONCLUSIVE, DOSE_RULE),)
        slope = verdict.slope
        slope_text = (
            "n/a"
            if slope is None
            else f"{slope.estimate:.2f} [{_finite(slope.ci_low)}, {_finite(slope.ci_high)}]"
        )
        ours = (
            f"{scale}; dose S(H={verdict.depths[-1]}) - S(H={verdict.depths[0]}) = "
            f"{verdict.dose.estimate:.2f} [{_finite(verdict.dose.ci_low)}, "
            f"{_finite(verdict.dose.ci_high)}]; slope of B on S {slope_text}; rule: "
            f"{verdict.verdict} ({verdict.reason})"
        )
        return (Claim(DOSE_CLAIM, DOSE_PAPER, ours, CLAIM_VERDICT[verdict.verdict], DOSE_RULE),)

    def table(self) -> list[dict[str, Any]]:
        """One row per arm: readouts 1-3 with their 95% t intervals over seeds."""
        rows = []
        for arm in self.summary.record()["arms"]:
            rows.append(
                {
                    "arm": arm["arm"],
                    "seeds": len(arm["seeds"]),
                    "S (ln I1/IP at init)": _text(arm["structural"]["primacy"]),
                    "span I1/min I": _text(arm["structural"]["span"], 1),
                    "B (ln T_last/T_first)": _text(arm["learning"]["order"]),
                    "T slope (tokens/record)": _text(
                        arm["learning"]["time_slope_tokens_per_record"], 0
                    ),
                    "final accuracy": _text(arm["final"]["mean"]),
                    "final gap": _text(arm["final"]["gap"]),
                    "eta vs rho_H (Spearman)": _text(arm["signal"]["eta_vs_rho"]["spearman"]),
                    "CPU s per run": _text(arm["cpu_seconds"], 0),
                }
            )
        return rows

    def paragraphs(self) -> tuple[str, ...]:
        return (
            f"Runs: {self.source}. Each run trains a retrieval model from scratch with the "
            "gold record drawn uniformly; every depth has the same task, width, steps and "
            "tokens, and seed s the same batches and held-out examples at every depth. "
            "S = ln(I(1)/I(P)): the first over the last record's influence on the query at "
            "init (the dose); B = the least-squares slope of ln T(r) on the record's place "
            "in [0, 1], T(r) the tokens until record r first reaches half its final "
            "argmax accuracy (> 0: the first records are learnt first).",
            "The verdict is the rule stated before the full design ran "
            "(lostmid.behaviour.dose.verdict): " + DOSE_RULE + ". Intervals: 95% t over seeds.",
        )

    def figure(self, folder: Path) -> Path:
        """``dose.png`` (:func:`lostmid.behaviour.dose.run.plot_dose`)."""
        from lostmid.behaviour.dose.run import plot_dose
        from lostmid.report.plots import save_figure

        return save_figure(plot_dose(self.summary.record()), folder / "dose.png")

    def record(self) -> dict[str, Any]:
        return {"source": self.source, **self.summary.record(), "claims": list(self.claims)}


def _finite(value: float) -> str:
    return f"{value:.2f}" if abs(value) != float("inf") else ("inf" if value > 0 else "-inf")


def _text(interval: Mapping[str, Any] | None, digits: int = 2) -> str:
    """``mean [low, high]`` of an interval record; the mean alone for one seed."""
    if interval is None:
        return "n/a"
    if interval["ci_low"] is None:
        return f"{interval['estimate']:.{digits}f} (1 seed)"
    return (
        f"{interval['estimate']:.{digits}f} [{interval['ci_low']:.{digits}f}, "
        f"{interval['ci_high']:.{digits}f}]"
    )


class DosePlugin(StandardSection):
    """The depth dose-response section (:class:`lostmid.reproduce.plan.Section`):
    retrieval models of several depths trained alike, the dose at birth against the order
    of learning."""

    key = "dose"
    title = "Depth dose-response: does the structure at birth shape the order of learning?"
    figure_prefix = "dose"

    def stages(self, config: ReproduceConfig, device: str, out: Path) -> list[PlannedStage]:
        return dose_stages(config.scale.dose, config.seed, out)

    def collect(
        self, config: ReproduceConfig, results: Mapping[str, Any], out: Path
    ) -> DoseSection | None:
        return DoseSection.of(config.scale.dose, results, config.seed)

    def figures(self, value: DoseSection, folder: Path) -> dict[str, Path]:
        return {"dose": value.figure(folder)}


SECTION = DosePlugin()
