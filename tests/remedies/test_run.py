"""``run_remedies`` end to end on the micro preset: equal budget, the files, the hooks
wired into training, and resuming per remedy and seed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lostmid.behaviour.training.task import sequence_length
from lostmid.errors import UserError
from lostmid.remedies import RemediesConfig, run_remedies
from lostmid.remedies.training import train_config
from lostmid.train.model import build_model, parameter_count

CONFIG = RemediesConfig(
    remedies=("baseline", "oversample", "residual:gate", "channels"),
    preset="retrieval-micro",
    steps=3,
    seeds=2,
    pairs=4,
    examples=2,
    quick=True,
)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("remedies")
    return out, run_remedies(CONFIG, out=out)


def test_equal_budget_tokens_steps_and_parameters(finished: tuple[Path, object]) -> None:
    out, _ = finished
    document = json.loads((out / "remedies.json").read_text())
    rconfig = train_config(CONFIG, 0)
    tokens = 3 * rconfig.train.batch_size * (sequence_length(rconfig.task) - 1)
    plain = parameter_count(build_model(rconfig.resolved_train().model, seed=0))
    layers = rconfig.train.model.layers
    by_name = {r["name"]: r for r in document["remedies"]}
    assert list(by_name) == ["baseline", "oversample", "residual:gate", "channels"]
    for name, record in by_name.items():
        assert record["tokens"] == tokens and record["steps"] == 3
        hidden = rconfig.train.model.hidden
        added = {"residual:gate": layers, "channels": 4 * hidden}.get(name, 0)
        assert record["parameters"] == plain + added
        assert record["extra_parameters"] == added
        assert record["seeds"] == [0, 1] and record["kind"] == "training"
        for key in ("mean_accuracy", "gap", "primacy", "recency", "log10_peak_to_valley"):
            assert set(record[key]) == {"estimate", "ci_low", "ci_high", "n"}
    assert by_name["baseline"]["difference_to_baseline"] is None
    assert by_name["oversample"]["verdict"] in ("works", "does not work", "worse")
    assert set(by_name["oversample"]["difference_to_baseline"]) >= {"gap", "mean_accuracy"}
    assert document["metadata"]["command"] == "remedies"
    assert (out / "remedies.png").stat().st_size > 0


def test_summary_matches_the_per_seed_runs(finished: tuple[Path, object]) -> None:
    out, _ = finished
    document = json.loads((out / "remedies.json").read_text())
    stages = [
        json.loads((out / "stages" / f"train-oversample-seed{s}.json").read_text()) for s in (0, 1)
    ]
    base = [
        json.loads((out / "stages" / f"train-baseline-seed{s}.json").read_text()) for s in (0, 1)
    ]
    record = next(r for r in document["remedies"] if r["name"] == "oversample")
    acc = [s["result"]["mean_accuracy"] for s in stages]
    assert record["mean_accuracy"]["estimate"] == pytest.approx(np.mean(acc))
    d = [s["result"]["gap"] - b["result"]["gap"] for s, b in zip(stages, base, strict=True)]
    assert record["difference_to_baseline"]["gap"]["estimate"] == pytest.approx(np.mean(d))


def test_the_hooks_change_training_and_nothing_before_it(finished: tuple[Path, object]) -> None:
    out, _ = finished

    def run(name: str) -> dict:
        return json.loads((out / "runs" / name / "seed_0" / "retrieval.json").read_text())

    base, oversampled = run("baseline"), run("oversample")
    # same initial weights and held-out examples: step 0 is identical
    assert base["checkpoints"][0]["influence"] == oversampled["checkpoints"][0]["influence"]
    # other gold indices, other batches: another loss from the first step on
    assert base["checkpoints"][-1]["train_loss"] != oversampled["checkpoints"][-1]["train_loss"]


def test_rerun_reuses_every_stage_and_recomputes_only_what_changed(
    finished: tuple[Path, object],
) -> None:
    out, first = finished
    again = run_remedies(CONFIG, out=out)
    document = json.loads((out / "remedies.json").read_text())
    assert document["metadata"]["stages"]["computed"] == []
    assert len(document["metadata"]["stages"]["reused"]) == 8
    assert again.remedies == first.remedies  # type: ignore[attr-defined]
    (out / "stages" / "train-oversample-seed1.json").unlink()
    run_remedies(CONFIG, out=out)
    document = json.loads((out / "remedies.json").read_text())
    assert document["metadata"]["stages"]["computed"] == ["train-oversample-seed1"]


def test_out_must_be_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="is a file; give a directory"):
        run_remedies(CONFIG, out=tmp_path / "file")
