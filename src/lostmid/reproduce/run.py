"""``lostmid reproduce``: run (or resume) every stage, then write the claims, the numbers,
the figures and the report."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from lostmid.compare.claims import Claim
from lostmid.errors import UserError
from lostmid.influence.record import MeasureRecord, write_measure
from lostmid.report.layout import fit_table
from lostmid.reproduce.analysis import (
    ModelAnalysis,
    ReproduceResult,
    analyse_model,
    measured_profiles,
)
from lostmid.reproduce.behaviour import Behaviour, BehaviourSeed, behaviour_stage
from lostmid.reproduce.checkpoints import CHECKPOINT_SCALES, CheckpointSection, checkpoint_stage
from lostmid.reproduce.claims import claims_table, model_claims
from lostmid.reproduce.config import ReproduceConfig, model_slug
from lostmid.reproduce.dose import DoseSection, dose_stages
from lostmid.reproduce.figures import make_figures
from lostmid.reproduce.remedies import RemediesSection, remedies_stage
from lostmid.reproduce.report import build_report
from lostmid.reproduce.stages import SeedMeasurement, check_models, measure_stage, run_device
from lostmid.reproduce.training import Training, TrainingSummary, training_stage
from lostmid.runinfo import run_metadata, write_json
from lostmid.runs.backend import Backend
from lostmid.runs.claim import claim_out
from lostmid.runs.jobs import Job, Resources
from lostmid.runs.lock import holds_out
from lostmid.runs.stages import run_stages as run_backend_stages
from lostmid.runs.store import StageStore


@dataclass(frozen=True)
class PlannedStage:
    """One stage of the plan: its name, the configuration that identifies its saved
    result, how to compute it and how to read its record back."""

    name: str
    config: Mapping[str, Any]
    compute: Callable[[], Any]
    read: Callable[[Mapping[str, Any]], Any]
    threads: int | None = None  # what the stage is worth (Job.threads); None: its share


SMALL_MODEL_THREADS = 1
"""The training and retrieval stages train models of well under a million parameters
(presets tiny, retrieval-valley): one thread runs them as fast as two
(:func:`lostmid.runs.jobs.threads_for`), the other core goes to another stage."""


def measure_stage_name(model: str, seed: int) -> str:
    return f"measure-{model_slug(model)}-seed{seed}"


def plan_stages(config: ReproduceConfig, device: str, out: Path) -> list[PlannedStage]:
    """Every stage of the run, in order: each model at each seed, then each training
    seed, then each retrieval (behaviour) seed."""
    scale, seeds = config.scale, config.seeds()
    plan = []
    for model in config.models:
        for seed in seeds:
            first = seed == seeds[0]  # growth with depth on the first seed only
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
                )
            )
    if scale.train_steps != 0:
        for seed in config.train_seeds():
            plan.append(
                PlannedStage(
                    f"train-seed{seed}",
                    {"preset": scale.train_preset, "steps": scale.train_steps, "seed": seed},
                    partial(training_stage, config, seed, out / "train" / f"seed-{seed}"),
                    TrainingSummary.from_record,
                    threads=SMALL_MODEL_THREADS,
                )
            )
    if scale.behaviour_steps != 0:
        for seed in config.behaviour_seeds():
            plan.append(
                PlannedStage(
                    f"behaviour-seed{seed}",
                    {
                        "preset": scale.behaviour_preset,
                        "record": 2,  # BehaviourSeed with its gold law
                        "steps": scale.behaviour_steps,
                        "seed": seed,
                    },
                    partial(
                        behaviour_stage,
                        scale.behaviour_preset,
                        scale.behaviour_steps,
                        seed,
                        out / "behaviour" / f"seed-{seed}",
                    ),
                    BehaviourSeed.from_record,
                    threads=SMALL_MODEL_THREADS,
                )
            )
    # the depth dose-response (issue 19): one stage per run of the section's scale
    plan += [
        PlannedStage(*stage, threads=SMALL_MODEL_THREADS)
        for stage in dose_stages(scale.dose, config.seed, out)
    ]
    if scale.checkpoints in CHECKPOINT_SCALES:  # real checkpoints (issue 24)
        plan.append(
            PlannedStage(
                f"checkpoints-{scale.checkpoints}",
                {"scale": scale.checkpoints, "seed": 0, "record": 1},
                partial(checkpoint_stage, scale.checkpoints, out / "checkpoints"),
                dict,
            )
        )
    if config.remedies in ("quick", "default"):
        plan.append(
            PlannedStage(
                "remedies",
                {"scale": config.remedies, "seed": config.seed},
                partial(remedies_stage, str(config.remedies), config.seed, out / "remedies"),
                RemediesSection.from_record,
            )
        )
    return plan


def run_stages(
    plan: list[PlannedStage],
    store: StageStore,
    console: Console | None,
    *,
    backend: Backend | None = None,
    device: str = "cpu",
) -> dict[str, Any]:
    """Each stage's result (saved or computed, read back from its record), by name.

    ``backend``: where the stages not saved yet run (:func:`lostmid.runs.stages.run_stages`;
    default in this process, one after the other). On Ray each stage asks for
    ``backend.cpus`` CPUs and, when ``device`` is cuda, a GPU.
    """
    backend = backend or Backend()
    resources = Resources(cpus=backend.cpus, gpus=backend.stage_gpus(device))
    jobs = [Job(s.name, s.config, s.compute, resources, s.threads) for s in plan]
    records = run_backend_stages(jobs, store, backend, label="reproduce", console=console)
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


@holds_out("reproduce")
def run_reproduce(
    config: ReproduceConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Console | None = None,
    backend: Backend | None = None,
) -> ReproduceResult:
    """Run (or resume) every stage, then write the claims, the numbers and the report.

    ``backend``: where the stages run (default: in this process, one after the other);
    with Ray the independent stages run in parallel (:func:`run_stages`).

    Writes under ``out``: ``report.html``, ``claims.json``, ``reproduce.json`` (the
    result's record), ``stages/*.json``, ``figures/*.png``, ``MODEL/measure.json`` per
    model and ``train/``. A finished stage is reused unless ``overwrite``.
    """
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a directory")
    device = run_device(config)
    check_models(config, device)  # fail in seconds, not after a stage
    claim_out(out, "reproduce", config.record(), overwrite=overwrite)
    store = StageStore(out, fresh=overwrite)
    start = time.perf_counter()
    backend = backend or Backend()
    results = run_stages(
        plan_stages(config, device, out), store, console, backend=backend, device=device
    )

    runs = {
        model: [results[measure_stage_name(model, s)] for s in config.seeds()]
        for model in config.models
    }
    analyses = {model: analyse_model(model, runs[model]) for model in config.models}
    trained = [
        results[f"train-seed{s}"] for s in config.train_seeds() if f"train-seed{s}" in results
    ]
    training = Training(tuple(trained)) if trained else None
    runs_b = [
        results[f"behaviour-seed{s}"]
        for s in config.behaviour_seeds()
        if f"behaviour-seed{s}" in results
    ]
    behaviour = Behaviour(tuple(runs_b)) if runs_b else None
    claims: list[Claim] = [c for a in analyses.values() for c in model_claims(a)]
    if training is not None:
        claims += training.claims
    if behaviour is not None:
        claims += behaviour.claims
    remedies: RemediesSection | None = results.get("remedies")
    if remedies is None and config.remedies is not None:  # a finished run's folder
        remedies = RemediesSection.read(Path(config.remedies))
    if remedies is not None:
        claims += remedies.claims
    dose = DoseSection.of(config.scale.dose, results, config.seed)  # issue 19
    if dose is not None:
        claims += dose.claims
    checkpoints = CheckpointSection.of(config.scale.checkpoints, results, out)  # issue 24
    if checkpoints is not None:
        claims += checkpoints.claims
    figures = make_figures(analyses, training, behaviour, out / "figures")
    if dose is not None:
        figures["dose"] = dose.figure(out / "figures")
    if checkpoints is not None:
        figures["checkpoints"] = checkpoints.figure(out / "figures")
    seconds = time.perf_counter() - start
    metadata = run_metadata(
        "reproduce",
        config.record(),
        config.seed,
        {"total": seconds},
    )
    metadata["backend"] = backend.record()
    metadata["stages"] = store.record()
    result = ReproduceResult(
        config=config,
        models=analyses,
        training=training,
        behaviour=behaviour,
        remedies=remedies,
        dose=dose,
        checkpoints=checkpoints,
        claims=tuple(claims),
        figures=figures,
        metadata=metadata,
    )
    for model, analysis in analyses.items():
        write_measure_json(out / model_slug(model), analysis, runs[model], config, metadata)
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
