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

from lostmid.lazy import attach

__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "config": ["RUNGS", "AblationConfig"],
        "results": ["AblationResult", "CandidateScore", "RungResult"],
        "rungs": ["RUNG_SPECS", "RungMeasurement", "RungSpec", "build_rung", "measure_rung"],
        "run": ["run_ablate"],
    },
)
