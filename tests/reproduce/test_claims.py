"""The step-0 claims on stage results made so that the right answer is known without
re-coding any rule: a model whose profile *is* the predicted rollout row reproduces the
theory claims; one whose profile is that row mirrored does not; one whose profile is a
power law with a last-token spike is matched exactly by that fitted baseline, so the
theory cannot beat it."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.reproduce.analysis import analyse_model
from lostmid.reproduce.claims import model_claims
from lostmid.reproduce.stages import ProfileRun, SeedMeasurement
from lostmid.theory import influence_row

L, H = 64, 4


def stage(seed: int, alpha: float, shape: str) -> SeedMeasurement:
    alphas = np.full(H, alpha)
    row = influence_row(L, H, alphas, kernel="rollout")
    power = np.arange(1.0, L + 1) ** -0.7
    power[-1] = 5.0
    influence = {"theory": row, "mirrored": row[::-1].copy(), "power": power}[shape]
    run = ProfileRun(
        influence=influence,
        stderr=0.01 * influence,
        mean_sq=influence**2,
        residual_strength=alphas,
    )
    facts = {"seed": seed, "layers": H, "hidden": 8, "family": "test"}
    return SeedMeasurement(facts, "eager", "rotary -> identity", run, run, 0.0)


def verdicts(shape: str) -> dict[str, str]:
    runs = [stage(0, 0.30, shape), stage(1, 0.35, shape)]
    claims = model_claims(analyse_model("m", runs))
    assert all(c.claim.startswith("m") and "(n=2)" in c.ours for c in claims[:4])
    keys = ("spearman", "w1", "positional", "peak_to_valley", "beats_baseline")
    return dict(zip(keys, (c.verdict for c in claims), strict=True))


def test_a_profile_that_is_the_predicted_theory_reproduces_it() -> None:
    v = verdicts("theory")
    assert (v["spearman"], v["w1"], v["beats_baseline"]) == ("reproduced",) * 3
    assert v["positional"] == "reproduced"  # the same profile with and without


def test_a_mirrored_profile_does_not() -> None:
    v = verdicts("mirrored")
    assert (v["spearman"], v["w1"]) == ("not reproduced",) * 2
    assert v["positional"] == "reproduced"


def test_an_exact_baseline_beats_the_theory() -> None:
    assert verdicts("power")["beats_baseline"] == "not reproduced"


@pytest.mark.parametrize("shape", ["theory", "mirrored"])
def test_the_analysis_scores_the_prediction_exactly(shape: str) -> None:
    a = analyse_model("m", [stage(0, 0.30, shape), stage(1, 0.35, shape)])
    rollout = a.per_seed_prediction["rollout"]
    assert rollout.spearman.n == 2 and rollout.wasserstein1.n == 2
    if shape == "theory":
        assert rollout.spearman.mean == pytest.approx(1.0)
        assert rollout.wasserstein1.mean == pytest.approx(0.0, abs=1e-12)
    else:
        assert rollout.spearman.mean < 0
    # two different residual strengths: the seeds disagree, so the noise floor is not zero
    assert a.seed_noise_floor.wasserstein1.mean > 0 and a.seed_noise_floor.wasserstein1.n == 1
