"""A model at its initialisation is told from its weights (lostmid.models.untrained)."""

from __future__ import annotations

import pytest
import torch

from lostmid.models import load_model
from lostmid.models.untrained import untrained_facts


@pytest.mark.parametrize("preset", ["tiny-qwen2", "tiny-gpt2", "tiny-gemma3", "tiny-neox"])
def test_every_family_at_init_is_untrained(preset: str) -> None:
    facts = untrained_facts(load_model(preset, init="random", seed=3).model)
    assert facts["untrained"] is True
    assert facts["norm_tensors"] == facts["constant_norm_tensors"] > 0


def test_one_trained_norm_makes_it_trained() -> None:
    model = load_model("tiny-qwen2", init="random", seed=0).model
    norm = next(m for m in model.modules() if "norm" in type(m).__name__.lower())
    with torch.no_grad():
        norm.weight[0] += 1e-3  # one step of training moves a gain
    facts = untrained_facts(model)
    assert facts["untrained"] is False
    assert facts["constant_norm_tensors"] == facts["norm_tensors"] - 1


def test_a_few_training_steps_are_seen() -> None:
    loaded = load_model("tiny-gpt2", init="random", seed=0)
    model = loaded.model.train()
    for p in model.parameters():
        p.requires_grad_(True)  # loaded for measurement: frozen
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.randint(0, loaded.vocab_size, (2, 16), generator=torch.Generator().manual_seed(0))
    for _ in range(2):
        loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    assert untrained_facts(model)["untrained"] is False


def test_a_model_without_norms_cannot_be_told() -> None:
    facts = untrained_facts(torch.nn.Sequential(torch.nn.Linear(4, 4)))
    assert facts["untrained"] is None and facts["norm_tensors"] == 0
