"""``lostmid series`` (lostmid.pretrained.series): the verdict "deepens along the series"
and the trajectory fed constructed profiles whose answer is known; a series that
``lostmid train`` writes measured end to end through the command line; bad input refused
in one line before any compute."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import lostmid.pretrained.study as study
from lostmid.compare.nulls import deepened, noisy_inputs, u_profile
from lostmid.compare.pretraining import PEAKS
from lostmid.errors import UserError
from lostmid.pretrained.cells import profiles_path, read_rows
from lostmid.pretrained.series.config import SeriesConfig
from lostmid.pretrained.series.run import check_series
from lostmid.pretrained.series.trajectory import deepens_along, series_trajectory
from lostmid.schemas import problems_of
from lostmid.stats.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_ROBUST, REPRODUCED
from lostmid.train import preset, run_training

LENGTH, INPUTS = 256, 8


def _inputs(expected: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    return noisy_inputs(expected, INPUTS, sigma, np.random.default_rng(seed))


# -- the verdict rule, on constructed data ------------------------------------------------


def test_a_valley_deeper_by_one_and_a_half_decades_at_every_peak_deepens() -> None:
    base = u_profile(LENGTH)
    v = deepens_along(_inputs(base, 0.1, 0), _inputs(deepened(base, 1.5), 0.1, 1))
    assert v.verdict == REPRODUCED
    assert {p: w.verdict for p, w in v.peaks.items()} == dict.fromkeys(PEAKS, REPRODUCED)
    for peak in ("largest", "first", "last"):  # the ends are untouched: the valley moved
        assert v.change[peak].value == pytest.approx(1.5, abs=0.1)
    assert v.change["first bin"].low > 0.5
    assert 0.4 < v.valley[1].value < 0.6  # the valley stays in the middle
    assert "last checkpoint against the first" in v.rule and "+0.5" in v.rule


def test_an_unchanged_profile_does_not_deepen() -> None:
    base = u_profile(LENGTH)
    v = deepens_along(_inputs(base, 0.1, 0), _inputs(base, 0.1, 1))
    assert v.verdict == NOT_REPRODUCED
    assert all(abs(v.change[p].value) < 0.1 for p in PEAKS)


def test_huge_noise_is_undecided() -> None:
    base = u_profile(LENGTH)
    v = deepens_along(_inputs(base, 3.0, 0), _inputs(deepened(base, 1.0), 3.0, 1))
    assert v.verdict == INCONCLUSIVE
    assert any(w.verdict == INCONCLUSIVE for w in v.peaks.values())


def test_peaks_that_disagree_are_not_robust() -> None:
    """The valley 1.5 decades deeper but the last position 2.5 decades lower: deeper seen
    from the first position, shallower from the last."""
    base = u_profile(LENGTH)
    last = deepened(base, 1.5)
    last[-1] *= 10**-2.5
    v = deepens_along(_inputs(base, 0.1, 0), _inputs(last, 0.1, 1))
    assert v.peaks["first"].verdict == REPRODUCED
    assert v.peaks["last"].verdict == NOT_REPRODUCED
    assert v.verdict == NOT_ROBUST


def test_the_trajectory_reads_each_checkpoint_against_the_same_twins() -> None:
    base = u_profile(LENGTH)
    twins = np.stack([_inputs(base, 0.1, 10 + s) for s in range(2)])
    decades = (0.0, 0.75, 1.5)
    series = [_inputs(deepened(base, d), 0.1, i) for i, d in enumerate(decades)]
    points = series_trajectory(series, twins, [0, 100, 1000], ["a", "b", "c"])
    assert [p.step for p in points] == [0, 100, 1000] and [p.model for p in points] == list("abc")
    for point, d in zip(points, decades, strict=True):
        assert set(point.change) == set(PEAKS)
        assert point.change["largest"].value == pytest.approx(d, abs=0.1)
        low, high = point.change["largest"].span
        assert low < point.change["largest"].value < high
        assert 0.4 < point.valley.value < 0.6
    with pytest.raises(UserError, match="3 checkpoints' profiles for 2 steps"):
        series_trajectory(series, twins, [0, 1])


# -- bad input ------------------------------------------------------------------------------


def test_a_series_config_is_checked_in_one_line() -> None:
    with pytest.raises(UserError, match="at least 2 checkpoints"):
        SeriesConfig(models=("run/step_000010",))
    with pytest.raises(UserError, match="its name says no step"):
        SeriesConfig(models=("run/final", "run/step_000010"))
    with pytest.raises(UserError, match="must be in step order.*10, 0"):
        SeriesConfig(models=("a/step_10", "a/step_0"))
    with pytest.raises(UserError, match="--steps gives 1 steps for 2 checkpoints"):
        SeriesConfig(models=("a", "b"), steps=(5,))
    with pytest.raises(UserError, match="unknown input kind 'audio'"):
        SeriesConfig(models=("a/step_0", "a/step_1"), kinds=("audio",))
    assert SeriesConfig(models=("a", "b"), steps=(0, 5)).steps_or_names() == (0, 5)


# -- end to end: a series lostmid train wrote -----------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The micro preset's checkpoints (steps 0, 10, 30: 2 layers x 32, context 32)."""
    root = tmp_path_factory.mktemp("series")
    corpus = root / "corpus"
    corpus.mkdir()
    for k in range(6):
        words = ("alpha", "beta", "gamma", "delta", "epsilon")
        text = "".join(
            f"def {words[i % 5]}_{i % 7}(x):\n    return x + {i % 3}\n" for i in range(150 + 10 * k)
        )
        (corpus / f"doc{k}.txt").write_text(text)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        config = replace(preset("micro"), corpus=str(corpus), heldout_fraction=0.3)
        run_training(config, out=root / "train")
        yield root / "train" / "checkpoints"
    finally:
        torch.set_num_threads(threads)


def _args(checkpoints: Path, out: Path, *extra: str) -> list[str]:
    names = ",".join(str(checkpoints / f"step_{s:06d}") for s in (0, 10, 30))
    return ["series", "--models", names, "--length", "32", "--inputs", "3", "--twins", "1",
            "--probes", "1", "--kinds", "random", "--out", str(out), *extra]  # fmt: skip


def test_a_trained_series_gives_its_trajectory_figure_and_verdict(
    trained: Path,
    tmp_path: Path,
    run_cli: Callable[..., tuple[int, str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch.set_num_threads(1)
    out = tmp_path / "series"
    code, printed, err = run_cli(*_args(trained, out))
    assert code == 0, err
    document = json.loads((out / "series.json").read_text())
    assert problems_of("series", document) is None
    assert document["steps"] == [0, 10, 30] and document["peaks"] == PEAKS
    kind = document["kinds"]["random"]
    assert kind["inputs"] == 3 and len(kind["trajectory"]) == 3
    assert [set(p["change"]) for p in kind["trajectory"]] == [set(PEAKS)] * 3
    assert document["deepens"]["by_kind"]["random"] == kind["deepens"]["verdict"]
    assert set(kind["deepens"]["peaks"]) == set(PEAKS)
    assert (out / "trajectory.png").stat().st_size > 10_000
    assert "deepens along the series" in printed and "valley at" in printed
    # the numbers are the saved profiles' (one set of twins, the first checkpoint's)
    rows = [
        read_rows(
            profiles_path(
                out, str((trained / f"step_{s:06d}").resolve()), 32, "random", "pretrained"
            )
        )
        for s in (0, 10, 30)
    ]
    twin = read_rows(
        profiles_path(out, str((trained / "step_000000").resolve()), 32, "random", "twin0")
    )
    points = series_trajectory(rows, twin[None], [0, 10, 30])
    for saved, point in zip(kind["trajectory"], points, strict=True):
        assert saved["change"]["largest"]["value"] == pytest.approx(point.change["largest"].value)
    step10 = str(
        (trained / "step_000010").resolve()
    )  # the twins are measured once, not per checkpoint
    assert not profiles_path(out, step10, 32, "random", "twin0").exists()
    # resumed: nothing is measured again, the same numbers
    calls: list[int] = []
    real = study.influence_profile
    monkeypatch.setattr(
        study, "influence_profile", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    code, _, err = run_cli(*_args(trained, out))
    assert code == 0 and calls == [], err
    again = json.loads((out / "series.json").read_text())
    assert again["kinds"] == document["kinds"]
    # the same checkpoints spelt another way are the same run and the same cells
    monkeypatch.chdir(trained)
    code, _, err = run_cli(
        "series", "--models", "step_000000,./step_000010,../checkpoints/step_000030",
        *_args(trained, out)[3:],
    )  # fmt: skip
    assert code == 0 and calls == [], err
    # another configuration in the same folder is refused in one line
    code, _, err = run_cli(*_args(trained, out, "--seed", "1"))
    assert code == 2 and "another configuration" in err and len(err.strip().splitlines()) == 1


def test_bad_series_are_refused_before_any_compute(
    trained: Path, tmp_path: Path, run_cli: Callable[..., tuple[int, str, str]]
) -> None:
    out = tmp_path / "bad"
    code, _, err = run_cli("series", "--models", str(trained / "step_000000"), "--out", out)
    assert code == 2 and "at least 2 checkpoints" in err and len(err.strip().splitlines()) == 1
    missing = f"{trained / 'step_000000'},{trained / 'step_000099'}"
    code, _, err = run_cli("series", "--models", missing, "--length", "32", "--out", out)
    assert code == 2 and "step_000099: no such folder or file" in err
    assert len(err.strip().splitlines()) == 1
    other = tmp_path / "other" / "step_000040"  # another architecture: a wider MLP
    shutil.copytree(trained / "step_000030", other)
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps(config | {"intermediate_size": 128}))
    mixed = f"{trained / 'step_000000'},{other}"
    code, _, err = run_cli("series", "--models", mixed, "--length", "32", "--out", out)
    assert code == 2 and "not the architecture of" in err and "intermediate 64 vs 128" in err
    assert len(err.strip().splitlines()) == 1
    too_long = SeriesConfig(models=(str(trained / "step_000000"), str(other)), length=64)
    with pytest.raises(UserError, match="context is 32 tokens"):
        check_series(too_long)
    assert not out.exists()  # refused before the folder was made
