"""The names of :mod:`lostmid.sweep`, for type checkers and for the lazy face its
``__init__`` builds from this file (``lazy_loader.attach_stub``)."""

from .grid import (
    Grid as Grid,
)
from .grid import (
    Unit as Unit,
)
from .grid import (
    expand as expand,
)
from .grid import (
    grid_from_flags as grid_from_flags,
)
from .grid import (
    load_sweep_file as load_sweep_file,
)
from .run import (
    SweepConfig as SweepConfig,
)
from .run import (
    SweepResult as SweepResult,
)
from .run import (
    run_sweep as run_sweep,
)
from .units import (
    PENDING as PENDING,
)
from .units import (
    TASKS as TASKS,
)
from .units import (
    TaskSpec as TaskSpec,
)
from .units import (
    task_spec as task_spec,
)
