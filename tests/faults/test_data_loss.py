"""Nothing computed is lost by a rerun or a refusal (issue 28, the worst class): a rerun
into a folder holding another run is refused in one line before anything there changes,
damaged result files are recomputed rather than reused, and a refused ``train
--overwrite`` keeps the earlier run. Each case checks the earlier files byte for byte."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import assert_one_line

RunCli = Callable[..., tuple[int, str, str]]

REMEDIES = ["remedies", "--quick", "--preset", "retrieval-micro", "--steps", "2", "--seeds",
            "1", "--remedies", "loss-weight", "--examples", "2"]  # fmt: skip
SWEEP = ["sweep", "--task", "theory", "--lengths", "8", "--param", "layers=2"]


def files(out: Path) -> dict[str, bytes]:
    """Every file under ``out`` (the lock aside: it comes and goes with each run)."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != ".lostmid.lock"
    }


@pytest.fixture(scope="module")
def remedies_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished micro ``remedies`` run (its --out)."""
    from lostmid.cli import main

    out = tmp_path_factory.mktemp("remedies") / "r"
    with pytest.MonkeyPatch.context() as patch:
        import sys

        import lostmid.runs.backend as backend

        patch.setattr(backend, "default_jobs", lambda: 1)
        patch.setattr(sys, "argv", ["lostmid", *REMEDIES, "--out", str(out)])
        try:
            main()
        except SystemExit as stop:
            assert stop.code in (0, None)
    assert (out / "remedies.json").is_file()
    return out


@pytest.mark.parametrize(
    "change",
    [["--steps", "3"], ["--seeds", "2"], ["--remedies", "curriculum"], ["--law", "replace"]],
    ids=lambda c: " ".join(c),
)
def test_remedies_into_another_runs_folder_is_refused(
    change: list[str], remedies_run: Path, run_cli: RunCli
) -> None:
    before = files(remedies_run)
    argv = list(REMEDIES)
    flag = change[0]
    if flag in argv:
        i = argv.index(flag)
        argv[i : i + 2] = change
    else:
        argv += change
    code, out, err = run_cli(*argv, "--out", remedies_run)
    assert_one_line(code, out, err, "holds a remedies run with another configuration",
                    "--overwrite")  # fmt: skip
    assert files(remedies_run) == before


def test_remedies_same_options_resume(remedies_run: Path, run_cli: RunCli) -> None:
    code, out, err = run_cli(*REMEDIES, "--out", remedies_run)
    assert code == 0, err
    document = json.loads((remedies_run / "remedies.json").read_text())
    assert document["metadata"]["stages"]["computed"] == []


def test_remedies_damaged_run_file_is_recomputed(
    remedies_run: Path, run_cli: RunCli, tmp_path: Path
) -> None:
    import shutil

    out = Path(shutil.copytree(remedies_run, tmp_path / "r"))
    damaged = out / "runs" / "baseline" / "seed_0" / "retrieval.json"
    intact = damaged.read_bytes()
    damaged.write_bytes(intact[: len(intact) // 2])
    code, stdout, err = run_cli(*REMEDIES, "--out", out)
    assert code == 0, err
    assert "damaged" in stdout + err and "recomput" in stdout + err
    json.loads(damaged.read_text())  # whole again
    document = json.loads((out / "remedies.json").read_text())
    assert document["metadata"]["stages"]["computed"] == ["train-baseline-seed0"]


@pytest.fixture
def sweep_run(run_cli: RunCli, tmp_path: Path) -> Path:
    out = tmp_path / "s"
    code, _, err = run_cli(*SWEEP, "--seeds", "0-1", "--out", out)
    assert code == 0, err
    return out


@pytest.mark.parametrize(
    "change",
    [
        ["--seeds", "1-2"],  # drops seed 0
        ["--seeds", "1-1"],  # a subset of the grid
        ["--param", "layers=3"],
        ["--task", "measure", "--models", "tiny-gpt2", "--param", "samples=1"],
    ],
    ids=lambda c: " ".join(c),
)
def test_sweep_into_another_sweeps_folder_is_refused(
    change: list[str], sweep_run: Path, run_cli: RunCli
) -> None:
    before = files(sweep_run)
    argv = ["sweep", "--task", "theory", "--lengths", "8", "--param", "layers=2", "--seeds",
            "0-1"]  # fmt: skip
    for i in range(0, len(change), 2):
        flag, value = change[i], change[i + 1]
        j = argv.index(flag) if flag in argv else -1
        if j >= 0:
            argv[j + 1] = value
        else:
            argv += [flag, value]
    code, out, err = run_cli(*argv, "--out", sweep_run)
    assert_one_line(code, out, err, "holds a sweep run with another configuration")
    assert files(sweep_run) == before


def test_sweep_same_grid_reuses_and_other_backend_settings_do_not_matter(
    sweep_run: Path, run_cli: RunCli
) -> None:
    code, out, err = run_cli(*SWEEP, "--seeds", "0-1", "--retries", "3", "--out", sweep_run)
    assert code == 0, err
    assert "2 reused" in out


def test_sweep_may_grow_keeping_every_saved_unit(sweep_run: Path, run_cli: RunCli) -> None:
    before = files(sweep_run)
    code, out, err = run_cli(*SWEEP, "--seeds", "0-2", "--out", sweep_run)
    assert code == 0, err
    after = files(sweep_run)
    kept = {k: v for k, v in before.items() if k.startswith(("units/", "stages/"))}
    assert {k: after[k] for k in kept} == kept
    assert len(json.loads(after["sweep.json"])["units"]) == 3


def test_sweep_damaged_unit_result_is_recomputed(sweep_run: Path, run_cli: RunCli) -> None:
    damaged = sorted(sweep_run.glob("units/*/theory.json"))[0]
    intact = damaged.read_bytes()
    damaged.write_bytes(intact[:40])
    code, out, err = run_cli(*SWEEP, "--seeds", "0-1", "--out", sweep_run)
    assert code == 0, err
    assert "damaged" in out + err and "1 done, 1 reused" in out
    json.loads(damaged.read_text())


def test_a_refused_run_leaves_no_binding_claim(run_cli: RunCli, tmp_path: Path) -> None:
    """A run refused after its claim, before computing, does not bind the folder."""
    out = tmp_path / "s"
    code, _, _ = run_cli("sweep", "--task", "theory", "--lengths", "8", "--param",
                         "kernel=nope", "--out", out)  # fmt: skip
    assert code == 2
    code, _, err = run_cli(*SWEEP, "--out", out)
    assert code == 0, err


@pytest.mark.parametrize("corpus", ["tiny", "/dev/zero", "fifo"])
def test_a_refused_train_overwrite_keeps_the_earlier_run(
    corpus: str, trained_copy: Path, run_cli: RunCli, tmp_path: Path
) -> None:
    """Every refusal of ``train --overwrite`` comes before anything is removed."""
    import os

    if corpus == "tiny":
        corpus = str(tmp_path / "tiny.txt")
        Path(corpus).write_text("abc")
    elif corpus == "fifo":
        corpus = str(tmp_path / "fifo")
        os.mkfifo(corpus)
    before = files(trained_copy)
    code, out, err = run_cli("train", "--preset", "micro", "--steps", "12", "--corpus", corpus,
                             "--overwrite", "--out", trained_copy)  # fmt: skip
    line = assert_one_line(code, out, err, "--corpus")
    assert "no such file" not in line
    assert files(trained_copy) == before


def test_compare_refuses_a_theory_of_another_depth(run_cli: RunCli, tmp_path: Path) -> None:
    code, _, err = run_cli("measure", "--model", "tiny-gpt2", "--length", "16", "--samples",
                           "1", "--probes", "1", "--out", tmp_path / "m")  # fmt: skip
    assert code == 0, err
    layers = json.loads((tmp_path / "m" / "measure.json").read_text())["config"]["layers"]
    code, _, err = run_cli("theory", "--length", "16", "--layers", str(layers + 5),
                           "--out", tmp_path / "t")  # fmt: skip
    assert code == 0, err
    code, out, err = run_cli("compare", "--measured", tmp_path / "m" / "measure.json",
                             "--theory", tmp_path / "t" / "theory.json",
                             "--out", tmp_path / "c")  # fmt: skip
    assert_one_line(code, out, err, f"H = {layers + 5} layers", f"--layers {layers}")
