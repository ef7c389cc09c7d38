"""``lostmid remedies``: every remedy against the baseline, at equal budget, over seeds.

Training-time remedies. Each (remedy, seed) trains the retrieval preset at the run's
scale (:data:`lostmid.remedies.config.REMEDIES_SCALES`) with the remedy's hooks
(:class:`~lostmid.behaviour.training.RetrievalHooks`): same model shape (parameter
counts reported; a remedy that adds parameters says how many), same steps, batch,
tokens, optimiser and schedule, same initial weights and held-out examples for the same
seed. At the end of training: teacher-forced argmax accuracy by gold index, its mean,
gap (max - min), primacy (first - middle), recency (last - middle), and log10
peak-to-valley of the influence profile (:func:`lostmid.theory.summarise_profile` of the
measured profile over the prompt, query position included).

Inference-time remedies (``--model``). Each seed draws its own kv examples (Liu et al.'s
format, the ``lostmid retrieve`` defaults); the model scores them (teacher forcing)
on the plain prompt (the inference group's baseline) and with each remedy.

Over seeds: means with 95% t intervals, differences to the baseline paired by seed, and
the verdict rule (:mod:`lostmid.remedies.stats`). Resumable: each (remedy, seed) is a
stage of :class:`lostmid.runs.store.StageStore`; a rerun with the same ``--out`` and options
recomputes only what is missing. ``--backend ray`` runs the stages in parallel, one Ray
task each (:func:`lostmid.runs.stages.run_stages`).

Files: ``remedies.json`` (``remedies``: one record per remedy; ``config``;
``metadata``), ``remedies.png`` (accuracy by gold index per remedy, 95% bands over
seeds, the baseline in grey), ``runs/NAME/seed_S/retrieval.json`` (each training run),
``stages/``.

Modules: :mod:`~lostmid.remedies.training` (one training run),
:mod:`~lostmid.remedies.summary` (over seeds, the table) and this one (the stages).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from lostmid.models.devices import resolve_device
from lostmid.models.identity import identified
from lostmid.remedies.config import RemediesConfig
from lostmid.remedies.registry import get_remedy
from lostmid.remedies.summary import (
    RemediesResult,
    remedies_table,
    summarise_runs,
    verdict_lines,
)
from lostmid.remedies.training import (
    measured_alpha,
    theory_prediction,
    train_config,
    train_remedy,
    training_setting,
)
from lostmid.report.layout import fit_table
from lostmid.runinfo import Timer, write_json
from lostmid.runs.backend import Backend
from lostmid.runs.folder import RunFolder
from lostmid.runs.jobs import Job, Resources

RESULT = "remedies.json"
FIGURE = "remedies.png"
RUNS = "runs"
PILOTS = "pilots"
"""Where the inference arms keep the lead-in pilot's replies (``--lead-in learn``), one
file per pilot design, read by every arm whose prompts agree."""


# -- the stages: one per (remedy, seed) ------------------------------------------------------


def train_stage(
    spec: str,
    rconfig: Any,
    alpha: float,
    folder: Path,
    law: str = "tilt",
    validation_examples: int = 64,
) -> dict[str, Any]:
    """A training stage's work: a fresh remedy (adaptive state starts over), one run."""
    return train_remedy(get_remedy(spec), rconfig, alpha, folder, law, validation_examples)


def inference_stage(
    spec: str, config: RemediesConfig, seed: int, pilots: Path | None = None
) -> dict[str, Any]:
    """An inference stage's work: a fresh remedy scoring one seed's examples (the lead-in
    pilots kept in ``pilots``, shared by the arms whose prompts agree)."""
    from lostmid.remedies.inference import score_remedy

    return score_remedy(get_remedy(spec), config, seed, pilots)


@dataclass(frozen=True)
class RemedyStage:
    """One (remedy, seed) of the run: its group (``training`` or ``inference``), the
    remedy's spec, the seed, and the :class:`~lostmid.runs.jobs.Job` computing it
    (a module-level function and its arguments: it pickles for Ray)."""

    group: str
    spec: str
    seed: int
    job: Job


def remedy_kinds(config: RemediesConfig) -> tuple[list[str], list[str]]:
    """(training specs, inference specs) of the run; only inference remedies asked means
    nothing to train (not even the baseline)."""
    remedies = [get_remedy(spec) for spec in config.resolved_remedies()]
    inference = [r.spec for r in remedies if r.kind == "inference"]
    training = [r.spec for r in remedies if r.kind == "training"]
    if inference and len(training) == 1:
        training = []
    return training, inference


def resolve_alpha(config: RemediesConfig) -> float:
    """``--alpha``, or the theory's a measured on the first seed's untrained model
    (:func:`~lostmid.remedies.training.measured_alpha`)."""
    if config.alpha is not None:
        return float(config.alpha)
    return measured_alpha(train_config(config, config.resolved_seeds()[0]))


def plan_remedy_stages(
    config: RemediesConfig, out: Path, backend: Backend, alpha: float | None = None
) -> list[RemedyStage]:
    """Every (remedy, seed) stage in order: training remedies (baseline first) over the
    seeds, then, with inference remedies, the inference baseline and each remedy.
    ``alpha``: the theory's a the remedies use (None: :func:`resolve_alpha`)."""
    resources = Resources(cpus=backend.cpus, gpus=backend.gpus or 0.0)
    training, inference = remedy_kinds(config)
    seeds = config.resolved_seeds()
    plan = []
    if training and alpha is None:
        alpha = resolve_alpha(config)
    for spec in training:
        assert alpha is not None
        for seed in seeds:
            rconfig = train_config(config, seed)
            remedy = get_remedy(spec)
            stage_config: dict[str, Any] = {
                "remedy": spec,
                "knobs": remedy.parameters(),
                "alpha": alpha,
                "train": rconfig.record(),
            }
            # --law matters only to a remedy with a gold law: the others' stages are the
            # same under tilt and replace (and a run under one law can reuse them)
            if remedy.gold_probs(training_setting(rconfig, alpha, config.law)) is not None:
                stage_config["law"] = config.law
            validation = config.scale.validation_examples
            if remedy.uses_validation:
                stage_config["validation_examples"] = validation
            slug = spec.replace(":", "_")
            folder = out / RUNS / slug / f"seed_{seed}"
            compute = partial(train_stage, spec, rconfig, alpha, folder, config.law, validation)
            gpus = backend.stage_gpus(resolve_device(rconfig.train.device))
            job = Job(
                f"train-{slug}-seed{seed}",
                stage_config,
                compute,
                replace(resources, gpus=gpus),
                outputs=(folder / "retrieval.json",),
            )
            plan.append(RemedyStage("training", spec, seed, job))
    if inference:
        from lostmid.remedies.inference import inference_config

        for spec in ["baseline", *inference]:
            for seed in seeds:
                stage_config = {"remedy": spec, **inference_config(config, seed)}
                compute = partial(inference_stage, spec, config, seed, out / PILOTS)
                name = f"inference-{spec.replace(':', '_')}-seed{seed}"
                plan.append(
                    RemedyStage(
                        "inference", spec, seed, Job(name, stage_config, compute, resources)
                    )
                )
    return plan


# -- the job ---------------------------------------------------------------------------------


def check_remedies_size(config: RemediesConfig) -> None:
    """Refuse, before any stage, remedies x seeds runs that would take over a day even
    at the floors of :mod:`lostmid.runs.budget`: each run a stage
    (:data:`~lostmid.runs.budget.STAGE_FLOOR_S`) and, for a training remedy, its
    ``steps`` optimiser steps (:data:`~lostmid.runs.budget.STEP_FLOOR_S` each); and its
    held-out examples (``--examples`` a gold position, each position of ``--pairs``), held
    in memory at :data:`lostmid.behaviour.retrieve.run.EXAMPLE_BYTES` each at least."""
    from lostmid.behaviour.retrieve.run import EXAMPLE_BYTES
    from lostmid.runs.budget import STAGE_FLOOR_S, STEP_FLOOR_S, check_work

    steps = config.steps or config.scale.steps
    seeds = len(config.resolved_seeds())
    specs = config.resolved_remedies()
    trained = sum(get_remedy(spec).kind != "inference" for spec in specs)
    held_out = (config.examples or config.scale.eval_examples) * (
        config.pairs or config.scale.pairs
    )
    check_work(
        f"remedies --seeds {seeds:,} x {len(specs)} remedies ({held_out:,} held-out "
        f"examples a run) --steps {steps:,}",
        passes=seeds,
        seconds_each=len(specs) * STAGE_FLOOR_S + trained * steps * STEP_FLOOR_S,
        need_bytes=held_out * EXAMPLE_BYTES,
    )


FOLDER = RunFolder("remedies", resumes="stages", result=RESULT)
"""What ``run_remedies`` writes into ``--out``: finished stages, kept for a rerun."""


@FOLDER.holds
def run_remedies(
    config: RemediesConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Any = None,
    backend: Backend | None = None,
    size_check: bool = True,
) -> RemediesResult:
    """Run every (remedy, seed), summarise over seeds, write the files of the module
    docstring, print the table. ``overwrite`` recomputes every stage; without it a rerun
    resumes (finished stages are reused when their configuration is unchanged).
    ``backend``: where the stages run (default: the local backend, as many stages at
    once as this process has cores, :func:`lostmid.runs.backend.default_jobs`; ``Backend(jobs=1)``:
    one after the other in this process).
    ``size_check``: refuse a run that would take over a day first
    (:func:`check_remedies_size`); off for ``--no-size-check``."""
    from lostmid.runs.stages import run_stages

    begin = time.perf_counter()
    backend = backend or Backend()
    out = Path(out)
    if size_check:
        check_remedies_size(config)
    timer = Timer()
    alpha = resolve_alpha(config) if remedy_kinds(config)[0] else None
    plan = plan_remedy_stages(config, out, backend, alpha)
    # another run's folder is refused before any of its files is touched
    folder = FOLDER.open(
        out, identified(config.record(), (config.model, config.tokenizer)), overwrite=overwrite
    )
    store = folder.stages()
    if overwrite and (out / PILOTS).is_dir():  # recomputed too, like every stage
        shutil.rmtree(out / PILOTS)
    with timer("stages"):
        records = run_stages(
            [s.job for s in plan], store, backend, label="remedies", console=console
        )
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for stage in plan:
        runs.setdefault((stage.group, stage.spec), []).append(records[stage.job.name])
    seeds = config.resolved_seeds()
    records_out = []
    for group in ("training", "inference"):
        members = list(dict.fromkeys(s.spec for s in plan if s.group == group))
        if not members:
            continue
        baseline_runs = runs.get((group, "baseline"))
        setting = (
            training_setting(train_config(config, seeds[0]), alpha, config.law)
            if group == "training" and alpha is not None
            else None
        )
        for spec in members:
            remedy = get_remedy(spec)
            theory = theory_prediction(remedy, setting) if setting is not None else None
            is_base = remedy.name == "baseline"
            record = summarise_runs(
                remedy, runs[(group, spec)], None if is_base else baseline_runs, theory
            )
            if group == "inference":
                record = replace(record, kind="inference")
            records_out.append(record)
    result = RemediesResult(config, tuple(records_out), time.perf_counter() - begin)
    with timer("plots"):
        from lostmid.remedies.plot import plot_remedies
        from lostmid.report.plots import save_figure

        save_figure(plot_remedies(result), out / FIGURE)
    timer.seconds["total"] = time.perf_counter() - begin
    document = result.record()
    document["metadata"] = folder.metadata(config.record(), config.seed, timer.seconds)
    document["metadata"]["stages"] = store.record()
    document["alpha"] = {
        "value": alpha,
        "source": "--alpha"
        if config.alpha is not None
        else "measured: mean Jacobian a_l of the first seed's untrained model",
    }
    document["metadata"]["backend"] = backend.record()
    write_json(out / RESULT, document)
    if console is not None:
        console.print(fit_table(remedies_table(result)))
        for line in verdict_lines(result):
            console.print(line, highlight=False)
        console.print(f"wrote {out / RESULT} and {out / FIGURE}")
    return result
