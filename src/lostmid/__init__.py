"""lostmid: make the position bias of transformers computable, measurable and fixable.

Subpackages, by capability: :mod:`lostmid.theory` (exact theory, pure numpy),
:mod:`lostmid.models`, :mod:`lostmid.influence`, :mod:`lostmid.compare`,
:mod:`lostmid.train`, :mod:`lostmid.report`.
"""

import os

# Torch's OpenMP worker threads wait passively at barriers instead of spinning, so a run
# that shares the machine (another job, our own concurrent stages) loses its fair share
# of a core, not all of it (docs/BENCHMARKS.md, "busy machine"). It must be set before
# torch loads its OpenMP runtime; a value the user set is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from lostmid.errors import UserError  # noqa: E402

__version__ = "0.1.0"
__all__ = ["UserError", "__version__"]
