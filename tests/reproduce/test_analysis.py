"""The per-model analysis against closed forms: what each zero-parameter candidate is
made of, the depth-1 rows, the pooled profiles and the per-layer measurements."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.compare.predicted import forward_ratio_prediction
from lostmid.influence.record import MeasureRecord
from lostmid.reproduce.analysis import analyse_model, measured_profiles
from lostmid.reproduce.depth import depth_growth, depth_theory
from lostmid.theory import influence_row

L, H = 32, 3


def depth1_closed_form(a: float, t: int = L) -> np.ndarray:
    """Jacobian kernel at H = 1: sqrt((1-a)^2 [j = t] + a^2 / t^2), normalised."""
    row = np.full(t, a / t)
    row[-1] = np.sqrt((1 - a) ** 2 + (a / t) ** 2)
    return row / row.sum()


def positional_depth1(s: np.ndarray) -> np.ndarray:
    """Depth 1, uniform attention, per-source gains s(j): s(j)/t, sqrt(1 + s(t)^2/t^2) at t."""
    t = s.size
    row = s / t
    row[-1] = np.sqrt(1.0 + (s[-1] / t) ** 2)
    return row / row.sum()


def test_equal_gains_make_the_positional_theory_the_uniform_one(make_seed) -> None:
    s = 0.4
    runs = [make_seed(seed, np.full((H, L), s), np.linspace(2.0, 1.0, L)) for seed in range(2)]
    card = analyse_model("m", runs).scorecard
    uniform = influence_row(L, H, [s / (1 + s)] * H, kernel="jacobian")
    positional = card.candidates["predicted:positional"].profile
    np.testing.assert_allclose(positional / positional.sum(), uniform / uniform.sum(), rtol=1e-10)
    jacobian = card.candidates["predicted:jacobian"].profile
    np.testing.assert_allclose(jacobian / jacobian.sum(), uniform / uniform.sum(), rtol=1e-10)


def test_depth_one_rows_have_their_closed_forms(make_seed) -> None:
    rng = np.random.default_rng(0)
    g = 0.5 + rng.random((H, L))
    forward = np.array([0.1, 0.2, 0.3])
    run = make_seed(0, g, np.ones(L), forward=forward)
    np.testing.assert_allclose(depth_theory(run, "positional")[0], positional_depth1(g[0]))
    a1 = g[0].mean() / (1 + g[0].mean())
    row = depth_theory(run, "jacobian")[0]
    np.testing.assert_allclose(row / row.sum(), depth1_closed_form(a1))
    one = MeasureRecord.from_gains(
        influence=np.ones(L), stderr=None, target=L, layers=H, depth=1, gains=run.gains,
        forward=run.residual_strength_forward,
    )  # fmt: skip
    row = forward_ratio_prediction([one])["predicted:jacobian-forward"].rows[0]
    np.testing.assert_allclose(row / row.sum(), depth1_closed_form(0.1))


def test_measured_profiles_carry_the_gains_of_their_depth(make_seed) -> None:
    rng = np.random.default_rng(1)
    g = 0.5 + rng.random((H, L))
    layer1 = rng.random(L) + 0.1
    runs = [make_seed(seed, g, rng.random(L) + 0.1, layer1=layer1) for seed in range(2)]
    full = measured_profiles("m", runs)
    assert full is not None and full[0].layers == H
    assert full[0].residual_strength_method == "jacobian"
    np.testing.assert_allclose(full[0].residual_strength, g.mean(1) / (1 + g.mean(1)))
    np.testing.assert_allclose(full[1].influence, runs[1].on.influence)
    one = measured_profiles("m", runs, layer=1)
    assert one is not None and one[0].layers == 1
    np.testing.assert_allclose(one[0].influence, layer1)
    np.testing.assert_allclose(one[0].gain_per_position, g[:1])
    assert measured_profiles("m", runs, layer=2) is None  # not measured


def test_pooled_profiles_and_positional_comparison(make_seed) -> None:
    rng = np.random.default_rng(2)
    on = [rng.random(L) + 0.1 for _ in range(3)]
    runs = [make_seed(seed, np.full((H, L), 0.3), p, off=2.0 * p) for seed, p in enumerate(on)]
    a = analyse_model("m", runs)
    shares = np.mean([p / p.sum() for p in on], axis=0)
    total = np.mean([p.sum() for p in on])
    np.testing.assert_allclose(a.on.influence, shares * total)
    np.testing.assert_allclose(a.off.influence, 2.0 * shares * total)
    # off is on doubled: the same shape on every seed
    assert a.positional_on_vs_off["wasserstein1"].mean == pytest.approx(0.0, abs=1e-15)
    assert a.positional_on_vs_off["spearman"].mean == pytest.approx(1.0)


def test_depth_growth_scores_every_measured_layer(make_seed) -> None:
    g = np.full((H, L), 0.5)
    run = make_seed(0, g, np.ones(L))
    assert depth_growth(run) is None  # no per-layer profile
    theory = depth_theory(run, "jacobian")
    per_layer = theory.copy()
    per_layer[1] = np.nan  # layer 2 not measured
    run = make_seed(0, g, np.ones(L), layer1=theory[0])
    run.on.per_layer[:] = per_layer
    growth = depth_growth(run)
    assert growth is not None and set(growth.points) == {"positional", "jacobian", "rollout"}
    assert [p.layer for p in growth.points["jacobian"]] == [1, 3]
    assert all(p.agreement.wasserstein1 < 1e-12 for p in growth.points["jacobian"])
    # equal gains: the positional theory is the jacobian one
    assert all(p.agreement.wasserstein1 < 1e-9 for p in growth.points["positional"])
    # theory rows only where a layer was measured
    assert np.isnan(growth.theory["positional"][1]).all()
    np.testing.assert_allclose(growth.theory["jacobian"][2], theory[2])
