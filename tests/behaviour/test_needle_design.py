"""The factorial needle design: every item under every cell, the needles apart by the
stated gap, the gold's rank as named; its refusals; and a run end to end."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from lostmid.behaviour.retrieve.config import RetrieveConfig
from lostmid.behaviour.retrieve.grid import grid_examples
from lostmid.behaviour.tasks.needle_design import design_examples, ranks_at
from lostmid.errors import UserError

Cli = Callable[..., tuple[int, str, str]]
NEEDLE_RE = re.compile(r"One of the special magic numbers for ([a-z]+-[a-z]+) is: (\d+)\.")


def words(text: str) -> int:
    return len(text.split())


def test_every_item_sits_under_every_cell_with_its_needles_apart() -> None:
    gap = 6
    config = RetrieveConfig(model="m", task="niah-multikey", depth=(0, 25, 50, 75, 100),
                            distractors=4, needle_order="factorial", needle_gap=gap,
                            examples=3, length=400)  # fmt: skip
    made = grid_examples(
        "niah-multikey", lengths=(None,), examples=3, seed=0, pairs=0, gold_index=None,
        depth=config.depth, positions=None, key_chars=0, style="liu", query_aware=False,
        haystack="repeat", vocab=0, offset=0, niah_length=400, design="moved",
        count_tokens=words, options=config,
    )  # fmt: skip
    cells = {(e.depth, e.needles.arrangement, e.needles.rank) for e in made}
    wanted = {(d, "factorial", r) for d in (0, 25, 50, 75, 100) for r in ranks_at(d)}
    assert cells == wanted | {(d, "ends", "middle") for d in (0, 25, 50, 75, 100)}
    assert len(wanted) == 11
    for cell in cells:  # every item once under every cell
        assert sorted(e.item for e in made if (e.depth, e.needles.arrangement,
                                                e.needles.rank) == cell) == [0, 1, 2]  # fmt: skip
    for item in range(3):
        mine = [e for e in made if e.item == item]
        # counterbalanced: the item's needles and filler are the same in every cell
        assert len({frozenset(NEEDLE_RE.findall(e.prompt)) for e in mine}) == 1
        assert len({NEEDLE_RE.sub("", e.prompt).split() == NEEDLE_RE.sub("", mine[0].prompt)
                    .split() for e in mine}) == 1  # fmt: skip
        assert len({e.value for e in mine}) == 1
    for e in made:
        found = NEEDLE_RE.findall(e.prompt)
        values = [v for _, v in found]
        assert tuple(values) == e.needles.values and len(values) == 5
        # the gold's rank is what the cell says, and its span holds the gold needle
        assert values.index(e.value) == e.needles.gold
        assert e.needles.gold == {"first": 0, "middle": 2, "last": 4}[e.needles.rank]
        a, b = e.spans[0]
        assert NEEDLE_RE.fullmatch(e.prompt[a:b]).group(2) == e.value  # type: ignore[union-attr]
        # never adjacent: at least `gap` filler tokens (words here) between two needles
        spans = [m.span() for m in NEEDLE_RE.finditer(e.prompt)]
        between = [words(e.prompt[s:t]) for (_, s), (t, _) in zip(spans, spans[1:], strict=False)]
        assert min(between) >= gap and tuple(between) == e.needles.gaps
    # distractors moved with the gold fixed: the gold's place is the same at every rank
    at_50 = [e for e in made if e.item == 0 and e.depth == 50 and e.needles.arrangement
             == "factorial"]  # fmt: skip
    assert len({e.needles.gold_depth for e in at_50}) == 1
    # gold moved with the distractors fixed at both ends: they sit where they sat
    ends = [e for e in made if e.item == 0 and e.needles.arrangement == "ends"]
    outer = {(NEEDLE_RE.findall(e.prompt)[0], NEEDLE_RE.findall(e.prompt)[-1]) for e in ends}
    assert len(outer) == 1
    placed = [e.needles.gold_depth for e in sorted(ends, key=lambda e: e.depth or 0)]
    assert placed == sorted(placed) and placed[0] < 20 and placed[-1] > 80


def test_a_gap_that_cannot_be_held_is_one_line() -> None:
    with pytest.raises(
        UserError,
        match=r"^--needle-gap 60: at depth 25% the first rank \(factorial\) cannot keep 5 needles",
    ):
        design_examples(seed=0, index=0, depth=25, length=400, distractors=4, gap=60,
                        count_tokens=words)  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"task": "niah-multivalue"}, "--needle-order factorial is for niah-multikey"),
        ({"distractors": 1}, "needs --distractors >= 2"),
        ({"needle_gap": 0}, "--needle-gap must be >= 1"),
        ({"lengths": (256, 512), "length": None}, "analyses one length"),
        ({"calibrate": True}, "does not take --calibrate"),
        ({"depth": (0, 25, 50)}, "one under 50 and one over 50"),
        ({"depth": (0, 100)}, "three depths or more"),
        ({"task": "kv", "length": None}, "--needle-order is for generated needle tasks"),
    ],
)
def test_the_design_refuses_what_it_cannot_run(changes: dict, message: str) -> None:
    fields = {"model": "m", "task": "niah-multikey", "needle_order": "factorial",
              "length": 512} | changes  # fmt: skip
    with pytest.raises(UserError, match=re.escape(message)):
        RetrieveConfig(**fields)


def test_the_gap_is_part_of_a_factorial_run_only() -> None:
    factorial = RetrieveConfig(model="m", task="niah-multikey", needle_order="factorial")
    assert factorial.record()["needle_gap"] == 10
    assert "needle_gap" not in RetrieveConfig(model="m", task="niah-multikey").record()


def test_bad_input_on_the_command_line_is_one_line_and_exit_2(tmp_path: Path, run_cli: Cli) -> None:
    code, stdout, stderr = run_cli(
        "retrieve", "--model", "tiny-gpt2", "--task", "niah-multikey", "--needle-order",
        "factorial", "--distractors", "1", "--out", tmp_path / "r",
    )  # fmt: skip
    assert code == 2
    lines = [line for line in (stdout + stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "--distractors >= 2" in lines[0]
    assert not (tmp_path / "r").exists()


def test_a_factorial_run_writes_its_model_cells_and_error_table(
    bpe_model_dir: Path, tmp_path: Path, run_cli: Cli
) -> None:
    out = tmp_path / "f"
    args = ("retrieve", "--model", bpe_model_dir, "--task", "niah-multikey", "--length", "700",
            "--depth", "0,50,100", "--examples", "3", "--distractors", "2",
            "--needle-order", "factorial", "--needle-gap", "8", "--out", out)  # fmt: skip
    code, stdout, stderr = run_cli(*args)
    assert code == 0, stderr
    result = json.loads((out / "retrieve.json").read_text())
    fac = result["factorial"]
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    # 3 items x (5 factorial cells + 3 ends cells), every one in predictions.jsonl
    assert len(rows) == result["examples"] == 24
    assert fac["design"]["cells"] == [[0, "first"], [50, "first"], [50, "middle"],
                                      [50, "last"], [100, "last"]]  # fmt: skip
    assert [0, "last"] in fac["design"]["left_out"] and fac["design"]["gap_tokens"] == 8
    assert fac["design"]["smallest_gap_placed"] >= 8 and fac["n"] == 15
    assert {"depth_effect", "rank_effect", "coefficients", "rules"} <= set(fac)
    assert fac["depth_effect"]["verdict"] in ("supported", "not supported", "inconclusive")
    for cell in fac["cells"]:  # each cell's count is its rows'
        mine = [r for r in rows if r["arrangement"] == "factorial" and r["depth"] ==
                cell["depth"] and r["rank"] == cell["rank"]]  # fmt: skip
        assert cell["n"] == len(mine) == 3
        assert cell["correct"] == sum(r["generate_correct"] for r in mine)
    # the error table counts every greedy answer once, by the needle it names
    assert sum(e["n"] for e in fac["errors"]) == 24
    for e in fac["errors"]:
        assert e["gold"] + e["earlier"] + e["later"] + e["none"] == e["n"]
        if e["rank"] == "first":
            assert e["earlier"] == 0
    for r in rows:
        assert r["named"] == "gold" if r["generate_correct"] else r["named"] != "gold"
    # the curve is the gold moved between distractors fixed at both ends
    assert [p["n"] for p in result["positions"]] == [3, 3, 3]
    ends = [r for r in rows if r["arrangement"] == "ends"]
    by_depth = [sum(r["generate_correct"] for r in ends if r["depth"] == d) for d in (0, 50, 100)]
    assert [p["correct"] for p in result["positions"]] == by_depth
    assert "depth makes a valley beyond rank" in " ".join(stdout.split())
    # the same options resume; the gap is part of the run
    code, _, stderr = run_cli(*args)
    assert code == 0, stderr
    code, _, stderr = run_cli(*args[:-3], "12", "--out", out)
    assert code == 2 and "--overwrite" in stderr
