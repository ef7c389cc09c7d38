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

from typing import TYPE_CHECKING

from lostmid.lazy import attach

# Type checkers cannot see through attach: they read the same names here, in the map's
# order, one statement per module (isort off; tests/test_lazy.py keeps the two in step).
if TYPE_CHECKING:
    # isort: off
    from lostmid.remedies.base import (
        REGISTRY as REGISTRY,
        Remedy as Remedy,
        Setting as Setting,
        register as register,
    )
    from lostmid.remedies.registry import get_remedy as get_remedy, remedy_names as remedy_names
    from lostmid.remedies.config import (
        HELP as HELP,
        REMEDIES_SCALES as REMEDIES_SCALES,
        RemediesConfig as RemediesConfig,
        RemediesScale as RemediesScale,
    )
    from lostmid.remedies.positions import (
        adaptive as adaptive,
        capped_mean_one as capped_mean_one,
        curriculum as curriculum,
        deficit as deficit,
        inverse_density as inverse_density,
        middle_cover as middle_cover,
        middle_records as middle_records,
        record_centres as record_centres,
        tilt_towards as tilt_towards,
        valley_bump as valley_bump,
    )
    from lostmid.remedies.run import run_remedies as run_remedies
    from lostmid.remedies.summary import (
        RemediesResult as RemediesResult,
        RemedyRecord as RemedyRecord,
        summarise_runs as summarise_runs,
    )
    from lostmid.remedies.stats import (
        RULE as RULE,
        VERDICTS as VERDICTS,
        gap_margin as gap_margin,
        halves_gap as halves_gap,
        verdict as verdict,
    )
    from lostmid.remedies.surgery import (
        prefix_attention_mask as prefix_attention_mask,
        prefix_variant as prefix_variant,
        residual_variant as residual_variant,
    )
    from lostmid.remedies.validation import (
        VALIDATION_INDEX as VALIDATION_INDEX,
        ValidationSplit as ValidationSplit,
    )
    # isort: on

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
            "deficit",
            "inverse_density",
            "middle_cover",
            "middle_records",
            "record_centres",
            "tilt_towards",
            "valley_bump",
        ],
        "run": ["run_remedies"],
        "summary": ["RemediesResult", "RemedyRecord", "summarise_runs"],
        "stats": ["RULE", "VERDICTS", "gap_margin", "halves_gap", "verdict"],
        "surgery": ["prefix_attention_mask", "prefix_variant", "residual_variant"],
        "validation": ["VALIDATION_INDEX", "ValidationSplit"],
    },
)
