"""Sweep test helpers: the deliberately failing task, and a theory grid."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import lostmid

HERE = Path(__file__).parent


def import_faulty_tasks() -> Any:
    """``faulty_tasks`` imported by its top-level name (as Ray workers import it)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return importlib.import_module("faulty_tasks")


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The ``flaky`` task registered for one test: fails ``fail_times`` tries per unit."""
    from lostmid.sweep import units

    module = import_faulty_tasks()
    monkeypatch.setitem(units.TASKS, "flaky", module.FLAKY)
    return module.FLAKY


def set_worker_env(patch: pytest.MonkeyPatch) -> None:
    """Ray workers inherit the environment: let them import this checkout's lostmid and
    the ``faulty_tasks`` helper of this folder, on one thread each."""
    src = str(Path(lostmid.__file__).parents[1])
    paths = [src, str(HERE), os.environ.get("PYTHONPATH", "")]
    patch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    patch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture
def ray_worker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """:func:`set_worker_env` for one test (a Ray instance the test starts)."""
    set_worker_env(monkeypatch)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    """A local Ray instance with 2 CPUs, shared by a module's tests, shut down after."""
    ray = pytest.importorskip("ray")
    with pytest.MonkeyPatch.context() as patch:
        set_worker_env(patch)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        try:
            yield ray
        finally:
            ray.shutdown()
