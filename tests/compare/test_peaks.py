"""Which peak: every change read at each peak (lostmid.compare.pretraining.PEAKS), and a
verdict robust only when the readings agree (lostmid.stats.verdicts.across), on
constructed studies where the answer is yes, no and undecided."""

from __future__ import annotations

import numpy as np

from lostmid.compare.nulls import deepened, noisy_inputs, u_profile
from lostmid.compare.pretraining import PEAKS, compare_pretraining, readouts
from lostmid.stats.verdicts import across

L = 256


def _study(pretrained: np.ndarray, twin: np.ndarray, sigma: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    pre = noisy_inputs(pretrained, 12, sigma, rng)
    twins = np.stack([noisy_inputs(twin, 12, sigma, rng) for _ in range(3)])
    return compare_pretraining(pre, twins)


def _words(comparison, claim: str = "deepens") -> dict[str, str]:
    return {p: v.verdict for p, v in comparison.peaks[claim].items()}


def test_every_peak_has_a_readout_and_the_first_bin_leaves_the_sink_out() -> None:
    profile = u_profile(L, sink=300.0, last=20.0)
    r = readouts(profile)
    assert set(PEAKS.values()) <= set(r)
    assert r["log10_sink_depth"] > r["log10_head_depth"] > 0  # the sink is not the first bin
    assert r["log10_ptv"] == max(r["log10_sink_depth"], r["log10_last_depth"])


def test_a_primacy_that_grows_alone_is_not_robust() -> None:
    """The sink grows by a decade and a half, the recency anchor and the bins do not:
    yes at the first position, no at the last and the first bin."""
    twin = u_profile(L, sink=30.0, last=20.0)
    pre = u_profile(L, sink=30.0 * 10**1.5, last=20.0)
    words = _words(_study(pre, twin, 0.05))
    assert words["first"] == "reproduced" and words["largest"] == "reproduced"
    assert words["last"] == "not reproduced" and words["first bin"] == "not reproduced"
    assert across(words.values()) == "not robust"


def test_a_valley_that_deepens_everywhere_is_robust_and_one_that_does_not_is_too() -> None:
    twin = u_profile(L)
    yes = _words(_study(deepened(twin, 1.5), twin, 0.05))
    assert set(yes.values()) == {"reproduced"} and across(yes.values()) == "reproduced"
    no = _words(_study(twin, twin, 0.05, seed=1))
    assert set(no.values()) == {"not reproduced"} and across(no.values()) == "not reproduced"


def test_noise_that_hides_a_change_leaves_every_peak_undecided() -> None:
    twin = u_profile(L)
    words = _words(_study(deepened(twin, 0.5), twin, 2.5, seed=2))
    assert "inconclusive" in words.values()
    assert across(words.values()) == "inconclusive"


def test_persists_is_read_at_every_peak_with_the_same_u_test() -> None:
    twin = u_profile(L)
    # a valley filled up to near the ends: shallower by about a decade, the U gone
    filled = twin.copy()
    filled[1:-1] = 18.0
    words = _words(_study(filled, twin, 0.05, seed=3), "persists")
    assert set(words) == set(PEAKS)
    assert words["largest"] == "not reproduced"
    same = _words(_study(twin, twin, 0.05, seed=4), "persists")
    assert set(same.values()) == {"reproduced"}


def test_a_profile_that_is_only_noisier_reads_deeper_at_no_peak() -> None:
    """The null the valley's readout was built against, read at every peak: pretrained
    inputs lognormal 1.3 nats a position with rare 30x spikes, twins 0.1, the same
    expected profile. No peak may say the valley deepened (8 inputs, 5 draws)."""
    twin = u_profile(L)
    for seed in range(5):
        rng = np.random.default_rng(100 + seed)
        pre = noisy_inputs(twin, 8, 1.3, rng, spike_rate=0.002)
        twins = np.stack([noisy_inputs(twin, 8, 0.1, rng) for _ in range(3)])
        words = _words(compare_pretraining(pre, twins))
        assert "reproduced" not in words.values(), (seed, words)
