"""Fault-injection tests: shared fixtures (hostile and damaged inputs, a finished tiny
training run) and the kill harness (``harness.py``), imported by its top-level name as
``benchmarks/bench_faults.py`` imports it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from hostile import build_hostile  # noqa: E402  (after the path is set)


@pytest.fixture(scope="session")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Damaged and hostile inputs by name (see :func:`hostile.build_hostile`), built
    once; ``hostile["marker"]`` is the file any planted code would create."""
    return build_hostile(tmp_path_factory.mktemp("hostile"))


@pytest.fixture
def marker(hostile: dict[str, Path]) -> Path:
    """The planted code's marker, absent at the start of the test."""
    hostile["marker"].unlink(missing_ok=True)
    return hostile["marker"]


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished ``lostmid train --preset micro --steps 12`` run (its --out)."""
    from lostmid.train.config import preset
    from lostmid.train.run import run_training

    out = tmp_path_factory.mktemp("trained") / "run"
    config = preset("micro")
    from dataclasses import replace

    run_training(replace(config, steps=12), out=out, make_plots=False)
    return out


@pytest.fixture
def trained_copy(trained: Path, tmp_path: Path) -> Path:
    """A copy of :func:`trained` to damage."""
    return Path(shutil.copytree(trained, tmp_path / "run"))
