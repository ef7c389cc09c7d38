"""Measure influence profiles of real transformers (step 0 or trained).

>>> from lostmid.models import load_model
>>> from lostmid.influence import influence_profile, random_token_ids
>>> m = load_model("tiny-qwen2", seed=0)
>>> profile = influence_profile(m, random_token_ids(m.vocab_size, 2, 16, seed=0), probes=2)
>>> profile.influence.shape
(16,)
"""

from lostmid.influence.estimator import (
    OUTPUTS,
    PROBE_KINDS,
    STRATEGIES,
    InfluenceProfile,
    NonFiniteError,
    checkpointed_blocks,
    exact_jacobian_norms,
    influence_profile,
)
from lostmid.influence.inputs import corpus_token_ids, random_token_ids, read_corpus_bytes
from lostmid.influence.residual import residual_strength
from lostmid.influence.run import MeasureConfig, run_measure

__all__ = [
    "OUTPUTS",
    "PROBE_KINDS",
    "STRATEGIES",
    "InfluenceProfile",
    "MeasureConfig",
    "NonFiniteError",
    "checkpointed_blocks",
    "corpus_token_ids",
    "exact_jacobian_norms",
    "influence_profile",
    "random_token_ids",
    "read_corpus_bytes",
    "residual_strength",
    "run_measure",
]
