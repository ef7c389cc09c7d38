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
    # the shape indices are those of the written profile (one definition, lostmid.stats)
    from lostmid.stats.shape import profile_shape

    assert written["shape"] == json.loads(json.dumps(profile_shape(influence, stderr).record()))
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
        (["--compile", "on", "--checkpointing"], "--compile on and --checkpointing cannot be"),
        (["--compile", "on", "--device-map", "auto"], "--compile on is not supported with"),
        (["--compile", "maybe"], "--compile 'maybe' unknown; choose one of auto, on, off"),
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


def test_measure_writes_both_strengths_gains_and_masks(tmp_path) -> None:
    """Jacobian strength by default (a = s/(1+s) of the written branch gain), the forward
    ratio always, per-position gains whose mean is the gain, the layer masks."""
    from lostmid.influence import random_token_ids, residual_strength
    from lostmid.models import load_model

    config = MeasureConfig(model="tiny-qwen2", length=12, samples=2, probes=1, seed=1)
    run_measure(config, out=tmp_path / "j", overwrite=False, console=None)
    j = json.loads((tmp_path / "j" / "measure.json").read_text())
    s = np.array(j["branch_gain"])
    assert j["residual_strength_method"] == "jacobian" and s.shape == (2,)
    np.testing.assert_allclose(j["residual_strength"], s / (1 + s), rtol=1e-12)
    np.testing.assert_allclose(j["residual_strength_jacobian"], j["residual_strength"])
    per_position = np.array(j["gain_per_position"])
    assert per_position.shape == (2, 12)  # auto: H x L = 24 is small
    np.testing.assert_allclose(per_position.mean(1), s, rtol=1e-12)
    for key in ("mlp_gain_per_position", "mlp_coherence_per_position"):
        assert np.array(j[key]).shape == (2, 12)
    np.testing.assert_allclose(np.array(j["mlp_gain_per_position"]).mean(1), j["mlp_gain"])
    assert j["layer_masks"] == ["causal", "causal"] and j["config"]["mask"] == "causal"
    # the forward ratio is the peer's, on the same inputs (an independent forward pass)
    loaded = load_model("tiny-qwen2", seed=1)
    ids = random_token_ids(loaded.vocab_size, 2, 12, 1)
    np.testing.assert_allclose(
        j["residual_strength_forward"], residual_strength(loaded, ids, method="forward"), 1e-6
    )

    forward = MeasureConfig(
        **{**config.__dict__, "strength": "forward", "per_position_gains": "off"}
    )
    run_measure(forward, out=tmp_path / "f", overwrite=False, console=None)
    f = json.loads((tmp_path / "f" / "measure.json").read_text())
    assert f["residual_strength_method"] == "forward"
    assert (
        f["residual_strength"] == f["residual_strength_forward"] == j["residual_strength_forward"]
    )
    assert f["branch_gain"] == j["branch_gain"]  # the gains are measured either way
    assert f["gain_per_position"] is None and f["mlp_coherence_per_position"] is None


def test_per_position_gains_auto_rule_and_bad_choices() -> None:
    from lostmid.influence.config import PER_POSITION_MAX_CELLS

    long = MeasureConfig(length=PER_POSITION_MAX_CELLS // 8)
    assert long.per_position_gains_for(8) and not long.per_position_gains_for(9)
    assert MeasureConfig(length=16, per_position_gains="on").per_position_gains_for(10**6)
    assert not MeasureConfig(length=16, per_position_gains="off").per_position_gains_for(1)
    with pytest.raises(UserError, match="--strength 'ratio' unknown; choose one of jacobian"):
        MeasureConfig(strength="ratio")
    with pytest.raises(UserError, match="--per-position-gains 'yes' unknown"):
        MeasureConfig(per_position_gains="yes")
    with pytest.raises(UserError, match="--gain-directions must be positive, got 0"):
        MeasureConfig(gain_directions=0)


def test_no_alibi_reaches_the_model(tmp_path, monkeypatch, capsys) -> None:
    args = ["--model", "tiny-bloom", "--length", "8", "--samples", "1", "--probes", "1"]
    assert _cli(monkeypatch, capsys, *args, "--no-alibi", "--out", str(tmp_path / "a"))[0] == 0
    assert _cli(monkeypatch, capsys, *args, "--out", str(tmp_path / "b"))[0] == 0
    a = json.loads((tmp_path / "a" / "measure.json").read_text())
    b = json.loads((tmp_path / "b" / "measure.json").read_text())
    assert a["config"]["no_alibi"] is True and b["config"]["no_alibi"] is False
    assert a["influence"] != b["influence"]
    code, err = _cli(
        monkeypatch,
        capsys,
        "--model",
        "tiny-gpt2",
        "--no-alibi",
        "--length",
        "8",
        "--out",
        str(tmp_path / "c"),
    )
    assert code == 2 and "gpt2 has no ALiBi biases to remove" in err


def _inductor_missing() -> str | None:
    """Why torch.compile cannot run here (inductor compiles C++ on CPU), or None."""
    import shutil

    import torch

    if not hasattr(torch, "compile"):
        return "this torch has no torch.compile"
    if not any(shutil.which(cc) for cc in ("cc", "gcc", "clang", "c++", "g++")):
        return "torch.compile (inductor) needs a C/C++ compiler; none on PATH"
    return None


@pytest.mark.slow  # the compile itself: about 45 s on 2 loaded CPU cores
@pytest.mark.skipif(_inductor_missing() is not None, reason=str(_inductor_missing()))
def test_compiled_measure_agrees_with_eager(tmp_path, monkeypatch, capsys) -> None:
    args = ["--model", "tiny-qwen2", "--length", "12", "--samples", "2", "--probes", "2"]
    assert _cli(monkeypatch, capsys, *args, "--out", str(tmp_path / "eager"))[0] == 0
    code, err = _cli(monkeypatch, capsys, *args, "--compile", "on", "--out", str(tmp_path / "c"))
    assert code == 0, err
    eager = json.loads((tmp_path / "eager" / "measure.json").read_text())
    compiled = json.loads((tmp_path / "c" / "measure.json").read_text())
    assert compiled["config"]["compile"]["used"] is True
    assert eager["config"]["compile"] == {  # auto: this tiny run does not repay a compile
        "requested": "auto",
        "used": False,
        "why": eager["config"]["compile"]["why"],
    }
    assert eager["config"]["compile"]["why"].startswith("not compiled: about")
    # inductor may reorder sums (lostmid.influence.estimator.compiled_blocks): 1e-6 relative
    np.testing.assert_allclose(compiled["influence"], eager["influence"], rtol=1e-6)
    np.testing.assert_allclose(compiled["stderr"], eager["stderr"], rtol=1e-5)


def test_compile_auto_is_recorded_with_its_reason(tmp_path, monkeypatch, capsys) -> None:
    args = ["--model", "tiny-gpt2", "--length", "8", "--samples", "1", "--probes", "1"]
    assert _cli(monkeypatch, capsys, *args, "--out", str(tmp_path / "a"))[0] == 0
    choice = json.loads((tmp_path / "a" / "measure.json").read_text())["config"]["compile"]
    assert choice["requested"] == "auto" and choice["used"] is False
    assert "saved by compiling" in choice["why"]


def test_float16_on_the_cpu_is_said_in_the_file(tmp_path) -> None:
    """It runs (torch has cpu half kernels) but rarely as meant: measure.json's notes say
    so, and a float32 run has no such note."""
    from lostmid.influence.run import CPU_HALF_NOTE

    small = dict(model="tiny-gpt2", length=8, samples=1, probes=1)
    for dtype in ("float16", "float32"):
        run_measure(MeasureConfig(**small, dtype=dtype), out=tmp_path / dtype, console=None)
    half = json.loads((tmp_path / "float16" / "measure.json").read_text())
    full = json.loads((tmp_path / "float32" / "measure.json").read_text())
    assert half["config"]["dtype"] == "float16" and half["notes"][0] == CPU_HALF_NOTE
    assert CPU_HALF_NOTE not in full.get("notes", [])
