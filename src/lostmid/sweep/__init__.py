"""Sweeps: a grid of units of work (measure, theory, train...) run in-process or on Ray.

Each unit's result lands in the resumable stage store (:class:`lostmid.runs.store.StageStore`)
under the sweep's folder, keyed by the unit's task and parameters, so a rerun skips what
is done; ``sweep.json`` records every unit with its status, time and result file.

>>> from lostmid.sweep import grid_from_flags
>>> [u.key.split("-")[0] for u in grid_from_flags("theory", lengths="32,64").units()]
['theory', 'theory']
"""

from typing import TYPE_CHECKING

from lostmid.checks import parse_seeds
from lostmid.lazy import attach
from lostmid.sweep.grid import (
    Grid,
    Unit,
    expand,
    grid_from_flags,
    load_sweep_file,
)
from lostmid.sweep.units import PENDING, TASKS, TaskSpec, task_spec

# The command (lostmid sweep) as a function, imported on first use (lostmid.lazy): it
# brings the run machinery and every unit's command. Type checkers read the same names
# here (tests/test_lazy.py keeps the two in step).
if TYPE_CHECKING:
    # isort: off
    from lostmid.sweep.run import (
        SweepConfig as SweepConfig,
        SweepResult as SweepResult,
        run_sweep as run_sweep,
    )
    # isort: on

__getattr__, _, _lazy = attach(__name__, {"run": ["SweepConfig", "SweepResult", "run_sweep"]})

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
    *_lazy,
]
