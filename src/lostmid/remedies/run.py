"""``lostmid remedies``: every remedy against the baseline, at equal budget, over seeds.

Training-time remedies. Each (remedy, seed) trains the retrieval preset at the run's
scale (:data:`lostmid.remedies.config.SCALES`) with the remedy's hooks
(:class:`~lostmid.behaviour.training.RetrievalHooks`): same model shape (parameter
counts reported; a remedy that adds parameters says how many), same steps, batch,
tokens, optimiser and schedule, same initial weights and held-out examples for the same
seed. At the end of training: teacher-forced argmax accuracy by gold index, its mean,
gap (max - min), primacy (first - middle), recency (last - middle), and log10
peak-to-valley of the influence profile (:func:`lostmid.theory.summarize_profile` of the
measured profile over the prompt, query position included).

Inference-time remedies (``--model``). Each seed draws its own kv examples (Liu et al.'s
format, the ``lostmid retrieve`` defaults); the model scores them (teacher forcing)
on the plain prompt (the inference group's baseline) and with each remedy.

Over seeds: means with 95% t intervals, differences to the baseline paired by seed, and
the verdict rule (:mod:`lostmid.remedies.stats`). Resumable: each (remedy, seed) is a
stage of :class:`lostmid.stages.StageStore`; a rerun with the same ``--out`` and options
recomputes only what is missing.

Files: ``remedies.json`` (``remedies``: one record per remedy; ``config``;
``metadata``), ``remedies.png`` (accuracy by gold index per remedy, 95% bands over
seeds, the baseline in grey), ``runs/NAME/seed_S/retrieval.json`` (each training run),
``stages/``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.errors import UserError
from lostmid.remedies.base import Remedy, Setting, get_remedy
from lostmid.remedies.config import RemediesConfig
from lostmid.remedies.stats import (
    RULE,
    Interval,
    halves_gap,
    paired_difference,
    seed_interval,
    verdict,
)
from lostmid.runinfo import Timer, prepare_out, run_metadata, write_json

SCHEMA = "lostmid.remedies/1"
RESULT = "remedies.json"
FIGURE = "remedies.png"
RUNS = "runs"
METRICS = ("mean_accuracy", "gap", "primacy", "recency", "log10_peak_to_valley")


# -- one training run --------------------------------------------------------------------------


def train_config(config: RemediesConfig, seed: int) -> Any:
    """The :class:`~lostmid.behaviour.training.RetrievalTrainConfig` of one seed: the
    preset at the run's scale (``--pairs``, ``--steps``, ``--examples`` override it)."""
    from lostmid.behaviour.training import resolve_retrieval_config

    scale = config.scale
    task = "mqar" if config.preset == "mqar-tiny" else None
    base = resolve_retrieval_config(
        config.preset,
        pairs=config.pairs or scale.pairs,
        key_chars=None if task else scale.key_chars,
        queries=scale.queries,
        steps=config.steps or scale.steps,
        seed=seed,
        eval_every=scale.eval_every,
        save_checkpoints=False,
    )
    return replace(
        base,
        eval_examples=config.examples or scale.eval_examples,
        influence_samples=scale.influence_samples,
        influence_probes=scale.influence_probes,
    )


def training_setting(rconfig: Any, alpha: float) -> Setting:
    """What a remedy reads about a retrieval run: record centres, the context length
    (records end), the query position, depth and steps."""
    from lostmid.behaviour.training import example_ids

    example = rconfig.task.example(0, 0, 0)
    prompt, _ = example_ids(example)
    spans = list(example.spans)
    # the context ends with the records: the closing '}' for kv, the last pair for mqar
    prefix = spans[-1][1] + (1 if rconfig.task.task == "kv" else 0)
    return Setting(
        pairs=rconfig.task.pairs,
        spans=tuple((int(a), int(b)) for a, b in spans),
        prefix=prefix,
        prompt_length=len(prompt),
        layers=rconfig.train.model.layers,
        steps=rconfig.train.steps,
        alpha=alpha,
        queries=rconfig.task.queries,
    )


def _log10_ptv(profile: Any) -> float | None:
    from lostmid.theory import summarize_profile

    return summarize_profile(
        np.clip(np.asarray(profile, dtype=np.float64), 0.0, None)
    ).log10_peak_to_valley


def train_remedy(remedy: Remedy, rconfig: Any, alpha: float, out: Path) -> dict[str, Any]:
    """Train one seed with the remedy's hooks; the per-seed record (JSON-ready)."""
    from lostmid.behaviour.training import RetrievalHooks, train_retrieval

    setting = training_setting(rconfig, alpha)
    hooks = RetrievalHooks(
        gold_probs=remedy.gold_probs(setting),
        gold_weights=remedy.gold_weights(setting),
        variant=remedy.surgery(setting),
        on_checkpoint=remedy.on_checkpoint,
    )
    result = train_retrieval(rconfig, out=out, overwrite=True, console=None, hooks=hooks)
    final, init = result.final, result.initial
    s = final.summary
    return {
        "seed": rconfig.train.seed,
        "positions": [p.position for p in final.positions],
        "n": [p.n for p in final.positions],
        "accuracy": [p.accuracy for p in final.positions],
        "mean_accuracy": s.mean_accuracy,
        "gap": s.gap.estimate,
        "primacy": s.primacy.estimate,
        "recency": s.recency.estimate,
        "log10_peak_to_valley": _log10_ptv(final.influence),
        "init_log10_peak_to_valley": _log10_ptv(init.influence),
        "record_influence": list(final.record_influence),
        "init_record_influence": list(init.record_influence),
        "parameters": result.parameters,
        "tokens": final.tokens_seen,
        "steps": final.step,
        "trajectory": [
            {
                "step": c.step,
                "mean_accuracy": c.summary.mean_accuracy,
                "gap": c.summary.gap.estimate,
            }
            for c in result.checkpoints
        ],
        "train_seconds": result.train_seconds,
        "wall_seconds": result.wall_seconds,
    }


def theory_prediction(remedy: Remedy, setting: Setting) -> dict[str, Any] | None:
    """The theory's structural profile for an architecture remedy (and the baseline): the
    jacobian-kernel row of :func:`lostmid.theory.influence_row` on the query position,
    its log10 peak-to-valley and its mean over each record (0-indexed records)."""
    from lostmid.behaviour.training import span_means
    from lostmid.theory import influence_row

    spec = remedy.theory(setting)
    if spec is None:
        if remedy.name != "baseline":
            return None
        spec = {"mask": "causal", "alphas": [setting.alpha] * setting.layers}
    row = influence_row(
        setting.prompt_length,
        setting.layers,
        np.asarray(spec["alphas"]),
        mask=spec["mask"],
        kernel="jacobian",
    )
    return {
        **spec,
        "kernel": "jacobian",
        "log10_peak_to_valley": _log10_ptv(row),
        "record_profile": _unit_sum(span_means(row, list(setting.spans))),
    }


# -- the summary over seeds ----------------------------------------------------------------


@dataclass(frozen=True)
class RemedyRecord:
    """One remedy over seeds: metrics with 95% intervals, differences to its group's
    baseline (paired by seed), the verdict, the budget and the theory's prediction.

    ``parameters``: trainable parameter count (the model's, once: all seeds are equal);
    ``extra_parameters``: parameters - the baseline's; ``tokens``: training input tokens
    per seed; ``accuracy``: by gold index (0-indexed), an interval per position.
    """

    name: str
    kind: str
    description: str
    knobs: dict[str, Any]
    seeds: tuple[int, ...]
    positions: tuple[int, ...]
    accuracy: tuple[Interval, ...]
    metrics: dict[str, Interval]
    differences: dict[str, Interval] | None
    verdict: str | None
    halves_gap: bool | None
    parameters: int | None
    extra_parameters: int | None
    tokens: int | None
    steps: int | None
    extra_forward_passes: int
    theory: dict[str, Any] | None
    measured_init_log10_peak_to_valley: Interval | None
    seconds: float

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "description": self.description,
            "knobs": self.knobs,
            "seeds": list(self.seeds),
            "tokens": self.tokens,
            "steps": self.steps,
            "parameters": self.parameters,
            "extra_parameters": self.extra_parameters,
            "extra_forward_passes": self.extra_forward_passes,
        }
        out |= {k: v.record() for k, v in self.metrics.items()}
        out["difference_to_baseline"] = (
            None
            if self.differences is None
            else {k: v.record() for k, v in self.differences.items()}
        )
        out["verdict"] = self.verdict
        out["halves_gap"] = self.halves_gap
        out["accuracy_by_position"] = [
            {"index": p, **a.record()} for p, a in zip(self.positions, self.accuracy, strict=True)
        ]
        out["theory"] = self.theory
        out["measured_init_log10_peak_to_valley"] = (
            None
            if self.measured_init_log10_peak_to_valley is None
            else self.measured_init_log10_peak_to_valley.record()
        )
        out["seconds"] = self.seconds
        return out


def summarise_runs(
    remedy: Remedy,
    runs: list[dict[str, Any]],
    baseline_runs: list[dict[str, Any]] | None,
    theory: dict[str, Any] | None = None,
) -> RemedyRecord:
    """The :class:`RemedyRecord` of per-seed records (``baseline_runs`` None: this is
    the baseline). Metrics whose value is missing in some seed (e.g. no valley) are
    summarised over the seeds that have it."""
    if not runs:
        raise UserError(f"remedy {remedy.spec} has no finished seed")
    positions = tuple(runs[0]["positions"])
    accuracy = np.array([r["accuracy"] for r in runs])  # (S, G)

    def values(rs: list[dict[str, Any]], key: str) -> list[float]:
        return [float(r[key]) for r in rs if r.get(key) is not None]

    metrics = {k: seed_interval(values(runs, k)) for k in METRICS if values(runs, k)}
    differences = chosen = halves = None
    if baseline_runs is not None:
        by_seed = {r["seed"]: r for r in baseline_runs}
        pairs = [(r, by_seed[r["seed"]]) for r in runs if r["seed"] in by_seed]
        differences = {}
        for key in METRICS:
            both = [
                (a[key], b[key])
                for a, b in pairs
                if a.get(key) is not None and b.get(key) is not None
            ]
            if both:
                differences[key] = paired_difference([a for a, _ in both], [b for _, b in both])
        if "gap" in differences and "mean_accuracy" in differences:
            chosen = verdict(differences["gap"], differences["mean_accuracy"])
            base_gap = seed_interval(values(baseline_runs, "gap"))
            halves = halves_gap(metrics["gap"], base_gap)
    parameters = runs[0].get("parameters")
    base_parameters = baseline_runs[0].get("parameters") if baseline_runs else parameters
    init = values(runs, "init_log10_peak_to_valley")
    return RemedyRecord(
        name=remedy.spec,
        kind=remedy.kind,
        description=remedy.description,
        knobs=remedy.parameters(),
        seeds=tuple(int(r["seed"]) for r in runs),
        positions=positions,
        accuracy=tuple(seed_interval(accuracy[:, g].tolist()) for g in range(accuracy.shape[1])),
        metrics=metrics,
        differences=differences,
        verdict=chosen,
        halves_gap=halves,
        parameters=parameters,
        extra_parameters=(
            None if parameters is None or base_parameters is None else parameters - base_parameters
        ),
        tokens=runs[0].get("tokens"),
        steps=runs[0].get("steps"),
        extra_forward_passes=remedy.extra_forward_passes,
        theory=None if theory is None else theory | _measured_beside_theory(runs),
        measured_init_log10_peak_to_valley=seed_interval(init) if init else None,
        seconds=float(sum(r.get("wall_seconds", 0.0) for r in runs)),
    )


def _unit_sum(values: Any) -> list[float]:
    v = np.asarray(values, dtype=np.float64)
    return (v / v.sum()).tolist() if v.sum() > 0 else v.tolist()


def _measured_beside_theory(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The measured influence of each record on the query at init and at the end, each
    normalised to sum 1 and averaged over seeds, to set beside the theory's profile."""
    out: dict[str, Any] = {}
    for key, name in (
        ("init_record_influence", "measured_init_record_profile"),
        ("record_influence", "measured_final_record_profile"),
    ):
        profiles = [_unit_sum(r[key]) for r in runs if r.get(key)]
        if profiles:
            out[name] = np.mean(profiles, axis=0).tolist()
    return out


@dataclass(frozen=True)
class RemediesResult:
    """A finished comparison: one :class:`RemedyRecord` per remedy (baselines first)."""

    config: RemediesConfig
    remedies: tuple[RemedyRecord, ...]
    seconds: float

    def by_name(self, name: str, kind: str = "training") -> RemedyRecord:
        for r in self.remedies:
            if r.name == name and r.kind == kind:
                return r
        raise KeyError(name)

    def record(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "remedies": [r.record() for r in self.remedies],
            "config": self.config.to_dict(),
            "rule": RULE,
            "seconds": self.seconds,
        }


# -- the job -------------------------------------------------------------------------------------


def _progress(console: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[bold]remedies[/] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=console is None,
        transient=True,
    )


def run_remedies(
    config: RemediesConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Any = None,
) -> RemediesResult:
    """Run every (remedy, seed), summarise over seeds, write the files of the module
    docstring, print the table. ``overwrite`` recomputes every stage; without it a rerun
    resumes (finished stages are reused when their configuration is unchanged)."""
    from lostmid.stages import StageStore

    begin = time.perf_counter()
    out = Path(out)
    prepare_out(out, [], overwrite)
    store = StageStore(out, fresh=overwrite)
    timer = Timer()
    remedies = [get_remedy(spec) for spec in config.resolved_remedies()]
    inference = [r for r in remedies if r.kind == "inference"]
    training = [r for r in remedies if r.kind == "training"]
    if inference and len(training) == 1:  # only inference remedies asked: nothing to train
        training = []
    seeds = config.resolved_seeds()
    units = [(r, s) for r in training for s in seeds]
    if inference:
        units += [(r, s) for r in [get_remedy("baseline"), *inference] for s in seeds]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with _progress(console) as bar:
        task = bar.add_task("", total=len(units))
        for i, (remedy, seed) in enumerate(units):
            group = "training" if i < len(training) * len(seeds) else "inference"
            bar.update(task, description=f"{remedy.spec} seed {seed}")
            fresh = get_remedy(remedy.spec)  # a new object per run: adaptive state starts over
            if group == "training":
                rconfig = train_config(config, seed)
                stage_config = {
                    "remedy": fresh.spec,
                    "knobs": fresh.parameters(),
                    "alpha": config.alpha,
                    "train": rconfig.to_dict(),
                }
                folder = out / RUNS / fresh.spec.replace(":", "_") / f"seed_{seed}"
                with timer(f"train {fresh.spec}"):
                    record = store.run(
                        f"train-{fresh.spec.replace(':', '_')}-seed{seed}",
                        stage_config,
                        lambda fresh=fresh, rconfig=rconfig, folder=folder: train_remedy(
                            fresh, rconfig, config.alpha, folder
                        ),
                    )
            else:
                from lostmid.remedies.inference import inference_config, score_remedy

                stage_config = {"remedy": fresh.spec, **inference_config(config, seed)}
                with timer(f"inference {fresh.spec}"):
                    record = store.run(
                        f"inference-{fresh.spec.replace(':', '_')}-seed{seed}",
                        stage_config,
                        lambda fresh=fresh, seed=seed: score_remedy(fresh, config, seed),
                    )
            runs.setdefault((group, fresh.spec), []).append(record)
            bar.update(task, advance=1)
    records = []
    for group, members in (
        ("training", training),
        ("inference", [get_remedy("baseline"), *inference] if inference else []),
    ):
        if not members:
            continue
        baseline_runs = runs.get((group, "baseline"))
        setting = (
            training_setting(train_config(config, seeds[0]), config.alpha)
            if group == "training"
            else None
        )
        for remedy in members:
            theory = theory_prediction(remedy, setting) if setting is not None else None
            is_base = remedy.name == "baseline"
            record = summarise_runs(
                remedy, runs[(group, remedy.spec)], None if is_base else baseline_runs, theory
            )
            if group == "inference":
                record = replace(record, kind="inference")
            records.append(record)
    result = RemediesResult(config, tuple(records), time.perf_counter() - begin)
    with timer("plots"):
        from lostmid.remedies.plot import plot_remedies
        from lostmid.report.plots import save_figure

        save_figure(plot_remedies(result), out / FIGURE)
    timer.seconds["total"] = time.perf_counter() - begin
    document = result.record()
    stage_seconds = dict(store.seconds)
    document["metadata"] = run_metadata(
        "remedies",
        config.to_dict(),
        config.seed,
        {**timer.seconds, **{f"stage {k}": v for k, v in stage_seconds.items()}},
    )
    document["metadata"]["stages"] = {"reused": store.reused, "computed": store.computed}
    write_json(out / RESULT, document)
    if console is not None:
        console.print(remedies_table(result))
        for line in verdict_lines(result):
            console.print(line, highlight=False)
        console.print(f"wrote {out / RESULT} and {out / FIGURE}")
    return result


def _fmt(i: Interval | None, signed: bool = False) -> str:
    """``estimate±half-width`` (t intervals are symmetric); the estimate alone for one seed."""
    if i is None:
        return "-"
    sign = "+" if signed else ""
    if not np.isfinite(i.ci_low):
        return f"{i.estimate:{sign}.2f}"
    half = f"{(i.ci_high - i.ci_low) / 2:.2f}".removeprefix("0")
    return f"{i.estimate:{sign}.2f}±{half}"


def remedies_table(result: RemediesResult) -> Any:
    """One row per remedy: mean accuracy, gap, their differences to the baseline (95%
    intervals over seeds), primacy, recency, log10 peak-to-valley of the influence
    profile, parameters added, verdict."""
    from rich import box
    from rich.table import Table

    table = Table(
        title="remedies at equal budget (mean ± 95% over seeds)",
        header_style="bold",
        box=box.SIMPLE_HEAD,
    )
    for name in ("remedy", "acc", "Δacc", "gap", "Δgap", "prim", "rec", "lgP/V", "+par", "verdict"):
        left = name in ("remedy", "verdict")
        table.add_column(name, justify="left" if left else "right", no_wrap=True)
    for r in result.remedies:
        d = r.differences or {}
        table.add_row(
            r.name if r.kind == "training" else f"{r.name} (inf.)",
            _fmt(r.metrics.get("mean_accuracy")),
            _fmt(d.get("mean_accuracy"), True),
            _fmt(r.metrics.get("gap")),
            _fmt(d.get("gap"), True),
            _fmt(r.metrics.get("primacy"), True),
            _fmt(r.metrics.get("recency"), True),
            _fmt(r.metrics.get("log10_peak_to_valley")),
            str(r.extra_parameters or 0),
            (r.verdict or "baseline")
            + (", halves gap" if r.verdict == "works" and r.halves_gap else ""),
        )
    return table


def verdict_lines(result: RemediesResult) -> list[str]:
    """Plain sentences: which remedies work by the rule, and which halve the gap."""
    lines = []
    for kind in ("training", "inference"):
        group = [r for r in result.remedies if r.kind == kind and r.verdict is not None]
        if not group:
            continue
        works = [r.name for r in group if r.verdict == "works"]
        halves = [r.name for r in group if r.verdict == "works" and r.halves_gap]
        lines.append(
            f"{kind}: works by the rule: {', '.join(works) or 'none'}; halves the baseline gap "
            f"without lowering accuracy: {', '.join(halves) or 'none'}"
        )
    return lines
