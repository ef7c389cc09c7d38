"""Log-domain mode against a 50-digit mpmath reference."""

from __future__ import annotations

import mpmath
import numpy as np

from lostmid.theory import log_influence_row


def mpmath_cesaro_power_row(length: int, power: int) -> list[mpmath.mpf]:
    """Row L of M^power by the suffix-sum recursion, in 50-digit arithmetic."""
    row = [mpmath.mpf(0)] * length
    row[-1] = mpmath.mpf(1)
    for _ in range(power):
        acc = mpmath.mpf(0)
        nxt = [mpmath.mpf(0)] * length
        for i in range(length - 1, -1, -1):
            acc += row[i] / (i + 1)
            nxt[i] = acc
        row = nxt
    return row


def test_deep_pure_attention_matches_mpmath_to_1e10() -> None:
    length, layers = 4096, 48
    with mpmath.workdps(50):
        reference = mpmath_cesaro_power_row(length, layers)
        ref_log = np.array([float(mpmath.log(v)) for v in reference])
    got = log_influence_row(length, layers, 1.0)
    # relative error of the value = |exp(got - ref) - 1| ~ |got - ref|
    rel_error = np.abs(np.expm1(got - ref_log))
    assert rel_error.max() <= 1e-10, rel_error.max()
    assert ref_log[-1] < np.log(1e-170)  # the entries really are tiny
