"""RULER's needle variants (``niah-multikey``, ``-multivalue``, ``-multiquery``): counts of
needles, distractors distinct from the gold, answers found in the prompt, placement by
depth, pairing across depths, and the plug-in registry that serves them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from lostmid.behaviour.retrieve.config import RetrieveConfig
from lostmid.behaviour.retrieve.grid import grid_examples
from lostmid.behaviour.tasks.needles import NEEDLE, needles_example
from lostmid.behaviour.tasks.registry import DEPTH_TASKS, task_names
from lostmid.errors import UserError

UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
Cli = Callable[..., tuple[int, str, str]]
NEEDLE_RE = re.compile(r"One of the special magic (numbers|uuids) for ([\w-]+) is: ([\w-]+)\.")


def needles_in(prompt: str) -> list[tuple[str, str]]:
    return [(m.group(2), m.group(3)) for m in NEEDLE_RE.finditer(prompt)]


@pytest.mark.parametrize("distractors", [0, 1, 5, 12])
def test_multikey_has_one_gold_needle_and_distinct_distractors(distractors: int) -> None:
    ex = needles_example(seed=2, index=3, depth=50, length=1500, variant="niah-multikey",
                         distractors=distractors, count_tokens=len)  # fmt: skip
    found = needles_in(ex.prompt)
    assert len(found) == 1 + distractors
    gold = [(k, v) for k, v in found if k in ex.key]
    assert gold == [(ex.key, ex.value)] and ex.answers == (ex.value,)
    others = [(k, v) for k, v in found if (k, v) != gold[0]]
    keys, values = [k for k, _ in found], [v for _, v in found]
    assert len(set(keys)) == len(keys) and len(set(values)) == len(values)  # all distinct
    assert all(k != ex.key and v != ex.value for k, v in others)
    assert ex.prompt.count(ex.value) == 1 and len(ex.prompt) <= 1500
    # the span is the gold needle; the prompt asks for the gold key and starts the answer
    assert ex.prompt[slice(*ex.spans[0])] == NEEDLE.format(kind="numbers", key=ex.key,
                                                          value=ex.value)  # fmt: skip
    assert ex.prompt.endswith(
        f"The special magic number for {ex.key} mentioned in the provided text is"
    )
    assert ex.prompt.endswith(ex.answer_prefix) and ex.target == " " + ex.value


def test_depth_moves_only_the_gold_needle() -> None:
    made = {
        d: needles_example(
            seed=0,
            index=1,
            depth=d,
            length=1200,
            variant="niah-multikey",
            distractors=4,
            count_tokens=len,
        )  # fmt: skip
        for d in (0, 50, 100)
    }
    order = {d: [k for k, _ in needles_in(ex.prompt)] for d, ex in made.items()}
    key = made[0].key
    assert order[0][0] == key and order[100][-1] == key  # first at depth 0, last at 100
    # paired: the same needles and haystack at every depth, distractors in the same order
    assert len({tuple(sorted(needles_in(ex.prompt))) for ex in made.values()}) == 1
    assert len({tuple(k for k in order[d] if k != key) for d in made}) == 1
    strip = {d: NEEDLE_RE.sub("", ex.prompt) for d, ex in made.items()}
    assert len({re.sub(r"\s+", " ", s) for s in strip.values()}) == 1
    # the gold span sits at its depth: earlier for a smaller depth
    starts = [made[d].spans[0][0] for d in (0, 50, 100)]
    assert starts == sorted(starts) and starts[0] < starts[1] < starts[2]


@pytest.mark.parametrize("distractors", [1, 4, 5])
def test_a_fixed_order_moves_the_depth_and_keeps_the_gold_needles_place(
    distractors: int,
) -> None:
    # scattered (RULER's) ties order to depth: first needle at depth 0, last at 100;
    # fixed keeps the gold needle's rank among the needles while its depth moves
    made = {
        d: needles_example(seed=0, index=1, depth=d, length=1200, variant="niah-multikey",
                           distractors=distractors, count_tokens=len, order="fixed")
        for d in (0, 25, 50, 75, 100)
    }  # fmt: skip
    key = made[0].key
    order = {d: [k for k, _ in needles_in(ex.prompt)] for d, ex in made.items()}
    assert {o.index(key) for o in order.values()} == {distractors // 2}
    assert len({tuple(o) for o in order.values()}) == 1  # the same needles in one order
    # the needles stand together (nothing of the haystack between them)
    for ex in made.values():
        spans = [m.span() for m in NEEDLE_RE.finditer(ex.prompt)]
        gaps = {ex.prompt[a:b] for (_, a), (b, _) in zip(spans, spans[1:], strict=False)}
        assert gaps == {" "}
    # the same haystack at every depth, and the gold moves with the depth
    strip = {re.sub(r"\s+", " ", NEEDLE_RE.sub("", ex.prompt)) for ex in made.values()}
    assert len(strip) == 1
    starts = [made[d].spans[0][0] for d in sorted(made)]
    assert starts == sorted(starts) and starts[0] < starts[-1]
    # the asked needle's span holds the asked needle
    for ex in made.values():
        a, b = ex.spans[0]
        assert needles_in(ex.prompt[a:b]) == [(ex.key, ex.value)]


def test_a_needle_order_without_distractor_needles_is_refused() -> None:
    with pytest.raises(UserError, match="--needle-order is for generated needle tasks"):
        RetrieveConfig(model="tiny-gpt2", task="kv", needle_order="fixed")
    with pytest.raises(UserError, match="--needle-order .random. unknown; choose one of"):
        RetrieveConfig(model="tiny-gpt2", task="niah-multikey", needle_order="random")
    fixed = RetrieveConfig(model="tiny-gpt2", task="niah-multikey", needle_order="fixed")
    assert fixed.record()["needle_order"] == "fixed"
    assert "needle_order" not in RetrieveConfig(model="tiny-gpt2", task="niah-multikey").record()


def test_multivalue_and_multiquery_ask_every_value() -> None:
    mv = needles_example(seed=1, index=0, depth=25, length=1500, variant="niah-multivalue",
                         values_per_key=3, distractors=2, count_tokens=len)  # fmt: skip
    found = needles_in(mv.prompt)
    assert len(found) == 5 and mv.match == "all" and len(mv.answers) == 3
    assert [k for k, v in found if v in mv.answers] == [mv.key] * 3  # one key, three values
    assert all(k != mv.key for k, v in found if v not in mv.answers)
    assert mv.prompt.endswith(f"numbers for {mv.key} mentioned in the provided text are")
    assert mv.target == " " + ", ".join(mv.answers) and len(mv.spans) == 3
    mq = needles_example(seed=1, index=0, depth=75, length=1500, variant="niah-multiquery",
                         queries=3, needle_type="uuids", count_tokens=len)  # fmt: skip
    found = needles_in(mq.prompt)
    assert len(found) == 3 and all(UUID4.fullmatch(v) for _, v in found)
    keys = [k for k, _ in found]
    assert mq.key == f"{keys[0]}, {keys[1]}, and {keys[2]}" and len(set(keys)) == 3
    assert set(mq.answers) == {v for _, v in found}
    assert f"What are all the special magic uuids for {mq.key} mentioned" in mq.prompt


def test_too_short_a_length_is_one_line() -> None:
    with pytest.raises(UserError, match="--length 300 is too short for niah-multikey with 1 "
                       "asked and 9 distractor needles"):  # fmt: skip
        needles_example(seed=0, index=0, depth=0, length=300, variant="niah-multikey",
                        distractors=9, count_tokens=len)  # fmt: skip


def test_the_registry_serves_needle_tasks_through_the_grid() -> None:
    assert set(DEPTH_TASKS) <= set(task_names()) and "niah-multikey" in task_names()
    options = SimpleNamespace(seed=5, haystack="varied", distractors=2, values_per_key=4,
                              queries=4, needle_type="numbers")  # fmt: skip
    exs = grid_examples(
        "niah-multikey", lengths=(900,), examples=3, seed=5, pairs=0, gold_index=None,
        depth=(0, 100), positions=None, key_chars=36, style="liu", query_aware=False,
        haystack="varied", vocab=64, offset=128, niah_length=0, design="moved",
        count_tokens=len, options=options,
    )  # fmt: skip
    assert [(e.depth, e.item, e.length) for e in exs] == [
        (d, i, 900) for d in (0, 100) for i in range(3)
    ]
    assert all(len(needles_in(e.prompt)) == 3 for e in exs)
    direct = needles_example(seed=5, index=2, depth=100, length=900, variant="niah-multikey",
                             distractors=2, count_tokens=len, haystack="varied")  # fmt: skip
    assert exs[-1].prompt == direct.prompt


def test_a_multikey_run_exports_ruler_records_that_read_back(
    bpe_model_dir: Path, tmp_path: Path, run_cli: Cli
) -> None:
    export, lm = tmp_path / "mk.jsonl", tmp_path / "lm"
    args = (
        "retrieve",
        "--model",
        bpe_model_dir,
        "--task",
        "niah-multikey",
        "--length",
        "600",
        "--distractors",
        "2",
        "--depth",
        "0,100",
        "--examples",
        "2",
        "--passes",
        "teacher",
    )
    code, _, err = run_cli(*args, "--export", export, "--export-lm-eval", lm, "--out",
                           tmp_path / "a")  # fmt: skip
    assert code == 0, err
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    assert [r["depth"] for r in rows] == [0, 0, 100, 100]
    assert all(r["task"] == "niah-multikey" and len(r["outputs"]) == 1 for r in rows)
    assert all(r["input"].count("One of the special magic numbers") == 3 for r in rows)
    assert any(p.suffix == ".yaml" for p in lm.rglob("*"))
    code, _, err = run_cli("retrieve", "--model", bpe_model_dir, "--data", export,
                           "--passes", "teacher", "--out", tmp_path / "b")  # fmt: skip
    assert code == 0, err
    a = json.loads((tmp_path / "a" / "retrieve.json").read_text())
    b = json.loads((tmp_path / "b" / "retrieve.json").read_text())
    assert b["data"]["format"] == "ruler"
    assert [c["mean_logprob"] for c in b["cells"]] == pytest.approx(
        [c["mean_logprob"] for c in a["cells"]], rel=1e-5
    )


def test_query_aware_needles_ask_before_and_after_and_keep_the_haystack_as_context() -> None:
    """--query-aware on a needle variant: the question also heads the haystack, the
    needles and the answer do not move within the haystack, and the context span is the
    whole haystack (what calibrate's prior replaces), needles inside it."""
    plain = needles_example(
        seed=3, index=1, depth=50, length=800, variant="niah-multikey", distractors=2
    )
    aware = needles_example(
        seed=3, index=1, depth=50, length=800, variant="niah-multikey", distractors=2,
        query_aware=True,
    )  # fmt: skip
    question = f"What are all the special magic numbers for {aware.key} mentioned"
    assert plain.prompt.count(question) == 1 and aware.prompt.count(question) == 2
    a0, a1 = aware.context_span
    p0, p1 = plain.context_span
    assert aware.prompt.index(question) < a0 < aware.spans[0][0] < aware.spans[-1][1] <= a1
    assert p0 < plain.spans[0][0] and plain.spans[-1][1] <= p1
    assert plain.prompt[p1:] == aware.prompt[a1:]  # the same question and answer prefix
    assert question not in aware.prompt[a0:a1]
    assert aware.value == plain.value and aware.target == plain.target
    with pytest.raises(UserError, match="--query-aware does not apply to --task niah"):
        RetrieveConfig(model="tiny-qwen2", task="niah", query_aware=True)
    assert RetrieveConfig(model="tiny-qwen2", task="niah-multikey", query_aware=True).query_aware
