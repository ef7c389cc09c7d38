from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lostmid.theory.continuum import density as rho_density
from lostmid.train import ModelSpec, build_model, learning_signal, rho_cell_masses


class CausalMeanModel(nn.Module):
    """A model whose learning signal is known in closed form.

    logits_t = W (1/t) sum_{s <= t} e_s  (one uniform causal attention hop, no residual):
    d ell_T / d e_j = (1/T) W^T (softmax(logits_T) - onehot(target)), the same vector for
    every j, so eta_j = ||W^T (p - y)|| / T for all j.
    """

    def __init__(self, vocab: int, dim: int, seed: int = 0) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.embed = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, vocab, bias=False)
        with torch.no_grad():
            self.embed.weight.copy_(torch.randn(vocab, dim, generator=gen))
            self.out.weight.copy_(torch.randn(vocab, dim, generator=gen) / dim**0.5)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed

    def forward(self, inputs_embeds: torch.Tensor) -> SimpleNamespace:
        t = torch.arange(1, inputs_embeds.shape[1] + 1, dtype=inputs_embeds.dtype)
        prefix_mean = inputs_embeds.cumsum(dim=1) / t[None, :, None]  # (B, T, d)
        return SimpleNamespace(logits=self.out(prefix_mean))


def test_closed_form_causal_mean_model() -> None:
    """eta_j = ||W^T (softmax(logits_T) - onehot)|| / T for every j (hand-computed)."""
    torch.manual_seed(0)
    model = CausalMeanModel(vocab=11, dim=5, seed=1)
    batch = torch.randint(0, 11, (3, 9))  # T = 8
    eta, _ = learning_signal(model, [batch])
    inputs, targets = batch[:, :-1], batch[:, 1:]
    with torch.no_grad():
        e = model.embed(inputs)  # (B, T, d)
        p = torch.softmax(model.out(e.mean(dim=1)), dim=-1)  # (B, V) logits at t = T
        y = F.one_hot(targets[:, -1], 11).float()
        expected = ((p - y) @ model.out.weight).norm(dim=-1).mean() / 8
    assert eta.shape == (8,)
    np.testing.assert_allclose(eta, expected.item(), rtol=1e-5)


def test_matches_per_sample_jacobian_on_a_transformer() -> None:
    """The batched gradient equals autograd on each window alone, one at a time."""
    spec = ModelSpec(layers=2, hidden=32, heads=2, kv_heads=1, intermediate=64, context=12)
    model = build_model(spec, seed=0)
    batches = [
        torch.randint(0, 256, (2, 13), generator=torch.Generator().manual_seed(s)) for s in (1, 2)
    ]
    eta, loss = learning_signal(model, batches)

    def last_loss(emb: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        logits = model(inputs_embeds=emb[None]).logits[0, -1]
        return F.cross_entropy(logits[None], target[None])

    norms, losses = [], []
    for batch in batches:
        for row in batch:
            emb = model.get_input_embeddings()(row[:-1]).detach().requires_grad_(True)
            (grad,) = torch.autograd.grad(last_loss(emb, row[-1]), emb)  # (T, d)
            norms.append(grad.norm(dim=-1))
            with torch.no_grad():
                logits = model(input_ids=row[None, :-1]).logits[0]
                losses.append(F.cross_entropy(logits, row[1:]))
    np.testing.assert_allclose(eta, torch.stack(norms).mean(0).numpy(), rtol=1e-4, atol=1e-7)
    assert loss == pytest.approx(torch.stack(losses).mean().item(), rel=1e-5)
    assert all(p.grad is None for p in model.parameters())  # weights untouched


def test_rho_cell_masses() -> None:
    m = rho_cell_masses(64, 6, 0.4)
    assert m.sum() == pytest.approx(1.0, abs=1e-12)
    # cell mass ~ density at the cell centre times the cell width, away from x = 0
    j = np.arange(20, 63)
    np.testing.assert_allclose(m[j - 1], rho_density((j - 0.5) / 64, 6, 0.4) / 64, rtol=0.02)
    # recency delta (1-a)^H sits on the last position
    assert m[-1] > 0.6**6
