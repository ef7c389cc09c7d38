"""Does pretraining deepen the valley? Readouts of a trained model against its twins at birth.

The design: one pretrained model and S random-init twins of the same architecture (one
per seed), each measured on the same N inputs, one influence profile per input
(``profiles[n, j]``, position j = 1..L at index j - 1). Readouts are taken on the mean
profile over inputs.

Two readouts, chosen by name (:data:`READOUT_METHODS`):

* ``binned`` (the default): the positions between the first and the last, 2..L-1, are
  cut into ``bins`` contiguous bins of near-equal width (:data:`BINS`, at least
  :data:`MIN_BIN` positions a bin), and each bin's *level* is the mean influence over
  its positions. The valley is the lowest bin level; the peak the largest of the first
  position's influence (the sink), the last's (the target, the recency anchor) and the
  bin levels. Every level is a mean over many position-inputs or a fixed position, so
  the valley is not the minimum of hundreds of noisy numbers: a profile that is only
  noisier does not read deeper (benchmarks/bench_readout.py, tests/compare).
* ``single``: the single smallest position of the mean profile (the target excluded)
  and the single largest, as :func:`lostmid.theory.summarise_profile` reads a theory
  profile. The minimum of a noisy mean is biased deep: a noisier profile reads deeper by
  0.5-1.5 decades at 4 inputs. Kept by name so that earlier verdicts can be re-judged.

The readouts, for either method:

* ``log10_ptv``: log10 peak-to-valley;
* ``valley_fraction``: where the valley sits, (position - 1) / (L - 1) in [0, 1] (a
  bin's centre for ``binned``);
* ``sink_share`` / ``last_share``: the first / last position's influence over the sum;
* ``log10_sink_depth`` / ``log10_last_depth``: log10 of the first / last position's
  influence over the valley (both > 0: a U, the valley below both ends);
* ``log10_head_depth``: log10 of the first bin's level (positions 2.., the sink left
  out; ``single``: position 2) over the valley: primacy without the attention sink.

Which peak? The paper does not define the peak of its peak-to-valley ratio, and the
readings disagree on trained models, so every verdict on a change is read at each
defensible peak (:data:`PEAKS`): the largest (``log10_ptv``, the paper's ratio read
literally: its theory's profile peaks at whichever end is larger, at initialisation
the last token's residual spike), the first position (the primacy tail's top, where a
trained model's attention sink sits), the first bin (primacy without the sink) and the
last position (the recency anchor: the target's own residual path). A verdict is
robust only when the readings agree (:func:`lostmid.stats.verdicts.across`).

Intervals (95%), with the inputs as the unit of resampling (the twins see the same
inputs, so every difference is paired over inputs):

* ``binned``: the jackknife-t interval of :func:`lostmid.stats.jackknife_interval` for
  every readout but the valley's position (each is a smooth function of input means):
  leave one input out of the pretrained model and of every twin together; for the twins
  and the change, the twins' spread over seeds (sample variance / S) is added to the
  jackknife variance (S = 1 cannot say it: the interval then covers inputs only). The
  valley's position is a discrete argmin, so its interval is a percentile bootstrap
  over inputs (and twins' seeds).
* ``single``: percentile bootstraps for every readout, as first published: over inputs
  for the pretrained model, over seeds and inputs for the twins (each twin read on its
  own mean profile), paired over inputs for the change.

Verdict rules, stated before any run and fed constructed data in the tests (yes, no and
undecided; a null where the pretrained profile is only noisier; a true deepening):

* "pretraining deepens the valley" (a secondary summary of the paper: about 10^2 at
  birth, 10^3 trained): the change of log10 peak-to-valley, with boundary ``DEEPENING =
  0.5`` (half an order of magnitude, midway between no change and +1): reproduced when
  the whole interval lies above it, not reproduced when it lies below, else
  inconclusive.
* "the U persists through pretraining" (the paper's own wording: training "does not
  overcome" the valley): the pretrained profile is a U (both end depths' intervals above
  0) and not shallower than its twins by more than the boundary (the change's interval
  above -0.5): reproduced when all three hold, not reproduced when any interval lies
  wholly on the other side, else inconclusive.
* "the valley is in the middle": the valley fraction of the pretrained model, in the
  middle half [0.25, 0.75]: reproduced when the whole interval lies inside, not
  reproduced when it lies wholly outside, else inconclusive.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from lostmid.checks import check_choice
from lostmid.compare.claims import Verdict
from lostmid.errors import UserError
from lostmid.stats.intervals import jackknife_interval
from lostmid.stats.shape import MIDDLE_BAND
from lostmid.stats.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_ROBUST,
    REPRODUCED,
    ROBUST,
    band_side,
    side_of,
)
from lostmid.typing import Float

READOUTS = (
    "log10_ptv",
    "valley_fraction",
    "sink_share",
    "last_share",
    "log10_sink_depth",
    "log10_last_depth",
    "log10_head_depth",
)
READOUT_METHODS = ("binned", "single")
"""The readouts by name; the first is the default (module docstring)."""
BINS = 32
"""Bins of positions 2..L-1 for the ``binned`` readout (fewer when L is short)."""
MIN_BIN = 4
"""The fewest positions a bin holds: at L < 4 * 32 + 2 there are fewer bins."""
DEEPENING = 0.5
"""The boundary of "deepens": log10 peak-to-valley grows by more than half a decade."""
MIDDLE = MIDDLE_BAND
"""The middle half of the context, as fractions of (position - 1) / (L - 1)
(:data:`lostmid.stats.shape.MIDDLE_BAND`)."""
_LOCATION = "valley_fraction"  # a discrete argmin: a percentile interval, never the jackknife
PEAKS = {
    "largest": "log10_ptv",
    "first": "log10_sink_depth",
    "first bin": "log10_head_depth",
    "last": "log10_last_depth",
}
"""Each defensible peak of a peak-to-valley ratio and the readout that reads it (module
docstring): the largest of the ends and the bins, the first position (the sink), the
first bin (primacy without the sink) and the last position (the recency anchor)."""


def position_bins(length: int, bins: int = BINS) -> list[np.ndarray]:
    """The ``binned`` readout's bins: 0-indexed positions 1..L-2 (1-indexed 2..L-1) cut
    into contiguous bins of near-equal width, at least :data:`MIN_BIN` positions each.

    >>> [b.tolist() for b in position_bins(12, 32)]
    [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]
    """
    body = np.arange(1, length - 1)
    count = max(1, min(bins, body.size // MIN_BIN))
    return [chunk for chunk in np.array_split(body, count) if chunk.size]


def readouts(
    profile: Float[np.ndarray, " L"], method: str = "binned", bins: int = BINS
) -> dict[str, float]:
    """The readouts of one (mean) influence profile (module docstring).

    >>> p = np.array([10.0, 1.0, 0.1, 1.0, 5.0])
    >>> r = readouts(p, "single")
    >>> round(r["log10_ptv"], 3), r["valley_fraction"], round(r["sink_share"], 3)
    (2.0, 0.5, 0.585)
    >>> round(readouts(p, "binned")["log10_ptv"], 3)  # one bin: positions 2-4, level 0.7
    1.155
    """
    check_choice("readout", method, READOUT_METHODS)
    values = np.asarray(profile, dtype=np.float64)
    if values.ndim != 1 or values.size < 3:
        raise UserError("a profile for readouts is 1-D with at least 3 positions")
    reduce, read_many = reader(method, values.size, bins)
    return {k: float(v[0]) for k, v in read_many(reduce(values[None, :])).items()}


Reduce = Callable[[np.ndarray], np.ndarray]
ReadMany = Callable[[np.ndarray], dict[str, np.ndarray]]


def reader(method: str, length: int, bins: int = BINS) -> tuple[Reduce, ReadMany]:
    """A readout as (reduce, read_many). ``reduce`` maps (..., L) profiles to (..., D)
    rows and is linear, so the reduced mean of any set of inputs is the reduction of
    their mean profile; ``read_many`` gives every readout of K reduced rows (K, D) at
    once. ``binned`` keeps D = 3 + bins numbers an input ([first, last, sum, bin
    levels...]), so a bootstrap resamples a few numbers, not whole profiles; ``single``
    keeps the profile."""
    check_choice("readout", method, READOUT_METHODS)
    if method == "single":
        return (lambda profiles: np.asarray(profiles, dtype=np.float64)), _single_many
    chunks = position_bins(length, bins)
    weights = np.zeros((length, 3 + len(chunks)))
    weights[0, 0] = weights[length - 1, 1] = 1.0
    weights[:, 2] = 1.0
    for b, chunk in enumerate(chunks):
        weights[chunk, 3 + b] = 1.0 / chunk.size
    fractions = np.array([chunk.mean() / (length - 1) for chunk in chunks])  # 0-indexed centre

    def reduce(profiles: np.ndarray) -> np.ndarray:
        return np.asarray(profiles, dtype=np.float64) @ weights

    def read_many(rows: np.ndarray) -> dict[str, np.ndarray]:
        levels = rows[:, 3:]
        lowest = np.argmin(levels, axis=1)
        valley = levels[np.arange(rows.shape[0]), lowest]
        peak = np.maximum(np.maximum(rows[:, 0], rows[:, 1]), levels.max(axis=1))
        return _readout_values(
            rows[:, 0], rows[:, 1], rows[:, 2], peak, valley, fractions[lowest], levels[:, 0]
        )

    return reduce, read_many


def _single_many(profiles: np.ndarray) -> dict[str, np.ndarray]:
    """The single-position readout of K profiles (K, L): the peak over every position,
    the valley over all but the last (as :func:`lostmid.theory.summarise_profile` reads a
    positive profile)."""
    length = profiles.shape[1]
    rows = np.arange(profiles.shape[0])
    lowest = np.argmin(profiles[:, :-1], axis=1)
    return _readout_values(
        profiles[:, 0],
        profiles[:, -1],
        profiles.sum(axis=1),
        profiles.max(axis=1),
        profiles[rows, lowest],
        lowest / (length - 1),
        profiles[:, 1],
    )


def _readout_values(
    sink: np.ndarray,
    last: np.ndarray,
    total: np.ndarray,
    peak: np.ndarray,
    valley: np.ndarray,
    fraction: np.ndarray,
    head: np.ndarray,
) -> dict[str, np.ndarray]:
    with np.errstate(divide="ignore", invalid="ignore"):

        def log_ratio(top: np.ndarray) -> np.ndarray:
            ok = (valley > 0) & (top > 0) & np.isfinite(valley) & np.isfinite(top)
            return np.where(
                ok, np.log10(np.where(ok, top, 1.0) / np.where(ok, valley, 1.0)), np.nan
            )

        share = total > 0
        return {
            "log10_ptv": log_ratio(peak),
            "valley_fraction": np.asarray(fraction, dtype=np.float64),
            "sink_share": np.where(share, sink / np.where(share, total, 1.0), np.nan),
            "last_share": np.where(share, last / np.where(share, total, 1.0), np.nan),
            "log10_sink_depth": log_ratio(sink),
            "log10_last_depth": log_ratio(last),
            "log10_head_depth": log_ratio(head),
        }


@dataclass(frozen=True)
class Estimate:
    """A readout: its value on the full data and a 95% interval."""

    value: float
    low: float
    high: float

    def record(self) -> dict[str, float | None]:
        def clean(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {"value": clean(self.value), "low": clean(self.low), "high": clean(self.high)}

    @property
    def span(self) -> tuple[float, float]:
        return (self.low, self.high)


def _percentile(value: float, draws: np.ndarray) -> Estimate:
    finite = draws[np.isfinite(draws)]
    if finite.size < 0.9 * draws.size:
        return Estimate(value, float("nan"), float("nan"))
    low, high = np.percentile(finite, [2.5, 97.5])
    return Estimate(value, float(low), float(high))


def _twin_readouts(read: ReadMany, twins: np.ndarray, inputs: np.ndarray) -> dict[str, float]:
    """The twins' readouts on ``inputs``: each twin read on its own mean, averaged."""
    per_seed = read(twins[:, inputs].mean(axis=1))
    return {k: float(np.mean(v)) for k, v in per_seed.items()}


def _read_one(read: ReadMany, row: np.ndarray) -> dict[str, float]:
    return {k: float(v[0]) for k, v in read(row[None, :]).items()}


INTERVALS = {
    "binned": "95% jackknife-t over inputs (leave one input out of the pretrained model and "
    "every twin; the twins' spread over seeds added for the twins and the change); the "
    "valley's position: percentile bootstrap over inputs (and twins' seeds)",
    "single": "95% percentile bootstrap: pretrained over inputs; twins over seeds and "
    "inputs; difference paired over inputs",
}
"""How each readout's intervals are computed, in words (recorded with every comparison)."""


@dataclass(frozen=True)
class PretrainingComparison:
    """Readouts of the pretrained model, of its twins and their paired differences."""

    inputs: int
    seeds: int
    length: int
    pretrained: dict[str, Estimate]
    twins: dict[str, Estimate]
    difference: dict[str, Estimate]
    deepens: Verdict
    middle: Verdict
    persists: Verdict
    readout: str = "binned"
    bins: int | None = BINS
    quantisation: Estimate | None = None
    """The change of log10 peak-to-valley when the pretrained weights are quantised once
    more (:mod:`lostmid.models.quantise`), paired over inputs; None: not measured."""
    quantisation_verdict: Verdict | None = None
    peaks: dict[str, dict[str, Verdict]] = field(default_factory=dict)
    """``deepens`` and ``persists`` read at each peak of :data:`PEAKS` (the field's
    verdicts ``deepens`` / ``persists`` are the largest peak's, as first published)."""

    def record(self) -> dict[str, Any]:
        def block(d: dict[str, Estimate]) -> dict[str, Any]:
            return {k: v.record() for k, v in d.items()}

        return {
            "inputs": self.inputs,
            "seeds": self.seeds,
            "length": self.length,
            "readout": self.readout,
            "bins": self.bins,
            "interval": INTERVALS[self.readout],
            "pretrained": block(self.pretrained),
            "twins": block(self.twins),
            "difference": block(self.difference),
            "deepens": {"verdict": self.deepens.verdict, "rule": self.deepens.rule},
            "persists": {"verdict": self.persists.verdict, "rule": self.persists.rule},
            "middle": {"verdict": self.middle.verdict, "rule": self.middle.rule},
            "peaks": {
                claim: {peak: {"verdict": v.verdict, "rule": v.rule} for peak, v in by.items()}
                for claim, by in self.peaks.items()
            },
            "quantisation": None
            if self.quantisation is None or self.quantisation_verdict is None
            else {
                "shift": self.quantisation.record(),
                "verdict": self.quantisation_verdict.verdict,
                "rule": self.quantisation_verdict.rule,
            },
        }


def compare_pretraining(
    pretrained: Float[np.ndarray, "N L"],
    twins: Sequence[Float[np.ndarray, "N L"]] | Float[np.ndarray, "S N L"],
    *,
    readout: str = "binned",
    bins: int = BINS,
    draws: int = 2000,
    seed: int = 0,
    requantised: Float[np.ndarray, "N L"] | None = None,
) -> PretrainingComparison:
    """Readouts with intervals and the three verdicts for one family, length and input kind.

    Args:
        pretrained: (N, L) per-input influence profiles of the pretrained model.
        twins: (S, N, L) the same inputs through S random-init twins.
        readout: ``binned`` (the default) or ``single`` (module docstring).
        bins: the ``binned`` readout's bins.
        draws: bootstrap draws (the valley's position; every readout of ``single``).
        requantised: (N, L) the same inputs through the pretrained model with its weights
            quantised once more: the quantisation control (:func:`quantisation_verdict`);
            a cell it does not clear has "deepens" and "persists" inconclusive.
    """
    check_choice("--readout", readout, READOUT_METHODS)
    pre = np.asarray(pretrained, dtype=np.float64)
    tw = np.asarray(twins, dtype=np.float64)
    if pre.ndim != 2 or tw.ndim != 3 or tw.shape[1:] != pre.shape:
        raise UserError(
            f"pretrained profiles (N, L) and twins (S, N, L) on the same inputs; got "
            f"{pre.shape} and {tw.shape}"
        )
    n, length = pre.shape
    s = tw.shape[0]
    if n < 2:
        raise UserError("at least 2 inputs are needed for an interval over inputs")

    reduce, read = reader(readout, length, bins)
    pre, tw = reduce(pre), reduce(tw)  # binned: a few linear summaries an input
    everything = np.arange(n)
    pre_full = _read_one(read, pre.mean(axis=0))
    twin_full = _twin_readouts(read, tw, everything)
    diff_full = {k: pre_full[k] - twin_full[k] for k in READOUTS}
    boot = _bootstrap(read, pre, tw, draws, seed)
    if readout == "single":
        est_pre = {k: _percentile(pre_full[k], boot[0][k]) for k in READOUTS}
        est_twin = {k: _percentile(twin_full[k], boot[1][k]) for k in READOUTS}
        est_diff = {k: _percentile(diff_full[k], boot[2][k]) for k in READOUTS}
    else:
        est_pre, est_twin, est_diff = _jackknife(read, pre, tw, pre_full, twin_full)
        est_pre[_LOCATION] = _percentile(pre_full[_LOCATION], boot[0][_LOCATION])
        est_twin[_LOCATION] = _percentile(twin_full[_LOCATION], boot[1][_LOCATION])
        est_diff[_LOCATION] = _percentile(diff_full[_LOCATION], boot[2][_LOCATION])
    peaks = {
        "deepens": {p: deepening_verdict(est_diff[k].span) for p, k in PEAKS.items()},
        "persists": {
            p: persists_verdict(
                est_diff[k].span,
                est_pre["log10_sink_depth"].span,
                est_pre["log10_last_depth"].span,
            )
            for p, k in PEAKS.items()
        },
    }
    shift = control = None
    if requantised is not None:
        again = reduce(np.asarray(requantised, dtype=np.float64))
        if again.shape != pre.shape:
            raise UserError("the requantised profiles must be on the pretrained model's inputs")
        shift = _paired_shift(read, pre, again)
        control = quantisation_verdict(shift.span)
        if control.verdict != ROBUST:
            note = f" (inconclusive: the quantisation control says {control.verdict})"
            peaks = {
                claim: {p: Verdict(INCONCLUSIVE, v.rule + note) for p, v in by.items()}
                for claim, by in peaks.items()
            }
    return PretrainingComparison(
        inputs=n,
        seeds=s,
        length=length,
        pretrained=est_pre,
        twins=est_twin,
        difference=est_diff,
        deepens=peaks["deepens"]["largest"],
        middle=middle_verdict(est_pre["valley_fraction"].span),
        persists=peaks["persists"]["largest"],
        readout=readout,
        bins=bins if readout == "binned" else None,
        quantisation=shift,
        quantisation_verdict=control,
        peaks=peaks,
    )


def _paired_shift(read: ReadMany, pre: np.ndarray, again: np.ndarray) -> Estimate:
    """log10 peak-to-valley of ``again`` minus that of ``pre`` on the same inputs, with
    its jackknife-t interval (leave one input out of both)."""
    n = pre.shape[0]
    full = (
        _read_one(read, again.mean(axis=0))["log10_ptv"]
        - _read_one(read, pre.mean(axis=0))["log10_ptv"]
    )
    loo = []
    for i in range(n):
        keep = np.delete(np.arange(n), i)
        a = _read_one(read, again[keep].mean(axis=0))["log10_ptv"]
        loo.append(a - _read_one(read, pre[keep].mean(axis=0))["log10_ptv"])
    interval = jackknife_interval(full, loo)
    return Estimate(full, interval.ci_low, interval.ci_high)


def _three_way(
    interval: tuple[float, float],
    rule: str,
    side: Callable[..., str],
    words: Mapping[str, str],
) -> Verdict:
    """The verdict the word of ``side(low, high)`` names (:mod:`lostmid.stats.verdicts`),
    inconclusive where none does; an interval with an end that is not finite is
    inconclusive, and its rule says there was none."""
    low, high = interval
    if not (np.isfinite(low) and np.isfinite(high)):
        return Verdict(INCONCLUSIVE, rule + " (no interval)")
    return Verdict(words.get(side(low, high), INCONCLUSIVE), rule)


def quantisation_verdict(shift: tuple[float, float], boundary: float = DEEPENING) -> Verdict:
    """Whether a cell's depth survives a second quantisation of the weights: ``robust``
    when the 95% interval of the shift in log10 peak-to-valley lies inside (-boundary,
    +boundary), ``not robust`` when it lies wholly outside, else ``inconclusive``.

    >>> quantisation_verdict((-0.1, 0.2)).verdict, quantisation_verdict((0.6, 0.9)).verdict
    ('robust', 'not robust')
    >>> quantisation_verdict((0.3, 0.7)).verdict
    'inconclusive'
    """
    rule = (
        f"robust if the 95% interval of the change in log10 peak-to-valley under a second "
        f"4-bit quantisation lies inside (-{boundary}, +{boundary}), not robust if wholly "
        "outside, else inconclusive; a cell that is not robust cannot decide deepens or "
        "persists"
    )
    inside = partial(band_side, lo=-boundary, hi=boundary, closed=False)
    return _three_way(shift, rule, inside, {"inside": ROBUST, "outside": NOT_ROBUST})


Draws = dict[str, np.ndarray]


def _bootstrap(
    read: ReadMany, pre: np.ndarray, tw: np.ndarray, draws: int, seed: int
) -> tuple[Draws, Draws, Draws]:
    """Percentile-bootstrap draws of every readout: pretrained, twins, paired change (the
    same input indices on both sides; the twins' seeds drawn too). The draws are made in
    the order they always were (inputs, then seeds, a draw at a time); each draw's means
    are one product of its counts with the rows, read a block of draws at a time."""
    n, s = pre.shape[0], tw.shape[0]
    rng = np.random.default_rng(seed)
    counts = np.zeros((draws, n))
    seeds = np.empty((draws, s), dtype=np.int64)
    for b in range(draws):
        np.add.at(counts[b], rng.integers(0, n, size=n), 1.0)
        seeds[b] = rng.integers(0, s, size=s)
    boot_pre = {k: np.empty(draws) for k in READOUTS}
    boot_twin = {k: np.empty(draws) for k in READOUTS}
    block = max(1, 2**22 // max(1, s * tw.shape[-1]))  # about 32 MB of means at a time
    for start in range(0, draws, block):
        part = slice(start, min(draws, start + block))
        weights = counts[part] / n
        r_pre = read(weights @ pre)
        means = np.einsum("bn,snd->sbd", weights, tw)  # (S, draws, D)
        r_twin = read(means.reshape(-1, means.shape[-1]))
        rows = np.arange(weights.shape[0])
        for k in READOUTS:
            boot_pre[k][part] = r_pre[k]
            per = r_twin[k].reshape(s, -1)  # (S, draws)
            boot_twin[k][part] = per[seeds[part], rows[:, None]].mean(axis=1)
    boot_diff = {k: boot_pre[k] - boot_twin[k] for k in READOUTS}
    return boot_pre, boot_twin, boot_diff


def _jackknife(
    read: ReadMany,
    pre: np.ndarray,
    tw: np.ndarray,
    pre_full: dict[str, float],
    twin_full: dict[str, float],
) -> tuple[dict[str, Estimate], dict[str, Estimate], dict[str, Estimate]]:
    """Jackknife-t estimates of every readout (module docstring): leave one input out of
    both sides; the twins' spread over seeds added for the twins and the change."""
    n, s = pre.shape[0], tw.shape[0]
    keep = [np.delete(np.arange(n), i) for i in range(n)]
    loo_pre = [_read_one(read, pre[k].mean(axis=0)) for k in keep]
    loo_twin = [_twin_readouts(read, tw, k) for k in keep]
    per_seed = [_read_one(read, t.mean(axis=0)) for t in tw]
    est: tuple[dict[str, Estimate], dict[str, Estimate], dict[str, Estimate]] = ({}, {}, {})
    for k in READOUTS:
        spread = float(np.var([r[k] for r in per_seed], ddof=1)) / s if s > 1 else 0.0
        sides = (
            (pre_full[k], [r[k] for r in loo_pre], 0.0),
            (twin_full[k], [r[k] for r in loo_twin], spread),
            (
                pre_full[k] - twin_full[k],
                [a[k] - b[k] for a, b in zip(loo_pre, loo_twin, strict=True)],
                spread,
            ),
        )
        for side, (full, loo, extra) in zip(est, sides, strict=True):
            i = jackknife_interval(full, loo, extra)
            side[k] = Estimate(full, i.ci_low, i.ci_high)
    return est


def deepening_verdict(difference: tuple[float, float], boundary: float = DEEPENING) -> Verdict:
    """ "Pretraining deepens the valley" from the 95% interval of the change in log10
    peak-to-valley (pretrained - twins).

    >>> deepening_verdict((0.8, 1.3)).verdict, deepening_verdict((-0.4, 0.2)).verdict
    ('reproduced', 'not reproduced')
    >>> deepening_verdict((0.1, 0.9)).verdict
    'inconclusive'
    """
    rule = (
        f"reproduced if the 95% interval of the change in log10 peak-to-valley lies above "
        f"+{boundary} (deeper by more than 10^{boundary}), not reproduced if it lies below, "
        "else inconclusive"
    )
    above = partial(side_of, boundary=boundary)
    return _three_way(difference, rule, above, {"above": REPRODUCED, "below": NOT_REPRODUCED})


def persists_verdict(
    change: tuple[float, float],
    sink_depth: tuple[float, float],
    last_depth: tuple[float, float],
    boundary: float = DEEPENING,
) -> Verdict:
    """ "The U persists through pretraining" from the 95% intervals of the change in log10
    peak-to-valley and of the pretrained profile's two end depths (log10 of the first and
    the last position over the valley).

    >>> persists_verdict((-0.2, 0.4), (1.0, 2.0), (0.5, 1.0)).verdict
    'reproduced'
    >>> persists_verdict((-1.5, -0.7), (1.0, 2.0), (0.5, 1.0)).verdict  # much shallower
    'not reproduced'
    >>> persists_verdict((-0.2, 0.4), (1.0, 2.0), (-0.6, -0.1)).verdict  # no recency: no U
    'not reproduced'
    >>> persists_verdict((-0.9, 0.4), (1.0, 2.0), (0.5, 1.0)).verdict
    'inconclusive'
    """
    rule = (
        f"reproduced if the pretrained profile is a U (the 95% intervals of log10 first / "
        f"valley and last / valley both above 0) and the change in log10 peak-to-valley "
        f"lies above -{boundary} (not shallower by more than 10^{boundary}); not "
        "reproduced if any of the three lies wholly on the other side; else inconclusive"
    )
    sides = [
        side_of(*change, -boundary),
        side_of(*sink_depth, 0.0),
        side_of(*last_depth, 0.0),
    ]
    if any(side == "below" for side in sides):
        return Verdict(NOT_REPRODUCED, rule)
    if all(side == "above" for side in sides):
        return Verdict(REPRODUCED, rule)
    return Verdict(INCONCLUSIVE, rule)


def middle_verdict(fraction: tuple[float, float], middle: tuple[float, float] = MIDDLE) -> Verdict:
    """ "The valley is in the middle" from the 95% interval of the valley's position as a
    fraction of the context.

    >>> middle_verdict((0.4, 0.6)).verdict, middle_verdict((0.9, 0.99)).verdict
    ('reproduced', 'not reproduced')
    >>> middle_verdict((0.1, 0.5)).verdict
    'inconclusive'
    """
    lo, hi = middle
    rule = (
        f"reproduced if the 95% interval of the valley's position (fraction of the "
        f"context) lies inside [{lo}, {hi}], not reproduced if wholly outside, else "
        "inconclusive"
    )
    inside = partial(band_side, lo=lo, hi=hi)
    return _three_way(fraction, rule, inside, {"inside": REPRODUCED, "outside": NOT_REPRODUCED})
