"""``lostmid reproduce``: run (or resume) every stage, then write the claims, the numbers,
the figures and the report."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console

from lostmid.compare.claims import Claim
from lostmid.influence.record import MeasureRecord, write_measure
from lostmid.models.identity import identified
from lostmid.models.spec import model_slug
from lostmid.report.layout import fit_table
from lostmid.reproduce import core
from lostmid.reproduce import sections as registry
from lostmid.reproduce.analysis import ModelAnalysis, ReproduceResult, measured_profiles
from lostmid.reproduce.claims import claims_table
from lostmid.reproduce.config import ReproduceConfig
from lostmid.reproduce.figures import summary_figure
from lostmid.reproduce.plan import PlannedStage, claims_of, panels_of
from lostmid.reproduce.report import build_report
from lostmid.reproduce.stages import (
    AT_INIT,
    SeedMeasurement,
    check_models,
    run_device,
    write_at_init,
)
from lostmid.runinfo import write_json
from lostmid.runs.backend import Backend
from lostmid.runs.folder import OpenRun, RunFolder
from lostmid.runs.jobs import Job, Resources
from lostmid.runs.stages import run_stages as run_backend_stages
from lostmid.runs.store import StageStore


def plan_stages(config: ReproduceConfig, device: str, out: Path) -> list[PlannedStage]:
    """Every stage of the run, in order: the core's (each model at each seed), then each
    section's (:data:`lostmid.reproduce.sections.SECTIONS`)."""
    plan = core.SECTION.stages(config, device, out)
    for section in registry.SECTIONS:
        plan += section.stages(config, device, out)
    return plan


def run_stages(
    plan: list[PlannedStage],
    store: StageStore,
    console: Console | None,
    *,
    backend: Backend | None = None,
    device: str = "cpu",
    label: str = "reproduce",
) -> dict[str, Any]:
    """Each stage's result (saved or computed, read back from its record), by name.
    ``label``: the command whose progress lines these are (``diagnose`` runs this too).

    ``backend``: where the stages not saved yet run (:func:`lostmid.runs.stages.run_stages`;
    default in this process, one after the other). On Ray each stage asks for
    ``backend.cpus`` CPUs and, when ``device`` is cuda, a GPU.
    """
    backend = backend or Backend()
    resources = Resources(cpus=backend.cpus, gpus=backend.stage_gpus(device))
    jobs = [
        Job(s.name, s.config, s.compute, resources, s.threads, priority=s.priority) for s in plan
    ]
    records = run_backend_stages(jobs, store, backend, label=label, console=console)
    return {stage.name: stage.read(records[stage.name]) for stage in plan}


def measure_file(
    measured: MeasureRecord,
    facts: Mapping[str, Any],
    config: ReproduceConfig,
    seeds: list[int],
    metadata: Mapping[str, Any],
) -> MeasureRecord:
    """``measured`` with the facts of this run: what its measure.json says it is."""
    scale = config.scale
    return replace(
        measured,
        facts={
            **facts,
            "length": scale.length,
            "samples": scale.samples,
            "probes": scale.probes,
            "gain_samples": scale.gain_inputs,
            "gain_directions": scale.gain_directions,
            "seeds": seeds,
            "output": "hidden",
            "note": "one seed"
            if len(seeds) == 1
            else "seeds pooled: the mean of the profiles normalised to sum 1, times the mean "
            "total (compare's pooling)",
        },
        metadata=metadata,
    )


def write_measure_json(
    folder: Path,
    analysis: ModelAnalysis,
    runs: list[SeedMeasurement],
    config: ReproduceConfig,
    metadata: Mapping[str, Any],
) -> None:
    """``measure.json`` (the seeds pooled) and ``seed-S/measure.json`` (each seed) under
    ``folder``, through the one writer (:func:`lostmid.influence.record.write_measure`):
    ``lostmid compare --measured F1 --measured F2 ... --predict`` on the per-seed files
    scores them the way the report does."""
    per_seed = measured_profiles(analysis.name, runs)
    assert per_seed is not None
    for run, measured in zip(runs, per_seed, strict=True):
        path = folder / f"seed-{run.seed}" / "measure.json"
        write_measure(path, measure_file(measured, run.model, config, [run.seed], metadata))
    pooled = measure_file(analysis.on, analysis.model, config, list(analysis.seeds), metadata)
    write_measure(folder / "measure.json", pooled)


FOLDER = RunFolder("reproduce", resumes="stages")
"""What ``run_reproduce`` writes into ``--out``: its stages, kept for a rerun."""


@FOLDER.holds
def run_reproduce(
    config: ReproduceConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Console | None = None,
    backend: Backend | None = None,
) -> ReproduceResult:
    """Run (or resume) every stage, then write the claims, the numbers and the report.

    ``backend``: where the stages run (default: the local backend, as many stages at
    once as this process has cores; ``Backend(jobs=1)``: one after the other in this
    process); with Ray the independent stages run in parallel (:func:`run_stages`).

    Writes under ``out``: ``report.html``, ``claims.json``, ``reproduce.json`` (the
    result's record), ``stages/*.json``, ``figures/*.png``, ``MODEL/measure.json`` per
    model with ``MODEL/seed-S/measure.json`` and ``MODEL/seed-S/at-init.npz`` per seed
    (:data:`lostmid.reproduce.stages.AT_INIT`: the stage's whole measurement, to judge
    again without a model) and ``train/``. A finished stage is reused unless ``overwrite``.
    """
    device = check_run(config, out)
    claim = identified(config.record(), (*config.trained, config.tokenizer))
    folder = FOLDER.open(out, claim, overwrite=overwrite)
    return run_opened(config, folder, out=out, device=device, console=console, backend=backend)


def check_run(config: ReproduceConfig, out: Path) -> str:
    """Everything a run can be refused for, in seconds, before its folder is opened (so a
    refused run claims no ``--out``): the models, the device, every section's own check,
    and every planned stage's size as its own command would check it. Returns the
    device."""
    device = run_device(config)
    check_models(config, device)  # fail in seconds, not after a stage
    if config.tokenizer is not None:  # the trained models' tokenizer, read once now
        from lostmid.behaviour.decoding.tokenizers import load_tokenizer

        load_tokenizer(config.tokenizer, config.trust_remote_code)
    check_trained_prompts(config)
    core.SECTION.check(config)
    for section in registry.SECTIONS:
        section.check(config)  # a folder a section would read, read now
    for stage in plan_stages(config, device, out):
        if stage.check is not None:
            stage.check()
    return device


def check_trained_prompts(config: ReproduceConfig) -> None:
    """Each ``--trained`` model's tokenizer found and its chat template rendered once
    (:func:`lostmid.behaviour.decoding.prompts.prompt_format`), before the folder is
    claimed: a model without a tokenizer is fixed by adding ``--tokenizer`` to the same
    command, which a claimed folder would refuse as another configuration."""
    from lostmid.behaviour.decoding.prompts import prompt_format
    from lostmid.behaviour.decoding.tokenizers import tokenizer_for_spec

    for spec in config.trained_specs(()) if config.trained else ():
        prompt_format(spec.chat_template, tokenizer_for_spec(spec), spec.answer_prefix)


def run_opened(
    config: ReproduceConfig,
    folder: OpenRun,
    *,
    out: Path,
    device: str,
    console: Console | None = None,
    backend: Backend | None = None,
    label: str = "reproduce",
) -> ReproduceResult:
    """The run in an opened folder (:func:`run_reproduce`, ``lostmid diagnose``): the
    stages, the claims, the numbers and the report; ``label``: the command, as its
    progress lines say it."""
    store = folder.stages()
    start = time.perf_counter()
    backend = backend or Backend()
    plan = plan_stages(config, device, out)
    results = run_stages(plan, store, console, backend=backend, device=device, label=label)

    measured = core.SECTION.collect(config, results, out)
    sections = {s.key: s.collect(config, results, out) for s in registry.SECTIONS}
    claims: list[Claim] = list(measured.claims)
    claims += [c for s in registry.SECTIONS for c in claims_of(sections[s.key])]
    # the lead figure: a panel from each part that gives one, the core's first
    panels = panels_of(core.SECTION, measured)
    panels += [p for s in registry.SECTIONS for p in panels_of(s, sections[s.key])]
    figures = summary_figure(panels, out / "figures")
    figures |= core.SECTION.figures(measured, out / "figures")
    for s in registry.SECTIONS:
        if sections[s.key] is not None:
            figures |= s.figures(sections[s.key], out / "figures")
    seconds = time.perf_counter() - start
    metadata = folder.metadata(
        config.record(),
        config.seed,
        {"total": seconds},
    )
    metadata["backend"] = backend.record()
    metadata["stages"] = store.record()
    result = ReproduceResult(
        config=config,
        sections={core.SECTION.key: measured, **sections},
        claims=tuple(claims),
        figures=figures,
        metadata=metadata,
    )
    for model, analysis in measured.models.items():
        write_measure_json(
            out / model_slug(model), analysis, measured.runs[model], config, metadata
        )
        for run in measured.runs[model]:  # each seed's whole measurement, compact
            write_at_init(run, out / model_slug(model) / f"seed-{run.seed}" / AT_INIT)
    write_json(out / "claims.json", list(result.claims))
    write_json(out / "reproduce.json", result)
    build_report(result).write(out / "report.html")
    if console is not None:
        console.print(fit_table(claims_table(result.claims)))
        console.print(
            f"{len(store.computed)} stages computed, {len(store.reused)} reused, "
            f"{seconds:.0f} s; wrote {out / 'report.html'}, {out / 'claims.json'}"
        )
    return result
