"""The HTML report of ``lostmid reproduce``: a layout over one :class:`ReproduceResult`
(the generic document is :class:`lostmid.report.html.Report`).

Every cell of the tables written here is text or a finite number (a missing value is
spelled out, e.g. ``n/a (one seed)``), so an empty cell would be a bug.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lostmid.compare.claims import UNCERTAINTY
from lostmid.report.html import Report, model_label
from lostmid.reproduce import core
from lostmid.reproduce import sections as registry
from lostmid.reproduce.analysis import (
    ReproduceResult,
)
from lostmid.reproduce.plan import Section
from lostmid.stats.verdicts import CLAIM_VERDICTS


def _stage_seconds(meta: Mapping[str, Any]) -> float:
    return sum(meta["stages"]["seconds"].values())


def build_report(result: ReproduceResult) -> Report:
    """Lay out the claims, what they say, the noise floors, the step-0 comparisons,
    depth 1, positional encodings, depth growth, training dynamics, behaviour, remedies
    and provenance."""
    scale, meta = result.config.scale, result.metadata
    labels = model_labels(result.config.trained)
    trained = ", ".join(labels.get(m, m) for m in result.config.trained)
    title = (
        "Lost in the middle at birth: does the exact theory predict real models?"
        if result.models or not trained
        else f"Where does {trained} lose the middle?"
    )
    design = (
        f"lostmid reproduce, scale '{scale.name}' (L = {scale.length}, "
        f"{len(result.config.seeds())} seeds x {scale.samples} samples x "
        f"{scale.probes} probes)"
        if result.models
        else f"lostmid diagnose {trained}, scale '{scale.name}'"
    )
    report = Report(
        title,
        labels=labels,
        subtitle=(
            f"{design}, "
            f"finished {meta['finished_utc']}; stages took {_stage_seconds(meta):.0f} s of "
            f"compute ({len(meta['stages']['reused'])} reused from an earlier run), this "
            f"invocation {meta['timings_s']['total']:.0f} s"
        ),
    )
    counts = {v: sum(c.verdict == v for c in result.claims) for v in CLAIM_VERDICTS}
    report.add_section(
        "Summary",
        paragraphs=[", ".join(f"{counts[v]} {v}" for v in CLAIM_VERDICTS if counts[v]) + "."],
        figures=summary_figures(result.figures),
    )
    report.add_section(
        "Claims",
        paragraphs=[UNCERTAINTY],
        verdicts=result.claims,
    )
    # each part's own sections: the at-init core's (none in a run of the trained-model
    # sections alone), then each section's (lostmid.reproduce.sections)
    parts: list[Section] = [core.SECTION, *registry.SECTIONS]
    for section in parts:
        value = result.section(section.key)
        if value is not None or result.models:  # a diagnosis shows only what it ran
            section.report(report, value, result.figures)
    report.add_section(
        "Provenance",
        paragraphs=[
            f"Stages computed in this run: {', '.join(meta['stages']['computed']) or 'none'}; "
            f"reused from an earlier run: {', '.join(meta['stages']['reused']) or 'none'}.",
            "Every number here is in reproduce.json and claims.json next to this file; each "
            "stage's inputs and outputs are in stages/; MODEL/seed-S/measure.json are the "
            "per-seed measurements (lostmid compare --predict --measured ... scores them "
            "the same way).",
        ],
        table=provenance_table(meta, labels),
        literal=True,  # the one place where each model's full name is written
    )
    return report


def model_labels(models: Sequence[str]) -> dict[str, str]:
    """A short label for each model named by a path (its last part), where that label is
    unique: the report writes it, and the full path once, in Provenance.

    >>> model_labels(["/data/ckpt/qwen3-0.6b", "smollm2-135m", "/a/m", "/b/m"])
    {'/data/ckpt/qwen3-0.6b': 'qwen3-0.6b'}
    """
    short = {m: model_label(m) for m in models if model_label(m) != m}
    names = list(short.values())
    return {m: name for m, name in short.items() if names.count(name) == 1}


def _compact(value: Any) -> str:
    """A configuration value on one line: ``key value`` pairs for a mapping, a list as
    commas, None as "none".

    >>> _compact({"name": "quick", "length": 128, "dose": None})
    'name quick, length 128, dose none'
    """
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {_compact(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_compact(v) for v in value) or "none"
    return "none" if value is None else str(value)


def provenance_table(
    meta: Mapping[str, Any], labels: Mapping[str, str]
) -> tuple[list[str], list[list[str]]]:
    """What made the report, one row a fact: the command as typed, each model's full
    name beside its label, the configuration, versions, machine and timings."""
    config = dict(meta.get("config", {}))
    rows = [["command", shlex.join(meta["argv"]) if meta.get("argv") else meta["command"]]]
    for model in config.get("trained") or []:
        rows.append([f"model {labels.get(model, model)}", model])
    for key, value in config.items():
        if key not in ("trained", "seed"):  # the models above, the seed below
            rows.append([key, _compact(value)])
    rows.append(["seed", str(meta.get("seed", config.get("seed", "none")))])
    rows.append(["versions", _compact(meta.get("versions", {}))])
    rows.append(["machine", f"{meta.get('platform', 'unknown')}, {meta.get('cpu_count')} CPUs"])
    if meta.get("backend"):
        rows.append(["backend", _compact(meta["backend"])])
    timings = meta.get("timings_s", {})
    spent = [
        f"{k} {v:.0f} s" if isinstance(v, int | float) else f"{k} {v}" for k, v in timings.items()
    ]
    rows.append(["time", ", ".join(spent) or "none"])
    rows.append(["finished (UTC)", str(meta.get("finished_utc", "unknown"))])
    return ["what", "value"], rows


SUMMARY_FIGURES = (
    (
        "summary",
        "At initialisation. Left: each model's measured step-0 profile (black, seeds "
        "pooled) against the paper's uniform theory (red) and the position-resolved theory "
        "with the measured gains (blue), nothing fitted. Right: retrieval accuracy by gold "
        "record at the end of training (seeds pooled, Wilson 95%) and the record influence "
        "at initialisation (green).",
    ),
    (
        "checkpoints",
        "The models as given: each one's influence profile (solid) against its random-init "
        "twins' (dashed), by kind of input (the section below judges them and says whether "
        "a model is at initialisation).",
    ),
    (
        "real-behaviour-",
        "The models as given: greedy accuracy by needle depth (Wilson 95%), the difficulty "
        "calibrated to each model first.",
    ),
)
"""The report's lead figures, at-init and trained side by side: (figure name or prefix,
caption); the first real-behaviour figure stands for its section."""


def summary_figures(figures: Mapping[str, Any]) -> list[tuple[Any, str]]:
    """The lead figures this run made, in :data:`SUMMARY_FIGURES`' order."""
    out = []
    for name, caption in SUMMARY_FIGURES:
        found = [
            p
            for n, p in figures.items()
            if n == name or (name.endswith("-") and n.startswith(name))
        ]
        if found and Path(found[0]).exists():
            out.append((found[0], caption))
    return out
