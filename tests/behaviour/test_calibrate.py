"""``retrieve --calibrate``: the bisection on scorers whose difficulty curve is known, the
outcome when no knob value lands in the band, and pilot examples kept out of the
measured ones."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from lostmid.behaviour.retrieve.calibrate import PILOT_FIRST_ITEM, calibrate_knob
from lostmid.behaviour.retrieve.config import RetrieveConfig
from lostmid.behaviour.retrieve.grid import grid_examples
from lostmid.errors import UserError

Cli = Callable[..., tuple[int, str, str]]
LADDER = (0, 1, 2, 4, 8, 16, 32, 64)


def scorer(accuracy: Callable[[int], float], n: int = 100) -> Callable[[int], tuple[int, int]]:
    """A stub pilot: ``round(n * accuracy(knob))`` of ``n`` correct; it counts its calls."""
    calls: list[int] = []

    def at(value: int) -> tuple[int, int]:
        calls.append(value)
        return round(n * accuracy(value)), n

    at.calls = calls  # type: ignore[attr-defined]
    return at


def test_bisection_finds_the_knob_of_a_known_curve() -> None:
    # accuracy 1 / (1 + k / 32): 0.89 at k = 4 (too easy), 0.67 at k = 16 (in the band)
    at = scorer(lambda k: 1 / (1 + k / 32))
    c = calibrate_knob("distractors", LADDER, at, band=(0.3, 0.8))
    assert c.chosen == 16 and c.in_band
    assert at.calls == [4, 16]  # type: ignore[attr-defined]
    assert [t.value for t in c.tried] == [4, 16]
    record = c.record()
    assert [t["in_band"] for t in record["tried"]] == [False, True]
    assert record["tried"][1]["ci_low"] < 0.67 < record["tried"][1]["ci_high"]
    assert c.outcome.startswith("calibrated distractors = 16: middle accuracy 0.67 [")
    # a harder curve: 0.5 ** (k / 4) is in the band at k = 2 (0.71) and 4 (0.5)
    c = calibrate_knob("distractors", LADDER, scorer(lambda k: 0.5 ** (k / 4)), band=(0.3, 0.8))
    assert c.chosen == 4 and c.in_band


def test_no_value_in_the_band_says_so_and_takes_the_closest() -> None:
    # a cliff: 0.95 below 8 distractors, 0.10 from 8 on; nothing lands in [0.3, 0.8]
    at = scorer(lambda k: 0.95 if k < 8 else 0.10)
    c = calibrate_knob("distractors", LADDER, at, band=(0.3, 0.8))
    assert not c.in_band and [t.value for t in c.tried] == [4, 16, 8]
    assert c.chosen == 4  # 0.95 is 0.15 from the band, 0.10 is 0.20 from it
    assert c.outcome == (
        "calibration: no distractors tried (4, 16, 8) put middle accuracy in [0.3, 0.8]; "
        "closest distractors = 4: middle accuracy 0.95 [0.89, 0.98] (95/100), measured there"
    )


def test_values_that_do_not_fit_count_as_too_hard() -> None:
    def at(value: int) -> tuple[int, int] | None:
        return None if value >= 16 else (round(100 * (1 - value / 10)), 100)

    c = calibrate_knob("distractors", LADDER, at, band=(0.3, 0.8))
    assert c.chosen == 4 and c.in_band  # 0.6
    assert not c.tried[0].fits or c.tried[0].value == 4
    with pytest.raises(UserError, match="no distractors tried fits the model's context"):
        calibrate_knob("distractors", (16, 32), at)


@pytest.mark.parametrize("seed", range(20))
def test_a_monotone_curve_is_always_placed_when_it_can_be(seed: int) -> None:
    """For accuracy that falls with the knob, bisection lands in the band whenever some
    ladder value does, in at most ceil(log2(K + 1)) pilots."""
    rng = np.random.default_rng(seed)
    curve = dict(zip(LADDER, np.sort(rng.uniform(0, 1, len(LADDER)))[::-1], strict=True))
    at = scorer(lambda k: float(curve[k]))
    c = calibrate_knob("distractors", LADDER, at, band=(0.3, 0.8))
    reachable = any(0.3 <= round(100 * a) / 100 <= 0.8 for a in curve.values())
    assert c.in_band == reachable
    assert len(at.calls) <= math.ceil(math.log2(len(LADDER) + 1))  # type: ignore[attr-defined]


def test_pilot_items_are_disjoint_from_the_measured_ones() -> None:
    config = RetrieveConfig(model="m", task="niah-multikey", distractors=3)
    common = dict(lengths=(900,), seed=0, pairs=0, gold_index=None, depth=(0, 50, 100),
                  positions=None, key_chars=36, style="liu", query_aware=False,
                  haystack="repeat", vocab=64, offset=128, niah_length=0, design="moved",
                  count_tokens=len, options=config)  # fmt: skip
    measured = grid_examples("niah-multikey", examples=30, **common)
    pilot = grid_examples("niah-multikey", examples=30, first_item=PILOT_FIRST_ITEM, **common)
    assert {e.item for e in measured} == set(range(30))
    assert {e.item for e in pilot} == set(range(PILOT_FIRST_ITEM, PILOT_FIRST_ITEM + 30))
    # no pilot answer, needle or prompt is measured (keys are adjective-noun pairs and
    # may repeat; their 7-digit values do not)
    assert not {e.value for e in pilot} & {e.value for e in measured}
    assert not {e.prompt for e in pilot} & {e.prompt for e in measured}
    # kv the same way: no record (key, value) of a pilot item is in a measured one
    kv = {**common, "depth": None, "lengths": (None,), "pairs": 6, "key_chars": 8}
    kv_measured = grid_examples("kv", examples=30, **kv)
    kv_pilot = grid_examples("kv", examples=30, first_item=PILOT_FIRST_ITEM, **kv)
    measured_records = {r for e in kv_measured for r in e.records}
    assert len(measured_records) == 30 * 6
    assert not {r for e in kv_pilot for r in e.records} & measured_records


def test_calibrate_runs_a_pilot_and_measures_at_the_chosen_knob(
    bpe_model_dir: Path, tmp_path: Path, run_cli: Cli
) -> None:
    out = tmp_path / "cal"
    code, stdout, stderr = run_cli(
        "retrieve", "--model", bpe_model_dir, "--task", "niah-multikey", "--length", "400",
        "--depth", "0,50,100", "--examples", "2", "--calibrate", "--knob-values", "0,1,2",
        "--pilot-examples", "3", "--passes", "generate", "--out", out,
    )  # fmt: skip
    assert code == 0, stderr
    result = json.loads((out / "retrieve.json").read_text())
    cal = result["calibration"]
    # a random model answers nothing: every value is below the band, bisection goes
    # easier (1, then 0), and the closest (the easiest on a tie) is measured
    assert cal["knob"] == "distractors" and [t["value"] for t in cal["tried"]] == [1, 0]
    assert all(t["n"] == 3 and t["correct"] == 0 for t in cal["tried"])
    assert cal["chosen"] == 0 and not cal["in_band"] and cal["position"] == 50
    assert "closest distractors = 0" in cal["outcome"]
    assert cal["outcome"] in " ".join(stdout.split())  # one line (rich wraps it)
    assert result["config"]["distractors"] is None  # as asked; measured as chosen:
    assert result["measured_config"]["distractors"] == 0
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert {r["item"] for r in rows} == {0, 1} and len(rows) == 6
    assert cal["pilot_items"] == [PILOT_FIRST_ITEM, PILOT_FIRST_ITEM + 2]
    assert sorted(p.stem for p in (out / "stages").iterdir() if "pilot" in p.name) == [
        "pilot-distractors0",
        "pilot-distractors1",
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"band": (0.8, 0.3)}, "--band must be LOW,HIGH with 0 <= LOW < HIGH <= 1"),
        ({"calibrate": True, "passes": "teacher"}, "--calibrate judges greedy answers"),
        ({"calibrate": True, "gold_index": (0, 1)}, "give --positions instead of --gold-index"),
        ({"knob_values": (4, 2)}, "--knob-values must be increasing"),
        ({"calibrate": True, "lengths": (100, 200)}, "give one length, not --lengths"),
    ],
)
def test_calibration_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RetrieveConfig(model="m", **kwargs)


def test_kv_calibrates_its_pairs(bpe_model_dir: Path, tmp_path: Path, run_cli: Cli) -> None:
    out = tmp_path / "kv"
    code, _, stderr = run_cli(
        "retrieve", "--model", bpe_model_dir, "--task", "kv", "--key-chars", "4",
        "--positions", "3", "--examples", "2", "--calibrate", "--knob-values", "3,5,9",
        "--pilot-examples", "2", "--out", out,
    )  # fmt: skip
    assert code == 0, stderr
    result = json.loads((out / "retrieve.json").read_text())
    cal = result["calibration"]
    # 5 pairs first (the middle of the ladder); a random model is below the band: easier
    assert cal["knob"] == "pairs" and [t["value"] for t in cal["tried"]][0] == 5
    chosen = cal["chosen"]
    assert result["measured_config"]["pairs"] == chosen and result["config"]["pairs"] == 75
    # the pilot asked the middle gold index at the chosen pairs (positions 0, mid, last)
    assert cal["position"] == (chosen - 1) // 2
    assert [c["index"] for c in result["cells"]] == [0, (chosen - 1) // 2, chosen - 1]
