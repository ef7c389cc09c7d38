"""The training claims' verdicts on checkpoints built so that each rule's boundary is known."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lostmid.train import Checkpoint, CheckpointMeasurement, rho_cell_masses, training_claims

T, ALPHAS = 16, np.array([0.3, 0.3])
RHO = rho_cell_masses(T, ALPHAS.size, float(ALPHAS.mean()))


def u_profile(primacy: float, middle: float, recency: float, dip: float | None = None):
    """Flat ``middle`` between position 1 (``primacy``) and T (``recency``); ``dip``
    replaces one position next to the target (a lone noisy minimum)."""
    p = np.full(T, middle)
    p[0], p[-1] = primacy, recency
    if dip is not None:
        p[-2] = dip
    return p


def checkpoint(step: int, influence=None, loss: float = 3.0, signal=None) -> Checkpoint:
    measurement = CheckpointMeasurement(
        train_loss=loss,
        heldout_loss_per_position=np.full(T, loss),
        influence=u_profile(3.0, 1.0, 100.0) if influence is None else influence,
        influence_stderr=np.zeros(T),
        residual_strength=ALPHAS,
        learning_signal=RHO if signal is None else signal,
    )
    return Checkpoint(step, step * 64, 1e-3, None, measurement)


def valley(final, loss: float = 2.0, start=None):
    start = u_profile(3.0, 1.0, 100.0) if start is None else start  # peak/valley 100
    return training_claims([checkpoint(0, start, 5.5), checkpoint(100, final, loss)])[0]


def test_valley_deepens_verdicts() -> None:
    deep = valley(u_profile(30.0, 0.1, 100.0))  # peak/valley 100 -> 1000, still a U
    assert deep.verdict == "reproduced" and "x10.00" in deep.ours
    # grew, but less than half a decade: 100 -> 150
    assert valley(u_profile(3.0, 1 / 1.5, 100.0)).verdict == "partly"
    assert valley(u_profile(3.0, 2.0, 100.0)).verdict == "not reproduced"  # 100 -> 50
    assert valley(u_profile(30.0, 0.1, 100.0), loss=5.4).verdict == "not reproduced"  # no learning
    # the minimum deepened x10 but the middle did not (peak over dead zone unchanged)
    assert valley(u_profile(3.0, 1.0, 100.0, dip=0.1)).verdict == "partly"
    # deeper, but the primacy end fell below the middle: no longer a U
    one_sided = valley(u_profile(0.05, 0.1, 100.0))
    assert one_sided.verdict == "partly"
    assert "primacy/dead zone 3 -> 0.5" in one_sided.ours


def mixed(weight: float) -> np.ndarray:
    """weight * rho + (1 - weight) * flat (both summing to 1). Its ranks are rho's
    (Spearman 1) and, W1 being linear in the mixture, W1 to rho is (1 - weight) D and
    W1 to flat is weight D, with D = W1(rho, flat): the rule "W1 <= W1_flat / 2" holds
    exactly when weight >= 2/3, and "W1 < W1_flat" when weight > 1/2."""
    return weight * RHO + (1 - weight) / T


@pytest.mark.parametrize(
    ("start", "end", "verdict"),
    [
        (RHO, RHO, "reproduced"),
        (mixed(0.7), mixed(0.7), "reproduced"),
        (RHO, mixed(0.4), "partly"),  # holds at init only
        (mixed(0.4), RHO, "partly"),  # holds at the end only
        (mixed(0.4), mixed(0.6), "partly"),  # ranks agree, W1 below flat but not by half
        (mixed(0.4), mixed(0.4), "not reproduced"),  # worse than a flat profile
        (mixed(0.4), RHO[::-1].copy(), "not reproduced"),  # ranks disagree
    ],
)
def test_learning_signal_verdicts(start, end, verdict) -> None:
    claims = training_claims([checkpoint(0, signal=start), checkpoint(10, signal=end)])
    assert claims[1].verdict == verdict


def test_unmeasured_checkpoints_are_ignored() -> None:
    bare = [Checkpoint(0, 0, 1e-3, None), Checkpoint(10, 640, 1e-3, 2.0)]
    assert [c.verdict for c in training_claims(bare)] == ["not reproduced"] * 2
    assert all("no measured checkpoints" in c.ours for c in training_claims(bare))
    mixed_run = [checkpoint(0, loss=5.5), bare[1], checkpoint(30, u_profile(30, 0.1, 100), 2.0)]
    assert training_claims(mixed_run)[0].verdict == "reproduced"


def seed_run(final, loss: float = 2.0) -> list[Checkpoint]:
    return [checkpoint(0, u_profile(3.0, 1.0, 100.0), 5.5), checkpoint(100, final, loss)]


def test_pooled_valley_claim_is_decided_by_the_interval_over_seeds() -> None:
    from lostmid.train.claims import SeedEvidence, pooled_training_claims

    deep = u_profile(30.0, 0.1, 100.0)  # peak/valley 100 -> 1000 on every seed
    runs = [SeedEvidence.of(s, seed_run(deep)) for s in (0, 1, 2)]
    assert [r.log10_growth for r in runs] == pytest.approx([1.0] * 3)
    valley_claim, signal_claim = pooled_training_claims(runs)
    assert valley_claim.verdict == "reproduced"
    # identical seeds: the t interval over seeds has zero width around log10(10) = 1
    assert "1.00 [1.00, 1.00] (3 seeds)" in valley_claim.ours
    # seeds that all grow a little (x1.5, x1.6, x1.7): resolved growth below half a decade
    little = [SeedEvidence.of(s, seed_run(u_profile(3.0, 1 / g, 100.0)))
              for s, g in enumerate((1.5, 1.6, 1.7))]  # fmt: skip
    assert pooled_training_claims(little)[0].verdict == "partly"
    # one seed deepens x10, another shrinks x2: the interval spans 0
    mixed_runs = [runs[0], SeedEvidence.of(5, seed_run(u_profile(3.0, 2.0, 100.0)))]
    spanning = pooled_training_claims(mixed_runs)[0]
    assert spanning.verdict == "inconclusive" and "seed 5: not reproduced" in spanning.ours
    # every seed shrinks: resolved, not reproduced
    flat = [
        SeedEvidence.of(s, seed_run(u_profile(3.0, g, 100.0)))
        for s, g in enumerate((2.0, 2.1, 2.2))
    ]
    assert pooled_training_claims(flat)[0].verdict == "not reproduced"
    # the record round-trips
    assert SeedEvidence.from_record(runs[0].record()) == runs[0]
    assert signal_claim.verdict == "reproduced"  # rho_H itself at step 0 and at the end


@pytest.mark.parametrize(
    ("starts", "ends", "verdict"),
    [
        ((RHO,) * 3, (RHO,) * 3, "reproduced"),
        ((RHO,) * 3, (mixed(0.2), mixed(0.21), mixed(0.22)), "partly"),  # fails at the end
        ((mixed(0.2), mixed(0.21), mixed(0.22)), (mixed(0.2),) * 3, "not reproduced"),
        ((RHO, mixed(0.2), RHO), (RHO,) * 3, "inconclusive"),  # the seeds disagree at step 0
    ],
)
def test_pooled_learning_signal_claim_every_branch(starts, ends, verdict) -> None:
    from lostmid.train.claims import SeedEvidence, pooled_training_claims

    runs = [
        SeedEvidence.of(s, [checkpoint(0, signal=a, loss=5.5), checkpoint(10, signal=b)])
        for s, (a, b) in enumerate(zip(starts, ends, strict=True))
    ]
    assert pooled_training_claims(runs)[1].verdict == verdict


def test_one_seed_pools_to_its_own_claims() -> None:
    from lostmid.train.claims import SeedEvidence, pooled_training_claims

    one = SeedEvidence.of(0, seed_run(u_profile(30.0, 0.1, 100.0)))
    assert pooled_training_claims([one]) == list(one.claims)


def test_a_later_profile_that_is_only_noisier_reads_no_deeper_by_the_bins() -> None:
    """The null the valley readout must pass: the last checkpoint's profile is the first
    one again, measured with 4x its relative error. The single smallest position reads
    it deeper on nearly every draw (the extreme of a noisy estimate is biased); the
    binned readout the claim uses reads about no change, and never 'reproduced'."""
    from lostmid.compare.pretraining import readouts
    from lostmid.train.claims import SeedEvidence

    rng = np.random.default_rng(0)
    t = 128
    x = np.arange(1, t + 1) / t
    base = 1.0 / x + 50.0 * x**8 + 1.0  # a U: a primacy tail, a recency anchor, a floor
    single, binned, seeds = [], [], []
    for seed in range(20):
        start = base * np.exp(rng.normal(0.0, 0.05, t))
        later = base * np.exp(rng.normal(0.0, 0.2, t))  # only noisier
        single.append(
            readouts(later, "single")["log10_ptv"] - readouts(start, "single")["log10_ptv"]
        )
        run = [
            dataclasses.replace(checkpoint(0, start, 5.5), measurement=_at(t, start, 5.5)),
            dataclasses.replace(checkpoint(100, later, 2.0), measurement=_at(t, later, 2.0)),
        ]
        evidence = SeedEvidence.of(seed, run)
        binned.append(evidence.log10_growth)
        seeds.append(evidence)
        assert evidence.claims[0].verdict != "reproduced"
    assert np.mean(np.array(single) > 0) > 0.9 and np.mean(single) > 0.1
    assert abs(np.mean(binned)) < 0.05
    pooled = training_claims_pooled(seeds[:3])
    assert pooled.verdict in ("inconclusive", "not reproduced")


def _at(t: int, influence: np.ndarray, loss: float) -> CheckpointMeasurement:
    """A measurement of ``t`` positions (the module's helper builds T = 16)."""
    rho = rho_cell_masses(t, ALPHAS.size, float(ALPHAS.mean()))
    return CheckpointMeasurement(
        train_loss=loss,
        heldout_loss_per_position=np.full(t, loss),
        influence=influence,
        influence_stderr=np.zeros(t),
        residual_strength=ALPHAS,
        learning_signal=rho,
    )


def training_claims_pooled(seeds):
    from lostmid.train.claims import pooled_training_claims

    return pooled_training_claims(seeds)[0]


def _noisy_seeds(t: int, count: int, depth: float, rng: np.random.Generator) -> list:
    """``count`` seeds whose last profile is the first with its middle ``depth`` times
    lower (1: unchanged), measured with 4x the first's relative error, each with the
    standard errors a measurement reports."""
    from lostmid.train.claims import SeedEvidence

    x = np.arange(1, t + 1) / t
    base = 1.0 / x + 50.0 * x**8 + 1.0
    later_base = base.copy()
    later_base[1:-1] /= np.where((x[1:-1] > 0.2) & (x[1:-1] < 0.9), depth, 1.0)
    seeds = []
    for seed in range(count):
        start = base * np.exp(rng.normal(0.0, 0.05, t))
        later = later_base * np.exp(rng.normal(0.0, 0.2, t))
        first = dataclasses.replace(_at(t, start, 5.5), influence_stderr=0.05 * start)
        last = dataclasses.replace(_at(t, later, 2.0), influence_stderr=0.2 * later)
        run = [Checkpoint(0, 0, 1e-3, None, first), Checkpoint(100, 6400, 1e-3, None, last)]
        seeds.append(SeedEvidence.of(seed, run))
    return seeds


def test_many_seeds_of_a_noisier_profile_do_not_make_the_valley_deepen() -> None:
    """The pooled rule on the null, with as many seeds as make an interval narrow: read
    raw, the noise's bias alone puts the interval of growth above 0 (the old rule said
    partly); read beyond each seed's noise growth, it spans 0. A real deepening under
    the same noise is still found, and a valley that fills in is not reproduced."""
    from lostmid.stats import seed_interval
    from lostmid.train.claims import valley_verdict

    rng = np.random.default_rng(3)
    null = _noisy_seeds(128, 20, 1.0, rng)
    raw = seed_interval([s.log10_growth for s in null])
    assert raw.ci_low > 0  # what the raw readout would have called resolved growth
    assert all(s.log10_noise_growth is not None and s.log10_noise_growth > 0 for s in null)
    verdict = training_claims_pooled(null).verdict
    assert verdict in ("inconclusive", "not reproduced")
    assert "beyond what noise alone reads" in training_claims_pooled(null).rule
    assert valley_verdict(raw, True, True) == "partly"  # the rule itself, fed the raw read

    deeper = _noisy_seeds(128, 5, 10.0, rng)  # the middle 10x lower: a decade deeper
    assert training_claims_pooled(deeper).verdict in ("reproduced", "partly")
    assert seed_interval([s.log10_growth_beyond_noise for s in deeper]).ci_low > 0.5
    filled = _noisy_seeds(128, 5, 0.2, rng)  # the middle 5x higher: the valley fills in
    assert training_claims_pooled(filled).verdict == "not reproduced"
