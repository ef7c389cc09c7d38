"""Training refuses, before anything is built, a run that cannot fit this machine's
memory (issue 21), in one line with the number and the override."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lostmid.errors import UserError
from lostmid.models.budget import parameter_count as estimated_parameters
from lostmid.train.config import TRAIN_PRESETS as PRESETS
from lostmid.train.model import (
    TRAINING_BYTES_PER_PARAMETER,
    build_model,
    hf_config,
    parameter_count,
    training_bytes,
)
from lostmid.train.run import run_training


def test_the_estimate_counts_weights_gradients_and_adam_for_the_real_parameters() -> None:
    for name in ("micro", "tiny"):  # an upper bound, within a quarter (GQA's k, v overcounted)
        shape = PRESETS[name].model
        real = parameter_count(build_model(shape, seed=0))
        assert real <= estimated_parameters(hf_config(shape)) <= 1.25 * real
    spec = PRESETS["micro"].model
    estimated = estimated_parameters(hf_config(spec))
    bigger = replace(spec, layers=spec.layers * 2)
    added = training_bytes(bigger, 4) - training_bytes(spec, 4)
    weights = (estimated_parameters(hf_config(bigger)) - estimated) * TRAINING_BYTES_PER_PARAMETER
    assert added > weights  # the extra layers' weights, gradients, moments and activations


def test_a_model_too_large_for_the_machine_is_refused_before_it_is_built(tmp_path: Path) -> None:
    spec = replace(PRESETS["micro"].model, layers=4000, hidden=4096, heads=32, kv_heads=8,
                   intermediate=11008)  # fmt: skip
    config = replace(PRESETS["micro"], model=spec, steps=2)
    with pytest.raises(
        UserError, match=r"train --preset micro --steps 2 needs about \d+(\.\d+)? TiB"
    ):
        run_training(config, out=tmp_path / "out")
    assert not (tmp_path / "out" / "dynamics.json").exists()


def test_the_override_runs_what_the_check_would_refuse(tmp_path: Path, monkeypatch) -> None:
    import lostmid.runs.budget as budget

    monkeypatch.setattr(budget, "available_memory", lambda: 1.0)  # a full machine
    config = replace(PRESETS["micro"], steps=2)
    with pytest.raises(UserError, match="pass --no-size-check to try anyway"):
        run_training(config, out=tmp_path / "refused", make_plots=False)
    result = run_training(config, out=tmp_path / "ran", make_plots=False, size_check=False)
    assert (tmp_path / "ran" / "dynamics.json").is_file() and result is not None


def test_retrieval_training_too_deep_is_one_line_and_exit_2(tmp_path: Path, run_cli) -> None:
    code, out, err = run_cli("train", "--task", "kv", "--layers", "100000", "--out", tmp_path)
    assert code == 2
    assert "needs about" in err and "--no-size-check" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err + out


def test_a_refused_overwrite_keeps_the_earlier_run(tmp_path: Path, monkeypatch) -> None:
    import lostmid.runs.budget as budget

    config = replace(PRESETS["micro"], steps=2)
    run_training(config, out=tmp_path, make_plots=False)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert (tmp_path / "resume.pt") in before
    monkeypatch.setattr(budget, "available_memory", lambda: 1.0)
    with pytest.raises(UserError, match="needs about"):
        run_training(config, out=tmp_path, make_plots=False, overwrite=True)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
