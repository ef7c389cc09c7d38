"""Stages of ``reproduce`` and ``remedies`` on a local 2-CPU Ray instance: the same stage
results as in-process, a rerun that reuses every stage, failures named in one line.

Skipped without Ray (``pip install 'lostmid[cluster]'``; scripts/setup.sh installs it).
"""

from __future__ import annotations

import json
import math
import pickle
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_args import SECTIONS_OFF

from lostmid.errors import UserError
from lostmid.runs.backend import Backend
from lostmid.runs.jobs import Job, Resources
from lostmid.runs.stages import run_stages
from lostmid.runs.store import StageStore

ray = pytest.importorskip("ray")  # the fixture local_ray (conftest) starts it once

TINY = ["--models", "tiny-gpt2", "--length", "16", "--seeds", "2", "--samples", "2"]
TINY += [
    "--probes",
    "1",
    *SECTIONS_OFF,
]


def assert_same_numbers(a: Any, b: Any, where: str = "") -> None:
    """Equal nested records: numbers to float rounding, timings (``*seconds*``) skipped."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), where
        for key in a:
            if "seconds" not in key:
                assert_same_numbers(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list) and a and not isinstance(a[0], (dict, list, str)):
        np.testing.assert_allclose(
            np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-6, err_msg=where
        )
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_numbers(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12), (where, a, b)
    else:
        assert a == b, (where, a, b)


def stage_results(out: Path) -> dict[str, Any]:
    """Each stage's record without the digests of its files (they hold timings)."""
    records = {p.stem: json.loads(p.read_text()) for p in sorted((out / "stages").glob("*.json"))}
    for record in records.values():
        record.pop("output_sha256", None)
    return records


def test_reproduce_on_ray_gives_the_local_stages_and_resumes(
    tmp_path: Path, local_ray: Any, run_cli: Any
) -> None:
    code, _, err = run_cli("reproduce", *TINY, "--backend", "ray", "--out", tmp_path / "ray")
    assert code == 0, err
    code, _, err = run_cli("reproduce", *TINY, "--out", tmp_path / "local")
    assert code == 0, err
    on_ray, local = stage_results(tmp_path / "ray"), stage_results(tmp_path / "local")
    assert sorted(on_ray) == ["measure-tiny-gpt2-seed0", "measure-tiny-gpt2-seed1"]
    assert_same_numbers(on_ray, local)
    record = json.loads((tmp_path / "ray" / "reproduce.json").read_text())
    meta = record["metadata"]
    assert meta["backend"]["name"] == "ray" and sorted(meta["stages"]["computed"]) == sorted(on_ray)
    assert_same_numbers(
        record["claims"], json.loads((tmp_path / "local" / "reproduce.json").read_text())["claims"]
    )
    code, _, err = run_cli("reproduce", *TINY, "--backend", "ray", "--out", tmp_path / "ray")
    assert code == 0, err
    meta = json.loads((tmp_path / "ray" / "reproduce.json").read_text())["metadata"]
    assert meta["stages"]["computed"] == [] and sorted(meta["stages"]["reused"]) == sorted(on_ray)


def test_remedies_on_ray_give_the_local_records_and_resume(tmp_path: Path, local_ray: Any) -> None:
    from lostmid.remedies import RemediesConfig, run_remedies
    from lostmid.remedies.run import plan_remedy_stages

    config = RemediesConfig(
        remedies=("baseline", "oversample"),
        preset="retrieval-micro",
        steps=3,
        seeds=2,
        pairs=4,
        examples=2,
        quick=True,
    )
    ray_backend = Backend("ray")
    plan = plan_remedy_stages(config, tmp_path, ray_backend)
    for stage in plan:  # module-level functions and values: plain pickle takes them
        pickle.loads(pickle.dumps(stage.job.compute))
    on_ray = run_remedies(config, out=tmp_path / "ray", backend=ray_backend)
    local = run_remedies(config, out=tmp_path / "local")
    assert_same_numbers(stage_results(tmp_path / "ray"), stage_results(tmp_path / "local"))
    assert_same_numbers(on_ray.record()["remedies"], local.record()["remedies"])
    again = json.loads((tmp_path / "ray" / "remedies.json").read_text())["metadata"]
    assert len(again["stages"]["computed"]) == 4 and again["backend"]["name"] == "ray"
    run_remedies(config, out=tmp_path / "ray", backend=ray_backend)
    again = json.loads((tmp_path / "ray" / "remedies.json").read_text())["metadata"]
    assert again["stages"]["reused"] == [s.job.name for s in plan]
    assert again["stages"]["computed"] == [] and set(again["stages"]["seconds"]) == {
        s.job.name for s in plan
    }


def test_a_failed_stage_is_named_and_the_others_are_kept(tmp_path: Path, local_ray: Any) -> None:
    jobs = [
        Job("root-4", {"x": 4.0}, partial(math.sqrt, 4.0)),
        Job("root-minus-1", {"x": -1.0}, partial(math.sqrt, -1.0)),
        Job("root-9", {"x": 9.0}, partial(math.sqrt, 9.0)),
    ]
    with pytest.raises(UserError) as info:
        run_stages(jobs, StageStore(tmp_path), Backend("ray"), label="roots")
    message = str(info.value)
    assert message.startswith(
        "1 of 3 stages failed: root-minus-1 (ValueError: math domain error); the 2 "
        "finished stages are saved in"
    )
    assert "\n" not in message
    store = StageStore(tmp_path)
    assert store.load("root-4", {"x": 4.0}) == 2.0 and store.load("root-9", {"x": 9.0}) == 3.0
    # the local backend stops at the failure itself, with its own exception
    with pytest.raises(ValueError, match="math domain error"):
        run_stages(jobs, StageStore(tmp_path, fresh=True), Backend(), label="roots")


def test_a_stage_the_local_instance_cannot_hold_fails_at_once(
    tmp_path: Path, local_ray: Any
) -> None:
    job = Job("big", {}, partial(math.sqrt, 1.0), Resources(cpus=1, gpus=1))
    with pytest.raises(UserError, match=r"stage big asks for 1 GPU; .* \(set --gpus-per-job\)$"):
        run_stages([job], StageStore(tmp_path), Backend("ray"), label="x")
