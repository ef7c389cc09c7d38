"""The package's public surface, the command's options, and the command line."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import lostmid.compare
from lostmid.compare.config import FIT_METRICS, HELP, LOG_BINS, SPIKE_POLICIES, CompareConfig
from lostmid.theory import KERNELS, influence_row


def test_every_public_name_resolves_to_its_module() -> None:
    for name in lostmid.compare.__all__:
        value = getattr(lostmid.compare, name)
        home = importlib.import_module(value.__module__)
        assert home.__name__.startswith("lostmid.compare.") and getattr(home, name) is value
    with pytest.raises(AttributeError, match="(?i)attribute '?baseline_profiles"):
        lostmid.compare.baseline_profiles  # noqa: B018


def test_options_are_light_and_match_the_config() -> None:
    # The CLI reads the options at start-up: they must not pull in scipy or matplotlib.
    code = (
        "import sys, lostmid.compare.config; "
        "print(any(m.split('.')[0] in ('scipy', 'matplotlib') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
    config = CompareConfig(measured="m.json")
    assert config.kernels == KERNELS
    assert config.fit_metric in FIT_METRICS and config.spike in SPIKE_POLICIES
    assert config.bins == LOG_BINS
    assert set(HELP) == {f for f in CompareConfig.__dataclass_fields__}


def test_command_line(tmp_path: Path, run_cli: Callable[..., tuple[int, str, str]]) -> None:
    """``lostmid compare`` with several seeds and the scoring options (live once cli.py
    passes them to CompareConfig)."""
    code, out, _ = run_cli("compare", "--help")
    if "--fit-metric" not in out:
        pytest.skip("cli.py does not expose the fair-scoring options yet")
    rng = np.random.default_rng(0)
    row = influence_row(48, 3, 0.3, kernel="jacobian")
    files = []
    for k in range(2):
        noisy = row * np.exp(0.05 * rng.standard_normal(row.size))
        files.append(tmp_path / f"m{k}.json")
        data = {
            "influence": noisy.tolist(),
            "residual_strength": [0.3] * 3,
            "config": {"layers": 3},
        }
        files[-1].write_text(json.dumps(data))
    args = ["compare", "--measured", files[0], "--measured", files[1], "--predict"]
    code, out, err = run_cli(
        *args, "--spike", "pinned", "--fit-metric", "log-lsq", "--out", tmp_path / "o"
    )
    assert code == 0, err
    data = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert data["noise_floor"]["seeds"] == 2
    assert (data["settings"]["spike"], data["settings"]["fit_metric"]) == ("pinned", "log-lsq")
    assert "Claims" in out and "noise floor" in out
    code, _, err = run_cli(*args, "--spike", "loose", "--out", tmp_path / "o2")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--spike 'loose' unknown; choose one of free, pinned" in err
