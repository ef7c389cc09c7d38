"""Theory against measurement: metrics, naive baselines, predicted and fitted theory,
fair scoring over seeds, and claim verdicts.

The public surface, by task:

* run a comparison: :class:`CompareConfig`, :func:`run_compare` -> :class:`CompareResult`
  (``lostmid compare``);
* read a measurement: :func:`load_measured` -> :class:`MeasuredProfile`;
* score two profiles: :func:`compare_profiles` -> :class:`ProfileComparison` (the one
  agreement record), :func:`wasserstein1`, :func:`log_bin`;
* score candidates: :func:`compare_measurements` (seeds of one model: in and out of
  sample, noise floor, verdicts) or :func:`compare_measurement` (one measurement) ->
  :class:`Candidate` by name; :func:`predict_theory`;
* fair scoring from arrays: :func:`noise_floor`, :func:`score_out_of_sample`;
* claims: :class:`Claim`, judged by :func:`verdict_at_least`, :func:`verdict_at_most`,
  :func:`verdict_order_of_magnitude`, with our number written by :func:`format_value`.

Everything else lives in the submodules: :mod:`~lostmid.compare.metrics`,
:mod:`~lostmid.compare.fitting` (the objective and spike policy every fit shares),
:mod:`~lostmid.compare.baselines`, :mod:`~lostmid.compare.fit`,
:mod:`~lostmid.compare.scoring`, :mod:`~lostmid.compare.candidates`,
:mod:`~lostmid.compare.claims` (the verdict strings), :mod:`~lostmid.compare.inputs`,
:mod:`~lostmid.compare.options` (the command's help and defaults),
:mod:`~lostmid.compare.run`.

>>> from lostmid.compare import compare_profiles
>>> compare_profiles([3.0, 1.0, 2.0], [6.0, 2.0, 4.0]).wasserstein1
0.0
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Each public name and the submodule that defines it. Submodules load on first use,
# so a light one (``lostmid.compare.options``, read by the CLI at start-up) does not
# pull in scipy and matplotlib through this package.
_PUBLIC = {
    "Candidate": "candidates",
    "compare_measurement": "candidates",
    "compare_measurements": "candidates",
    "Claim": "claims",
    "format_value": "claims",
    "verdict_at_least": "claims",
    "verdict_at_most": "claims",
    "verdict_order_of_magnitude": "claims",
    "predict_theory": "fit",
    "MeasuredProfile": "inputs",
    "load_measured": "inputs",
    "ProfileComparison": "metrics",
    "compare_profiles": "metrics",
    "log_bin": "metrics",
    "wasserstein1": "metrics",
    "CompareConfig": "run",
    "CompareResult": "run",
    "run_compare": "run",
    "noise_floor": "scoring",
    "score_out_of_sample": "scoring",
}

__all__ = [
    "Candidate",
    "Claim",
    "CompareConfig",
    "CompareResult",
    "MeasuredProfile",
    "ProfileComparison",
    "compare_measurement",
    "compare_measurements",
    "compare_profiles",
    "format_value",
    "load_measured",
    "log_bin",
    "noise_floor",
    "predict_theory",
    "run_compare",
    "score_out_of_sample",
    "verdict_at_least",
    "verdict_at_most",
    "verdict_order_of_magnitude",
    "wasserstein1",
]


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'lostmid.compare' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"lostmid.compare.{_PUBLIC[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})


if TYPE_CHECKING:
    from lostmid.compare.candidates import Candidate, compare_measurement, compare_measurements
    from lostmid.compare.claims import (
        Claim,
        format_value,
        verdict_at_least,
        verdict_at_most,
        verdict_order_of_magnitude,
    )
    from lostmid.compare.fit import predict_theory
    from lostmid.compare.inputs import MeasuredProfile, load_measured
    from lostmid.compare.metrics import (
        ProfileComparison,
        compare_profiles,
        log_bin,
        wasserstein1,
    )
    from lostmid.compare.run import CompareConfig, CompareResult, run_compare
    from lostmid.compare.scoring import noise_floor, score_out_of_sample
