"""Theory against measurement: metrics, naive baselines, fitted and predicted theory,
and claim verdicts.

* :mod:`~lostmid.compare.metrics`: Spearman, Wasserstein-1, log correlation,
  peak-to-valley, anchor errors, bundled by :func:`compare_profiles`.
* :mod:`~lostmid.compare.baselines`: naive profiles fitted to the measurement.
* :mod:`~lostmid.compare.fit`: theory parameters predicted (measured a_l) or fitted.
* :mod:`~lostmid.compare.candidates`: every candidate scored against one measurement.
* :mod:`~lostmid.compare.claims`: verdicts on the paper's claims by stated rules.
* :mod:`~lostmid.compare.run`: the ``lostmid compare`` command.

>>> from lostmid.compare import compare_profiles
>>> compare_profiles([3.0, 1.0, 2.0], [6.0, 2.0, 4.0]).wasserstein1
0.0
"""

from lostmid.compare.baselines import BASELINE_NAMES, Baseline, baseline_profiles, fit_baselines
from lostmid.compare.candidates import Candidate, compare_measurement, parse_kernels
from lostmid.compare.claims import (
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
    VERDICTS,
    Claim,
    Verdict,
    format_value,
    mean_and_spread,
    verdict_at_least,
    verdict_at_most,
    verdict_order_of_magnitude,
)
from lostmid.compare.fit import TheoryFit, fit_theory, predict_theory
from lostmid.compare.inputs import MeasuredProfile, TheoryProfile, load_measured, load_theory
from lostmid.compare.metrics import (
    AnchorError,
    PeakToValley,
    ProfileComparison,
    anchor_error,
    compare_profiles,
    log10_rmse,
    log_correlation,
    peak_to_valley,
    spearman,
    validate_profile,
    wasserstein1,
)

__all__ = [
    "BASELINE_NAMES",
    "NOT_REPRODUCED",
    "PARTLY",
    "REPRODUCED",
    "VERDICTS",
    "AnchorError",
    "Baseline",
    "Candidate",
    "Claim",
    "MeasuredProfile",
    "PeakToValley",
    "ProfileComparison",
    "TheoryFit",
    "TheoryProfile",
    "Verdict",
    "anchor_error",
    "baseline_profiles",
    "compare_measurement",
    "compare_profiles",
    "fit_baselines",
    "fit_theory",
    "format_value",
    "load_measured",
    "load_theory",
    "log10_rmse",
    "log_correlation",
    "mean_and_spread",
    "parse_kernels",
    "peak_to_valley",
    "predict_theory",
    "spearman",
    "validate_profile",
    "verdict_at_least",
    "verdict_at_most",
    "verdict_order_of_magnitude",
    "wasserstein1",
]
