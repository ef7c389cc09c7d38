"""Measure influence profiles of real transformers (step 0 or trained).

>>> from lostmid.models import load_model
>>> from lostmid.influence import influence_profile, random_token_ids
>>> m = load_model("tiny-qwen2", seed=0)
>>> profile = influence_profile(m, random_token_ids(m.vocab_size, 2, 16, seed=0), probes=2)
>>> profile.influence.shape
(16,)
"""

from typing import TYPE_CHECKING

from lostmid.lazy import attach

# Type checkers cannot see through attach: they read the same names here, in the map's
# order, one statement per module (isort off; tests/test_lazy.py keeps the two in step).
if TYPE_CHECKING:
    # isort: off
    from lostmid.influence.estimator import (
        influence_profile as influence_profile,
        influence_to_precision as influence_to_precision,
    )
    from lostmid.influence.profile import (
        OUTPUTS as OUTPUTS,
        PROBE_KINDS as PROBE_KINDS,
        STRATEGIES as STRATEGIES,
        InfluenceProfile as InfluenceProfile,
    )
    from lostmid.influence.passes import (
        LengthChangedError as LengthChangedError,
        NonFiniteError as NonFiniteError,
        exact_jacobian_norms as exact_jacobian_norms,
    )
    from lostmid.influence.hooks import (
        checkpointed_blocks as checkpointed_blocks,
        frozen_parameters as frozen_parameters,
    )
    from lostmid.influence.flops import (
        Matmul as Matmul,
        matmul_inventory as matmul_inventory,
        measurement_flops as measurement_flops,
    )
    from lostmid.influence.inputs import (
        corpus_token_ids as corpus_token_ids,
        random_token_ids as random_token_ids,
        read_corpus_bytes as read_corpus_bytes,
    )
    from lostmid.influence.residual import (
        forward_ratio as forward_ratio,
        gains_and_forward_ratio as gains_and_forward_ratio,
        residual_strength as residual_strength,
    )
    from lostmid.influence.gains import (
        BranchGains as BranchGains,
        branch_gains as branch_gains,
        strength_from_gain as strength_from_gain,
    )
    from lostmid.influence.config import MeasureConfig as MeasureConfig
    from lostmid.influence.record import (
        MeasureRecord as MeasureRecord,
        read_measure as read_measure,
        write_measure as write_measure,
    )
    from lostmid.influence.run import MeasureResult as MeasureResult, run_measure as run_measure
    # isort: on

# Names are imported from their modules on first use (lostmid.lazy): lostmid --help reads
# the help of MeasureConfig without loading torch.
__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "estimator": ["influence_profile", "influence_to_precision"],
        "profile": ["OUTPUTS", "PROBE_KINDS", "STRATEGIES", "InfluenceProfile"],
        "passes": ["LengthChangedError", "NonFiniteError", "exact_jacobian_norms"],
        "hooks": ["checkpointed_blocks", "frozen_parameters"],
        "flops": ["Matmul", "matmul_inventory", "measurement_flops"],
        "inputs": ["corpus_token_ids", "random_token_ids", "read_corpus_bytes"],
        "residual": ["forward_ratio", "gains_and_forward_ratio", "residual_strength"],
        "gains": ["BranchGains", "branch_gains", "strength_from_gain"],
        "config": ["MeasureConfig"],
        "record": ["MeasureRecord", "read_measure", "write_measure"],
        "run": ["MeasureResult", "run_measure"],
    },
)
