"""The names of :mod:`lostmid.influence`, for type checkers and for the lazy face its
``__init__`` builds from this file (``lazy_loader.attach_stub``)."""

from .config import MeasureConfig as MeasureConfig
from .estimator import (
    influence_profile as influence_profile,
)
from .estimator import (
    influence_to_precision as influence_to_precision,
)
from .flops import (
    Matmul as Matmul,
)
from .flops import (
    matmul_inventory as matmul_inventory,
)
from .flops import (
    measurement_flops as measurement_flops,
)
from .gains import (
    BranchGains as BranchGains,
)
from .gains import (
    branch_gains as branch_gains,
)
from .gains import (
    strength_from_gain as strength_from_gain,
)
from .hooks import (
    checkpointed_blocks as checkpointed_blocks,
)
from .hooks import (
    frozen_parameters as frozen_parameters,
)
from .inputs import (
    corpus_token_ids as corpus_token_ids,
)
from .inputs import (
    random_token_ids as random_token_ids,
)
from .inputs import (
    read_corpus_bytes as read_corpus_bytes,
)
from .passes import (
    LengthChangedError as LengthChangedError,
)
from .passes import (
    NonFiniteError as NonFiniteError,
)
from .passes import (
    exact_jacobian_norms as exact_jacobian_norms,
)
from .profile import (
    OUTPUTS as OUTPUTS,
)
from .profile import (
    PROBE_KINDS as PROBE_KINDS,
)
from .profile import (
    STRATEGIES as STRATEGIES,
)
from .profile import (
    InfluenceProfile as InfluenceProfile,
)
from .record import (
    MeasureRecord as MeasureRecord,
)
from .record import (
    read_measure as read_measure,
)
from .record import (
    write_measure as write_measure,
)
from .residual import (
    forward_ratio as forward_ratio,
)
from .residual import (
    gains_and_forward_ratio as gains_and_forward_ratio,
)
from .residual import (
    residual_strength as residual_strength,
)
from .run import (
    MeasureResult as MeasureResult,
)
from .run import (
    run_measure as run_measure,
)
