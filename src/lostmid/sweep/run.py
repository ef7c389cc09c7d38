"""``lostmid sweep``: plan the units, skip those already done, run the rest, write sweep.json.

Files under ``--out``:

* ``units/KEY/``: each unit's own files (``measure.json``, ``theory.json``...);
* ``stages/KEY.json``: the stage store (:class:`lostmid.runs.store.StageStore`): the unit's
  task and parameters, its summary and compute time; a rerun with the same ``--out``
  reuses every unit whose record is there and whose result file still exists;
* ``sweep.json``: ``"units"`` (one record per unit of this run: parameters, status
  ``done``/``reused``/``failed`` with the error, seconds, result file relative to
  ``--out``), ``"config"``, ``"counts"``, ``"summaries"`` (what each task with a
  summary made of its finished units, :mod:`lostmid.sweep.summaries`; e.g.
  ``dose.json`` and ``dose.png`` for ``train-retrieval``) and ``"metadata"``.
  Rewritten by every run of the same sweep, or of a sweep that grows it (every saved
  unit among its units); a sweep that drops or changes units of the one in the folder
  is refused (:func:`lostmid.runs.claim.claim_out`; ``.lostmid.run.json``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from lostmid.checks import check_positive
from lostmid.errors import UserError
from lostmid.files import schema_of
from lostmid.report.layout import fit_table
from lostmid.runinfo import write_json
from lostmid.runs.backend import Backend
from lostmid.runs.folder import RunFolder
from lostmid.runs.jobs import STATUSES, Job, UnitOutcome, dispatch, open_backend
from lostmid.sweep.execute import UNITS_DIR, saved_outcome, unit_job
from lostmid.sweep.grid import Grid, Unit, expand
from lostmid.sweep.summaries import summarise_tasks
from lostmid.sweep.units import TASKS, TaskSpec, task_spec

SWEEP_JSON = "sweep.json"

HELP = {  # the help of each ``lostmid sweep`` option
    "task": "The task of every unit: " + " | ".join(TASKS) + ".",  # the registry's names
    "models": "Axis: comma-separated models (train, remedies: presets).",
    "seeds": "Seeds: a count N (seeds --seed .. --seed+N-1), a range 0-4 or a list 0,2,5-7; "
    "an axis, except for tasks that run several seeds per unit (reproduce, remedies), "
    "where it is each unit's own seeds.",
    "seed": "The first seed of a --seeds count.",
    "lengths": "Axis: sequence lengths, e.g. 256,512 (train: context).",
    "param": "Task option NAME=VALUE, or NAME=V1,V2 for an axis (repeatable), e.g. "
    "--param samples=4 --param alpha=0.1,0.3.",
    "config": "TOML sweep file (instead of the grid flags).",
    "backend": "local (in-process) | ray",
    "address": "Ray cluster: auto | HOST:PORT (default: a local Ray instance).",
    "retries": "Extra tries for a unit that fails.",
    "jobs": "local: units run at once, each in a worker process with its share of the "
    "cores (default: the cores this process may use; 1: in this process, one after the "
    "other).",
    "cpus": "Ray: CPUs per unit (default 1).",
    "gpus": "Ray: GPUs per unit (default 1 on cuda, else 0).",
    "memory_gb": "Ray: GiB reserved per unit.",
    "max_units": "Refuse a sweep that plans more units than this (shown before it starts); "
    "raise it to run a bigger one.",
}
_TABLE_ROWS = 40  # longer sweeps list their failed units only


@dataclass(frozen=True)
class SweepConfig:
    """What to sweep and how: the grids, the backend, retries per unit.

    ``address``: for ``ray`` only: ``auto`` (the cluster this machine belongs to),
    ``HOST:PORT`` (its head node), or ``None`` (a local Ray instance on this machine,
    with as many CPUs as this process may use).
    """

    grids: tuple[Grid, ...]
    backend: str = "local"
    address: str | None = None
    retries: int = 1
    jobs: int | None = None
    max_units: int = 1000

    def __post_init__(self) -> None:
        check_positive("--max-units", self.max_units)
        if isinstance(self.retries, bool) or not isinstance(self.retries, int):
            raise UserError(f"--retries must be a whole number >= 0, got {self.retries!r}")
        if self.retries < 0:
            raise UserError(f"--retries must be >= 0, got {self.retries}")
        if not self.grids:
            raise UserError("the sweep has no grid; give --task or --config")
        self.where()  # checks backend, address and jobs; one line now if Ray is missing

    def where(self) -> Backend:
        """The :class:`~lostmid.runs.backend.Backend` the units run on."""
        return Backend(self.backend, self.address, jobs=self.jobs)

    def record(self) -> dict[str, Any]:
        return {
            "grids": [g.record() for g in self.grids],
            "backend": self.backend,
            "address": self.address,
            "retries": self.retries,
            "jobs": self.where().record()["jobs"],
        }


@dataclass(frozen=True)
class UnitRecord:
    """One unit of a finished sweep: the unit, what became of it, its result file."""

    unit: Unit
    outcome: UnitOutcome

    @property
    def result(self) -> str | None:
        """The result file relative to the sweep folder (``units/KEY/FILE``), if any."""
        summary = self.outcome.summary
        if self.outcome.status == "failed" or not summary or "file" not in summary:
            return None
        return f"{UNITS_DIR}/{self.unit.key}/{summary['file']}"

    def record(self) -> dict[str, Any]:
        return {
            "key": self.unit.key,
            "task": self.unit.task,
            "params": self.unit.params_dict(),
            "resources": self.unit.resources.record(),
            "result": self.result,
            **self.outcome.record(),
        }


@dataclass(frozen=True)
class SweepResult:
    """Every unit of the sweep in plan order, and the wall time of the run."""

    config: SweepConfig
    units: tuple[UnitRecord, ...]
    seconds: float

    def counts(self) -> dict[str, int]:
        return {s: sum(u.outcome.status == s for u in self.units) for s in STATUSES}

    @property
    def failed(self) -> list[UnitRecord]:
        return [u for u in self.units if u.outcome.status == "failed"]

    def record(self) -> dict[str, Any]:
        return {
            "schema": schema_of("sweep"),
            "units": [u.record() for u in self.units],
            "counts": self.counts(),
            "seconds": round(self.seconds, 4),
            "config": self.config.record(),
        }


def plan_sweep(grids: Sequence[Grid], max_units: int = 1000) -> list[tuple[Unit, TaskSpec]]:
    """Every unit with its task, each unit's config built once here so that a bad
    parameter fails in seconds with one line, before any unit runs; more than
    ``max_units`` units (counted before they are listed) is refused in one line."""
    total = sum(grid.size for grid in grids)
    if total > max_units:
        axes = " + ".join(
            " x ".join(f"{len(v)} {name}" for name, v in g.axes if len(v) > 1) or "1" for g in grids
        )
        raise UserError(
            f"the sweep plans {total:,} units ({axes}), more than --max-units {max_units:,}; "
            "make the grid smaller, or raise --max-units to run them all"
        )
    plan = []
    for unit in expand(grids):
        spec = task_spec(unit.task)
        try:
            spec.build(unit.params_dict())
        except UserError:
            raise
        except (TypeError, ValueError) as err:  # a parameter the config does not take
            raise UserError(f"task {unit.task}: {' '.join(str(err).split())}") from None
        plan.append((unit, spec))
    return plan


FOLDER = RunFolder("sweep", resumes="stages", result=SWEEP_JSON)
"""What ``run_sweep`` writes into ``--out``: its units, kept for a rerun."""


@FOLDER.holds
def run_sweep(
    config: SweepConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Console | None = None,
) -> SweepResult:
    """Run (or resume) the sweep in ``out``; ``overwrite`` recomputes every unit.

    A failed unit does not stop the others; it is in the result (and sweep.json) with
    its error, and the next run with the same ``out`` tries it again.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from lostmid.runs.progress import progress as logged_progress

    start = time.perf_counter()
    plan = plan_sweep(config.grids, config.max_units)
    # another sweep's folder (other seeds, params, task) is refused before anything in it
    # changes; where the units run (backend, jobs, retries) is not part of the sweep
    folder = FOLDER.open(
        out,
        {**(_grids(config.record()) or {}), "units": sorted(u.key for u, _ in plan)},
        overwrite=overwrite,
        saved_config=_saved_grids,
        grows=_grows,
    )
    store = folder.stages()
    outcomes: dict[str, UnitOutcome] = {}
    todo = []
    for unit, spec in plan:
        saved = saved_outcome(store, unit, spec, out)
        if saved is None:
            todo.append((unit, spec))
        else:
            outcomes[unit.key] = saved
    planned = time.perf_counter()
    if console is not None:
        console.print(
            f"sweep: {len(plan)} units planned, {len(todo)} to run, {len(outcomes)} already "
            f"done (--max-units {config.max_units})"
        )

    progress = logged_progress(
        "sweep",
        TextColumn("[bold]sweep[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[last]}"),
        TimeElapsedColumn(),
        console=console,
    )
    bar = progress.add_task("sweep", total=len(plan), completed=len(outcomes), last="")

    def report(unit: Unit, outcome: UnitOutcome) -> None:
        outcomes[unit.key] = outcome
        progress.update(bar, advance=1, last=f"{outcome.status}: {unit.key}")

    units = {unit.key: unit for unit, _ in todo}

    def report_job(job: Job, outcome: UnitOutcome) -> None:
        report(units[job.name], outcome)

    def warn(why: str) -> None:
        if console is not None:
            console.print(Text.assemble(("warning:", "yellow"), " ", why))

    jobs = [unit_job(unit, spec, out) for unit, spec in todo]
    backend = config.where()
    with open_backend(jobs, backend, warn=warn):
        complete = False
        try:
            with progress:
                dispatch(jobs, out, backend, report_job, config.retries)
            complete = True
        finally:  # an interrupted sweep still says which units finished
            result = SweepResult(
                config=config,
                units=tuple(UnitRecord(u, outcomes[u.key]) for u, _ in plan if u.key in outcomes),
                seconds=time.perf_counter() - start,
            )
            record = result.record()
            record["complete"] = complete
            record["units_planned"] = len(plan)
            record["metadata"] = folder.metadata(
                config.record() | {"out": str(out), "overwrite": overwrite},
                None,
                {"plan": planned - start, "run": time.perf_counter() - planned},
            )
            write_json(out / SWEEP_JSON, record)
    finished = [u.unit for u in result.units if u.outcome.status != "failed"]
    record["summaries"] = summarise_tasks(finished, out, warn)
    write_json(out / SWEEP_JSON, record)
    if console is not None:
        console.print(fit_table(summary_table(result)))
        for made in record["summaries"]:
            if "summary" in made:
                verdict = made["summary"].get("verdict")
                said = f" (verdict: {verdict})" if verdict else ""
                console.print(f"{made['task']}: wrote {out / made['summary']['file']}{said}")
        counts = result.counts()
        console.print(
            f"{len(plan)} units: {counts['done']} done, {counts['reused']} reused, "
            f"{counts['failed']} failed in {result.seconds:.1f} s ({config.backend}); "
            f"wrote {out / SWEEP_JSON}"
        )
    return result


def _grids(record: Any) -> dict[str, Any] | None:
    """What decides a sweep's results, from its config record (or a sweep.json): each
    grid's task and axes, not the resources its units ask for."""
    config = record.get("config", record) if isinstance(record, dict) else None
    grids = config.get("grids") if isinstance(config, dict) else None
    if not isinstance(grids, list):
        return None
    return {
        "grids": [
            {k: v for k, v in g.items() if k != "resources"} if isinstance(g, dict) else g
            for g in grids
        ]
    }


def _saved_grids(document: dict[str, Any]) -> dict[str, Any] | None:
    """A sweep.json written before the claim file, as a claim's configuration."""
    grids = _grids(document)
    units = document.get("units")
    if grids is None or not isinstance(units, list):
        return None
    keys = [u.get("key") for u in units if isinstance(u, dict)]
    return {**grids, "units": sorted(k for k in keys if isinstance(k, str))}


def _grows(saved: Any, wanted: Any) -> bool:
    """A sweep may grow: a grid holding every unit of the saved one reuses them and adds
    the rest (nothing of the saved sweep is dropped from sweep.json)."""
    old = saved.get("units") if isinstance(saved, dict) else None
    return isinstance(old, list) and set(old) <= set(wanted["units"])


def summary_table(result: SweepResult) -> Table:
    """One row per unit (only the failed ones when there are many units)."""
    rows = list(result.units) if len(result.units) <= _TABLE_ROWS else result.failed
    title = "lostmid sweep" if rows is not result.failed else "lostmid sweep: failed units"
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("unit (folder under units/)", overflow="fold")
    table.add_column("status")
    table.add_column("seconds", justify="right")
    table.add_column("result or error", overflow="fold")
    style = {"done": "green", "reused": "cyan", "failed": "bold red"}
    for row in rows:
        o = row.outcome
        table.add_row(
            row.unit.key,
            Text(o.status, style=style[o.status]),
            f"{o.seconds:.1f}",
            o.error if o.status == "failed" else str((o.summary or {}).get("file", "")),
        )
    return table
