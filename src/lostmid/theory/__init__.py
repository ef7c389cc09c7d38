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

import lazy_loader as lazy

# The names of __init__.pyi are imported from their modules on first use, not on import,
# so that ``lostmid --help`` answers without loading torch; type checkers read the stub.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
