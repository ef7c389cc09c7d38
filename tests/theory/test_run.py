"""`lostmid theory`: files, JSON fields, and one-line errors with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lostmid.theory import influence_row


def test_theory_command_writes_json_and_png(run_cli, tmp_path: Path) -> None:
    code, out, err = run_cli(
        "theory", "--layers", "6", "--length", "200", "--alpha", "0.3", "--out", tmp_path
    )
    assert code == 0, err
    record = json.loads((tmp_path / "theory.json").read_text())
    np.testing.assert_allclose(record["influence"], influence_row(200, 6, 0.3), rtol=1e-12)
    assert len(record["influence"]) == 200
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


def test_schedule_and_target(run_cli, tmp_path: Path) -> None:
    code, _, err = run_cli(
        "theory",
        "-H",
        "3",
        "-L",
        "20",
        "--alpha-schedule",
        "list:0.1,0.5,0.9",
        "--target",
        "7",
        "--out",
        tmp_path,
    )
    assert code == 0, err
    record = json.loads((tmp_path / "theory.json").read_text())
    np.testing.assert_allclose(
        record["influence"], influence_row(20, 3, [0.1, 0.5, 0.9], target=7), rtol=1e-12
    )


def test_existing_results_are_not_overwritten(run_cli, tmp_path: Path) -> None:
    assert run_cli("theory", "-H", "2", "-L", "10", "--out", tmp_path)[0] == 0
    before = (tmp_path / "theory.json").read_text()
    code, _, err = run_cli("theory", "-H", "3", "-L", "10", "--out", tmp_path)
    assert code == 2 and "--overwrite" in err
    assert (tmp_path / "theory.json").read_text() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--length", "0"], "length must be an integer >= 1"),
        (["--layers", "-2"], "number of layers must be an integer >= 0"),
        (["--alpha", "1.2"], "alpha must lie in [0, 1]"),
        (["--alpha-schedule", "list:0.1,0.2"], "schedule has 2 values but there are 4"),
        (["--alpha-schedule", "power:-1"], "exponent must be >= 0"),
        (["--alpha-schedule", "cosine"], "unknown alpha schedule"),
        (["--mask", "sliding:40"], "exceeds the length 32"),
        (["--mask", "prefix:x"], "needs an integer"),
        (["--target", "33"], "target position must be in 1..32"),
        (["--kernel", "ntk"], "unknown kernel"),
        (["--log-domain", "maybe"], "log_domain must be auto, on or off"),
    ],
)
def test_bad_input_is_one_line_exit_2(run_cli, tmp_path, args, message) -> None:
    code, out, err = run_cli("theory", "-H", "4", "-L", "32", "--out", tmp_path, *args)
    assert code == 2
    assert message in err.replace("\n", " ")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "theory.json").exists()
