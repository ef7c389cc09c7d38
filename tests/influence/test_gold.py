"""The gold span's gradient reach against brute-force finite differences."""

from __future__ import annotations

import pytest
import torch

from lostmid.behaviour.decoding.generate import greedy_decode, greedy_from_cache
from lostmid.errors import UserError
from lostmid.influence.gold import gold_span_influence
from lostmid.models import MODEL_PRESETS, load_model
from lostmid.models.adapters.cache import cache_length


def _answer_logp(model, embed, prompt, answer, delta=None):
    ids = torch.tensor([prompt + answer])
    x = embed(ids).detach()
    if delta is not None:
        x = x + delta
    logp = torch.log_softmax(model(inputs_embeds=x, use_cache=False).logits[0], -1)
    return sum(float(logp[len(prompt) - 1 + t, a]) for t, a in enumerate(answer))


def test_gradient_matches_finite_differences() -> None:
    loaded = load_model("tiny-qwen2", seed=0, dtype="float64", attn_implementation="eager")
    model, embed = loaded.model, loaded.model.get_input_embeddings()
    prompt, answer, span = list(range(20, 36)), [50, 51], (6, 8)
    r = gold_span_influence(loaded, prompt, span, answer)
    base = _answer_logp(model, embed, prompt, answer)
    assert r.answer_logp == pytest.approx(base, rel=1e-10)
    h = 1e-3  # eager attention takes its softmax in float32: smaller steps meet its noise
    d = embed.weight.shape[1]
    sq = 0.0
    for j in range(*span):
        for k in range(d):
            delta = torch.zeros(1, len(prompt) + len(answer), d, dtype=torch.float64)
            delta[0, j, k] = h
            up = _answer_logp(model, embed, prompt, answer, delta)
            down = _answer_logp(model, embed, prompt, answer, -delta)
            sq += ((up - down) / (2 * h)) ** 2
    assert r.gradient == pytest.approx(sq**0.5, rel=2e-3)
    assert 0 < r.gradient_share < 1


def test_jacobian_estimate_is_unbiased() -> None:
    loaded = load_model("tiny-qwen2", seed=0, dtype="float64", attn_implementation="eager")
    prompt, span = list(range(20, 32)), (3, 6)
    base = loaded.adapter.base(loaded.model)
    x = loaded.model.get_input_embeddings()(torch.tensor([prompt])).detach()
    jac = torch.autograd.functional.jacobian(
        lambda e: base(inputs_embeds=e, use_cache=False).last_hidden_state[0, -1], x
    )  # (d, 1, L, d)
    per_position = jac[:, 0].pow(2).sum(dim=(0, 2))  # (L,)
    exact = float(per_position[span[0] : span[1]].sum().sqrt())
    r = gold_span_influence(loaded, prompt, span, [7], probes=600, seed=1)
    assert r.jacobian == pytest.approx(exact, rel=0.06)
    share = float(per_position[span[0] : span[1]].sum() / per_position.sum())
    assert r.jacobian_share == pytest.approx(share, rel=0.1)


def test_bad_spans_are_refused() -> None:
    loaded = load_model("tiny-qwen2", seed=0)
    with pytest.raises(UserError, match="not inside a prompt of 5 tokens"):
        gold_span_influence(loaded, [1, 2, 3, 4, 5], (3, 9), [1])
    with pytest.raises(UserError, match="at least one token"):
        gold_span_influence(loaded, [1, 2, 3, 4, 5], (1, 2), [])


@pytest.mark.parametrize("preset", ["tiny-gemma2", "tiny-gpt2"])
def test_one_forward_equals_the_full_model(preset: str) -> None:
    """The answer's log p and its gradient through the output head on the answer's rows
    equal those of the whole model's logits (Gemma 2's soft-capped head included)."""
    loaded = load_model(preset, seed=0, dtype="float64")
    model, embed = loaded.model, loaded.adapter.token_embedding(loaded.model)
    prompt, answer, span = list(range(20, 36)), [50, 51, 52], (4, 9)
    r = gold_span_influence(loaded, prompt, span, answer)
    x = embed(torch.tensor([prompt + answer])).detach().requires_grad_(True)
    logp = torch.log_softmax(model(inputs_embeds=x, use_cache=False).logits[0], -1)
    total = sum(logp[len(prompt) - 1 + t, a] for t, a in enumerate(answer))
    (grad,) = torch.autograd.grad(total, x)
    sq = grad[0, : len(prompt)].pow(2).sum(-1)
    assert r.answer_logp == pytest.approx(total.item(), rel=1e-10)
    assert r.gradient == pytest.approx(float(sq[span[0] : span[1]].sum().sqrt()), rel=1e-8)
    assert r.gradient_share == pytest.approx(float(sq[span[0] : span[1]].sum() / sq.sum()))


TINY = sorted(name for name in MODEL_PRESETS if name.startswith("tiny-"))


@pytest.mark.parametrize("preset", TINY)
def test_the_gradient_pass_cache_continues_the_prompt_greedily(preset: str) -> None:
    """The gold pass filling a cache gives the numbers it gives without one, bit for bit;
    cut back to the prompt but its last token, the cache continues the prompt with
    greedy_decode's tokens and logits (every family; a prompt beyond the sliding windows of
    tiny-mistral and the Gemmas, W = 16)."""
    loaded = load_model(preset, seed=0, dtype="float64")
    draw = torch.Generator().manual_seed(0)
    prompt = [int(t) for t in torch.randint(3, 200, (40,), generator=draw)]
    answer, span = [50, 51, 52], (4, 9)
    plain = gold_span_influence(loaded, prompt, span, answer, probes=2, seed=3)
    cache = loaded.adapter.full_cache()
    filled = gold_span_influence(loaded, prompt, span, answer, probes=2, seed=3, cache=cache)
    assert filled == plain
    assert cache_length(cache) == len(prompt) + len(answer)
    cache.crop(-(len(answer) + 1))
    said = greedy_from_cache(loaded.adapter, loaded.model, cache, prompt[-1], 6)
    (expected,) = greedy_decode(loaded.model, [prompt], 6, batch_size=1)
    assert said == expected
    assert cache_length(cache) == len(prompt) + 5  # the last new token is never read back
    # the cache's columns are the prompt's: the next logits equal a forward over it all
    with torch.no_grad():
        full = loaded.model(input_ids=torch.tensor([prompt + said]), use_cache=False).logits
        logits, _ = loaded.adapter.continue_from(
            loaded.model, cache, torch.tensor([[said[-1]]]), cache_length(cache), keep=1
        )
    torch.testing.assert_close(logits[0, -1], full[0, -1], rtol=1e-9, atol=1e-9)
