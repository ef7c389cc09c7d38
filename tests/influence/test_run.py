"""``lostmid measure`` end to end on a tiny model: files, fields, CLI errors."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from lostmid.errors import UserError
from lostmid.influence import MeasureConfig, run_measure


def _cli(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    from lostmid import cli

    monkeypatch.setattr(sys, "argv", ["lostmid", "measure", *args])
    try:
        cli.main()
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    return code, capsys.readouterr().err


def test_run_measure_writes_the_documented_fields(tmp_path) -> None:
    config = MeasureConfig(
        model="tiny-gpt2", length=16, samples=2, probes=2, per_layer=True, seed=3
    )
    run_measure(config, out=tmp_path, overwrite=False, console=None)
    written = json.loads((tmp_path / "measure.json").read_text())
    assert (tmp_path / "measure.png").stat().st_size > 1000
    influence, stderr = np.array(written["influence"]), np.array(written["stderr"])
    assert influence.shape == stderr.shape == (16,) and len(written["residual_strength"]) == 2
    # the fields are what their names say, not each other: influence is the root of
    # mean_sq, stderr_sq is the error of mean_sq (delta method: se = se_sq / (2 influence))
    np.testing.assert_allclose(influence**2, written["mean_sq"], rtol=1e-12)
    np.testing.assert_allclose(stderr, np.array(written["stderr_sq"]) / (2 * influence))
    assert written["max_relative_stderr"] == pytest.approx(np.max(stderr / influence))
    assert written["residual_strength_mean"] == pytest.approx(np.mean(written["residual_strength"]))
    assert np.array(written["per_layer"]).shape == (2, 16)
    for key in (
        "model",
        "family",
        "layers",
        "hidden",
        "length",
        "samples",
        "probes",
        "output",
        "target",
        "init",
        "seed",
        "no_rope",
        "no_pos_emb",
        "dtype",
        "device",
    ):
        assert key in written["config"], key
    assert written["config"]["family"] == "gpt2" and written["config"]["target"] == 16
    assert written["summary"]["recency"] == pytest.approx(written["influence"][15])
    assert "influence" in written["metadata"]["timings_s"]
    assert written["metadata"]["versions"]["torch"]
    with pytest.raises(UserError, match="already exists; pass --overwrite"):
        run_measure(config, out=tmp_path, overwrite=False, console=None)


def test_cli_measure_runs_and_is_deterministic(tmp_path, monkeypatch, capsys) -> None:
    args = ["--model", "tiny-qwen2", "--length", "12", "--samples", "2", "--probes", "2"]
    assert _cli(monkeypatch, capsys, *args, "--out", str(tmp_path / "a"))[0] == 0
    assert _cli(monkeypatch, capsys, *args, "--out", str(tmp_path / "b"))[0] == 0
    a = json.loads((tmp_path / "a" / "measure.json").read_text())
    b = json.loads((tmp_path / "b" / "measure.json").read_text())
    assert a["influence"] == b["influence"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "nope"], "unknown model preset 'nope'; presets: "),
        (["--model", "tiny-gpt2", "--length", "500"], "exceeds the maximum 128 of tiny-gpt2"),
        (["--model", "tiny-gpt2", "--samples", "0"], "--samples must be positive, got 0"),
        (["--model", "tiny-gpt2", "--probes", "0"], "--probes must be positive, got 0"),
        (["--model", "./no/such/dir/"], "no such directory"),
        (["--model", "tiny-gpt2", "--no-rope"], "gpt2 has no rotary embeddings"),
        (["--model", "tiny-gpt2", "--corpus", "/no/such/corpus"], "no such file or directory"),
        (["--model", "tiny-gpt2", "--output", "bogus"], "--output 'bogus' unknown"),
        (["--model", "tiny-gpt2", "--attention", "flash"], "--attention 'flash' unknown"),
        (["--model", "tiny-gpt2", "--strategy", "magic"], "--strategy 'magic' unknown"),
        (["--model", "tiny-gpt2", "--target", "9"], "--target must be a position in 1..8"),
    ],
)
def test_cli_errors_are_one_line_exit_2(tmp_path, monkeypatch, capsys, args, message) -> None:
    code, err = (
        _cli(monkeypatch, capsys, *args, "--length", "8", "--out", str(tmp_path))
        if "--length" not in args
        else _cli(monkeypatch, capsys, *args, "--out", str(tmp_path))
    )
    assert code == 2
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
