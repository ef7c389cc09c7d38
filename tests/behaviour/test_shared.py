"""``--design shared``: one prefill per context gives what the full prompts give, on
every family the adapters name (teacher-forced log-probabilities to 1e-5 relative in
float32, greedy tokens equal)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lostmid.behaviour.decoding.generate import greedy_decode, teacher_forced
from lostmid.behaviour.decoding.shared import shared_scores
from lostmid.models import load_model

FAMILIES = [
    "tiny-qwen2",
    "tiny-gpt2",
    "tiny-llama",
    "tiny-neox",
    "tiny-opt",
    "tiny-bloom",
    "tiny-phi",
    "tiny-gemma2",  # sliding window 16 < the 40-token context
    "tiny-mistral",  # sliding window 16 in every layer
]


# the families whose questions share one packed row after the context (BLOOM, whose
# ALiBi positions follow the mask, reads them as rows of their own); the sliding windows
# (16 < the 40-token context) are applied by the packed masks
PACKED = set(FAMILIES) - {"tiny-bloom"}


@pytest.mark.parametrize("preset", FAMILIES)
def test_packing_is_offered_only_where_it_is_exact(preset: str) -> None:
    loaded = load_model(preset, init="random", seed=0)
    assert loaded.adapter.packs_exactly(loaded.model) == (preset in PACKED)


@pytest.mark.parametrize("batch_size", [2, 6])
@pytest.mark.parametrize("preset", FAMILIES)
def test_shared_prefill_equals_separate_full_prompts(preset: str, batch_size: int) -> None:
    loaded = load_model(preset, init="random", seed=0)
    g = torch.Generator().manual_seed(1)

    def ids(n: int) -> list[int]:
        return torch.randint(0, 256, (n,), generator=g).tolist()

    contexts = [ids(40), ids(33)]
    # two contexts interleaved; equal-length questions batch together, others apart
    rows = [(0, 3, 2), (1, 4, 3), (0, 3, 1), (0, 5, 3), (1, 4, 2), (0, 3, 3)]
    ctx = [contexts[c] for c, _, _ in rows]
    questions = [ids(q) for _, q, _ in rows]
    targets = [ids(t) for _, _, t in rows]
    packs: list[tuple[int, int]] = []  # (rows, most questions in a row) of each forward
    real = loaded.adapter.continue_packed

    def counting(model, cache, ids, owners, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        packs.append((ids.shape[0], int(owners.max()) + 1))
        return real(model, cache, ids, owners, *args, **kwargs)

    loaded.adapter.continue_packed = counting  # type: ignore[method-assign]
    teacher, generated = shared_scores(
        loaded.model, loaded.adapter, ctx, questions, targets, new_tokens=4,
        batch_size=batch_size,
    )  # fmt: skip
    # packed families read several questions in one row (a wrong mask would let one
    # question see another's tokens and move its numbers below), and greedy decoding
    # reads both contexts (of 40 and 33 tokens: the shorter one padded) in one step
    assert (max((q for _, q in packs), default=0) > 1) == (preset in PACKED)
    assert (max((k for k, _ in packs), default=0) >= 2) == (preset in PACKED)
    assert teacher is not None and generated is not None
    full = [c + q for c, q in zip(ctx, questions, strict=True)]
    ref = teacher_forced(loaded.model, full, targets, batch_size=1)
    np.testing.assert_allclose(teacher.logprob, ref.logprob, rtol=1e-5)
    assert teacher.argmax.tolist() == ref.argmax.tolist()
    assert generated == greedy_decode(loaded.model, full, 4, batch_size=1)
    assert np.all(teacher.logprob < 0)  # real log-probabilities, not zeros


def test_stacked_contexts_decode_in_place_and_in_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stacked cache writes each step's columns into its buffer (no copy of the
    contexts a step), and a group closes at STEP_ROWS questions: one row a step then
    gives the same tokens as every row in one step."""
    import lostmid.behaviour.decoding.shared as shared

    loaded = load_model("tiny-llama", init="random", seed=0)
    adapter, model = loaded.adapter, loaded.model
    g = torch.Generator().manual_seed(3)
    contexts = [torch.randint(0, 256, (n,), generator=g).tolist() for n in (21, 30, 17, 30)]
    questions = [torch.randint(0, 256, (n,), generator=g).tolist() for n in (2, 5, 1, 3)]
    targets = [[1]] * 4
    caches = [adapter.prefill(model, torch.tensor([c])) for c in contexts[:2]]
    stacked = adapter.stack_caches(caches, room=8)
    assert stacked is not None
    buffer = stacked.layers[0].buffers[0]
    assert buffer.shape[0] == 2 and buffer.shape[2] == 30 + 8
    # row 0 holds context 0's 21 columns, then zeros
    torch.testing.assert_close(buffer[0, :, :21], caches[0].layers[0].keys[0])
    assert not buffer[0, :, 21:].any()
    rows = [(caches[0], 21, [questions[0]]), (caches[1], 30, [questions[1]])]
    shared._packed_greedy(model, adapter, rows, 3, torch.device("cpu"), 8)
    assert adapter.stacks(caches[0])  # the contexts' own caches are left as they were
    assert caches[0].get_seq_length() == 21
    together = shared_scores(model, adapter, contexts, questions, targets, new_tokens=5)[1]
    seen_rows: list[int] = []
    real = adapter.continue_packed

    def counting(model, cache, ids, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen_rows.append(ids.shape[0])
        layer = cache.layers[0]
        ptr = layer.buffers[0].data_ptr() if hasattr(layer, "buffers") else None
        out = real(model, cache, ids, *args, **kwargs)
        if ptr is not None:  # written in place: the same buffer, the keys a view of it
            assert layer.buffers[0].data_ptr() == ptr == layer.keys.data_ptr()
        return out

    monkeypatch.setattr(adapter, "continue_packed", counting)
    monkeypatch.setattr(shared, "STEP_ROWS", 1)
    apart = shared_scores(model, adapter, contexts, questions, targets, new_tokens=5)[1]
    assert (
        apart
        == together
        == greedy_decode(
            model, [c + q for c, q in zip(contexts, questions, strict=True)], 5, batch_size=1
        )
    )
    assert set(seen_rows) == {1}  # teacher forcing and every group: one context a step


def test_a_group_holds_at_most_stack_bytes_of_contexts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stacked copy is bounded: contexts (a row each) are split over groups when
    their caches pass STACK_BYTES, with the same tokens."""
    import lostmid.behaviour.decoding.shared as shared
    from lostmid.models.adapters.cache import cache_bytes

    loaded = load_model("tiny-qwen2", init="random", seed=0)
    adapter, model = loaded.adapter, loaded.model
    g = torch.Generator().manual_seed(4)
    contexts = [torch.randint(0, 256, (30,), generator=g).tolist() for _ in range(5)]
    questions = [torch.randint(0, 256, (n,), generator=g).tolist() for n in (2, 3, 1, 4, 2)]
    one = cache_bytes(adapter.prefill(model, torch.tensor([contexts[0]])))
    rows: list[int] = []
    real = adapter.continue_packed

    def counting(model, cache, ids, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        rows.append(ids.shape[0])
        return real(model, cache, ids, *args, **kwargs)

    monkeypatch.setattr(adapter, "continue_packed", counting)
    monkeypatch.setattr(shared, "STACK_BYTES", 2 * one)
    got = shared_scores(
        model, adapter, contexts, questions, [[1]] * 5, teacher=False, new_tokens=4,
    )[1]  # fmt: skip
    assert max(rows) == 2  # five contexts of one question: groups of 2, 2 and 1
    full = [c + q for c, q in zip(contexts, questions, strict=True)]
    assert got == greedy_decode(model, full, 4, batch_size=1)


def test_a_context_decodes_in_one_row_its_questions_read_batch_size_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Greedy decoding reads all of a context's questions in one row whatever
    --batch-size (its cache read once a step), the first forward in chunks of
    --batch-size questions; the tokens are the same for every chunk size."""
    import lostmid.behaviour.decoding.shared as shared

    loaded = load_model("tiny-llama", init="random", seed=0)
    adapter, model = loaded.adapter, loaded.model
    g = torch.Generator().manual_seed(5)
    context = torch.randint(0, 256, (25,), generator=g).tolist()
    questions = [torch.randint(0, 256, (n,), generator=g).tolist() for n in (2, 4, 1, 3, 3)]
    widths: list[tuple[int, int]] = []
    real = adapter.continue_packed

    def counting(model, cache, ids, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        widths.append(tuple(ids.shape))
        return real(model, cache, ids, *args, **kwargs)

    monkeypatch.setattr(adapter, "continue_packed", counting)
    want = greedy_decode(model, [context + q for q in questions], 4, batch_size=1)
    for batch_size, first in ((2, [(1, 6), (1, 4), (1, 3)]), (5, [(1, 13)])):
        widths.clear()
        got = shared.shared_scores(
            model, adapter, [context] * 5, questions, [[1]] * 5, teacher=False,
            new_tokens=4, batch_size=batch_size,
        )[1]  # fmt: skip
        assert got == want
        # slots as wide as their questions, 2 4 | 1 3 | 3: chunks of 6, 4 and 3 columns
        chunks = len(first)
        assert widths[:chunks] == first
        assert widths[chunks:] == [(1, 5)] * 3  # then a token per question a step
    # a row holds at most STEP_ROWS questions (its preallocated columns grow with them)
    monkeypatch.setattr(shared, "STEP_ROWS", 2)
    widths.clear()
    got = shared.shared_scores(
        model, adapter, [context] * 5, questions, [[1]] * 5, teacher=False, new_tokens=4
    )[1]
    assert got == want
    assert [w for w in widths if w[1] <= 2] == [(1, 2)] * 6 + [(1, 1)] * 3  # 2 + 2 + 1


def test_one_prefill_per_distinct_context() -> None:
    loaded = load_model("tiny-qwen2", init="random", seed=0)
    calls: list[int] = []
    real = loaded.adapter.prefill

    def counting(model, ids, **kwargs):  # noqa: ANN001, ANN003, ANN202
        calls.append(ids.shape[1])
        return real(model, ids, **kwargs)

    loaded.adapter.prefill = counting  # type: ignore[method-assign]
    try:
        shared_scores(
            loaded.model, loaded.adapter, [[1, 2, 3]] * 5 + [[4, 5]] * 2,
            [[7]] * 7, [[8, 9]] * 7, batch_size=3,
        )  # fmt: skip
    finally:
        del loaded.adapter.prefill
    assert calls == [3, 2]


def test_padding_gaps_are_exact_only_without_a_shorter_sliding_window() -> None:
    qwen = load_model("tiny-qwen2", init="random", seed=0)
    mistral = load_model("tiny-mistral", init="random", seed=0)  # window 16 in every layer
    assert qwen.adapter.gaps_are_exact(qwen.model, 200)
    assert not mistral.adapter.gaps_are_exact(mistral.model, 40)
    assert mistral.adapter.gaps_are_exact(mistral.model, 16)  # the window covers it all


@pytest.mark.parametrize("preset", ["tiny-qwen2", "tiny-gpt2", "tiny-gemma2"])
def test_both_passes_from_one_prefill_equal_two_separate_passes(preset: str) -> None:
    """The moved design with ``--passes both`` prefills each prompt once (its last token
    read from the cache); it gives what greedy decoding and teacher forcing give apart."""
    from types import SimpleNamespace

    from lostmid.behaviour.decoding.prompts import Encoded
    from lostmid.behaviour.retrieve.scoring import score_members

    loaded = load_model(preset, init="random", seed=0)
    g = torch.Generator().manual_seed(2)
    prompts = [torch.randint(0, 256, (n,), generator=g).tolist() for n in (30, 41, 35)]
    targets = [torch.randint(0, 256, (n,), generator=g).tolist() for n in (3, 1, 4)]
    config = SimpleNamespace(batch_size=2, padding="left", device_map=None)
    both = score_members(loaded, Encoded(prompts, targets), [0, 1, 2], ["generate", "teacher"],
                          5, config, False)  # fmt: skip
    apart = teacher_forced(loaded.model, prompts, targets, batch_size=2)
    greedy = greedy_decode(loaded.model, prompts, 5, batch_size=2)
    assert [r["ids"] for r in both] == greedy
    assert [r["logprob"] for r in both] == pytest.approx(apart.logprob.tolist(), rel=1e-5)
    assert [r["teacher_correct"] for r in both] == apart.argmax.tolist()


def _trie_nodes(sequences: list[list[int]]) -> int:
    """Brute force: the distinct non-empty prefixes of ``sequences``."""
    return len({tuple(s[:k]) for s in sequences for k in range(1, len(s) + 1)})


@pytest.mark.parametrize("preset", [*FAMILIES, "tiny-gemma3"])
def test_contexts_that_begin_alike_are_read_once_with_the_same_numbers(preset: str) -> None:
    """A needle moved through a haystack (two items, four depths, one context a prefix of
    another): each context continues from the previous one's cache cut back to what the
    two share. The scores equal separate full prompts' (1e-5), the greedy tokens are
    equal, and the tokens read are the prefix tree's nodes, counted by brute force."""
    loaded = load_model(preset, init="random", seed=0)
    g = torch.Generator().manual_seed(7)

    def ids(n: int) -> list[int]:
        return torch.randint(0, 256, (n,), generator=g).tolist()

    contexts = []
    for _item in range(2):
        hay, needle = ids(48), ids(5)
        contexts += [hay[:at] + needle + hay[at:] for at in (0, 16, 32, 48)]
    contexts.append(contexts[3][:30])  # a context that is a prefix of another
    questions = [ids(2) for _ in contexts]
    targets = [ids(2) for _ in contexts]
    reading: dict[str, int] = {}
    teacher, generated = shared_scores(
        loaded.model, loaded.adapter, contexts, questions, targets, new_tokens=3,
        reading=reading,
    )  # fmt: skip
    assert teacher is not None and generated is not None
    full = [c + q for c, q in zip(contexts, questions, strict=True)]
    ref = teacher_forced(loaded.model, full, targets, batch_size=1)
    np.testing.assert_allclose(teacher.logprob, ref.logprob, rtol=1e-5)
    assert teacher.argmax.tolist() == ref.argmax.tolist()
    assert generated == greedy_decode(loaded.model, full, 3, batch_size=1)
    assert reading["context_tokens"] == sum(len(c) for c in contexts)
    assert reading["read_tokens"] == _trie_nodes(contexts) < 0.75 * reading["context_tokens"]
    alone: dict[str, int] = {}
    again = shared_scores(
        loaded.model, loaded.adapter, contexts, questions, targets, new_tokens=3,
        share_prefixes=False, reading=alone,
    )  # fmt: skip
    assert alone["read_tokens"] == alone["context_tokens"]
    assert again[1] == generated
