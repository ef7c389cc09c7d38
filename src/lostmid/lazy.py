"""Package namespaces whose names are imported from their submodules on first use.

``lostmid --help`` must answer at once, and it needs the help strings that live next to
each config (``lostmid.train.config``, ``lostmid.reproduce.config``, ...). Importing a
submodule runs its package's ``__init__`` first; if that ``__init__`` re-exported the
run functions eagerly, it would load torch and transformers (seconds). A package whose
public names come from heavy modules declares them with :func:`attach` instead
(PEP 562 module ``__getattr__``), so ``from lostmid.train import run_training`` works
as usual and costs the import only when it is used. Type checkers cannot follow
:func:`attach`, so such a package also imports the same names under ``if TYPE_CHECKING:``
(``from lostmid.train.run import run_training as run_training``: the ``as`` form marks a
re-export of a typed package); ``tests/test_lazy.py`` checks that the two agree.

>>> getattr_, dir_, all_ = attach("lostmid", {"errors": ["UserError"]})
>>> all_, getattr_("UserError").__name__
(['UserError'], 'UserError')
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def attach(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package``.

    Args:
        package: the package's ``__name__``.
        exports: submodule name (relative to the package) -> the public names it defines.
    """
    where = {name: module for module, names in exports.items() for name in names}
    # A name equal to a submodule's would be shadowed by the submodule once imported.
    if clash := sorted(set(where) & set(exports)):
        raise ValueError(f"{package}: names {clash} are also submodules; rename one")

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{where[name]}"), name)

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__, sorted(where)
