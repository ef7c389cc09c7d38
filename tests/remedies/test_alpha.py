"""Issue 16, part 1: the remedies' rho_H uses the theory's a, measured where the theory
means it (the Jacobian a_l of the untrained model), unless --alpha names one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import lostmid.influence.residual as residual
from lostmid.influence.gains import branch_gains
from lostmid.remedies.config import RemediesConfig
from lostmid.remedies.run import resolve_alpha
from lostmid.remedies.training import train_config
from lostmid.train.model import as_loaded, build_model


def test_the_default_alpha_is_the_mean_jacobian_strength_at_init(monkeypatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the forward ratio was used")

    monkeypatch.setattr(residual, "forward_ratio", refuse)
    config = RemediesConfig(preset="retrieval-micro", quick=True, seeds=1, seed=3)
    got = resolve_alpha(config)
    rconfig = train_config(config, 3)
    train = rconfig.resolved_train()
    model = build_model(train.model, seed=train.seed)  # the same untrained weights
    from lostmid.behaviour.training.task import example_ids

    prompts = [example_ids(rconfig.task.example(3, i, i % rconfig.task.pairs))[0] for i in range(4)]
    n = min(map(len, prompts))
    ids = torch.tensor([p[:n] for p in prompts])
    want = branch_gains(as_loaded(model, 3), ids, seed=3, per_position=False).residual_strength
    assert got == pytest.approx(float(np.mean(want)), rel=1e-9)
    assert 0.0 < got < 1.0
    assert resolve_alpha(RemediesConfig(preset="retrieval-micro", alpha=0.3)) == 0.3  # by name
