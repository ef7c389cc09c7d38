"""Measure influence profiles of real transformers (step 0 or trained).

>>> from lostmid.models import load_model
>>> from lostmid.influence import influence_profile, random_token_ids
>>> m = load_model("tiny-qwen2", seed=0)
>>> profile = influence_profile(m, random_token_ids(m.vocab_size, 2, 16, seed=0), probes=2)
>>> profile.influence.shape
(16,)
"""

from lostmid.lazy import attach

# Names are imported from their modules on first use (lostmid.lazy): lostmid --help reads
# the help of MeasureConfig without loading torch.
__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "estimator": ["influence_profile", "influence_to_precision"],
        "profile": ["OUTPUTS", "PROBE_KINDS", "STRATEGIES", "InfluenceProfile"],
        "passes": ["NonFiniteError", "exact_jacobian_norms"],
        "hooks": ["checkpointed_blocks", "frozen_parameters"],
        "flops": ["Matmul", "matmul_inventory", "measurement_flops"],
        "inputs": ["corpus_token_ids", "random_token_ids", "read_corpus_bytes"],
        "residual": ["forward_ratio", "residual_strength"],
        "gains": ["BranchGains", "branch_gains", "strength_from_gain"],
        "config": ["MeasureConfig"],
        "record": ["MeasureRecord", "read_measure", "write_measure"],
        "run": ["MeasureResult", "run_measure"],
    },
)
