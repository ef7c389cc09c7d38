"""Issue 16, part 1: every caller that builds rho_H or a theory prediction uses the
theory's a_l (the Jacobian strength s/(1+s)), never the peer's forward ratio unless it is
asked for by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import lostmid.influence.residual as residual
from lostmid.influence import branch_gains, random_token_ids, residual_strength
from lostmid.train.config import preset
from lostmid.train.dynamics import measure_influence
from lostmid.train.model import build_model


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError("the forward ratio was used where the theory's a_l is meant")


@pytest.fixture
def no_forward_ratio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(residual, "forward_ratio", _refuse)


def test_the_default_strength_is_the_jacobian_one(no_forward_ratio: None) -> None:
    from lostmid.models import load_model

    loaded = load_model("tiny-gpt2", dtype="float64")
    ids = random_token_ids(loaded.vocab_size, 2, 12, seed=0)
    got = residual_strength(loaded, ids, seed=3)
    want = branch_gains(loaded, ids, seed=3, per_position=False).residual_strength
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(AssertionError, match="forward ratio was used"):
        residual_strength(loaded, ids, method="forward")  # reachable by name only


def test_training_dynamics_build_rho_from_the_jacobian_strength(no_forward_ratio: None) -> None:
    """The learning-signal claim's rho_H: its a is the mean Jacobian a_l of the checkpoint."""
    config = preset("micro")
    torch.manual_seed(0)
    model = build_model(config.model, seed=0)
    ids = torch.randint(0, config.model.vocab_size, (2, 16))
    _, _, alphas = measure_influence(model, ids, probes=1, seed=0)
    from lostmid.train.model import as_loaded

    want = branch_gains(as_loaded(model, 0), ids, seed=0, per_position=False, batch_size=2)
    np.testing.assert_allclose(alphas, want.residual_strength, rtol=1e-6)
