"""What a sweep makes of a task's finished units together (a task's ``summarise``).

After the units have run, every task of the sweep that has a ``summarise``
(:class:`~lostmid.sweep.units.TaskSpec`) receives the parameters and folders of its
finished units (done or reused) and writes its summary file into the sweep folder, e.g.
``dose.json`` for ``train-retrieval``. A summary that cannot be made (too few units, a
unit's file unreadable) is one warning and a record with its error; the units' own
results stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lostmid.errors import UserError
from lostmid.sweep.execute import UNITS_DIR
from lostmid.sweep.grid import Unit
from lostmid.sweep.units import task_spec


def summarise_tasks(
    finished: Sequence[Unit], out: Path, warn: Callable[[str], None]
) -> list[dict[str, Any]]:
    """One record per task with a ``summarise``: ``{"task", "units", "summary"}`` or
    ``{"task", "units", "error"}``. ``finished``: the units that are done or reused."""
    by_task: dict[str, list[Unit]] = {}
    for unit in finished:
        by_task.setdefault(unit.task, []).append(unit)
    records = []
    for task, units in by_task.items():
        spec = task_spec(task)
        if spec.summarise is None:
            continue
        pairs = [(u.params_dict(), out / UNITS_DIR / u.key) for u in units]
        try:
            summary = spec.summarise(pairs, out)
        except UserError as err:
            warn(f"no {task} summary: {err}")
            records.append({"task": task, "units": len(units), "error": str(err)})
            continue
        records.append({"task": task, "units": len(units), "summary": summary})
    return records
