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

import lazy_loader as lazy

# The names of __init__.pyi are imported from their modules on first use, not on import,
# so that ``lostmid --help`` answers without loading torch; type checkers read the stub.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
