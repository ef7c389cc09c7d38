"""Statistics shared by every capability: intervals and rank correlation.

Pure numpy/scipy and at the bottom of the package (it imports only ``lostmid.errors``),
so that ``influence`` (measurement), ``behaviour`` (retrieval), ``train``, ``remedies``
and ``reproduce`` summarise with one definition of each quantity:

* :mod:`~lostmid.stats.intervals`: a proportion's Wilson interval, Newcombe's intervals
  of a difference of two proportions (independent samples, and paired: the same items
  at both, :func:`paired_difference_interval`), the 95% Student-t interval over seeds
  (:func:`t_interval`, :func:`seed_interval`, :func:`paired_difference`, and
  :class:`MeanSpread`, a summary over seeds or folds), the one interval type
  (:class:`Interval`, also a contrast's), and the
  jackknife-t interval of a smooth readout over inputs (:func:`jackknife_interval`);
* :mod:`~lostmid.stats.ranks`: Spearman's rank correlation (nan where undefined);
* :mod:`~lostmid.stats.shape`: shape indices of a curve over positions (mean, gap,
  primacy, recency, bias index, and a shape class decided by intervals), for accuracy
  curves and influence profiles alike (:class:`Curve`, :func:`shape_indices`).

>>> from lostmid.stats import seed_interval, spearman, wilson_interval
>>> round(seed_interval([1.0, 2.0, 3.0]).ci_high, 4), spearman([1, 2, 3], [3, 1, 2])
(4.4841, -0.5)
"""

from lostmid.stats.intervals import (
    Z95,
    Interval,
    MeanSpread,
    difference_interval,
    item_bootstrap,
    jackknife_interval,
    paired_counts,
    paired_difference,
    paired_difference_interval,
    paired_phi,
    seed_interval,
    t_interval,
    welch_interval,
    wilson_interval,
)
from lostmid.stats.ranks import finite_or_none, ranks, spearman
from lostmid.stats.shape import (
    SHAPES,
    Curve,
    ShapeIndices,
    reference_points,
    shape_indices,
)

__all__ = [
    "SHAPES",
    "Z95",
    "Curve",
    "Interval",
    "MeanSpread",
    "ShapeIndices",
    "difference_interval",
    "finite_or_none",
    "item_bootstrap",
    "jackknife_interval",
    "paired_counts",
    "paired_difference",
    "paired_difference_interval",
    "paired_phi",
    "ranks",
    "reference_points",
    "seed_interval",
    "shape_indices",
    "spearman",
    "t_interval",
    "welch_interval",
    "wilson_interval",
]
