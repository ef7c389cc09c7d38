"""A sweep's units as jobs of the run machinery (:mod:`lostmid.runs.jobs`): where each
unit writes its files, how it is built and run from its parameters, and how a unit
already in the stage store is recognised."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from lostmid.runs.jobs import Job, UnitOutcome
from lostmid.runs.store import StageStore
from lostmid.sweep.grid import Unit
from lostmid.sweep.units import TaskSpec

UNITS_DIR = "units"


def unit_folder(out: Path, unit: Unit) -> Path:
    """Where the unit's runner writes its files: ``out/units/KEY``."""
    return out / UNITS_DIR / unit.key


def _run_unit(spec: TaskSpec, params: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A unit's work: build its config from its parameters, run it into its folder."""
    return spec.run(spec.build(params), folder)


def unit_job(unit: Unit, spec: TaskSpec, out: Path) -> Job:
    """The :class:`Job` of a sweep unit (its resources as given; defaults are the grid's);
    its result file is one of the job's outputs, so the store keeps its digest."""
    compute = functools.partial(_run_unit, spec, unit.params_dict(), unit_folder(out, unit))
    outputs = () if spec.result_file is None else (unit_folder(out, unit) / spec.result_file,)
    return Job(unit.key, unit.record(), compute, unit.resources, outputs=outputs)


def saved_outcome(store: StageStore, unit: Unit, spec: TaskSpec, out: Path) -> UnitOutcome | None:
    """The unit as ``reused`` if the store holds its result and its result file is the one
    the unit wrote (same SHA-256: a file copied from another unit, edited or damaged is
    said in one line and the unit recomputed)."""
    start = time.perf_counter()
    if spec.result_file is not None:  # its digest is in the stage record: one read
        result = unit_folder(out, unit) / spec.result_file
        saved = store.load(unit.key, unit.record(), outputs=(result,))
    else:  # a task without a declared file: the one its summary names, read whole
        saved = store.load(unit.key, unit.record())
        named = unit_folder(out, unit) / str((saved or {}).get("file", ""))
        if isinstance(saved, dict) and not store.output_intact(unit.key, named):
            return None
    if not isinstance(saved, dict):
        return None
    return UnitOutcome(
        key=unit.key,
        status="reused",
        seconds=time.perf_counter() - start,
        compute_seconds=store.saved_seconds(unit.key),
        attempts=0,
        summary=saved,
    )
