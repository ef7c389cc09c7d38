"""``lostmid compare`` end to end on small synthetic inputs."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from lostmid.compare.candidates import compare_measurement
from lostmid.compare.inputs import MeasuredProfile, load_measured
from lostmid.compare.run import CompareConfig, run_compare
from lostmid.errors import UserError
from lostmid.report.html import PNG_SIGNATURE
from lostmid.theory import influence_row

L, H = 64, 4
ALPHAS = [0.2, 0.35, 0.3, 0.25]


def write_measure(
    path: Path, length: int = L, residual: bool = True, target: int | None = None
) -> Path:
    """A measurement that is exactly the jacobian theory of ALPHAS, times 2."""
    influence = 2.0 * influence_row(length, H, ALPHAS, kernel="jacobian")
    data = {
        "influence": influence.tolist(),
        "stderr": (0.05 * influence).tolist(),
        "config": {"length": length, "layers": H, "target": target},
    }
    if residual:
        data["residual_strength"] = ALPHAS
    path.write_text(json.dumps(data))
    return path


def write_theory(path: Path, length: int = L, target: int | None = None) -> Path:
    row = influence_row(length, H, 0.3, target=target)
    params = {
        "length": length,
        "layers": H,
        "alphas": [0.3] * H,
        "mask": "causal",
        "kernel": "rollout",
        "target": target,
    }
    path.write_text(json.dumps({"influence": row.tolist(), "params": params}))
    return path


def run(out: Path, **options: object) -> dict:
    """run_compare with a CompareConfig built from ``options``; returns compare.json."""
    overwrite = bool(options.pop("overwrite", False))
    run_compare(CompareConfig(**options), out=out, overwrite=overwrite)
    return json.loads((out / "compare.json").read_text())


def test_compare_writes_json_and_plot(tmp_path: Path) -> None:
    measure = write_measure(tmp_path / "measure.json")
    theory = write_theory(tmp_path / "theory.json")
    out = tmp_path / "out"
    console = Console(file=io.StringIO(), width=120)
    result = run_compare(
        CompareConfig(measured=(measure,), theory=theory, predict=True, seed=3),
        out=out,
        console=console,
    )
    printed = console.file.getvalue()
    assert "fitted:rollout" in printed and "Spearman" in printed and "compare.json" in printed
    assert (out / "compare.png").read_bytes().startswith(PNG_SIGNATURE)

    data = json.loads((out / "compare.json").read_text())
    assert set(data) >= {"measured", "candidates", "ranking", "metric_definitions", "metadata"}
    assert "run" not in data  # provenance has one key everywhere: "metadata"
    assert data["metadata"]["command"] == "compare" and data["metadata"]["seed"] == 3
    assert data["metadata"]["config"]["measured"] == [str(measure)]
    assert (
        list(data["candidates"])
        == list(result.candidates)
        == [
            "theory",
            "predicted:rollout",
            "predicted:jacobian",
            "fitted:rollout",
            "fitted:jacobian",
            "baseline:flat+spike",
            "baseline:linear+spike",
            "baseline:power+spike",
            "baseline:exponential+spike",
        ]
    )
    predicted = data["candidates"]["predicted:jacobian"]
    assert predicted["parameter_count"] == 0
    assert predicted["parameters"]["alphas"] == pytest.approx(ALPHAS)
    # The measurement is the jacobian theory of ALPHAS: the prediction is exact.
    assert predicted["metrics"]["wasserstein1"] < 1e-12
    assert predicted["metrics"]["spearman"] == pytest.approx(1.0)
    assert np.allclose(predicted["profile"], data["measured"]["influence"], rtol=1e-9)
    # The exact prediction beats every baseline; the ranking says so.
    assert data["ranking"]["wasserstein1"][0] in ("predicted:jacobian", "fitted:jacobian")
    baselines = [v for k, v in data["candidates"].items() if k.startswith("baseline:")]
    assert min(b["metrics"]["wasserstein1"] for b in baselines) > 1e-6
    # The theory file is rollout at a = 0.3, not the truth: it must score worse.
    assert data["candidates"]["theory"]["parameters"]["kernel"] == "rollout"
    assert data["candidates"]["theory"]["metrics"]["wasserstein1"] > 1e-4


def test_kernel_option_and_refusal_to_overwrite(tmp_path: Path) -> None:
    measure = write_measure(tmp_path / "measure.json")
    out = tmp_path / "out"
    names = list(run(out, measured=measure, kernels="rollout")["candidates"])
    assert "fitted:rollout" in names and not any("jacobian" in n for n in names)
    assert "theory" not in names and not any(n.startswith("predicted") for n in names)

    before = (out / "compare.json").read_text()
    with pytest.raises(UserError, match="compare.json already exists; pass --overwrite"):
        run(out, measured=measure)
    assert (out / "compare.json").read_text() == before
    assert "fitted:jacobian" in run(out, measured=measure, overwrite=True)["candidates"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda d: {"theory": write_theory(d / "t.json", length=L + 1)},
            f"theory has L = {L + 1} positions but the measurement has L = {L}",
        ),
        (
            lambda d: {"theory": write_theory(d / "t.json", target=L - 1)},
            f"theory targets position {L - 1} but the measurement targets {L}",
        ),
        (lambda d: {"kernels": "softmax"}, "--kernel 'softmax' unknown"),
        (
            lambda d: {"predict": True, "measured": write_measure(d / "m.json", residual=False)},
            "--predict needs the measured residual strengths",
        ),
    ],
)
def test_user_errors_leave_no_output(
    tmp_path: Path, make: Callable[[Path], dict], message: str
) -> None:
    options = {"measured": write_measure(tmp_path / "measure.json"), **make(tmp_path)}
    with pytest.raises(UserError, match=re.escape(message)):
        run(tmp_path / "out", **options)
    assert not (tmp_path / "out" / "compare.json").exists()


def test_missing_and_malformed_measurement(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file"):
        load_measured(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"influence": [1, 2, 3], "config": {"length": 4, "layers": 2}}))
    with pytest.raises(UserError, match="config.length is 4 but influence has 3 values"):
        load_measured(bad)
    bad.write_text(
        json.dumps({"influence": [1, 2, 3], "residual_strength": [0.1], "config": {"layers": 2}})
    )
    with pytest.raises(UserError, match="residual_strength has 1 values but config.layers is 2"):
        load_measured(bad)


def test_compare_measurement_in_memory_target_inside() -> None:
    """The pure entry point for `reproduce`: no files, an inner target."""
    t = 40
    influence = influence_row(L, H, 0.3, kernel="jacobian", target=t)
    measured = MeasuredProfile(
        influence=influence, stderr=None, residual_strength=np.full(H, 0.3), layers=H, target=t
    )
    cands = compare_measurement(measured, predict=True, kernels=("jacobian",))
    assert cands["predicted:jacobian"].metrics.wasserstein1 < 1e-12
    assert cands["fitted:jacobian"].parameters["alpha"] == pytest.approx(0.3, abs=1e-5)
    assert all(c.profile[t - 1] > 0 for c in cands.values())
    # Nothing after the target in any candidate, as in the causal measurement.
    assert all(np.all(c.profile[t:] == 0) for c in cands.values())
