"""Remedies by spec: ``NAME`` or ``NAME:ARG``, looked up among the registered classes
(:func:`lostmid.remedies.base.register`); importing this module registers the built-in
ones (:mod:`lostmid.remedies.catalogue`).

>>> get_remedy("baseline").kind
'training'
>>> get_remedy("oversample:nope")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lostmid.errors.UserError: --remedies oversample: argument 'nope' unknown; choose one of ...
"""

from __future__ import annotations

from lostmid.checks import check_choice
from lostmid.remedies import catalogue  # noqa: F401  (registers the built-in remedies)
from lostmid.remedies.base import REGISTRY, Remedy


def get_remedy(spec: str) -> Remedy:
    """The remedy of a spec ``NAME`` or ``NAME:ARG``, checked."""
    name, sep, argument = spec.strip().partition(":")
    check_choice("--remedies", name, REGISTRY)
    return REGISTRY[name](argument if sep else None)


def remedy_names(kind: str | None = None) -> tuple[str, ...]:
    """Registered names, in registration order; only those of ``kind`` if given."""
    return tuple(n for n, c in REGISTRY.items() if kind is None or c.kind == kind)
