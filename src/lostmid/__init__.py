"""lostmid: make the position bias of transformers computable, measurable and fixable.

Subpackages, by capability: :mod:`lostmid.theory` (exact theory, pure numpy),
:mod:`lostmid.models`, :mod:`lostmid.influence`, :mod:`lostmid.compare`,
:mod:`lostmid.train`, :mod:`lostmid.report`.
"""

from lostmid.errors import UserError

__version__ = "0.1.0"
__all__ = ["UserError", "__version__"]
