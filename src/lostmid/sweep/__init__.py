"""Sweeps: a grid of units of work (measure, theory, train...) run in-process or on Ray.

Each unit's result lands in the resumable stage store (:class:`lostmid.runs.store.StageStore`)
under the sweep's folder, keyed by the unit's task and parameters, so a rerun skips what
is done; ``sweep.json`` records every unit with its status, time and result file.

>>> from lostmid.sweep import grid_from_flags
>>> [u.key.split("-")[0] for u in grid_from_flags("theory", lengths="32,64").units()]
['theory', 'theory']
"""

from lostmid.sweep.grid import (
    Grid,
    Unit,
    expand,
    grid_from_flags,
    load_sweep_file,
    parse_seeds,
)
from lostmid.sweep.units import PENDING, TASKS, TaskSpec, task_spec

__all__ = [
    "PENDING",
    "TASKS",
    "Grid",
    "TaskSpec",
    "Unit",
    "expand",
    "grid_from_flags",
    "load_sweep_file",
    "parse_seeds",
    "task_spec",
]
