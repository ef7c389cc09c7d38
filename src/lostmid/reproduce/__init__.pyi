"""The names of :mod:`lostmid.reproduce`, for type checkers and for the lazy face its
``__init__`` builds from this file (``lazy_loader.attach_stub``)."""

from .analysis import (
    ModelAnalysis as ModelAnalysis,
)
from .analysis import (
    ReproduceResult as ReproduceResult,
)
from .config import (
    DEFAULT_MODELS as DEFAULT_MODELS,
)
from .config import (
    SCALES as SCALES,
)
from .config import (
    ReproduceConfig as ReproduceConfig,
)
from .config import (
    Scale as Scale,
)
from .diagnose import (
    DiagnoseConfig as DiagnoseConfig,
)
from .diagnose import (
    run_diagnose as run_diagnose,
)
from .run import run_reproduce as run_reproduce
