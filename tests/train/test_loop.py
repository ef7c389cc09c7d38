from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from lostmid.errors import UserError
from lostmid.train import (
    RandomWindows,
    TrainConfig,
    Trainer,
    build_model,
    checkpoint_steps,
    learning_rate,
    load_corpus,
    next_token_loss,
)


def _trainer(config: TrainConfig, weight=None) -> Trainer:
    corpus = load_corpus(config.corpus, seed=0, heldout_fraction=0.3, min_bytes=40)
    sampler = RandomWindows(corpus.train, config.batch_size, config.model.context, config.seed)
    return Trainer(build_model(config.model, config.seed), config, sampler, weight)


def test_checkpoint_steps() -> None:
    assert checkpoint_steps(2000) == [0, 10, 30, 100, 300, 1000, 2000]
    assert checkpoint_steps(3000) == [0, 10, 30, 100, 300, 1000, 3000]
    assert checkpoint_steps(30) == [0, 10, 30]
    assert checkpoint_steps(7) == [0, 7]
    assert checkpoint_steps(10) == [0, 10]  # a decade is listed once


def test_learning_rate_schedule() -> None:
    c = TrainConfig(lr=2.0, warmup_steps=4, steps=104, min_lr_ratio=0.1)
    assert learning_rate(0, c) == pytest.approx(0.5)
    assert learning_rate(3, c) == pytest.approx(2.0)
    assert learning_rate(4, c) == pytest.approx(2.0)
    assert learning_rate(54, c) == pytest.approx(2.0 * (0.1 + 0.9 * 0.5))
    assert learning_rate(104, c) == pytest.approx(0.2)
    lrs = [learning_rate(s, c) for s in range(4, 105)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:], strict=False))


def test_weighted_loss() -> None:
    logits = torch.randn(2, 3, 5)
    targets = torch.randint(0, 5, (2, 3))
    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    only_middle = next_token_loss(logits, targets, torch.tensor([0.0, 2.0, 0.0]))
    assert only_middle.item() == pytest.approx(ce[:, 1].mean().item())
    assert next_token_loss(logits, targets).item() == pytest.approx(ce.mean().item())


def test_loss_decreases(micro: TrainConfig) -> None:
    trainer = _trainer(replace(micro, steps=40))
    losses = [trainer.train_step() for _ in range(40)]
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5])


def test_loss_weight_changes_training(micro: TrainConfig) -> None:
    plain = _trainer(micro)
    weighted = _trainer(micro, weight=lambda t: torch.linspace(0.0, 1.0, t))
    for _ in range(3):
        plain.train_step()
        weighted.train_step()
    a = plain.model.get_input_embeddings().weight
    b = weighted.model.get_input_embeddings().weight
    assert not torch.equal(a, b)


def test_bad_loss_weight(micro: TrainConfig) -> None:
    with pytest.raises(UserError, match="loss weight must be 32"):
        _trainer(micro, weight=torch.ones(5))


def test_resume_state_is_bitwise(micro: TrainConfig, tmp_path) -> None:
    straight = _trainer(micro)
    for _ in range(12):
        straight.train_step()

    first = _trainer(micro)
    for _ in range(5):
        first.train_step()
    first.save(tmp_path / "state.pt")
    second = _trainer(micro)
    second.load(tmp_path / "state.pt")
    for _ in range(7):
        second.train_step()
    assert second.step == 12 and second.tokens_seen == straight.tokens_seen
    for (name, a), (_, b) in zip(
        straight.model.state_dict().items(), second.model.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name


def test_resume_refuses_another_config(micro: TrainConfig, tmp_path) -> None:
    first = _trainer(micro)
    first.save(tmp_path / "state.pt")
    other = _trainer(replace(micro, lr=1e-4))
    with pytest.raises(UserError, match="differs in: lr"):
        other.load(tmp_path / "state.pt")
