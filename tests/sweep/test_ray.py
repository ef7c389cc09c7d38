"""The Ray backend on a local 2-CPU Ray instance: same results as local, resume, retries.

Skipped without Ray (``pip install 'lostmid[cluster]'``; scripts/setup.sh installs it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lostmid.sweep import grid_from_flags
from lostmid.sweep.run import SweepConfig, run_sweep

ray = pytest.importorskip("ray")  # the fixture local_ray (conftest) starts it once


def _theory_grid() -> Any:
    return grid_from_flags("theory", lengths="32,64", params=["alpha=0.2,0.5", "layers=3"])


def test_ray_sweep_matches_local_and_its_rerun_reuses_every_unit(
    tmp_path: Path, local_ray: Any
) -> None:
    on_ray = run_sweep(SweepConfig(grids=(_theory_grid(),), backend="ray"), out=tmp_path / "ray")
    assert on_ray.counts() == {"done": 4, "reused": 0, "failed": 0}
    assert local_ray.is_initialized()  # a running instance is used, not shut down
    local = run_sweep(SweepConfig(grids=(_theory_grid(),)), out=tmp_path / "local")
    for a, b in zip(on_ray.units, local.units, strict=True):
        assert a.unit.key == b.unit.key and a.result == b.result
        ray_file = json.loads((tmp_path / "ray" / a.result).read_text())
        local_file = json.loads((tmp_path / "local" / b.result).read_text())
        np.testing.assert_array_equal(ray_file["influence"], local_file["influence"])
    # each unit ran in a Ray worker, not in this process
    pids = {
        json.loads((tmp_path / "ray" / u.result).read_text())["metadata"]["argv"][0]
        for u in on_ray.units
    }
    assert all("ray" in p or "worker" in p for p in pids), pids
    again = run_sweep(SweepConfig(grids=(_theory_grid(),), backend="ray"), out=tmp_path / "ray")
    assert again.counts() == {"done": 0, "reused": 4, "failed": 0}
    written = json.loads((tmp_path / "ray" / "sweep.json").read_text())
    assert [u["status"] for u in written["units"]] == ["reused"] * 4
    assert written["config"]["backend"] == "ray"


def test_ray_retries_a_failing_unit_and_reports_one_that_keeps_failing(
    tmp_path: Path, local_ray: Any, flaky: Any
) -> None:
    grids = (
        grid_from_flags("flaky", seeds="0-1", params=["fail_times=1"]),
        grid_from_flags("flaky", seeds="7-7", params=["fail_times=9"]),
    )
    result = run_sweep(SweepConfig(grids=grids, backend="ray", retries=1), out=tmp_path)
    outcomes = [(u.outcome.status, u.outcome.attempts, u.outcome.error) for u in result.units]
    assert outcomes == [
        ("done", 2, None),
        ("done", 2, None),
        ("failed", 2, "RuntimeError: planned failure 2 of seed 7"),
    ]
    written = json.loads((tmp_path / "sweep.json").read_text())
    assert [u["status"] for u in written["units"]] == ["done", "done", "failed"]


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"gpus": 1}, r"asks for 1 GPU; the Ray cluster has 0 GPU \(set --gpus-per-job\)$"),
        ({"cpus": 3}, r"asks for 3 CPU; the Ray cluster has 2 CPU \(set --cpus-per-job\)$"),
    ],
)
def test_a_unit_the_cluster_cannot_hold_fails_at_once(
    tmp_path: Path, local_ray: Any, resources: dict, message: str
) -> None:
    from lostmid.errors import UserError
    from lostmid.runs.jobs import Resources

    grid = grid_from_flags("theory", lengths="16", resources=Resources(**resources))
    with pytest.raises(UserError, match=message):  # rather than wait forever
        run_sweep(SweepConfig(grids=(grid,), backend="ray"), out=tmp_path)
    assert local_ray.is_initialized()
