"""Primacy, recency and gap paired by item (lostmid.behaviour.score): the paired interval
when the two positions hold the same items once each, the independent one otherwise,
which one is recorded, and the callers that pass item ids (retrieve, score)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lostmid.behaviour.formats.samples import read_lm_eval_samples, score_rows
from lostmid.behaviour.score import (
    Difference,
    paired_outcomes,
    score_positions,
    summarise_positions,
)
from lostmid.stats import difference_interval, paired_difference_interval


def _sweep(items: int = 30) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``items`` items read at depths 0, 50, 100: most items easy or hard at every
    depth (correlated outcomes), the middle worse on a third of them."""
    rng = np.random.default_rng(1)
    easy = rng.random(items) < 0.6
    positions, correct, ids = [], [], []
    for depth in (0, 50, 100):
        right = easy.copy()
        if depth == 50:
            right[: items // 3] = False
        positions += [depth] * items
        correct += right.tolist()
        ids += list(range(items))
    order = rng.permutation(len(ids))  # the examples' order does not matter
    return np.array(positions)[order], np.array(correct)[order], np.array(ids)[order]


def test_item_ids_that_pair_up_give_the_paired_interval() -> None:
    positions, correct, items = _sweep()
    paired = summarise_positions(score_positions(positions, correct, items=items), "generate")
    plain = summarise_positions(score_positions(positions, correct), "generate")
    at = {d: dict(zip(items[positions == d], correct[positions == d], strict=True))
          for d in (0, 50, 100)}  # fmt: skip
    a = np.array([at[0][i] for i in range(30)])
    m = np.array([at[50][i] for i in range(30)])
    table = (int((a & m).sum()), int((a & ~m).sum()), int((~a & m).sum()), int((~a & ~m).sum()))
    assert paired.primacy.interval == "paired" and plain.primacy.interval == "independent"
    assert (paired.primacy.estimate, paired.primacy.ci_low, paired.primacy.ci_high) == (
        pytest.approx(paired_difference_interval(*table))
    )
    for name in ("gap", "primacy", "recency"):
        p, q = getattr(paired, name), getattr(plain, name)
        assert p.estimate == q.estimate and (p.a, p.b) == (q.a, q.b)  # the same contrast
        assert q.ci_low < p.ci_low <= p.estimate <= p.ci_high < q.ci_high  # narrower
    assert paired.primacy.record()["interval"] == "paired"
    # the rest of the summary is untouched by the pairing
    assert (paired.mean_accuracy, paired.mean_ci_low, paired.n) == (
        plain.mean_accuracy,
        plain.mean_ci_low,
        plain.n,
    )


def test_yes_no_and_undecided_through_the_summary() -> None:
    # yes: 20 items, right at the ends, 12 of them wrong in the middle
    ends = [True] * 20
    middle = [False] * 12 + [True] * 8
    positions = np.repeat([0, 1, 2], 20)
    items = np.tile(np.arange(20), 3)
    s = summarise_positions(
        score_positions(positions, np.array(ends + middle + ends), items=items), "x"
    )
    assert s.primacy.interval == "paired" and s.primacy.ci_low > 0 and s.recency.ci_low > 0
    # no: the middle is the best depth on the discordant items (opposite sign)
    s = summarise_positions(
        score_positions(positions, np.array(middle + ends + middle), items=items), "x"
    )
    assert s.primacy.ci_high < 0 and s.recency.ci_high < 0
    # undecided: 4 items, one wrong in the middle
    few = np.repeat([0, 1, 2], 4)
    s = summarise_positions(
        score_positions(few, np.array([1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1], dtype=bool),
                        items=np.tile(np.arange(4), 3)),
        "x",
    )  # fmt: skip
    assert s.primacy.interval == "paired" and s.primacy.ci_low < 0 < s.primacy.ci_high


@pytest.mark.parametrize(
    "items",
    [
        None,  # no ids
        [0, 1, 2, 0, 1, 3],  # item 2 only at position 0, item 3 only at 1
        [0, 0, 1, 0, 1, 1],  # item 0 twice at position 0
    ],
)
def test_ids_that_do_not_pair_up_fall_back_to_independent(items: list[int] | None) -> None:
    positions = np.array([0, 0, 0, 1, 1, 1])
    correct = np.array([1, 1, 0, 0, 1, 0], dtype=bool)
    scores = score_positions(positions, correct, items=items)
    assert paired_outcomes(scores[0], scores[1]) is None
    s = summarise_positions(scores, "x")  # two positions: the middle is the first
    assert s.recency.interval == "independent" and (s.recency.a, s.recency.b) == (1, 0)
    assert (s.recency.estimate, s.recency.ci_low, s.recency.ci_high) == difference_interval(
        1, 3, 2, 3
    )


def test_items_must_match_the_examples_and_stay_out_of_the_records() -> None:
    with pytest.raises(ValueError, match="one id per example"):
        score_positions(np.array([0, 1]), np.array([True, False]), items=[0])
    s = score_positions(np.array([0, 1]), np.array([True, False]), items=np.array([5, 5]))
    assert s[0].outcomes == ((5, True),) and "outcomes" not in s[0].record()
    assert s[0] == score_positions(np.array([0, 1]), np.array([True, False]))[0]
    # (length, item) pairs as ids
    s = score_positions(np.array([0, 1]), np.array([True, False]), items=[(512, 0), (512, 0)])
    assert paired_outcomes(s[0], s[1]) == (0, 1, 0, 0)


def test_old_records_read_as_independent() -> None:
    old = {"estimate": 0.2, "ci_low": 0.05, "ci_high": 0.33, "between": [0, 2]}
    assert Difference.from_record(old) == Difference(0.2, 0.05, 0.33, 0, 2, "independent")
    new = Difference(0.1, -0.02, 0.2, 0, 50, "paired")
    assert Difference.from_record(new.record()) == new


def test_retrieve_pairs_by_length_and_item() -> None:
    """retrieve's score sets: within a length and pooled over lengths by depth row, the
    contrasts pair by (length, item) (the same item number at two lengths is two
    haystacks)."""
    from lostmid.behaviour.retrieve.result import score_set

    rows = []
    for length in (512, 1024):
        for depth in (0, 50, 100):
            for item in range(10):
                right = not (depth == 50 and item < 4) and item < 8
                rows.append({"length": length, "item": item, "row": depth, "position": depth,
                             "generate_correct": right})  # fmt: skip
    pooled = score_set("generate", rows, "row", "depth", 0.05)
    one = score_set("generate", [r for r in rows if r["length"] == 512], "position", "depth", 0.05)
    for s in (pooled, one):
        assert s.summary.primacy.interval == "paired" and s.summary.recency.interval == "paired"
    assert pooled.summary.primacy.estimate == pytest.approx(0.4)
    # a row missing at one length: no pairing for that contrast
    partial = [r for r in rows if not (r["length"] == 1024 and r["row"] == 0)]
    s = score_set("generate", partial, "row", "depth", 0.05)
    assert s.summary.primacy.interval == "independent" and s.summary.recency.interval == "paired"


def _log(path: Path, with_items: bool) -> Path:
    lines = []
    for depth in (0, 50, 100):
        for item in range(20):
            doc = {"depth": depth, "gold_index": None, "length_cell": 512}
            if with_items:
                doc["item"] = item
            right = item < 16 and not (depth == 50 and item < 10)
            lines.append(json.dumps({"doc": doc, "acc": 1.0 if right else 0.0}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(("with_items", "interval"), [(True, "paired"), (False, "independent")])
def test_score_pairs_samples_that_carry_item_ids(
    tmp_path: Path, with_items: bool, interval: str
) -> None:
    scored = score_rows(read_lm_eval_samples(_log(tmp_path / "s.jsonl", with_items)), 0.05)
    for name in ("gap", "primacy", "recency"):
        assert scored["summary"][name]["interval"] == interval
    assert scored["summary"]["primacy"]["estimate"] == pytest.approx(0.5)


def _three_depths(middle_wrong: int, items: int = 20, easy: int = 12) -> tuple[np.ndarray, ...]:
    """``items`` items at depths 0, 50, 100: the first ``easy`` right at both ends, the
    middle wrong on ``middle_wrong`` of those (correlated outcomes by item)."""
    positions, correct, ids = [], [], []
    for depth in (0, 50, 100):
        right = np.arange(items) < easy
        if depth == 50:
            right[:middle_wrong] = False
        positions += [depth] * items
        correct += right.tolist()
        ids += list(range(items))
    return np.array(positions), np.array(correct), np.array(ids)


@pytest.mark.parametrize(
    ("middle_wrong", "items", "independent", "paired"),
    [
        (6, 20, "undetermined", "U"),  # yes: only the pairing resolves the valley
        (0, 100, "undetermined", "flat"),  # no: the ends equal the middle on every item
        (1, 20, "undetermined", "undetermined"),  # one item of twenty: undecided
    ],
)
def test_the_shape_class_reads_the_paired_ends(
    middle_wrong: int, items: int, independent: str, paired: str
) -> None:
    from lostmid.behaviour.score import shape_of

    positions, correct, ids = _three_depths(middle_wrong, items, easy=items * 3 // 5)
    alone = score_positions(positions, correct, None, "depth")
    shape = shape_of(alone, summarise_positions(alone, "generate"), 0.05)
    assert (shape.shape, shape.record()["ends"]) == (independent, "independent")
    scores = score_positions(positions, correct, None, "depth", ids)
    shape = shape_of(scores, summarise_positions(scores, "generate"), 0.05)
    assert (shape.shape, shape.record()["ends"]) == (paired, "paired")
