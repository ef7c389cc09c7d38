"""The names of :mod:`lostmid.ablate`, for type checkers and for the lazy face its
``__init__`` builds from this file (``lazy_loader.attach_stub``)."""

from .config import (
    RUNGS as RUNGS,
)
from .config import (
    AblationConfig as AblationConfig,
)
from .results import (
    AblationResult as AblationResult,
)
from .results import (
    CandidateScore as CandidateScore,
)
from .results import (
    RungResult as RungResult,
)
from .run import run_ablate as run_ablate
from .rungs import (
    RUNG_SPECS as RUNG_SPECS,
)
from .rungs import (
    RungMeasurement as RungMeasurement,
)
from .rungs import (
    RungSpec as RungSpec,
)
from .rungs import (
    build_rung as build_rung,
)
from .rungs import (
    measure_rung as measure_rung,
)
