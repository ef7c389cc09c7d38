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

from lostmid.lazy import attach

# Names are imported from their modules on first use (lostmid.lazy): lostmid.cli registers
# ``remedies`` without loading torch.
__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "base": ["REGISTRY", "Remedy", "Setting", "register"],
        "registry": ["get_remedy", "remedy_names"],
        "config": ["HELP", "REMEDIES_SCALES", "RemediesConfig", "RemediesScale"],
        "positions": [
            "adaptive",
            "capped_mean_one",
            "curriculum",
            "inverse_density",
            "middle_records",
            "record_centres",
            "valley_bump",
        ],
        "run": ["run_remedies"],
        "summary": ["RemediesResult", "RemedyRecord", "summarise_runs"],
        "stats": ["halves_gap", "verdict"],
        "surgery": ["prefix_attention_mask", "prefix_variant", "residual_variant"],
    },
)
