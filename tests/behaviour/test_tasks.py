"""Task generators: the exact formats, pairing across positions, determinism, bad input."""

from __future__ import annotations

import json
import re
import uuid

import mpmath
import numpy as np
import pytest

from lostmid.behaviour.formats.files import write_records
from lostmid.behaviour.tasks import make_examples
from lostmid.behaviour.tasks.example import default_depths, default_gold_indices
from lostmid.behaviour.tasks.gold import gold_distribution
from lostmid.behaviour.tasks.kv import format_kv_records, kv_example
from lostmid.behaviour.tasks.mqar import mqar_example
from lostmid.behaviour.tasks.niah import REPEAT_SENTENCES, byte_count, insertion_point, niah_example
from lostmid.errors import UserError

UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_liu_prompt_is_exact_for_a_hand_made_object() -> None:
    text, spans = format_kv_records([("k1", "v1"), ("k2", "v2"), ("k3", "v3")])
    assert text == '{"k1": "v1",\n "k2": "v2",\n "k3": "v3"}'
    assert [text[a:b] for a, b in spans] == ['"k1": "v1"', '"k2": "v2"', '"k3": "v3"']


def test_kv_prompt_follows_liu_template_and_parses_as_json() -> None:
    ex = kv_example(seed=3, index=5, pairs=6, gold_index=4)
    head = (
        "Extract the value corresponding to the specified key in the JSON object below."
        "\n\nJSON data:\n"
    )
    tail = f'\n\nKey: "{ex.key}"\nCorresponding value:'
    assert ex.prompt.startswith(head) and ex.prompt.endswith(tail)
    body = ex.prompt[len(head) : -len(tail)]
    assert json.loads(body) == dict(ex.records)
    assert list(json.loads(body)) == [k for k, _ in ex.records]  # order kept
    lines = body.split("\n")
    assert lines[0].startswith('{"') and all(line.startswith(' "') for line in lines[1:])
    assert all(line.endswith(",") for line in lines[:-1]) and lines[-1].endswith('"}')
    assert ex.records[4] == (ex.key, ex.value) and ex.target == " " + ex.value
    for (k, v), (a, b) in zip(ex.records, ex.spans, strict=True):
        assert ex.prompt[a:b] == f'"{k}": "{v}"'


def test_query_aware_puts_the_key_before_the_data() -> None:
    ex = kv_example(seed=0, index=0, pairs=3, gold_index=1, query_aware=True)
    assert f'below.\n\nKey: "{ex.key}"\n\nJSON data:\n{{' in ex.prompt
    assert ex.prompt.count(f'Key: "{ex.key}"') == 2
    assert all(ex.prompt[a:b].startswith('"') for a, b in ex.spans)


def test_keys_and_values_are_lowercase_uuid4_with_distinct_keys() -> None:
    ex = kv_example(seed=11, index=2, pairs=75, gold_index=37)
    for key, value in ex.records:
        assert UUID4.fullmatch(key) and UUID4.fullmatch(value)
        assert uuid.UUID(key).version == 4
    assert len({k for k, _ in ex.records}) == 75


def test_examples_are_paired_across_gold_positions_and_deterministic() -> None:
    a = kv_example(seed=1, index=7, pairs=10, gold_index=0, key_chars=3)
    b = kv_example(seed=1, index=7, pairs=10, gold_index=9, key_chars=3)
    assert a.key == b.key and a.value == b.value
    assert a.records[0] == b.records[9] == (a.key, a.value)
    assert a.records[1:] == b.records[:9]  # the gold pair moved, the rest in order
    assert kv_example(seed=1, index=7, pairs=10, gold_index=0, key_chars=3) == a
    assert kv_example(seed=2, index=7, pairs=10, gold_index=0, key_chars=3) != a
    assert kv_example(seed=1, index=8, pairs=10, gold_index=0, key_chars=3) != a


def test_compact_style_layout() -> None:
    ex = kv_example(seed=0, index=1, pairs=4, gold_index=2, key_chars=2, style="compact")
    body = ",".join(f"{k}{v}" for k, v in ex.records)
    assert ex.prompt == "{" + body + "}" + ex.key and ex.target == ex.value
    assert [ex.prompt[a:b] for a, b in ex.spans] == [f"{k}{v}" for k, v in ex.records]


def test_default_gold_indices_match_liu_at_140_keys() -> None:
    # Liu et al. report 140 keys with the gold at 0, 34, 69, 104, 139
    assert default_gold_indices(140) == (0, 34, 69, 104, 139)
    assert default_gold_indices(75, count=2) == (0, 74)
    assert default_gold_indices(3, count=10) == (0, 1, 2)
    assert default_depths() == (0, 25, 50, 75, 100)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pairs": 1, "gold_index": 0}, "--pairs must be >= 2"),
        ({"pairs": 5, "gold_index": 5}, "--gold-index must be in 0..4 (0-indexed"),
        ({"pairs": 20, "gold_index": 0, "key_chars": 1}, "only 16 distinct hex keys"),
        ({"pairs": 5, "gold_index": 0, "key_chars": 40}, "--key-chars must be <= 36"),
        ({"pairs": 5, "gold_index": 0, "style": "yaml"}, "--style 'yaml' unknown"),
    ],
)
def test_kv_bad_input_is_one_line(kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        kv_example(seed=0, index=0, **kwargs)


def test_niah_needle_depth_is_snapped_to_the_previous_sentence_end() -> None:
    for haystack in ("repeat", "varied"):
        for depth in (0, 10, 33, 50, 90, 100):
            ex = niah_example(seed=4, index=1, depth=depth, length=900, haystack=haystack)
            start, end = ex.spans[0]
            needle = ex.prompt[start:end]
            assert needle == f"One of the special magic numbers for {ex.key} is: {ex.value}."
            assert re.fullmatch(r"\d{7}", ex.value) and ex.prompt.count(needle) == 1
            context = ex.prompt.split("\n")[1]
            before = context[: context.index(needle)]
            after = context[context.index(needle) + len(needle) :]
            sentences = [s + "." for s in (before + after).strip().split(".") if s.strip()]
            sentences = [s.strip() for s in sentences]
            # brute force: the needle follows the last sentence ending at or before depth %
            ends = np.cumsum([byte_count(s + " ") for s in sentences])
            total = ends[-1]
            k = len(sentences) if depth == 100 else int(np.sum(ends <= depth / 100 * total))
            assert before.strip() == " ".join(sentences[:k])


def test_niah_fills_the_length_and_no_more() -> None:
    for length in (500, 1000, 2000):
        ex = niah_example(seed=0, index=0, depth=100, length=length)
        assert byte_count(ex.prompt) <= length
        # one more filler sentence (the next of the cycle) would not fit
        n = sum(ex.prompt.count(s) for s in REPEAT_SENTENCES)
        assert byte_count(ex.prompt) + byte_count(REPEAT_SENTENCES[n % 5] + " ") > length
    words = niah_example(
        seed=0, index=0, depth=50, length=120, count_tokens=lambda s: len(s.split())
    )
    assert len(words.prompt.split()) <= 120
    with pytest.raises(UserError, match="too short for the niah prompt"):
        niah_example(seed=0, index=0, depth=50, length=100)


def test_niah_haystack_is_the_same_at_every_depth() -> None:
    a = niah_example(seed=2, index=3, depth=0, length=800, haystack="varied")
    b = niah_example(seed=2, index=3, depth=100, length=800, haystack="varied")
    needle = a.prompt[slice(*a.spans[0])]
    assert a.key == b.key and a.value == b.value
    assert sorted(a.prompt.replace(needle, "").split()) == sorted(
        b.prompt.replace(needle, "").split()
    )
    assert a.spans[0][0] < b.spans[0][0]


def test_insertion_point_against_hand_cases() -> None:
    assert insertion_point([2, 3, 5], 20) == 1  # offsets 0, 2, 5, 10: 2 <= 2.0
    assert insertion_point([2, 3, 5], 19) == 0
    assert insertion_point([2, 3, 5], 99) == 2 and insertion_point([2, 3, 5], 100) == 3


def test_mqar_keys_and_values_from_disjoint_halves() -> None:
    for gold in range(8):
        ex = mqar_example(seed=5, index=2, pairs=8, gold_index=gold, vocab=32, offset=100)
        ids = ex.prompt_ids
        keys, values = ids[0:16:2], ids[1:16:2]
        assert all(100 <= k < 116 for k in keys) and all(116 <= v < 132 for v in values)
        assert len(set(keys)) == 8
        assert ids[16] == keys[gold] and ex.target_ids == (values[gold],)
        assert ex.gold_index == gold and ex.spans[gold] == (2 * gold, 2 * gold + 2)
    with pytest.raises(UserError, match="at least 2 \\* pairs = 20"):
        mqar_example(seed=0, index=0, pairs=10, gold_index=0, vocab=16)


def test_gold_distribution_power_law() -> None:
    p = gold_distribution("power:0.5", 6)
    gaps = 6 - np.arange(6)
    np.testing.assert_allclose(p, gaps**-0.5 / np.sum(gaps**-0.5))
    assert np.all(np.diff(p) > 0)  # A < 1 favours recent pairs
    assert np.all(np.diff(gold_distribution("power:2", 6)) < 0)
    with pytest.raises(UserError, match="unknown; choose uniform"):
        gold_distribution("zipf", 3)


@pytest.mark.parametrize(("a", "pairs"), [(0.3, 8), (0.5, 5), (2.0, 6)])
def test_gold_distribution_beta_law_against_quadrature(a: float, pairs: int) -> None:
    """beta:A is the Beta(A, A) mass of each of N equal bins: integrate the density
    x^(A-1) (1-x)^(A-1) / B(A, A) with mpmath (tanh-sinh copes with the end singularities)."""
    mpmath.mp.dps = 30
    norm = mpmath.beta(a, a)
    edges = [mpmath.mpf(i) / pairs for i in range(pairs + 1)]
    reference = [
        float(mpmath.quad(lambda x: x ** (a - 1) * (1 - x) ** (a - 1), [lo, hi]) / norm)
        for lo, hi in zip(edges[:-1], edges[1:], strict=True)
    ]
    np.testing.assert_allclose(gold_distribution(f"beta:{a}", pairs), reference, rtol=1e-9)


def test_gold_distribution_beta_shapes_and_mixtures() -> None:
    u = gold_distribution("beta:0.3", 8)
    np.testing.assert_allclose(u, u[::-1])  # symmetric
    assert np.all(np.diff(u[:4]) < 0) and u[0] > 5 * u[3]  # U: the ends asked most
    np.testing.assert_allclose(gold_distribution("beta:1", 7), np.full(7, 1 / 7))
    assert np.all(np.diff(gold_distribution("beta:3", 8)[:4]) > 0)  # A > 1: a hump
    mixed = gold_distribution("power:0.5+power:2", 6)
    expected = (gold_distribution("power:0.5", 6) + gold_distribution("power:2", 6)) / 2
    np.testing.assert_allclose(mixed, expected)
    assert 0 < int(np.argmin(mixed)) < 5  # primacy + recency: the least-asked pair inside
    with pytest.raises(UserError, match="needs A > 0"):
        gold_distribution("beta:0", 4)
    with pytest.raises(UserError, match="give beta:A with a number"):
        gold_distribution("beta:x", 4)


def test_make_examples_and_export(tmp_path) -> None:
    exs = make_examples("kv", positions=(0, 2, 4), examples=3, pairs=5, key_chars=4, seed=1)
    assert [e.gold_index for e in exs] == [0] * 3 + [2] * 3 + [4] * 3
    path = write_records(exs, tmp_path / "x.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 9 and rows[4]["gold_index"] == 2
    # Liu et al.'s record (their scripts read ordered_kv_records, key, value) + lostmid's keys
    assert (
        rows[4]["ordered_kv_records"][2]
        == list(exs[4].records[2])
        == [
            rows[4]["key"],
            rows[4]["value"],
        ]
    )
    assert rows[4]["prompt"] == exs[4].prompt and rows[4]["item"] == 1 and rows[4]["pairs"] == 5
    assert {"prompt", "key", "value", "gold_index", "ordered_kv_records"} <= set(rows[0])
    niah = make_examples("niah", positions=(0, 100), examples=1, length=600)
    assert [json.loads(json.dumps(e.record()))["depth"] for e in niah] == [0, 100]
    assert "gold_index" not in niah[0].record()
    mq = make_examples("mqar", positions=(1,), examples=2, pairs=4, vocab=16)
    assert mq[0].record()["prompt_ids"][-1] == mq[0].record()["prompt_ids"][2]
