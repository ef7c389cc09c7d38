"""Exact theory of position bias at initialisation (pure numpy).

Layers N_l = (1 - a_l) I + a_l A with A uniform attention under a mask; the influence of
input j on output t is row t of N_H ... N_1. See :mod:`lostmid.theory.exact`; with a
gain per layer and source position, N_l = I + A_l diag(s_l), see
:mod:`lostmid.theory.positional`.

>>> from lostmid.theory import influence_row
>>> row = influence_row(length=2048, layers=24, alpha=0.1)
>>> round(float(row.sum()), 12)
1.0
"""

from typing import TYPE_CHECKING

from lostmid.lazy import attach
from lostmid.theory.exact import (
    KERNELS,
    PathDecomposition,
    influence_matrix,
    influence_row,
    jacobian_path_weights,
    log_influence_row,
    path_decomposition,
    path_weights,
)
from lostmid.theory.masks import (
    Bidirectional,
    Causal,
    Mask,
    PrefixLM,
    SlidingWindow,
    layer_masks,
    parse_mask,
)
from lostmid.theory.positional import positional_influence_row
from lostmid.theory.schedules import parse_schedule, power_schedule, resolve_alphas
from lostmid.theory.summary import ProfileSummary, summarise_profile

# The command (lostmid theory) as a function, imported on first use (lostmid.lazy): it
# brings rich and the run machinery, which the pure maths above does not need. Type
# checkers read the same names here (tests/test_lazy.py keeps the two in step).
if TYPE_CHECKING:
    # isort: off
    from lostmid.theory.run import (
        TheoryConfig as TheoryConfig,
        TheoryResult as TheoryResult,
        run_theory as run_theory,
    )
    # isort: on

__getattr__, _, _lazy = attach(__name__, {"run": ["TheoryConfig", "TheoryResult", "run_theory"]})

__all__ = [
    "KERNELS",
    "Bidirectional",
    "Causal",
    "Mask",
    "PathDecomposition",
    "PrefixLM",
    "ProfileSummary",
    "SlidingWindow",
    "influence_matrix",
    "influence_row",
    "jacobian_path_weights",
    "layer_masks",
    "log_influence_row",
    "parse_mask",
    "parse_schedule",
    "path_decomposition",
    "path_weights",
    "positional_influence_row",
    "power_schedule",
    "resolve_alphas",
    "summarise_profile",
    *_lazy,
]
