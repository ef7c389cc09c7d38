"""The core of a reproduce run as a section: the measured models against the theory.

Each model of ``--models`` is measured at each seed (one stage a model and seed:
:func:`lostmid.reproduce.stages.measure_stage`), analysed (:func:`~lostmid.reproduce.
analysis.analyse_model`) and judged (:func:`~lostmid.reproduce.claims.model_claims`).
:data:`SECTION` goes through the run as the sections of
:data:`lostmid.reproduce.sections.SECTIONS` do (:class:`lostmid.reproduce.plan.Section`:
its check, its stages, what it makes of their results, its claims, its figures and its
panels of the lead figure, its part of the report: :mod:`lostmid.reproduce.core_report`),
before them: its stages are planned first, its claims and report sections come first,
and its record is reproduce.json's ``models``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from lostmid.compare.claims import Claim
from lostmid.models.spec import model_slug
from lostmid.report.html import Report
from lostmid.reproduce.analysis import ModelAnalysis, analyse_model
from lostmid.reproduce.claims import model_claims
from lostmid.reproduce.config import ReproduceConfig, Scale
from lostmid.reproduce.core_report import core_report
from lostmid.reproduce.figures import model_figures, model_panel
from lostmid.reproduce.plan import PlannedStage
from lostmid.reproduce.stages import SeedMeasurement, measure_stage


def measure_stage_name(model: str, seed: int) -> str:
    return f"measure-{model_slug(model)}-seed{seed}"


def check_measure_stage(model: str, scale: Scale, device: str) -> None:
    """What ``lostmid measure`` refuses for its size (on the cpu), refused before any
    stage runs."""
    if device != "cpu":
        return
    from lostmid.influence import MeasureConfig
    from lostmid.influence.run import check_measure_size

    check_measure_size(
        MeasureConfig(
            model=model,
            length=scale.length,
            samples=scale.samples,
            probes=scale.probes,
            gain_directions=scale.gain_directions,
            batch_size=scale.batch_size,
        ),
        "sdpa",
        override=None,  # reproduce has no --no-size-check
    )


@dataclass(frozen=True)
class Core:
    """The core's result: each model's analysis and its seeds' measurements, by spec
    (none in a run of the trained-model sections alone)."""

    models: Mapping[str, ModelAnalysis]
    runs: Mapping[str, list[SeedMeasurement]]
    scale: Scale  # the run's (its report states the design)

    @property
    def claims(self) -> tuple[Claim, ...]:
        return tuple(c for a in self.models.values() for c in model_claims(a))

    def record(self) -> dict[str, Any]:
        """reproduce.json's ``models``: each model's analysis by spec."""
        return {m: a.record() for m, a in self.models.items()}


class CoreSection:
    """The core (module doc), key ``models``: a :class:`lostmid.reproduce.plan.Section`."""

    key = "models"

    def check(self, config: ReproduceConfig) -> None:
        """Nothing beyond its stages' own checks (the models themselves are checked with
        the run's device: :func:`lostmid.reproduce.stages.check_models`)."""

    def stages(self, config: ReproduceConfig, device: str, out: Path) -> list[PlannedStage]:
        """Each model at each seed; growth with depth on the first seed only."""
        scale, seeds = config.scale, config.seeds()
        plan = []
        for model in config.models:
            for seed in seeds:
                first = seed == seeds[0]
                plan.append(
                    PlannedStage(
                        measure_stage_name(model, seed),
                        {
                            "model": model,
                            "seed": seed,
                            "length": scale.length,
                            "samples": scale.samples,
                            "probes": scale.probes,
                            "vocab_size": scale.vocab_size,
                            "per_layer": "layer 1 and depth points" if first else "layer 1",
                            "depth_points": scale.depth_points if first else None,
                            "off_samples": scale.first_part,
                            "gain_samples": scale.gain_inputs,
                            "gain_directions": scale.gain_directions,
                            "batch_size": scale.batch_size,
                            "device": device,
                        },
                        partial(measure_stage, model, seed, scale, first, device),
                        SeedMeasurement.from_record,
                        check=partial(check_measure_stage, model, scale, device),
                    )
                )
        return plan

    def collect(self, config: ReproduceConfig, results: Mapping[str, Any], out: Path) -> Core:
        runs = {
            model: [results[measure_stage_name(model, s)] for s in config.seeds()]
            for model in config.models
        }
        models = {model: analyse_model(model, runs[model]) for model in runs}
        return Core(models, runs, config.scale)

    def figures(self, value: Core, folder: Path) -> dict[str, Path]:
        """Each model's overlay, positional and depth figures."""
        found: dict[str, Path] = {}
        for analysis in value.models.values():
            found |= model_figures(analysis, folder)
        return found

    def record(self, value: Core) -> dict[str, Any]:
        return value.record()

    def report(self, report: Report, value: Core | None, figures: Mapping[str, Path]) -> None:
        """The core's sections of report.html (:func:`lostmid.reproduce.core_report.
        core_report`); none when the run measured no model at init."""
        if value is None or not value.models:
            return
        core_report(report, value.scale, value.models, figures)

    def summary_panels(self, value: Core) -> list[Callable[[Any], None]]:
        """One panel of ``summary.png`` a model: its step-0 profile against the theories."""
        return [partial(model_panel, a) for a in value.models.values()]


SECTION = CoreSection()
