"""``lostmid sweep`` on the local backend: results, resume, retries, failures, CLI errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lostmid.errors import UserError
from lostmid.sweep import grid_from_flags
from lostmid.sweep.run import SweepConfig, run_sweep
from lostmid.theory.run import TheoryConfig, compute_theory


def _theory_sweep(**kwargs: Any) -> SweepConfig:
    grid = grid_from_flags("theory", lengths="32,64", params=["alpha=0.2,0.5", "layers=3"])
    return SweepConfig(grids=(grid,), **kwargs)


def _sweep_json(out: Path) -> dict[str, Any]:
    return json.loads((out / "sweep.json").read_text())


def test_theory_sweep_writes_each_unit_and_sweep_json(tmp_path: Path) -> None:
    result = run_sweep(_theory_sweep(), out=tmp_path)
    written = _sweep_json(tmp_path)
    assert written["counts"] == {"done": 4, "reused": 0, "failed": 0}
    assert written["complete"] is True and written["units_planned"] == 4
    assert written["metadata"]["command"] == "sweep" and written["metadata"]["versions"]["numpy"]
    assert written["config"]["backend"] == "local"
    assert [u["params"] for u in written["units"]] == [
        {"alpha": 0.2, "layers": 3, "length": 32},
        {"alpha": 0.5, "layers": 3, "length": 32},
        {"alpha": 0.2, "layers": 3, "length": 64},
        {"alpha": 0.5, "layers": 3, "length": 64},
    ]
    for unit in written["units"]:
        assert unit["status"] == "done" and unit["attempts"] == 1 and unit["error"] is None
        assert unit["result"] == f"units/{unit['key']}/theory.json"
        saved = json.loads((tmp_path / unit["result"]).read_text())
        # the unit's file is the theory of its parameters, computed here independently
        direct = compute_theory(TheoryConfig(**unit["params"]))
        np.testing.assert_allclose(saved["influence"], direct.influence, rtol=1e-12)
        assert unit["summary"]["log10_peak_to_valley"] == pytest.approx(
            direct.summary.log10_peak_to_valley, rel=1e-12
        )
    assert [u.unit.key for u in result.units] == [u["key"] for u in written["units"]]


def test_rerun_reuses_every_unit_and_recomputes_only_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lostmid.sweep import units

    run_sweep(_theory_sweep(), out=tmp_path)
    first = _sweep_json(tmp_path)
    calls: list[str] = []
    real = units.TASKS["theory"]

    def counting_run(config: Any, folder: Path) -> dict[str, Any]:
        calls.append(folder.name)
        return real.run(config, folder)

    monkeypatch.setitem(
        units.TASKS, "theory", units.TaskSpec(**{**vars(real), "run": counting_run})
    )
    again = run_sweep(_theory_sweep(), out=tmp_path)
    assert calls == [] and again.counts() == {"done": 0, "reused": 4, "failed": 0}
    second = _sweep_json(tmp_path)
    for a, b in zip(first["units"], second["units"], strict=True):
        assert b["status"] == "reused" and b["attempts"] == 0
        assert b["summary"] == a["summary"] and b["result"] == a["result"]
        assert b["compute_seconds"] == a["compute_seconds"]
    # a lost result file, and one new axis value: only those units run
    victim = second["units"][1]
    (tmp_path / victim["result"]).unlink()
    grid = grid_from_flags("theory", lengths="32,64", params=["alpha=0.2,0.5,0.7", "layers=3"])
    third = run_sweep(SweepConfig(grids=(grid,)), out=tmp_path)
    done = [u.unit.key for u in third.units if u.outcome.status == "done"]
    assert sorted(calls) == sorted(done) and len(done) == 3 and victim["key"] in done
    # --overwrite recomputes everything
    calls.clear()
    assert (
        run_sweep(SweepConfig(grids=(grid,)), out=tmp_path, overwrite=True).counts()["done"]
        == len(calls)
        == 6
    )


def test_a_failing_unit_is_retried(tmp_path: Path, flaky: Any) -> None:
    grid = grid_from_flags("flaky", seeds="0-1", params=["fail_times=1"])
    result = run_sweep(SweepConfig(grids=(grid,), retries=1), out=tmp_path)
    assert [(u.outcome.status, u.outcome.attempts) for u in result.units] == [("done", 2)] * 2
    for unit in result.units:
        assert json.loads((tmp_path / unit.result).read_text()) == {"tries": 2}


def test_a_unit_failing_every_try_is_reported_then_retried_by_a_rerun(
    tmp_path: Path, flaky: Any
) -> None:
    grid = grid_from_flags("flaky", seeds="0-0", params=["fail_times=3"])
    result = run_sweep(SweepConfig(grids=(grid,), retries=1), out=tmp_path)
    (unit,) = _sweep_json(tmp_path)["units"]
    assert unit["status"] == "failed" and unit["attempts"] == 2
    assert unit["error"] == "RuntimeError: planned failure 2 of seed 0"
    assert "Traceback" in unit["traceback"] and unit["result"] is None
    assert len(result.failed) == 1
    # not stored, so the next run tries again: third try fails, fourth succeeds
    again = run_sweep(SweepConfig(grids=(grid,), retries=1), out=tmp_path)
    assert (again.units[0].outcome.status, again.units[0].outcome.attempts) == ("done", 2)
    assert again.units[0].outcome.summary == {"file": "out.json", "tries": 4}


def test_a_user_error_in_a_unit_is_reported_without_retrying(tmp_path: Path) -> None:
    # tiny-gpt2 holds 128 positions: the unit builds, then fails once the model is read
    grid = grid_from_flags(
        "measure", models="tiny-gpt2", lengths="8,200", params=["samples=1", "probes=1"]
    )
    result = run_sweep(SweepConfig(grids=(grid,), retries=3), out=tmp_path)
    ok, bad = result.units
    assert ok.outcome.status == "done" and ok.outcome.attempts == 1
    assert bad.outcome.status == "failed" and bad.outcome.attempts == 1
    assert bad.outcome.error == (
        "UserError: --length 200 exceeds the maximum 128 of tiny-gpt2; use --length 128 or less"
    )
    # the unit that worked holds what run_measure writes for the same config
    measured = json.loads((tmp_path / ok.result).read_text())
    assert len(measured["influence"]) == 8 and measured["config"]["model"] == "tiny-gpt2"
    assert ok.outcome.summary["peak_to_valley"] == measured["summary"]["peak_to_valley"]


def test_bad_unit_parameters_fail_before_any_unit_runs(tmp_path: Path) -> None:
    grid = grid_from_flags("measure", lengths="8", params=["samples=0,1"])
    with pytest.raises(UserError, match=r"^--samples must be positive, got 0$"):
        run_sweep(SweepConfig(grids=(grid,)), out=tmp_path / "out")
    assert not (tmp_path / "out").exists()
    grid = grid_from_flags("theory", lengths="8", params=["kernel=rolout"])
    with pytest.raises(UserError, match=r"kernel 'rolout' unknown; choose one of rollout"):
        run_sweep(SweepConfig(grids=(grid,)), out=tmp_path / "out")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "slurm"}, r"^--backend 'slurm' unknown; choose one of local, ray$"),
        ({"retries": -1}, r"^--retries must be >= 0, got -1$"),
        ({"address": "auto"}, r"^--address is for --backend ray"),
        ({"address": "head", "backend": "ray"}, r"^--address 'head': give auto or HOST:PORT"),
    ],
)
def test_bad_sweep_options(kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        _theory_sweep(**kwargs)


def test_ray_missing_is_one_line(monkeypatch: pytest.MonkeyPatch, run_cli: Any) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(
        UserError, match=r"^--backend ray needs Ray: pip install 'lostmid\[cluster\]'$"
    ):
        _theory_sweep(backend="ray")
    code, _, err = run_cli("sweep", "--task", "theory", "--lengths", "8", "--backend", "ray")
    assert code == 2
    assert err.strip() == "error: --backend ray needs Ray: pip install 'lostmid[cluster]'"


def test_cli_flags_and_file_give_the_same_sweep(tmp_path: Path, run_cli: Any) -> None:
    flags = ["--task", "theory", "--lengths", "16,32", "--param", "layers=2"]
    code, out, _ = run_cli("sweep", *flags, "--out", tmp_path / "a")
    assert code == 0 and "2 units: 2 done, 0 reused, 0 failed" in out
    toml = tmp_path / "s.toml"
    toml.write_text('task = "theory"\nlengths = [16, 32]\n[params]\nlayers = 2\n')
    code, out, _ = run_cli("sweep", "--config", toml, "--out", tmp_path / "a")
    assert code == 0 and "2 units: 0 done, 2 reused, 0 failed" in out
    code, _, err = run_cli("sweep", "--config", toml, "--task", "theory")
    assert code == 2 and "--task and --config exclude each other" in err


def test_cli_exits_1_when_a_unit_failed(tmp_path: Path, run_cli: Any, flaky: Any) -> None:
    args = ["sweep", "--task", "flaky", "--param", "fail_times=5", "--retries", "0"]
    code, out, err = run_cli(*args, "--out", tmp_path)
    assert code == 1 and "1 failed" in out and "1 of 1 units failed" in err
    (unit,) = _sweep_json(tmp_path)["units"]
    assert unit["error"] == "RuntimeError: planned failure 1 of seed 0"


def test_train_units_map_models_to_presets_and_lengths_to_context(tmp_path: Path) -> None:
    from lostmid.train.config import from_dict
    from lostmid.train.run import run_training

    grid = grid_from_flags(
        "train", models="micro", lengths="16,24", params=["steps=3", "model.layers=1"]
    )
    result = run_sweep(SweepConfig(grids=(grid,)), out=tmp_path / "sweep")
    assert result.counts()["done"] == 2
    for unit, context in zip(result.units, (16, 24), strict=True):
        swept = json.loads((tmp_path / "sweep" / unit.result).read_text())
        assert swept["model"]["context"] == context and swept["model"]["layers"] == 1
        # the same run made directly: training is deterministic, so the records agree
        config = from_dict(
            {"preset": "micro", "steps": 3, "model": {"context": context, "layers": 1}}
        )
        run_training(config, out=tmp_path / f"direct{context}")
        direct = json.loads((tmp_path / f"direct{context}" / "dynamics.json").read_text())
        for record in (*swept["records"], *direct["records"]):
            record.pop("timings_s")  # the one field that differs between identical runs
        assert swept["records"] == direct["records"]
        assert unit.outcome.summary["heldout_loss"] == direct["records"][-1]["heldout_loss"]


@pytest.mark.parametrize(
    "command",
    [
        ["reproduce", "--models", "tiny-gpt2", "--length", "8", "--train-steps", "0"],
        ["remedies", "--preset", "retrieval-micro", "--steps", "1", "--seeds", "1"],
    ],
)
def test_stage_backends_of_reproduce_and_remedies_are_checked_in_one_line(
    monkeypatch: pytest.MonkeyPatch, run_cli: Any, tmp_path: Path, command: list[str]
) -> None:
    code, _, err = run_cli(*command, "--backend", "slurm", "--out", tmp_path)
    assert code == 2 and err.strip() == "error: --backend 'slurm' unknown; choose one of local, ray"
    code, _, err = run_cli(*command, "--address", "auto", "--out", tmp_path)
    assert code == 2
    assert err.strip() == "error: --address is for --backend ray; add --backend ray or drop it"
    code, _, err = run_cli(*command, "--cpus-per-stage", "0", "--out", tmp_path)
    assert code == 2 and err.strip() == "error: --cpus-per-job must be > 0, got 0.0"
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    code, _, err = run_cli(*command, "--backend", "ray", "--out", tmp_path)
    assert code == 2
    assert err.strip() == "error: --backend ray needs Ray: pip install 'lostmid[cluster]'"
    assert not (tmp_path / "stages").exists()  # nothing ran


def test_reproduce_and_remedies_units_give_what_the_commands_give(tmp_path: Path) -> None:
    from lostmid.remedies import RemediesConfig, run_remedies
    from lostmid.reproduce.config import ReproduceConfig
    from lostmid.reproduce.run import run_reproduce

    small = [
        "length=16",
        "samples=1",
        "train_steps=0",
        "behaviour_steps=0",
        "dose=off",
        "checkpoints=off",
        "real_behaviour=off",
    ]
    # --seeds of a multi-seed task: one unit running those seeds (first 1, count 2)
    reproduce = grid_from_flags("reproduce", models="tiny-gpt2", seeds="1-2", params=small)
    remedies = grid_from_flags(
        "remedies",
        models="retrieval-micro",
        seeds="3-4",
        params=["remedies=baseline+loss-weight", "steps=2", "examples=2", "quick=true"],
    )
    result = run_sweep(SweepConfig(grids=(reproduce, remedies)), out=tmp_path / "sweep")
    assert result.counts()["done"] == 2
    units = {(u.unit.task, u.unit.params_dict().get("seed")): u for u in result.units}
    direct = ReproduceConfig.at_scale(
        "quick",
        models=("tiny-gpt2",),
        seed=1,
        seeds=2,
        length=16,
        samples=1,
        train_steps=0,
        behaviour_steps=0,
        dose="off",
        checkpoints="off",
        real_behaviour="off",
    )
    run_reproduce(direct, out=tmp_path / "direct")
    swept = json.loads((tmp_path / "sweep" / units["reproduce", 1].result).read_text())
    mine = json.loads((tmp_path / "direct" / "reproduce.json").read_text())
    assert swept["claims"] == mine["claims"]  # same config, same seed: the same numbers
    config = RemediesConfig(
        remedies=("baseline", "loss-weight"),
        preset="retrieval-micro",
        steps=2,
        seeds=2,
        examples=2,
        quick=True,
        seed=3,
    )
    run_remedies(config, out=tmp_path / "rem")
    swept = json.loads((tmp_path / "sweep" / units["remedies", 3].result).read_text())
    mine = json.loads((tmp_path / "rem" / "remedies.json").read_text())
    drop = ("seconds", "wall_seconds")
    assert [{k: v for k, v in r.items() if k not in drop} for r in swept["remedies"]] == [
        {k: v for k, v in r.items() if k not in drop} for r in mine["remedies"]
    ]


def test_the_default_local_backend_with_two_workers_gives_the_one_job_sweep(
    tmp_path: Path,
) -> None:
    """The default backend on 2 cores runs units in spawned worker processes: their jobs
    must pickle (a closure did not), and the files equal those of units run in-process."""
    pooled = run_sweep(_theory_sweep(jobs=2), out=tmp_path / "pool")
    alone = run_sweep(_theory_sweep(jobs=1), out=tmp_path / "alone")
    assert pooled.counts() == alone.counts() == {"done": 4, "reused": 0, "failed": 0}
    for a, b in zip(pooled.units, alone.units, strict=True):
        assert a.unit.key == b.unit.key and a.result == b.result
        pool_file = json.loads((tmp_path / "pool" / a.result).read_text())
        alone_file = json.loads((tmp_path / "alone" / b.result).read_text())
        np.testing.assert_array_equal(pool_file["influence"], alone_file["influence"])
        assert a.outcome.summary == b.outcome.summary


@pytest.mark.parametrize(
    "damage",
    ["another unit's file", "a bare schema", "an edited number"],
)
def test_a_stale_unit_file_is_recomputed_never_reused(
    tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = grid_from_flags("theory", seeds="0-1", lengths="16", params=["alpha=0.1,0.2"])
    config = SweepConfig(grids=(grid,), jobs=1)
    first = run_sweep(config, out=tmp_path)
    by_alpha = {u.unit.params_dict()["alpha"]: u for u in first.units}
    victim, donor = tmp_path / by_alpha[0.1].result, tmp_path / by_alpha[0.2].result
    good = victim.read_bytes()
    if damage == "another unit's file":
        victim.write_bytes(donor.read_bytes())
    elif damage == "a bare schema":
        victim.write_text('{"schema":"lostmid.theory/1"}')
    else:
        doc = json.loads(good)
        doc["log10_peak_to_valley"] = 99.0
        victim.write_text(json.dumps(doc))
    capsys.readouterr()
    again = run_sweep(config, out=tmp_path)
    statuses = {u.unit.key: u.outcome.status for u in again.units}
    assert statuses[by_alpha[0.1].unit.key] == "done"
    assert sorted(statuses.values()) == ["done"] + ["reused"] * 3  # only the damaged unit
    assert by_alpha[0.1].unit.key in capsys.readouterr().err  # the sweep says which and why
    doc = json.loads(victim.read_text())
    np.testing.assert_array_equal(doc["influence"], json.loads(good)["influence"])
    assert {u.unit.key: u.outcome.summary for u in again.units} == {
        u.unit.key: u.outcome.summary for u in first.units
    }
