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

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "base": ("REGISTRY", "Remedy", "Setting", "get_remedy", "register", "remedy_names"),
    "config": ("HELP", "SCALES", "RemediesConfig", "Scale"),
    "positions": (
        "adaptive",
        "capped_mean_one",
        "curriculum",
        "inverse_density",
        "middle_records",
        "record_centres",
        "valley_bump",
    ),
    "run": ("run_remedies",),
    "summary": ("RemediesResult", "RemedyRecord", "summarise_runs"),
    "stats": ("Interval", "halves_gap", "paired_difference", "seed_interval", "verdict"),
    "surgery": ("prefix_attention_mask", "prefix_variant", "residual_variant"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    """Import on first use: ``lostmid.cli`` registers ``remedies`` without loading torch."""
    if name not in _WHERE:
        raise AttributeError(f"module 'lostmid.remedies' has no attribute {name!r}")
    return getattr(importlib.import_module(f"lostmid.remedies.{_WHERE[name]}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
