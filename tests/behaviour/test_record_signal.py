"""The per-record learning signal against brute force on a tiny model."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lostmid.behaviour.training.signal import record_learning_signal
from lostmid.errors import UserError
from lostmid.train.config import ModelSpec
from lostmid.train.model import build_model

SPANS = [(1, 3), (3, 5), (5, 7)]


def _examples(seed: int = 0) -> tuple[list[list[int]], list[list[int]], list[int]]:
    rng = np.random.default_rng(seed)
    prompts = [rng.integers(0, 256, size=8).tolist() for _ in range(5)]
    targets = [rng.integers(0, 256, size=2).tolist() for _ in range(5)]
    return prompts, targets, [0, 1, 2, 0, 1]


def _brute_force(model: torch.nn.Module, prompt: list[int], target: list[int]) -> np.ndarray:
    """One example alone: the full gradient of its answer loss by autograd's functional
    jacobian (no batching), then the Frobenius norm over each record's rows."""
    ids = torch.tensor([prompt + target[:-1]])
    emb = model.get_input_embeddings()(ids).detach()[0]  # (T, d)

    def loss(e: torch.Tensor) -> torch.Tensor:
        logits = model(inputs_embeds=e[None]).logits[0]  # (T, V)
        rows = logits[len(prompt) - 1 : len(prompt) - 1 + len(target)]
        return F.cross_entropy(rows, torch.tensor(target))  # mean over answer tokens

    grad = torch.autograd.functional.jacobian(loss, emb)  # (T, d)
    return np.array([float(grad[a:b].norm()) for a, b in SPANS])


def test_matches_brute_force_per_example_and_per_gold() -> None:
    model = build_model(
        ModelSpec(layers=2, hidden=32, heads=2, kv_heads=1, intermediate=64, context=16), seed=3
    )
    for p in model.parameters():
        p.requires_grad_(False)
    prompts, targets, golds = _examples()
    signal = record_learning_signal(model, prompts, targets, SPANS, golds)
    each = np.array([_brute_force(model, p, t) for p, t in zip(prompts, targets, strict=True)])
    assert signal.eta == pytest.approx(each.mean(axis=0), rel=1e-5)
    for r in range(3):
        picked = each[np.asarray(golds) == r, r]
        assert signal.eta_gold[r] == pytest.approx(picked.mean(), rel=1e-5)
    assert signal.examples == 5


def test_a_finite_difference_agrees_on_one_coordinate() -> None:
    """Independent of autograd: d ell / d e[j, i] by central differences."""
    model = build_model(
        ModelSpec(layers=1, hidden=16, heads=2, kv_heads=1, intermediate=32, context=16), seed=1
    ).double()
    prompts, targets, _ = _examples(1)
    prompt, target = prompts[0], targets[0]
    ids = torch.tensor([prompt + target[:-1]])
    base = model.get_input_embeddings()(ids).detach()

    def loss(e: torch.Tensor) -> float:
        with torch.no_grad():
            logits = model(inputs_embeds=e).logits[0]
        rows = logits[len(prompt) - 1 : len(prompt) - 1 + len(target)]
        return float(F.cross_entropy(rows, torch.tensor(target)))

    # the model computes parts in float32 (norms, rotary tables), so the loss is smooth to
    # ~1e-9 only: a step of 1e-3 keeps round-off and curvature both below 1e-2 relative
    h = 1e-3
    fd = np.zeros((2, base.shape[-1]))
    for row, j in enumerate((1, 2)):  # record 0 = tokens 1 and 2
        for i in range(base.shape[-1]):
            up, down = base.clone(), base.clone()
            up[0, j, i] += h
            down[0, j, i] -= h
            fd[row, i] = (loss(up) - loss(down)) / (2 * h)
    signal = record_learning_signal(model, [prompt], [target], SPANS, [0])
    assert signal.eta[0] == pytest.approx(np.linalg.norm(fd), rel=1e-2)


def test_weights_get_no_gradient_and_the_mode_is_restored() -> None:
    model = build_model(
        ModelSpec(layers=1, hidden=16, heads=2, kv_heads=1, intermediate=32, context=16), seed=0
    )
    model.train()
    prompts, targets, golds = _examples()
    record_learning_signal(model, prompts, targets, SPANS, golds)
    assert model.training
    assert all(p.grad is None and p.requires_grad for p in model.parameters())


def test_gold_without_examples_is_nan() -> None:
    model = build_model(
        ModelSpec(layers=1, hidden=16, heads=2, kv_heads=1, intermediate=32, context=16), seed=0
    )
    prompts, targets, _ = _examples()
    signal = record_learning_signal(model, prompts, targets, SPANS, [0, 0, 0, 0, 1])
    assert np.isnan(signal.eta_gold[2]) and signal.record()["eta_gold"][2] is None


@pytest.mark.parametrize(
    ("prompts", "targets", "spans", "golds", "message"),
    [
        ([], [], SPANS, [], "needs examples"),
        ([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2]], [[1], [1]], SPANS, [0, 0], "of one length"),
        ([[1] * 8], [[1]], [(5, 9)], [0], "inside the prompt"),
    ],
)
def test_bad_input_is_one_line(prompts, targets, spans, golds, message: str) -> None:
    model = build_model(
        ModelSpec(layers=1, hidden=16, heads=2, kv_heads=1, intermediate=32, context=16), seed=0
    )
    with pytest.raises(UserError, match=message):
        record_learning_signal(model, prompts, targets, spans, golds)


def test_only_the_answer_columns_reach_the_vocabulary_projection() -> None:
    """The signal reads the logits of the answer's A columns: the vocabulary projection
    runs on those alone (the brute force above, on every column, gives the same eta)."""
    model = build_model(
        ModelSpec(layers=1, hidden=16, heads=2, kv_heads=1, intermediate=32, context=16), seed=0
    )
    prompts, targets, golds = _examples()
    seen: list[tuple[int, ...]] = []
    hook = model.get_output_embeddings().register_forward_hook(
        lambda module, args, out: seen.append(tuple(args[0].shape))
    )
    try:
        record_learning_signal(model, prompts, targets, SPANS, golds)
    finally:
        hook.remove()
    assert seen == [(5, 2, 16)]  # (examples, answer tokens, width), not the 9 columns read
