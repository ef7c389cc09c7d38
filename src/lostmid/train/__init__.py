"""Training dynamics: train small causal LMs on a CPU and watch the valley form.

>>> from lostmid.train import checkpoint_steps
>>> checkpoint_steps(300)
[0, 10, 30, 100, 300]

Main entry points: :func:`run_training` (the ``lostmid train`` job, returning a
:class:`TrainResult` of typed :class:`Checkpoint` records), :func:`training_claims`
(verdicts for the reproduce report), the loop (:class:`Trainer`) and its plug-in points
(:class:`Interventions`).
"""

import lazy_loader as lazy

# The names of __init__.pyi are imported from their modules on first use, not on import,
# so that ``lostmid --help`` answers without loading torch; type checkers read the stub.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
