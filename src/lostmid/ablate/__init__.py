"""The ablation ladder: the same model with one real ingredient switched at a time, from
the theory's world (uniform attention, no MLP, no positional encoding) to the real
model, each rung measured over seeds and scored against every zero-parameter
prediction with its seed noise floor (``lostmid ablate``).

It sits above :mod:`lostmid.compare` (it scores with it) and :mod:`lostmid.influence`
(it measures with it); the switches themselves are family knowledge and live in
:mod:`lostmid.models.ablations`.

* :mod:`~lostmid.ablate.config`: :data:`RUNGS`, :class:`AblationConfig`;
* :mod:`~lostmid.ablate.rungs`: building and measuring a rung;
* :mod:`~lostmid.ablate.results`: scores, the result record, its table and figure;
* :mod:`~lostmid.ablate.run`: :func:`run_ablate`, resumable.
"""

from typing import TYPE_CHECKING

from lostmid.lazy import attach

# Type checkers cannot see through attach: they read the same names here, in the map's
# order, one statement per module (isort off; tests/test_lazy.py keeps the two in step).
if TYPE_CHECKING:
    # isort: off
    from lostmid.ablate.config import RUNGS as RUNGS, AblationConfig as AblationConfig
    from lostmid.ablate.results import (
        AblationResult as AblationResult,
        CandidateScore as CandidateScore,
        RungResult as RungResult,
    )
    from lostmid.ablate.rungs import (
        RUNG_SPECS as RUNG_SPECS,
        RungMeasurement as RungMeasurement,
        RungSpec as RungSpec,
        build_rung as build_rung,
        measure_rung as measure_rung,
    )
    from lostmid.ablate.run import run_ablate as run_ablate
    # isort: on

__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "config": ["RUNGS", "AblationConfig"],
        "results": ["AblationResult", "CandidateScore", "RungResult"],
        "rungs": ["RUNG_SPECS", "RungMeasurement", "RungSpec", "build_rung", "measure_rung"],
        "run": ["run_ablate"],
    },
)
