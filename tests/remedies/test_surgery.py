"""Model surgery: the prefix-LM mask against the theory's PrefixLM support, exact
Jacobian zeros of a patched model, padding, and residual routing against weight edits."""

from __future__ import annotations

import copy

import pytest
import torch

from lostmid.remedies.surgery import (
    GATES,
    prefix_attention_mask,
    prefix_variant,
    residual_variant,
)
from lostmid.theory import PrefixLM
from lostmid.train.config import ModelSpec
from lostmid.train.model import build_model, parameter_count

SPEC = ModelSpec(layers=2, hidden=16, heads=2, kv_heads=1, intermediate=32, context=16)


@pytest.mark.parametrize(("length", "prefix"), [(6, 1), (6, 3), (7, 7), (5, 2)])
def test_prefix_mask_is_the_support_of_the_theory_prefix_mask(length: int, prefix: int) -> None:
    mask = prefix_attention_mask(torch.ones(2, length, dtype=torch.bool), prefix)
    support = torch.from_numpy(PrefixLM(prefix).dense(length) > 0)
    assert mask.shape == (2, 1, length, length)
    assert torch.equal(mask[0, 0], support) and torch.equal(mask[1, 0], support)


def test_prefix_mask_counts_real_tokens_under_left_padding() -> None:
    valid = torch.tensor([[False, False, True, True, True, True]])
    mask = prefix_attention_mask(valid, prefix=2)[0, 0]
    reference = torch.from_numpy(PrefixLM(2).dense(4) > 0)
    assert torch.equal(mask[2:, 2:], reference)
    assert not mask[2:, :2].any()  # nobody attends to padding
    assert torch.equal(mask[:2, :2], torch.eye(2, dtype=torch.bool))  # padding sees itself


def _hidden_jacobian(model: torch.nn.Module, embeds: torch.Tensor) -> torch.Tensor:
    """|d h_i / d x_j| summed over features: (T, T), exact (one backward per output;
    jacrev's vmap has no batching rule for the CPU SDPA backward)."""
    base = model.model

    def hidden(x: torch.Tensor) -> torch.Tensor:
        return base(inputs_embeds=x[None]).last_hidden_state[0]

    jac = torch.autograd.functional.jacobian(hidden, embeds)  # (T, d, T, d)
    return jac.abs().sum(dim=(1, 3))


def test_prefix_model_context_sees_later_context_and_nothing_else_changes() -> None:
    torch.manual_seed(0)
    spec = ModelSpec(layers=1, hidden=16, heads=2, kv_heads=1, intermediate=32, context=16)
    causal = build_model(spec, seed=3).eval()
    prefixed = prefix_variant(4).apply(copy.deepcopy(causal)).eval()
    embeds = torch.randn(7, 16)
    j_causal = _hidden_jacobian(causal, embeds)
    j_prefix = _hidden_jacobian(prefixed, embeds)
    allowed = torch.from_numpy(PrefixLM(4).dense(7) > 0)
    assert torch.equal(j_prefix > 0, allowed)  # one layer: depends on x_j iff i may see j
    assert torch.equal(j_causal > 0, torch.from_numpy(PrefixLM(1).dense(7) > 0))
    with torch.no_grad():
        h_causal = causal.model(inputs_embeds=embeds[None]).last_hidden_state[0]
        h_prefix = prefixed.model(inputs_embeds=embeds[None]).last_hidden_state[0]
    # after the context, a one-layer model is exactly the causal one; inside it is not
    torch.testing.assert_close(h_prefix[4:], h_causal[4:], rtol=0, atol=1e-6)
    assert (h_prefix[:3] - h_causal[:3]).abs().max() > 1e-3
    assert parameter_count(prefixed) == parameter_count(causal)


def test_prefix_model_left_padding_gives_the_unpadded_logits() -> None:
    model = prefix_variant(3).apply(build_model(SPEC, seed=1)).eval()
    ids = torch.tensor([[5, 9, 2, 7, 4, 8]])
    padded = torch.cat([torch.zeros(1, 2, dtype=torch.long), ids], dim=1)
    attention = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1]])
    position_ids = (attention.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        plain = model(input_ids=ids).logits
        left = model(input_ids=padded, attention_mask=attention, position_ids=position_ids).logits
    torch.testing.assert_close(left[:, 2:], plain, rtol=1e-5, atol=1e-5)


def _attention_out_scaled(model: torch.nn.Module, factors: list[float]) -> torch.nn.Module:
    """Reference: scale each layer's attention output projection (no bias in qwen2)."""
    with torch.no_grad():
        for layer, f in zip(model.model.layers, factors, strict=True):
            layer.self_attn.o_proj.weight.mul_(f)
    return model


@pytest.mark.parametrize("factors", [[1.0, 0.5], [0.0, 0.0], [2.0, 0.1]])
def test_residual_schedule_equals_scaling_the_attention_output_weights(
    factors: list[float],
) -> None:
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    routed = residual_variant(factors).apply(build_model(SPEC, seed=2)).eval()
    reference = _attention_out_scaled(build_model(SPEC, seed=2), factors).eval()
    with torch.no_grad():
        torch.testing.assert_close(
            routed(input_ids=ids).logits, reference(input_ids=ids).logits, rtol=1e-5, atol=1e-5
        )
    assert parameter_count(routed) == parameter_count(reference)


def test_residual_gate_adds_one_trained_parameter_per_layer() -> None:
    plain = build_model(SPEC, seed=0)
    gated = residual_variant([0.1, 0.1], learned=True).apply(build_model(SPEC, seed=0))
    assert parameter_count(gated) == parameter_count(plain) + 2
    gates = getattr(gated, GATES).scale
    assert any(p is gates for p in gated.parameters())
    loss = gated(input_ids=torch.tensor([[1, 2, 3, 4, 5]])).logits.square().mean()
    loss.backward()
    assert gates.grad is not None and bool((gates.grad != 0).all())


def test_channels_equal_the_plain_model_on_the_sequence_with_memory_inserted_by_hand() -> None:
    from lostmid.remedies.surgery import MEMORY, channels_variant, memory_slots

    plain = build_model(SPEC, seed=4).eval()
    channelled = channels_variant(context=9, count=2).apply(copy.deepcopy(plain)).eval()
    memory = getattr(channelled, MEMORY).vectors.detach()
    ids = torch.tensor([[7, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11], [3, 3, 2, 1, 9, 9, 0, 4, 4, 4, 1]])
    slots = memory_slots(9, 2)  # [3, 6]
    assert slots == [3, 6]
    embeds = plain.model.embed_tokens(ids).detach()
    pieces = [embeds[:, :3], memory[0].expand(2, 1, -1), embeds[:, 3:6]]
    pieces += [memory[1].expand(2, 1, -1), embeds[:, 6:]]
    by_hand = torch.cat(pieces, dim=1)  # (2, 13, d)
    keep = [0, 1, 2, 4, 5, 6, 8, 9, 10, 11, 12]
    with torch.no_grad():
        expected = plain(inputs_embeds=by_hand).logits[:, keep]
        got = channelled(input_ids=ids).logits
        positions = torch.arange(11)[None].expand(2, -1)
        also = channelled(
            input_ids=ids, attention_mask=torch.ones(2, 11), position_ids=positions
        ).logits
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(also, expected, rtol=1e-5, atol=1e-5)
    assert parameter_count(channelled) == parameter_count(plain) + 2 * SPEC.hidden
    loss = channelled(input_ids=ids).logits[:, -1].square().mean()
    loss.backward()
    assert bool((getattr(channelled, MEMORY).vectors.grad != 0).any())


def test_branch_gains_refuse_a_model_that_inserts_tokens_and_its_plain_twin_measures() -> None:
    # the channels model's blocks see 11 + 2 positions for an 11-token input: a gain per
    # input position is undefined there, so the Jacobian a is refused in one line, and
    # retrieval training records None for it (behaviour/training/evaluate.py)
    from lostmid.influence import LengthChangedError, residual_strength
    from lostmid.remedies.surgery import channels_variant
    from lostmid.train.model import as_loaded

    plain = build_model(SPEC, seed=4).eval()
    channelled = channels_variant(context=9, count=2).apply(copy.deepcopy(plain)).eval()
    ids = torch.randint(0, 12, (2, 11), generator=torch.Generator().manual_seed(0))
    a = residual_strength(as_loaded(plain, 0), ids, method="jacobian", seed=0)
    assert a.shape == (SPEC.layers,) and ((a > 0) & (a < 1)).all()
    with pytest.raises(LengthChangedError, match="sees 13 positions for an input of 11"):
        residual_strength(as_loaded(channelled, 0), ids, method="jacobian", seed=0)


def test_a_variant_draws_its_weights_from_the_seed_not_from_what_ran_before() -> None:
    # found by the quick-scale kill benchmark: the channels remedy's memory tokens came
    # from the global generator, so a rerun after a kill gave other numbers
    from lostmid.remedies.surgery import MEMORY, channels_variant

    variant = channels_variant(context=9, count=2)
    torch.manual_seed(1)
    first = getattr(build_model(SPEC, seed=3, variant=variant), MEMORY).vectors.detach()
    torch.randn(100)  # other work in the same process moves the global generator
    again = getattr(build_model(SPEC, seed=3, variant=variant), MEMORY).vectors.detach()
    other = getattr(build_model(SPEC, seed=4, variant=variant), MEMORY).vectors.detach()
    assert torch.equal(first, again) and not torch.equal(first, other)
