"""The names of :mod:`lostmid.remedies`, for type checkers and for the lazy face its
``__init__`` builds from this file (``lazy_loader.attach_stub``)."""

from .base import (
    REGISTRY as REGISTRY,
)
from .base import (
    Remedy as Remedy,
)
from .base import (
    Setting as Setting,
)
from .base import (
    register as register,
)
from .config import (
    HELP as HELP,
)
from .config import (
    REMEDIES_SCALES as REMEDIES_SCALES,
)
from .config import (
    RemediesConfig as RemediesConfig,
)
from .config import (
    RemediesScale as RemediesScale,
)
from .positions import (
    adaptive as adaptive,
)
from .positions import (
    capped_mean_one as capped_mean_one,
)
from .positions import (
    curriculum as curriculum,
)
from .positions import (
    deficit as deficit,
)
from .positions import (
    inverse_density as inverse_density,
)
from .positions import (
    middle_cover as middle_cover,
)
from .positions import (
    middle_records as middle_records,
)
from .positions import (
    record_centres as record_centres,
)
from .positions import (
    tilt_towards as tilt_towards,
)
from .positions import (
    valley_bump as valley_bump,
)
from .registry import (
    get_remedy as get_remedy,
)
from .registry import (
    remedy_names as remedy_names,
)
from .run import run_remedies as run_remedies
from .stats import (
    RULE as RULE,
)
from .stats import (
    VERDICTS as VERDICTS,
)
from .stats import (
    gap_margin as gap_margin,
)
from .stats import (
    halves_gap as halves_gap,
)
from .stats import (
    verdict as verdict,
)
from .summary import (
    RemediesResult as RemediesResult,
)
from .summary import (
    RemedyRecord as RemedyRecord,
)
from .summary import (
    summarise_runs as summarise_runs,
)
from .surgery import (
    prefix_attention_mask as prefix_attention_mask,
)
from .surgery import (
    prefix_variant as prefix_variant,
)
from .surgery import (
    residual_variant as residual_variant,
)
from .validation import (
    VALIDATION_INDEX as VALIDATION_INDEX,
)
from .validation import (
    ValidationSplit as ValidationSplit,
)
