"""The influence estimator against brute force, and its invariants."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from lostmid.errors import UserError
from lostmid.influence import (
    NonFiniteError,
    exact_jacobian_norms,
    influence_profile,
    influence_to_precision,
    random_token_ids,
)
from lostmid.models import load_model

L = 12


@pytest.fixture(scope="module")
def qwen():
    return load_model("tiny-qwen2", seed=0, dtype="float64", attn_implementation="eager")


@pytest.fixture(scope="module")
def gpt2():
    return load_model("tiny-gpt2", seed=0, dtype="float64", attn_implementation="eager")


@pytest.fixture(scope="module")
def ids() -> torch.Tensor:
    return random_token_ids(256, 3, L, seed=0)


@pytest.mark.parametrize("family", ["qwen", "gpt2"])
@pytest.mark.parametrize("output", ["hidden", "residual", "logits", "top1-prob"])
def test_exact_mode_equals_jacrev(family, output, request, ids) -> None:
    loaded = request.getfixturevalue(family)
    exact = influence_profile(loaded, ids[:1], exact=True, output=output)
    brute = exact_jacobian_norms(loaded, ids[0], output=output)  # ||J_j||_F^2, (L,)
    np.testing.assert_allclose(exact.mean_sq, brute, rtol=1e-10)
    np.testing.assert_allclose(exact.influence, np.sqrt(brute), rtol=1e-10)


@pytest.mark.parametrize("probe_kind", ["rademacher", "gaussian"])
def test_estimator_is_unbiased_within_its_standard_error(qwen, ids, probe_kind) -> None:
    exact = influence_profile(qwen, ids, exact=True)
    est = influence_profile(qwen, ids, probes=48, seed=3, probe_kind=probe_kind, strategy="vmap")
    # Same inputs, so only probe noise separates the two: Var = var_probe / (S P).
    probe_se = np.sqrt(est.var_probe / (est.samples * est.probes))
    z = (est.mean_sq - exact.mean_sq) / probe_se  # O(1) at every position if unbiased
    assert np.abs(z).max() < 4.5
    # Its error bars are honest: not a thousand times too wide either.
    assert np.abs(est.mean_sq / exact.mean_sq - 1).max() < 0.5


def test_causal_zeros_after_the_target_are_exact(qwen, gpt2, ids) -> None:
    for loaded in (qwen, gpt2):
        for output in ("hidden", "logits", "top1-prob"):
            prof = influence_profile(loaded, ids[:2], probes=2, target=7, output=output)
            assert np.all(prof.influence[7:] == 0.0)
            assert np.all(prof.influence[:7] > 0.0)
            assert prof.target == 7


def test_per_layer_subset_matches_full_rows(qwen, ids) -> None:
    full = influence_profile(qwen, ids[:2], exact=True, per_layer=True)
    subset = influence_profile(qwen, ids[:2], exact=True, per_layer=[2])
    assert np.all(np.isnan(subset.per_layer[0]))
    np.testing.assert_allclose(subset.per_layer[1], full.per_layer[1], rtol=1e-12)
    with pytest.raises(UserError, match=r"layers must be in 1..2"):
        influence_profile(qwen, ids[:2], probes=1, per_layer=[3])


def test_per_layer_last_row_is_the_residual_profile(qwen, ids) -> None:
    prof = influence_profile(qwen, ids[:2], exact=True, per_layer=True)
    residual = influence_profile(qwen, ids[:2], exact=True, output="residual")
    assert prof.per_layer.shape == (qwen.num_layers, L)
    np.testing.assert_allclose(prof.per_layer[-1], residual.influence, rtol=1e-10)
    # After layer 1 a position has travelled at most one attention hop: all > 0 up to t.
    assert np.all(prof.per_layer[0] > 0)


def test_same_seed_same_profile_and_strategies_agree(qwen, ids) -> None:
    a = influence_profile(qwen, ids, probes=3, seed=5)
    b = influence_profile(qwen, ids, probes=3, seed=5)
    c = influence_profile(qwen, ids, probes=3, seed=6)
    v = influence_profile(qwen, ids, probes=3, seed=5, strategy="vmap")
    np.testing.assert_array_equal(a.influence, b.influence)
    assert not np.array_equal(a.influence, c.influence)
    np.testing.assert_allclose(v.influence, a.influence, rtol=1e-12)


def test_checkpointing_and_batching_do_not_change_the_answer(gpt2, ids) -> None:
    plain = influence_profile(gpt2, ids, probes=2, seed=1)
    ckpt = influence_profile(gpt2, ids, probes=2, seed=1, checkpointing=True)
    np.testing.assert_allclose(ckpt.influence, plain.influence, rtol=1e-12)
    exact1 = influence_profile(gpt2, ids, exact=True, batch_size=1)
    exact3 = influence_profile(gpt2, ids, exact=True, batch_size=3)
    np.testing.assert_allclose(exact3.influence, exact1.influence, rtol=1e-10)


def test_variance_split_and_error_bars(qwen, ids) -> None:
    prof = influence_profile(qwen, ids, probes=4, seed=0)
    assert np.all(prof.var_probe[:L] > 0) and np.all(prof.var_sample >= 0)
    assert prof.stderr_basis == "samples"
    assert np.all(prof.stderr > 0)
    # Exact mode and the scalar top-1 output have no probe noise.
    assert np.all(influence_profile(qwen, ids, exact=True).var_probe == 0)
    assert np.all(influence_profile(qwen, ids, probes=2, output="top1-prob").var_probe == 0)
    one = influence_profile(qwen, ids[:1], probes=1)
    assert np.all(np.isnan(one.var_probe)) and np.all(np.isnan(one.var_sample))


def test_non_finite_values_name_the_layer(ids) -> None:
    loaded = load_model("tiny-qwen2", seed=0)
    with torch.no_grad():
        loaded.model.model.layers[1].mlp.down_proj.weight[0, 0] = float("inf")
    with pytest.raises(NonFiniteError, match="layer 2 of 2"):
        influence_profile(loaded, ids[:1], probes=2)


def test_bad_requests_are_one_line_errors(qwen, ids) -> None:
    cases = [
        ({"probes": 0}, "--probes must be >= 1, got 0"),
        ({"target": 13}, r"--target must be a position in 1..12 \(1-indexed\), got 13"),
        ({"output": "attention"}, "--output 'attention' unknown"),
        ({"strategy": "magic"}, "strategy 'magic' unknown"),
    ]
    for kwargs, message in cases:
        with pytest.raises(UserError, match=message):
            influence_profile(qwen, ids, **kwargs)
    with pytest.raises(UserError, match="--samples must be >= 1, got 0"):
        influence_profile(qwen, ids[:0])
    too_long = random_token_ids(256, 1, 300, seed=0)
    with pytest.raises(UserError, match="--length 300 exceeds the maximum 256 of tiny-qwen2"):
        influence_profile(qwen, too_long)
    with pytest.raises(UserError, match=r"token ids must lie in 0..255"):
        influence_profile(qwen, ids + 1000)


@pytest.mark.parametrize("strategy", ["loop", "vmap"])
def test_batched_equals_unbatched_for_the_same_samples_and_probes(qwen, ids, strategy) -> None:
    # Each sample draws its probes from its own stream, so batching changes nothing.
    one = influence_profile(qwen, ids, probes=2, seed=4, per_layer=True, strategy=strategy)
    for batch_size in (2, 3):
        batched = influence_profile(
            qwen, ids, probes=2, seed=4, per_layer=True, strategy=strategy, batch_size=batch_size
        )
        for field in ("mean_sq", "var_probe", "var_sample", "per_layer"):
            np.testing.assert_allclose(
                getattr(batched, field), getattr(one, field), rtol=1e-10, atol=0, err_msg=field
            )


class _CountFlops(TorchDispatchMode):
    """FLOPs of every op that runs, by torch's own formulas (torch.utils.flop_counter).

    torch's FlopCounterMode also tracks modules with hooks that autograd.grad on a leaf
    input rejects; this counts the same ops without them.
    """

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        formula = flop_registry.get(func._overloadpacket)
        if formula is not None:
            self.total += formula(*args, **kwargs, out_val=out)
        return out


@pytest.mark.parametrize("family", ["qwen", "gpt2"])
@pytest.mark.parametrize(("output", "batch_size"), [("hidden", 1), ("hidden", 3), ("logits", 2)])
def test_flop_count_matches_torch_and_backward_is_input_gradients_only(
    family, output, batch_size, request, ids
) -> None:
    from lostmid.influence import matmul_inventory, measurement_flops

    loaded = request.getfixturevalue(family)
    with _CountFlops() as counter:
        influence_profile(loaded, ids, probes=2, output=output, batch_size=batch_size)
    # torch's formulas over every op that really ran, forward and backward; weight
    # gradients would add their own products.
    assert counter.total == measurement_flops(loaded, L, samples=3, probes=2, output=output)
    inventory = matmul_inventory(loaded, L, output=output)
    forward = sum(mm.flops for mm in inventory if mm.pass_ == "forward")
    backward = sum(mm.flops for mm in inventory if mm.pass_ == "input-gradient")
    config = loaded.model.config
    attention = 4 * L * L * config.hidden_size * loaded.num_layers  # QK^T and AV, H h_d = d
    assert backward == forward + attention  # dense layers 1x, attention 2x the forward


def test_parameters_are_frozen_during_a_measurement_and_restored(ids) -> None:
    loaded = load_model("tiny-qwen2", seed=0, dtype="float64", attn_implementation="eager")
    reference = influence_profile(loaded, ids, probes=2, seed=1)
    params = list(loaded.model.parameters())
    for p in params:  # as a training loop would leave a shared module
        p.requires_grad_(True)
    seen: list[bool] = []
    block = loaded.adapter.blocks(loaded.model)[0]
    handle = block.register_forward_hook(
        lambda *_: seen.append(any(p.requires_grad for p in params))
    )
    try:
        prof = influence_profile(loaded, ids, probes=2, seed=1)
    finally:
        handle.remove()
    assert seen and not any(seen)  # frozen while measuring
    assert all(p.requires_grad for p in params)  # restored afterwards
    assert all(p.grad is None for p in params)  # no parameter gradient allocated
    np.testing.assert_allclose(prof.mean_sq, reference.mean_sq, rtol=1e-12)


def test_influence_to_precision_stops_at_the_first_sample_count_that_reaches_it(qwen) -> None:
    pool = random_token_ids(256, 60, L, seed=7)
    rse, floor = 0.12, 4
    prof = influence_to_precision(qwen, pool, rse=rse, min_samples=floor, seed=2)
    s = prof.samples
    assert floor <= s < 60
    # The same samples and probes measured in one go give the same profile ...
    again = influence_profile(qwen, pool[:s], probes=1, seed=2)
    np.testing.assert_array_equal(prof.mean_sq, again.mean_sq)
    np.testing.assert_array_equal(prof.stderr, again.stderr)
    # ... which meets the target, while one sample fewer did not (past the minimum).
    assert np.nanmax(prof.relative_stderr) <= rse
    if s > floor:
        fewer = influence_profile(qwen, pool[: s - 1], probes=1, seed=2)
        assert np.nanmax(fewer.relative_stderr) > rse
    # Batches of 3 check only multiples of 3, so they stop at one, at or after s.
    batched = influence_to_precision(qwen, pool, rse=rse, min_samples=floor, seed=2, batch_size=3)
    assert batched.samples % 3 == 0 and batched.samples >= s
    assert np.nanmax(batched.relative_stderr) <= rse
    np.testing.assert_allclose(
        batched.mean_sq,
        influence_profile(qwen, pool[: batched.samples], probes=1, seed=2).mean_sq,
        rtol=1e-10,
    )
    # A target out of reach uses every row.
    assert influence_to_precision(qwen, pool[:5], rse=1e-6, min_samples=2).samples == 5


def test_precision_and_compile_requests_are_checked(qwen, ids) -> None:
    with pytest.raises(UserError, match="rse must be positive, got 0.0"):
        influence_to_precision(qwen, ids, rse=0.0)
    with pytest.raises(UserError, match="min_samples must be >= 2"):
        influence_to_precision(qwen, ids, min_samples=1)
    with pytest.raises(UserError, match="compile and checkpointing cannot be combined"):
        influence_profile(qwen, ids, compile=True, checkpointing=True)


@pytest.mark.slow
def test_compiled_blocks_give_the_same_profile(qwen, ids) -> None:
    plain = influence_profile(qwen, ids, probes=2, seed=1)
    compiled = influence_profile(qwen, ids, probes=2, seed=1, compile=True)
    # inductor may reorder sums (module docstring of compiled_blocks)
    np.testing.assert_allclose(compiled.mean_sq, plain.mean_sq, rtol=1e-6)


def test_compile_auto_rule_pays_back_twice_its_cost() -> None:
    from lostmid.influence.flops import (
        COMPILE_SECONDS,
        COMPILED_FLOPS_PER_S,
        EAGER_FLOPS_PER_S,
        compile_choice,
    )

    per_flop = 1 / EAGER_FLOPS_PER_S - 1 / COMPILED_FLOPS_PER_S
    edge = 2 * COMPILE_SECONDS / per_flop  # FLOPs whose saving is exactly twice the cost
    cpu = {"device": "cpu", "checkpointing": False, "device_map": False}
    assert compile_choice(edge * 1.001, **cpu)[0] and not compile_choice(edge * 0.999, **cpu)[0]
    assert not compile_choice(edge * 100, **{**cpu, "checkpointing": True})[0]
    assert not compile_choice(edge * 100, **{**cpu, "device": "cuda:0"})[0]
