"""The pretrained-vs-twins readouts and their two verdicts, on constructed profiles."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.compare.pretraining import (
    compare_pretraining,
    deepening_verdict,
    middle_verdict,
    readouts,
)
from lostmid.errors import UserError

L = 64


def _valley(depth_decades: float, where: float, last: float = 1.0) -> np.ndarray:
    """A profile 1 at both ends falling log-linearly to 10^-depth at fraction ``where``."""
    x = np.arange(L) / (L - 1)
    left = np.clip(x / where, 0, 1)
    right = np.clip((1 - x) / (1 - where), 0, 1)
    log10 = -depth_decades * np.minimum(left, right)
    profile = 10.0**log10
    profile[-1] = last
    return profile


def _inputs(profile: np.ndarray, n: int, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return profile * np.exp(noise * rng.standard_normal((n, L)))


def test_readouts_of_a_known_profile() -> None:
    r = readouts(_valley(3.0, 0.5))
    assert r["log10_ptv"] == pytest.approx(3.0, abs=0.05)
    assert r["valley_fraction"] == pytest.approx(0.5, abs=0.02)
    total = _valley(3.0, 0.5).sum()
    assert r["sink_share"] == pytest.approx(1 / total)
    assert r["last_share"] == pytest.approx(1 / total)


def test_a_deeper_middle_valley_is_reproduced() -> None:
    pre = _inputs(_valley(3.0, 0.5), 12, 0.1, 0)
    twins = np.stack([_inputs(_valley(2.0, 0.95), 12, 0.1, s + 1) for s in range(3)])
    c = compare_pretraining(pre, twins, draws=300)
    assert c.difference["log10_ptv"].low > 0.5
    assert c.deepens.verdict == "reproduced"
    assert c.middle.verdict == "reproduced"
    assert c.twins["valley_fraction"].value > 0.9


def test_the_same_depth_elsewhere_is_not_reproduced() -> None:
    pre = _inputs(_valley(2.0, 0.1), 12, 0.1, 0)  # as deep as the twins, valley at 10%
    twins = np.stack([_inputs(_valley(2.0, 0.95), 12, 0.1, s + 1) for s in range(3)])
    c = compare_pretraining(pre, twins, draws=300)
    assert c.deepens.verdict == "not reproduced"
    assert c.middle.verdict == "not reproduced"


def test_noisy_inputs_leave_it_inconclusive() -> None:
    """Per-input noise large enough that the interval of the change spans the boundary."""
    rng = np.random.default_rng(5)
    depths = rng.choice([1.5, 3.5], size=6)  # half the inputs deep, half shallow
    pre = np.stack([_valley(d, 0.5) for d in depths])
    twins = np.stack([_inputs(_valley(2.0, 0.5), 6, 0.05, s) for s in range(3)])
    c = compare_pretraining(pre, twins, draws=500)
    low, high = c.difference["log10_ptv"].span
    assert low < 0.5 < high
    assert c.deepens.verdict == "inconclusive"


def test_the_rules_at_their_boundaries() -> None:
    assert deepening_verdict((0.51, 2.0)).verdict == "reproduced"
    assert deepening_verdict((-1.0, 0.49)).verdict == "not reproduced"
    assert deepening_verdict((0.4, 0.6)).verdict == "inconclusive"
    assert deepening_verdict((float("nan"), 1.0)).verdict == "inconclusive"
    assert middle_verdict((0.25, 0.75)).verdict == "reproduced"
    assert middle_verdict((0.76, 0.9)).verdict == "not reproduced"
    assert middle_verdict((0.0, 0.24)).verdict == "not reproduced"
    assert middle_verdict((0.2, 0.3)).verdict == "inconclusive"


def test_inputs_must_be_shared() -> None:
    with pytest.raises(UserError, match="same inputs"):
        compare_pretraining(np.ones((4, L)), np.ones((2, 5, L)))
    with pytest.raises(UserError, match="at least 2 inputs"):
        compare_pretraining(np.ones((1, L)), np.ones((2, 1, L)))
