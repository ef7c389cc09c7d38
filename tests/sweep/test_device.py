"""A sweep unit on the GPU through Ray: the unit asks for a GPU, Ray gives it one, and
the profile equals the CPU's. Marked ``device`` (see tests/test_device.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from lostmid.sweep import grid_from_flags
from lostmid.sweep.run import SweepConfig, run_sweep

pytestmark = [
    pytest.mark.device,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def test_a_cuda_unit_runs_on_a_ray_gpu_and_matches_the_cpu(tmp_path: Path, local_ray: Any) -> None:
    params = ["samples=2", "probes=2", "device=cpu,cuda"]
    grid = grid_from_flags("measure", models="tiny-qwen2", lengths="32", params=params)
    cpu_unit, cuda_unit = grid.units()
    assert (cpu_unit.resources.gpus, cuda_unit.resources.gpus) == (0.0, 1.0)
    result = run_sweep(SweepConfig(grids=(grid,), backend="ray"), out=tmp_path)
    assert result.counts()["done"] == 2, [u.outcome.error for u in result.units]
    cpu, cuda = (json.loads((tmp_path / u.result).read_text()) for u in result.units)
    assert cuda["config"]["device"].startswith("cuda")
    np.testing.assert_allclose(cuda["influence"], cpu["influence"], rtol=1e-4)
