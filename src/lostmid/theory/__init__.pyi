"""The names of :mod:`lostmid.theory`, for type checkers and for the lazy face its
``__init__`` builds from this file (``lazy_loader.attach_stub``)."""

from .exact import (
    KERNELS as KERNELS,
)
from .exact import (
    PathDecomposition as PathDecomposition,
)
from .exact import (
    influence_matrix as influence_matrix,
)
from .exact import (
    influence_row as influence_row,
)
from .exact import (
    jacobian_path_weights as jacobian_path_weights,
)
from .exact import (
    log_influence_row as log_influence_row,
)
from .exact import (
    path_decomposition as path_decomposition,
)
from .exact import (
    path_weights as path_weights,
)
from .masks import (
    Bidirectional as Bidirectional,
)
from .masks import (
    Causal as Causal,
)
from .masks import (
    Mask as Mask,
)
from .masks import (
    PrefixLM as PrefixLM,
)
from .masks import (
    SlidingWindow as SlidingWindow,
)
from .masks import (
    layer_masks as layer_masks,
)
from .masks import (
    parse_mask as parse_mask,
)
from .positional import positional_influence_row as positional_influence_row
from .run import (
    TheoryConfig as TheoryConfig,
)
from .run import (
    TheoryResult as TheoryResult,
)
from .run import (
    run_theory as run_theory,
)
from .schedules import (
    parse_schedule as parse_schedule,
)
from .schedules import (
    power_schedule as power_schedule,
)
from .schedules import (
    resolve_alphas as resolve_alphas,
)
from .summary import (
    ProfileSummary as ProfileSummary,
)
from .summary import (
    summarise_profile as summarise_profile,
)
