"""``lostmid series``: each checkpoint of one training run against the same random-init
twins on the same inputs, the trajectory by step and the verdict "deepens along the
series" (:mod:`lostmid.pretrained.series.trajectory`).

The measurement is the study's (:mod:`lostmid.pretrained.study`): one influence
profile an input, saved per cell (``profiles/<checkpoint>/L<L>/<kind>/<model>.npz``) as
it is computed, so a killed run resumes where it stopped. The twins are built once, from
the first checkpoint's configuration (every checkpoint shares it: checked before any
compute), and every model sees the inputs the first checkpoint's tokenizer makes.

Files under ``--out``: ``profiles/``, ``series.json`` (schema ``lostmid.series/1``),
``trajectory.png``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.compare.pretraining import PEAKS
from lostmid.errors import UserError
from lostmid.pretrained.series.config import SeriesConfig
from lostmid.runs.folder import RunFolder
from lostmid.stats.verdicts import across

FOLDER = RunFolder("series", writes=("profiles",), resumes="stages", result="series.json")
"""What ``run_series`` writes into ``--out``: its saved profiles are kept and resumed."""
RESULT = "series.json"
FIGURE = "trajectory.png"
PRETRAINED = "pretrained"  # the cells' label of a checkpoint (the study's)


def architecture(config: Any) -> dict[str, Any]:
    """What must agree between the checkpoints of one run: the family and the shape."""
    from lostmid.models.budget import shape_of

    return {
        "family": getattr(config, "model_type", None),
        **shape_of(config),
        "kv_heads": getattr(config, "num_key_value_heads", None),
    }


def cell_names(config: SeriesConfig) -> list[str]:
    """Each checkpoint's name in its cells' paths: one spelling of a local path (the
    resolved one, :func:`lostmid.models.identity.canonical_name`), so a rerun that types
    a path another way resumes the same cells, as its claim does."""
    from lostmid.models.identity import canonical_name, content_of

    return [canonical_name(name, content_of(name)) for name in config.models]


def check_series(config: SeriesConfig) -> None:
    """Refuse in one line, before any compute: a checkpoint that is neither a file, a
    folder, a registry checkpoint nor a cached hub id; one without weights, too short
    for ``--length`` or too large for the memory; checkpoints whose architectures differ
    from the first's."""
    from lostmid.models import CHECKPOINTS
    from lostmid.models.identity import content_of
    from lostmid.models.load import check_trained_model, resolve_config

    for name in config.models:
        if name not in CHECKPOINTS and content_of(name) is None:
            raise UserError(
                f"--models {name}: no such folder or file (nor a registry checkpoint or a "
                "cached hub id)"
            )
    for name in config.models:
        check_trained_model(name, config.length, option="--models")
    first = config.models[0]
    check_series_size(config, resolve_config(first))
    reference = architecture(resolve_config(first))
    for name in config.models[1:]:
        shape = architecture(resolve_config(name))
        if shape != reference:
            differ = ", ".join(
                f"{k} {reference[k]} vs {shape[k]}" for k in reference if reference[k] != shape[k]
            )
            raise UserError(
                f"--models {name}: not the architecture of {first} ({differ}); a series is "
                "the checkpoints of one training run"
            )


def check_series_size(config: SeriesConfig, model_config: Any) -> None:
    """Refuse a series that would take over a day or more memory than is free, in one
    line: every checkpoint and twin measured on every input of every kind, each input a
    backward pass a probe (a lower bound), the token ids and profiles held in memory."""
    from lostmid.models.budget import parameter_count
    from lostmid.runs.budget import check_work, pass_seconds

    layers = int(getattr(model_config, "num_hidden_layers", 1) or 1)
    parameters = parameter_count(model_config)
    models = len(config.models) + config.twins
    profiles = float(models) * len(config.kinds) * config.inputs
    check_work(
        f"series --models ({len(config.models)} checkpoints) --twins {config.twins:,} "
        f"--inputs {config.inputs:,} --probes {config.probes:,} --length {config.length:,}",
        passes=profiles * config.probes,
        seconds_each=pass_seconds(layers=layers, parameters=parameters, tokens=config.length),
        need_bytes=16.0 * config.inputs * config.length * max(len(config.kinds), 1) + 200e6,
        override=None,
    )


@FOLDER.holds
def run_series(
    config: SeriesConfig, *, out: Path, overwrite: bool = False, console: Any = None
) -> dict[str, Any]:
    """Check the checkpoints, measure what is not on disk yet, write ``series.json`` and
    ``trajectory.png``, print the table; returns the record."""
    from lostmid.behaviour.decoding.tokenizers import tokenizer_for_spec
    from lostmid.models.identity import identified
    from lostmid.models.spec import ModelSpec
    from lostmid.pretrained.study import StudyModel, StudyProgress, measure_model, study_models
    from lostmid.runinfo import write_json

    start = time.perf_counter()
    out = Path(out)
    check_series(config)
    folder = FOLDER.open(out, identified(config.record(), config.models), overwrite=overwrite)
    folder.clear()
    study = config.study_config()
    names = cell_names(config)
    specs = {name: ModelSpec(name) for name in names}
    first = names[0]
    tok = tokenizer_for_spec(specs[first])  # the same inputs for every checkpoint
    say = StudyProgress(console.print if console is not None else (lambda _: None))
    twins = [m for m in study_models(study, first, specs[first]) if m.init == "random"]
    for twin in twins:
        measure_model(study, out, first, specs[first], twin, tok, say)
    timings = {"twins": time.perf_counter() - start}
    for name in names:
        checkpoint = StudyModel(PRETRAINED, "pretrained", 0)
        measure_model(study, out, name, specs[name], checkpoint, tok, say)
    timings["checkpoints"] = time.perf_counter() - start - timings["twins"]
    record = series_record(config, out)
    figure = _figure(record, out)
    timings["total"] = time.perf_counter() - start
    metadata = folder.metadata({**config.record(), "out": str(out)}, config.seed, timings)
    document = record["document"] | {"figures": {"trajectory": figure}, "metadata": metadata}
    write_json(out / RESULT, document)
    if console is not None:
        _print(console, record, out)
    return document


def series_record(config: SeriesConfig, out: Path) -> dict[str, Any]:
    """The trajectory and the verdict of every input kind whose profiles are on disk for
    2 inputs or more (every checkpoint and twin), read from the saved profiles alone:
    ``{"document": series.json's numbers, "points": kind -> SeriesPoints, "verdicts":
    kind -> SeriesVerdict}``."""
    from lostmid.files import schema_of
    from lostmid.pretrained.cells import profiles_path, read_rows
    from lostmid.pretrained.series.trajectory import SERIES_RULE, deepens_along, series_trajectory

    names, steps = cell_names(config), config.steps_or_names()
    first = names[0]
    points, verdicts, kinds = {}, {}, {}
    for kind in config.kinds:
        rows = [
            read_rows(profiles_path(out, name, config.length, kind, PRETRAINED)) for name in names
        ]
        twins = [
            read_rows(profiles_path(out, first, config.length, kind, f"twin{s}"))
            for s in range(config.twins)
        ]
        n = min(r.shape[0] if r.ndim == 2 else 0 for r in [*rows, *twins])
        if n < 2:
            continue  # a chat kind on a tokenizer without a template, an unfinished run
        rows, stacked = [r[:n] for r in rows], np.stack([t[:n] for t in twins])
        points[kind] = series_trajectory(rows, stacked, steps, config.models, seed=config.seed)
        verdicts[kind] = deepens_along(rows[0], rows[-1], seed=config.seed)
        kinds[kind] = {
            "inputs": n,
            "twins": config.twins,
            "trajectory": [p.record() for p in points[kind]],
            "deepens": verdicts[kind].record(),
        }
    if not kinds:
        raise UserError(
            f"--out {out}: no input kind has profiles of every checkpoint and twin for 2 "
            "inputs or more"
        )
    words = [v.verdict for v in verdicts.values()]
    document = {
        "schema": schema_of("series"),
        "models": list(config.models),
        "steps": list(steps),
        "length": config.length,
        "peaks": dict(PEAKS),
        "kinds": kinds,
        "deepens": {
            "verdict": across(words),
            "rule": SERIES_RULE + "; over the input kinds, the same: one word when every "
            "kind gives it",
            "by_kind": {k: v.verdict for k, v in verdicts.items()},
        },
    }
    return {"document": document, "points": points, "verdicts": verdicts}


def _figure(record: dict[str, Any], out: Path) -> str:
    import matplotlib.pyplot as plt

    from lostmid.pretrained.series.plot import plot_trajectory
    from lostmid.report.plots import save_figure

    fig = plot_trajectory(record["points"], {k: v.verdict for k, v in record["verdicts"].items()})
    save_figure(fig, out / FIGURE)
    plt.close(fig)
    return FIGURE


def _fmt(e: Any) -> str:
    r = e.record()
    if r["value"] is None:
        return "-"
    if r["low"] is None or r["high"] is None:
        return f"{r['value']:+.2f}"
    return f"{r['value']:+.2f} [{r['low']:+.2f}, {r['high']:+.2f}]"


def _print(console: Any, record: dict[str, Any], out: Path) -> None:
    from rich.table import Table

    from lostmid.report.layout import fit_table

    for kind, points in record["points"].items():
        table = Table(title=f"lostmid series: {kind} inputs, change against the twins (log10)")
        for column in ("step", *(f"peak: {p}" for p in PEAKS), "valley at"):
            table.add_column(column)
        for p in points:
            valley = p.valley.record()
            where = "-" if valley["value"] is None else f"{valley['value']:.2f}"
            table.add_row(str(p.step), *(_fmt(p.change[k]) for k in PEAKS), where)
        console.print(fit_table(table))
        v = record["verdicts"][kind]
        changes = ", ".join(f"{k} {_fmt(v.change[k])}" for k in PEAKS)
        console.print(f"deepens along the series ({kind}): {v.verdict} (last - first: {changes})")
    verdict = record["document"]["deepens"]["verdict"]
    console.print(f"deepens along the series: {verdict}; wrote {out / RESULT}, {out / FIGURE}")
