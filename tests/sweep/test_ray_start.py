"""``--backend ray`` with no Ray running: the sweep starts a local instance, then stops it.

Its own module, so that no other test's Ray instance is running. Skipped without Ray.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lostmid.sweep import grid_from_flags
from lostmid.sweep.run import SweepConfig, run_sweep

ray = pytest.importorskip("ray")


def test_sweep_starts_and_stops_its_own_local_ray(
    tmp_path: Path, ray_worker_env: None, run_cli: Any
) -> None:
    if ray.is_initialized():
        pytest.skip("a Ray instance of another test is running")
    grid = grid_from_flags("theory", lengths="16", params=["layers=2"])
    result = run_sweep(SweepConfig(grids=(grid,), backend="ray"), out=tmp_path)
    assert result.counts()["done"] == 1 and not ray.is_initialized()
    code, _, err = run_cli(
        "sweep",
        "--task",
        "theory",
        "--lengths",
        "16",
        "--backend",
        "ray",
        "--address",
        "127.0.0.1:9",
        "--param",
        "layers=2,3",  # grows the sweep (a changed one would be refused before connecting)
        "--out",
        tmp_path,
    )
    assert code == 2 and "--address 127.0.0.1:9: nothing answers there" in err
    written = json.loads((tmp_path / "sweep.json").read_text())
    assert written["counts"]["done"] == 1  # the failed connection wrote nothing
