"""The paper's two training claims, judged on a ``dynamics.json`` by stated rules.

Verdicts use the vocabulary of :mod:`lostmid.compare.claims`: ``reproduced``,
``partly``, ``not reproduced``. Each claim is a dict with the keys of its ``Claim``:
``claim``, ``paper``, ``ours``, ``verdict``, ``rule`` (plus ``numbers``, machine-readable).

1. Valley deepens with training (paper: peak-to-valley ~1e2 at init, ~1e3 after
   pretraining). Ours: peak-to-valley of the measured influence profile at step 0 and at
   the last checkpoint, g = final / initial. Our models are far smaller and shorter
   (H = 8, T = 128 for ``tiny``) than the paper's, so only the direction and size of the
   change are judged, not the absolute values.
   The valley is a minimum over noisy estimates, so we also track the peak over the
   median of the middle half of the positions (peak-to-dead-zone, g_mid = final/initial).
   A deeper minimum is a deeper U only if both ends still stand above the middle, so we
   report primacy / dead zone and recency / dead zone at both ends of the run.
   Rule: reproduced if the model learned, g >= 10^0.5 (at least half the paper's
   decade), g_mid > 1 and the final profile is still a U (primacy and recency above the
   dead-zone level); partly if it learned and g > 1 (but not all of the above);
   otherwise not reproduced. "Learned" means the held-out loss fell by at least 10%.
2. eta(x) follows rho_H(x). Ours: Spearman S and W1 between the learning signal and
   rho_H's cell masses at each checkpoint, and W1_flat, W1 between the learning signal
   and a flat profile (the naive baseline; Spearman alone is weak evidence). The
   agreement "holds" at a checkpoint when S >= 0.9 and W1 <= W1_flat / 2.
   Rule: reproduced if it holds at step 0 and at the last checkpoint (the mechanism
   acts throughout training); partly if it holds at step 0 or at the last checkpoint
   but not both, or if at the last checkpoint S >= 0.5 and W1 < W1_flat; otherwise
   not reproduced.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lostmid.theory import summarize_profile

REPRODUCED, PARTLY, NOT_REPRODUCED = "reproduced", "partly", "not reproduced"
DEEPEN_FACTOR = 10**0.5
LEARNED_DROP = 0.10


def _measured(dynamics: dict[str, Any]) -> list[dict[str, Any]]:
    records = [r for r in dynamics.get("records", []) if "influence" in r]
    return sorted(records, key=lambda r: r["step"])


def valley_claim(dynamics: dict[str, Any]) -> dict[str, Any]:
    """Claim 1: the valley deepens with training (see the module docstring)."""
    records = _measured(dynamics)
    claim = "Pretraining deepens the valley (peak-to-valley grows)"
    paper = "~1e2 at init -> ~1e3 after pretraining"
    rule = (
        f"reproduced if held-out loss fell >= {LEARNED_DROP:.0%}, peak-to-valley grew by "
        f">= x{DEEPEN_FACTOR:.2f} (half a decade), peak-to-dead-zone grew too and the final "
        "profile is still a U (primacy and recency above the dead zone); partly if the "
        "model learned and peak-to-valley grew at all; otherwise not reproduced"
    )
    if len(records) < 2 or records[0]["step"] != 0:
        return {
            "claim": claim,
            "paper": paper,
            "ours": "no measured checkpoints",
            "verdict": NOT_REPRODUCED,
            "rule": rule + " (needs step 0 and a later step)",
            "numbers": {},
        }
    first, last = records[0], records[-1]
    p0, p1 = first["peak_to_valley"], last["peak_to_valley"]
    l0, l1 = first["heldout_loss"], last["heldout_loss"]
    m0, m1 = _dead_zone_ratio(first), _dead_zone_ratio(last)
    ends0, ends1 = _ends(first), _ends(last)
    u_shaped = ends1 is not None and min(ends1) > 1
    learned = l1 <= (1 - LEARNED_DROP) * l0
    growth = p1 / p0 if p0 and p1 else None
    growth_mid = m1 / m0 if m0 and m1 else None
    if growth is None or not learned:
        verdict = NOT_REPRODUCED
    elif growth >= DEEPEN_FACTOR and growth_mid is not None and growth_mid > 1 and u_shaped:
        verdict = REPRODUCED
    elif growth > 1:
        verdict = PARTLY
    else:
        verdict = NOT_REPRODUCED
    ours = (
        f"{_g(p0)} at step 0 -> {_g(p1)} at step {last['step']}"
        + (f" (x{growth:.2f})" if growth else "")
        + f"; peak-to-dead-zone {_g(m0)} -> {_g(m1)}"
        + f"; primacy/dead zone {_g(ends0 and ends0[0])} -> {_g(ends1 and ends1[0])}"
        + f", recency/dead zone {_g(ends0 and ends0[1])} -> {_g(ends1 and ends1[1])}"
        + f"; held-out loss {l0:.2f} -> {l1:.2f}"
    )
    return {
        "claim": claim,
        "paper": paper,
        "ours": ours,
        "verdict": verdict,
        "rule": rule,
        "numbers": {
            "steps": [r["step"] for r in records],
            "peak_to_valley": [r["peak_to_valley"] for r in records],
            "heldout_loss": [r["heldout_loss"] for r in records],
            "peak_to_dead_zone": [_dead_zone_ratio(r) for r in records],
            "growth": growth,
            "growth_dead_zone": growth_mid,
            "primacy_recency_to_dead_zone": [_ends(r) for r in records],
            "u_shaped_at_end": u_shaped,
            "learned": learned,
        },
    }


def learning_signal_claim(dynamics: dict[str, Any]) -> dict[str, Any]:
    """Claim 2: the learning signal eta(x) follows rho_H(x) (see the module docstring)."""
    records = _measured(dynamics)
    claim = "Effective learning rate eta(x) follows rho_H(x)"
    paper = "eta(x) ~ rho_H(x) (no number given)"
    rule = (
        "holds at a checkpoint if Spearman >= 0.9 and W1 <= W1_flat/2; reproduced if it "
        "holds at step 0 and at the last checkpoint; partly if at only one of them, or if "
        "at the last Spearman >= 0.5 and W1 < W1_flat; otherwise not reproduced"
    )
    if not records:
        return {
            "claim": claim,
            "paper": paper,
            "ours": "no measured checkpoints",
            "verdict": NOT_REPRODUCED,
            "rule": rule,
            "numbers": {},
        }
    first, last = records[0], records[-1]
    d, d0 = (
        last["distances"]["learning_signal_vs_rho"],
        first["distances"]["learning_signal_vs_rho"],
    )
    s, w, flat = d["spearman"], d["w1"], d["w1_uniform"]
    at_start = first["step"] == 0 and _holds(d0)
    at_end = _holds(d)
    if at_start and at_end:
        verdict = REPRODUCED
    elif at_start or at_end or (s is not None and s >= 0.5 and w < flat):
        verdict = PARTLY
    else:
        verdict = NOT_REPRODUCED
    ours = (
        f"step {last['step']}: Spearman {_f(s)}, W1 {w:.3f} (flat {flat:.3f}); "
        f"step {first['step']}: Spearman {_f(d0['spearman'])}, W1 {d0['w1']:.3f} "
        f"(flat {d0['w1_uniform']:.3f})"
    )
    return {
        "claim": claim,
        "paper": paper,
        "ours": ours,
        "verdict": verdict,
        "rule": rule,
        "numbers": {
            "steps": [r["step"] for r in records],
            "spearman": [r["distances"]["learning_signal_vs_rho"]["spearman"] for r in records],
            "w1": [r["distances"]["learning_signal_vs_rho"]["w1"] for r in records],
            "w1_uniform": [r["distances"]["learning_signal_vs_rho"]["w1_uniform"] for r in records],
            "alpha_mean": [r["learning_signal"]["alpha_mean"] for r in records],
        },
    }


def training_claims(dynamics: dict[str, Any]) -> list[dict[str, Any]]:
    """Both training claims with our numbers and verdicts, for the reproduce report.

    Args:
        dynamics: the content of ``dynamics.json`` (or the dict :func:`run_training`
            returns).
    """
    return [valley_claim(dynamics), learning_signal_claim(dynamics)]


def _dead_zone_ratio(record: dict[str, Any]) -> float | None:
    """peak / dead-zone level of the record's influence profile (from its summary, or
    recomputed from the profile for files written before the summary carried it)."""
    influence = record.get("influence", {})
    ratio = influence.get("summary", {}).get("peak_to_dead_zone")
    if ratio is None and "profile" in influence:
        s = summarize_profile(np.clip(np.asarray(influence["profile"], dtype=float), 0, None))
        ratio = s.peak / s.dead_zone_level if s.dead_zone_level else None
    return ratio


def _holds(distance: dict[str, Any]) -> bool:
    """S >= 0.9 and W1 <= W1_flat / 2: the theory places the signal, not just ranks it."""
    s = distance["spearman"]
    return s is not None and s >= 0.9 and distance["w1"] <= distance["w1_uniform"] / 2


def _ends(record: dict[str, Any]) -> tuple[float, float] | None:
    """(primacy, recency) over the dead-zone level of the record's influence profile."""
    summary = record.get("influence", {}).get("summary", {})
    dead = summary.get("dead_zone_level")
    if not dead or summary.get("primacy") is None or summary.get("recency") is None:
        return None
    return summary["primacy"] / dead, summary["recency"] / dead


def _g(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"
