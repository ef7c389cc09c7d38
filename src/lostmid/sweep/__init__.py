"""Sweeps: a grid of units of work (measure, theory, train...) run in-process or on Ray.

Each unit's result lands in the resumable stage store (:class:`lostmid.runs.store.StageStore`)
under the sweep's folder, keyed by the unit's task and parameters, so a rerun skips what
is done; ``sweep.json`` records every unit with its status, time and result file.

>>> from lostmid.sweep import grid_from_flags
>>> [u.key.split("-")[0] for u in grid_from_flags("theory", lengths="32,64").units()]
['theory', 'theory']
"""

import lazy_loader as lazy

# The names of __init__.pyi are imported from their modules on first use, not on import,
# so that ``lostmid --help`` answers without loading torch; type checkers read the stub.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
