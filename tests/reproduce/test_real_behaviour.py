"""The behavioural section for real checkpoints (lostmid.reproduce.real_behaviour): its
verdict rule on constructed runs (yes, no, undecided, out of band) and the section end to
end through reproduce, on a tiny BPE model standing in for a checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

from cli_args import SECTIONS_OFF

from lostmid.reproduce import real_behaviour as rb
from lostmid.stats.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED


def _run(accuracy: list[float], shape: str, in_band: bool | None, n: int = 40) -> dict:
    depths = [0, 50, 100]
    positions = [
        {"depth": d, "n": n, "correct": round(a * n), "accuracy": a, "ci_low": a - 0.1,
         "ci_high": a + 0.1}
        for d, a in zip(depths, accuracy, strict=True)
    ]  # fmt: skip
    contrast = {"estimate": accuracy[0] - accuracy[1], "ci_low": 0.0, "ci_high": 0.5}
    return {
        "model": "m", "folder": "f", "task": "niah-multikey", "length": 512,
        "knob": "distractors", "chosen": 2, "in_band": in_band, "calibration": "c",
        "chat_template": True, "positions": positions, "seconds": 1.0,
        "shape": {"first": 0, "middle": 50, "last": 100, "primacy": contrast,
                  "recency": contrast, "shape": shape},
    }  # fmt: skip


def test_the_verdict_comes_out_yes_no_and_undecided_on_constructed_runs() -> None:
    runs = (
        _run([0.9, 0.4, 0.8], "U", True),
        _run([0.6, 0.6, 0.6], "flat", True),
        _run([0.7, 0.5, 0.6], "undetermined", True),
        _run([0.9, 0.95, 0.9], "U", False),  # the middle at the ceiling: no curve to read
        _run([0.9, 0.5, 0.2], "primacy", None),
    )
    claims = rb.RealBehaviour("constructed", runs).claims
    verdicts = [c.verdict for c in claims]
    assert verdicts == [REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, INCONCLUSIVE, NOT_REPRODUCED]
    assert "first/middle/last 36/40 / 16/40 / 32/40" in claims[0].ours  # the middle by depth
    assert "middle outside the band" in claims[3].ours
    assert {c.claim for c in claims} == {rb.CLAIM}


def test_an_undetermined_shape_with_one_end_not_above_the_middle_is_no_u() -> None:
    # the fixed-order SmolLM2 cell: primacy straddles, recency lies below 0: no U
    run = _run([0.4, 0.47, 0.13], "undetermined", None)
    run["shape"]["primacy"] = {"estimate": -0.07, "ci_low": -0.25, "ci_high": 0.12}
    run["shape"]["recency"] = {"estimate": -0.33, "ci_low": -0.50, "ci_high": -0.14}
    flat_end = _run([0.4, 0.4, 0.4], "undetermined", None)
    flat_end["shape"]["recency"] = {"estimate": 0.0, "ci_low": -0.03, "ci_high": 0.03}
    open_ends = _run([0.5, 0.4, 0.5], "undetermined", None)
    open_ends["shape"]["primacy"] = {"estimate": 0.1, "ci_low": -0.1, "ci_high": None}
    out_of_band = run | {"in_band": False}
    claims = rb.RealBehaviour("constructed", (run, flat_end, open_ends, out_of_band)).claims
    assert [c.verdict for c in claims] == [
        NOT_REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, INCONCLUSIVE,
    ]  # fmt: skip


def test_a_fixed_needle_order_run_is_the_order_control_with_its_own_claim() -> None:
    fixed = _run([0.4, 0.5, 0.1], "primacy", None) | {"needle_order": "fixed"}
    scattered = _run([0.9, 0.4, 0.8], "U", None)  # an older record has no needle_order
    claims = rb.RealBehaviour("constructed", (scattered, fixed)).claims
    assert [c.claim for c in claims] == [rb.CLAIM, rb.FIXED_ORDER_CLAIM]
    assert [c.verdict for c in claims] == [REPRODUCED, NOT_REPRODUCED]


def test_the_section_runs_retrieve_on_each_checkpoint_and_reads_it_back(
    bpe_model_dir: Path, tmp_path: Path, run_cli, monkeypatch
) -> None:
    scale = rb.RealScale(
        "quick", (str(bpe_model_dir),), 300, 3, 2, True, pilot_examples=2,
        extra={"knob_values": (0, 1)}, orders=rb.BOTH_ORDERS,
    )  # fmt: skip
    monkeypatch.setitem(rb.REAL_SCALES, "quick", scale)
    args = ["--models", "tiny-gpt2", "--length", "16", "--seeds", "1", "--samples", "1"]
    args += ["--probes", "1", *SECTIONS_OFF[:-2], "--real-behaviour", "quick", "--jobs", "1"]
    code, _, err = run_cli("reproduce", "--quick", *args, "--out", tmp_path / "r")
    assert code == 0, err
    record = json.loads((tmp_path / "r" / "reproduce.json").read_text())
    run, fixed = record["real_behaviour"]["runs"]
    assert run["knob"] == "distractors" and run["chosen"] in (0, 1)
    assert [p["depth"] for p in run["positions"]] == [0, 50, 100]
    assert all(p["n"] == 2 for p in run["positions"])
    assert (run["needle_order"], fixed["needle_order"]) == ("scattered", "fixed")
    claims = [c for c in record["claims"] if c["claim"] in (rb.CLAIM, rb.FIXED_ORDER_CLAIM)]
    assert [c["claim"] for c in claims] == [rb.CLAIM, rb.FIXED_ORDER_CLAIM]
    # a random model answers nothing: the middle below the band, so no verdict on a shape
    assert [c["verdict"] for c in claims] == [INCONCLUSIVE, INCONCLUSIVE]
    folder = tmp_path / "r" / "real-behaviour" / "quick"
    assert Path(fixed["folder"]).name.endswith("-fixed-order")
    # one figure per run, the control's beside the scattered one's
    shown = [n for n in record["figures"] if n.startswith("real-behaviour-")]
    assert len(shown) == 2 and any(n.endswith("-fixed-order") for n in shown)
    assert (
        "Real checkpoints: does a real LLM lose the middle?"
        in (tmp_path / "r" / "report.html").read_text()
    )
    # a finished run's folder is read back into another report with the same claims
    args[-4:-2] = ["--real-behaviour", str(folder)]
    code, _, err = run_cli("reproduce", "--quick", *args, "--out", tmp_path / "again")
    assert code == 0, err
    again = json.loads((tmp_path / "again" / "reproduce.json").read_text())
    assert [c for c in again["claims"] if c["claim"] in (rb.CLAIM, rb.FIXED_ORDER_CLAIM)] == claims
    code, _, err = run_cli(
        "reproduce", "--quick", "--real-behaviour", str(tmp_path), "--out", tmp_path / "x"
    )
    assert code == 2 and "--real-behaviour" in err and len(err.strip().splitlines()) == 1


def test_the_config_names_the_scales_the_section_has() -> None:
    from lostmid.reproduce.config import REAL_CHOICES

    assert (*rb.REAL_SCALES, "off") == REAL_CHOICES


def test_the_section_table_has_no_empty_cell() -> None:
    runs = (_run([0.9, 0.4, 0.8], "U", True), _run([0.6, 0.6, 0.6], "flat", None))
    rows = rb.RealBehaviour("constructed", runs).table()
    assert len(rows) == 6
    assert all(str(v).strip() not in ("", "None", "nan") for row in rows for v in row.values())


def test_a_folder_of_another_kind_is_refused_before_any_stage(run_cli, tmp_path) -> None:
    """A folder that only looks finished (a retrieve.json of another kind) is one line and
    exit 2 before the run writes anything, not a KeyError after its stages."""
    (tmp_path / "runs" / "m").mkdir(parents=True)
    (tmp_path / "runs" / "m" / "retrieve.json").write_text('{"schema": "lostmid.theory/1"}')
    out = tmp_path / "o"
    code, _, err = run_cli(
        "reproduce", "--quick", "--real-behaviour", tmp_path / "runs", "--out", out
    )
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "not a finished run of this section" in err
    assert not out.exists()


def test_the_default_scale_runs_each_checkpoint_in_both_needle_orders(tmp_path: Path) -> None:
    """The needle-order control is a stage of its own beside each scattered run; the
    scattered stage keeps its key and folder (a run saved before the control resumes)."""
    from lostmid.reproduce.config import ReproduceConfig

    config = ReproduceConfig()
    stages = rb.SECTION.stages(config, "cpu", tmp_path)
    assert [s.name for s in stages] == [
        "real-behaviour-default-smollm2-135m",
        "real-behaviour-default-smollm2-135m-fixed-order",
        "real-behaviour-default-gemma3-270m",
        "real-behaviour-default-gemma3-270m-fixed-order",
    ]
    assert [s.config.get("order") for s in stages] == [None, "fixed", None, "fixed"]
    assert set(stages[0].config) == {"scale", "model", "seed", "record"}
    assert len({s.name for s in stages}) == 4
    scale = rb.REAL_SCALES["default"]
    assert scale.retrieve_config("m", 0, "fixed").needle_order == "fixed"
    assert scale.retrieve_config("m", 0).needle_order == "scattered"
    # the quick smoke run has no control
    assert rb.REAL_SCALES["quick"].orders == ("scattered",)
