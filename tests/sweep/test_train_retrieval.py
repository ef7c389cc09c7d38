"""``lostmid sweep --task train-retrieval`` at a micro scale: units, resume, dose.json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lostmid.behaviour.training.learning import structural_primacy
from lostmid.errors import UserError
from lostmid.stats import seed_interval
from lostmid.sweep import grid_from_flags
from lostmid.sweep.run import SweepConfig, run_sweep


def _design() -> SweepConfig:
    base = grid_from_flags(
        "train-retrieval",
        models="retrieval-micro",
        seeds="0-1",
        params=["layers=1,2", "steps=4", "eval_every=2"],
    )
    variant = grid_from_flags(
        "train-retrieval",
        models="retrieval-micro",
        seeds="0-1",
        params=["layers=2", "steps=4", "eval_every=2", "no_rope=true"],
    )
    return SweepConfig(grids=(base, variant))


def test_design_sweep_writes_units_and_one_dose_summary(tmp_path: Path) -> None:
    run_sweep(_design(), out=tmp_path)
    sweep = json.loads((tmp_path / "sweep.json").read_text())
    assert sweep["counts"] == {"done": 6, "reused": 0, "failed": 0}
    (made,) = sweep["summaries"]
    assert made["task"] == "train-retrieval" and made["units"] == 6
    assert made["summary"]["file"] == "dose.json" and (tmp_path / "dose.png").is_file()
    dose = json.loads((tmp_path / "dose.json").read_text())
    assert [a["arm"] for a in dose["arms"]] == ["H=1", "H=2", "H=2 no-rope"]
    # readout 1 of each arm: the t interval of S over its seeds, from the units' own files
    for arm in dose["arms"]:
        values = []
        for unit in sweep["units"]:
            p = unit["params"]
            if p["layers"] == arm["layers"] and p.get("no_rope", False) == (
                arm["variant"] == "no-rope"
            ):
                written = json.loads((tmp_path / unit["result"]).read_text())
                values.append(structural_primacy(written["checkpoints"][0]["record_influence"]))
        expected = seed_interval(values)
        assert arm["structural"]["primacy"]["estimate"] == pytest.approx(expected.estimate)
        assert arm["structural"]["primacy"]["ci_high"] == pytest.approx(expected.ci_high)
    (variant,) = dose["variants"]
    assert variant["arm"] == "H=2 no-rope" and variant["against"] == "H=2"
    # 4 steps learn nothing: no half-times count, and the rule says so
    verdict = dose["dose_response"]
    assert verdict["verdict"] == "inconclusive" and verdict["depths"] == [1, 2]
    assert len(dose["runs"]) == 6

    again = run_sweep(_design(), out=tmp_path)
    assert again.counts() == {"done": 0, "reused": 6, "failed": 0}
    assert json.loads((tmp_path / "dose.json").read_text())["arms"] == dose["arms"]


def test_an_interrupted_unit_resumes_from_its_saved_state(tmp_path: Path) -> None:
    from lostmid.behaviour.training.config import resolve_retrieval_config
    from lostmid.behaviour.training.run import RESUME
    from lostmid.behaviour.training.run import run_retrieval_training as train_retrieval
    from lostmid.sweep.units import task_spec

    spec = task_spec("train-retrieval")
    params = {"preset": "retrieval-micro", "seed": 0, "steps": 6, "eval_every": 3}
    config = spec.build(params)
    folder = tmp_path / "unit"
    short = resolve_retrieval_config("retrieval-micro", seed=0, steps=6, eval_every=3)
    assert short == config
    train_retrieval(config, out=folder)  # a finished run with its state saved
    assert (folder / RESUME).is_file()
    before = json.loads((folder / "retrieval.json").read_text())["checkpoints"]
    summary = spec.run(config, folder)  # resumes the finished run: nothing recomputed
    after = json.loads((folder / "retrieval.json").read_text())["checkpoints"]
    assert summary["file"] == "retrieval.json" and after == before


def test_bad_parameters_fail_before_any_unit(tmp_path: Path) -> None:
    grid = grid_from_flags("train-retrieval", models="retrieval-nope", seeds="1")
    with pytest.raises(UserError, match="--preset"):
        run_sweep(SweepConfig(grids=(grid,)), out=tmp_path)
    with pytest.raises(UserError, match="no parameter 'depth'"):
        grid_from_flags("train-retrieval", models="retrieval-micro", params=["depth=2"])


def test_a_summary_that_cannot_be_made_is_recorded_not_raised(tmp_path: Path) -> None:
    from lostmid.sweep.grid import Unit
    from lostmid.sweep.summaries import summarise_tasks

    unit = Unit.make("train-retrieval", {"preset": "retrieval-micro", "seed": 0})
    warned: list[str] = []
    (record,) = summarise_tasks([unit], tmp_path, warned.append)
    assert "no such file" in record["error"] and warned and not (tmp_path / "dose.json").exists()
    assert np.isfinite(record["units"])
