"""`lostmid theory`: files, JSON fields, and one-line errors with exit code 2."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lostmid.errors import UserError
from lostmid.theory import Causal, SlidingWindow
from lostmid.theory.run import TheoryConfig, compute_theory, run_theory


def dense_rollout_row(a_mat: np.ndarray, alphas: list[float], target: int) -> np.ndarray:
    """Row t of prod_l ((1 - a_l) I + a_l A), by dense products."""
    n = a_mat.shape[0]
    product = np.eye(n)
    for a in alphas:
        product = ((1 - a) * np.eye(n) + a * a_mat) @ product
    return product[target - 1]


def test_theory_command_writes_json_and_png(run_cli, tmp_path: Path, dense_attention) -> None:
    code, out, err = run_cli(
        "theory", "--layers", "6", "--length", "200", "--alpha", "0.3", "--out", tmp_path
    )
    assert code == 0, err
    record = json.loads((tmp_path / "theory.json").read_text())
    expected = dense_rollout_row(dense_attention("causal", 200), [0.3] * 6, 200)
    np.testing.assert_allclose(record["influence"], expected, rtol=1e-12)
    assert record["peak_to_valley"] == pytest.approx(
        max(record["influence"]) / min(record["influence"][:-1])
    )
    assert record["params"]["alphas"] == [0.3] * 6
    assert record["metadata"]["config"]["layers"] == 6
    assert "numpy" in record["metadata"]["versions"]
    assert (tmp_path / "theory.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "peak / valley" in out


def test_log_domain_is_used_automatically_when_float64_underflows(run_cli, tmp_path):
    code, _, err = run_cli(
        "theory", "--layers", "150", "--length", "1000", "--alpha", "1", "--out", tmp_path
    )
    assert code == 0, err
    record = json.loads((tmp_path / "theory.json").read_text())
    assert record["params"]["log_domain"] is True
    assert record["log10_influence"][-1] == pytest.approx(-150 * 3, rel=1e-12)
    assert record["influence"][-1] == 0.0


def test_schedule_mask_and_target(run_cli, tmp_path: Path, dense_attention) -> None:
    code, _, err = run_cli(
        "theory",
        "-H",
        "3",
        "-L",
        "20",
        "--alpha-schedule",
        "list:0.1,0.5,0.9",
        "--mask",
        "sliding:4",
        "--target",
        "7",
        "--out",
        tmp_path,
    )
    assert code == 0, err
    record = json.loads((tmp_path / "theory.json").read_text())
    expected = dense_rollout_row(dense_attention("sliding:4", 20), [0.1, 0.5, 0.9], 7)
    np.testing.assert_allclose(record["influence"], expected, rtol=1e-12, atol=1e-300)
    assert record["params"]["mask"] == "sliding:4" and record["params"]["target"] == 7
    assert record["metadata"]["config"]["alphas"] == [0.1, 0.5, 0.9]


def test_existing_results_are_not_overwritten(run_cli, tmp_path: Path) -> None:
    assert run_cli("theory", "-H", "2", "-L", "10", "--out", tmp_path)[0] == 0
    before = (tmp_path / "theory.json").read_text()
    code, _, err = run_cli("theory", "-H", "3", "-L", "10", "--out", tmp_path)
    assert code == 2 and "--overwrite" in err
    assert (tmp_path / "theory.json").read_text() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--length", "0"], "length must be positive, got 0"),
        (["--layers", "-2"], "--layers must be at least 1"),
        (["--alpha", "1.2"], "alpha must lie in [0, 1]"),
        (["--alpha-schedule", "list:0.1,0.2"], "schedule has 2 values but there are 4"),
        (["--alpha-schedule", "power:-1"], "exponent must be >= 0"),
        (["--alpha-schedule", "cosine"], "unknown alpha schedule"),
        (["--mask", "sliding:40"], "exceeds the length 32"),
        (["--mask", "prefix:x"], "needs an integer"),
        (["--target", "33"], "target must be a position in 1..32 (1-indexed), got 33"),
        (["--kernel", "ntk"], "kernel 'ntk' unknown; choose one of rollout, jacobian"),
        (["--log-domain", "maybe"], "log_domain 'maybe' unknown; choose one of auto, on, off"),
    ],
)
def test_bad_input_is_one_line_exit_2(run_cli, tmp_path, args, message) -> None:
    code, out, err = run_cli("theory", "-H", "4", "-L", "32", "--out", tmp_path, *args)
    assert code == 2
    assert message in err.replace("\n", " ")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "theory.json").exists()


def test_config_holds_parsed_values_and_checks_once() -> None:
    c = TheoryConfig(layers=3, length=50, alpha=0.4, mask="sliding:5", alpha_schedule="power:1")
    assert c.mask == SlidingWindow(5) and c.target_position == 50 and c.target is None
    np.testing.assert_allclose(c.alphas, [0.4, 0.2, 0.4 / 3], rtol=1e-15)
    # derived values follow a replaced option: the default target is the new last position
    longer = replace(c, length=80, mask=Causal())
    assert longer.target_position == 80 and longer.mask == Causal()
    with pytest.raises(UserError, match=r"target must be a position in 1..50 \(1-indexed\)"):
        TheoryConfig(length=50, target=51)
    with pytest.raises(UserError, match="sliding window width 60 exceeds the length 50"):
        TheoryConfig(length=50, mask="sliding:60")


def test_python_run_keeps_the_seed_in_the_config(tmp_path: Path) -> None:
    config = TheoryConfig(layers=2, length=16, alpha=0.5, seed=7)
    result = run_theory(config, out=tmp_path / "a")
    record = json.loads((tmp_path / "a" / "theory.json").read_text())
    assert record["metadata"]["seed"] == 7 and record["metadata"]["config"]["seed"] == 7
    assert result.config.seed == 7
    # the keyword the CLI still passes overrides the config's seed
    run_theory(config, out=tmp_path / "b", seed=3)
    record = json.loads((tmp_path / "b" / "theory.json").read_text())
    assert record["metadata"]["seed"] == 3


def test_log_domain_on_agrees_with_float64() -> None:
    """Forcing the log domain gives the same row where float64 is exact."""
    linear = compute_theory(TheoryConfig(layers=8, length=300, alpha=0.6, log_domain="off"))
    logged = compute_theory(TheoryConfig(layers=8, length=300, alpha=0.6, log_domain="on"))
    assert not linear.log_domain_used and logged.log_domain_used
    np.testing.assert_allclose(logged.influence, linear.influence, rtol=1e-12)
    assert logged.summary.log10_peak_to_valley == pytest.approx(
        linear.summary.log10_peak_to_valley, rel=1e-12
    )


@pytest.mark.parametrize(
    ("length", "layers", "kernel", "mask"),
    [
        (5000, 200, "rollout", "causal"),
        (20000, 8, "jacobian", "causal"),
        (50000, 4, "rollout", "sliding:64"),
    ],
)
def test_the_size_estimate_bounds_the_measured_peak(
    length: int, layers: int, kernel: str, mask: str, tmp_path: Path
) -> None:
    """theory_budget is an upper bound on what the computation allocates (tracemalloc
    sees numpy's arrays), and not a wild one (within 4x plus the figure's 400 bytes per
    position and its fixed 50 MB)."""
    import tracemalloc

    from lostmid.theory.run import theory_budget

    config = TheoryConfig(layers=layers, length=length, kernel=kernel, mask=mask)
    tracemalloc.start()
    try:
        compute_theory(config)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    need, _ = theory_budget(
        layers, length, kernel=kernel, causal=mask == "causal", log=False, target=None
    )
    assert peak <= need <= 4 * peak + 400 * length + 50e6, (peak, need)
