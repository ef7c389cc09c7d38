"""Remedies for the valley, compared side by side at equal budget with uncertainty.

A remedy is one small class (:class:`Remedy`, registered with :func:`register`):
training-time ones change how a small retrieval model is trained (which gold positions
it sees, how its loss is weighted, its attention mask or residual routing), inference-
time ones change how a given model is prompted or run. :func:`run_remedies` trains or
scores each over seeds and judges it against the baseline by one stated rule
(:func:`verdict`); ``lostmid remedies`` is its command.

>>> from lostmid.remedies import get_remedy, remedy_names
>>> "loss-weight" in remedy_names("training"), get_remedy("oversample:rho").spec
(True, 'oversample:rho')
"""

import lazy_loader as lazy

# The names of __init__.pyi are imported from their modules on first use, not on import,
# so that ``lostmid --help`` answers without loading torch; type checkers read the stub.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
