"""GPU checks: the CUDA code paths give the CPU's numbers.

Marked ``device``: skipped by default (pyproject addopts), run with ``pytest -m device``
on a machine with an NVIDIA GPU (benchmarks/gpu_check.sh does); skipped there too when
torch sees no GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from lostmid.influence import MeasureConfig, run_measure

pytestmark = [
    pytest.mark.device,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


@pytest.mark.parametrize("exact", [False, True])
def test_measure_on_cuda_equals_measure_on_cpu(tmp_path: Path, exact: bool) -> None:
    # same weights (built on the CPU under the seed), same ids, same probes (drawn by a
    # CPU generator): only the device differs, so float32 profiles agree to rounding
    profiles = {}
    for device in ("cpu", "cuda"):
        config = MeasureConfig(
            model="tiny-qwen2",
            length=64,
            samples=2,
            probes=4,
            seed=3,
            exact=exact,
            per_layer=True,
            device=device,
        )
        run_measure(config, out=tmp_path / device, overwrite=False, console=None)
        profiles[device] = json.loads((tmp_path / device / "measure.json").read_text())
    cpu, cuda = profiles["cpu"], profiles["cuda"]
    assert cuda["config"]["device"].startswith("cuda")
    np.testing.assert_allclose(cuda["influence"], cpu["influence"], rtol=1e-4)
    np.testing.assert_allclose(cuda["per_layer"], cpu["per_layer"], rtol=1e-4)
    np.testing.assert_allclose(cuda["residual_strength"], cpu["residual_strength"], rtol=1e-4)


def test_bfloat16_on_cuda_keeps_the_float32_shape(tmp_path: Path) -> None:
    # bfloat16 keeps 8 bits of mantissa: the profile moves by about a percent, not more
    profiles = {}
    for dtype in ("float32", "bfloat16"):
        config = MeasureConfig(
            model="tiny-qwen2", length=64, samples=2, probes=4, seed=3, dtype=dtype, device="cuda"
        )
        run_measure(config, out=tmp_path / dtype, overwrite=False, console=None)
        profiles[dtype] = np.array(
            json.loads((tmp_path / dtype / "measure.json").read_text())["influence"]
        )
    np.testing.assert_allclose(profiles["bfloat16"], profiles["float32"], rtol=0.1)
