"""The names of :mod:`lostmid.pretrained`, for type checkers and for the lazy face its
``__init__`` builds from this file (``lazy_loader.attach_stub``)."""

from .plot import plot_study as plot_study
from .study import (
    StudyConfig as StudyConfig,
)
from .study import (
    read_study_config as read_study_config,
)
from .study import (
    run_study as run_study,
)
from .study import (
    study_comparisons as study_comparisons,
)
