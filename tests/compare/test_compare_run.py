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

from lostmid.compare.candidates import compare_measurement, compare_measurements
from lostmid.compare.config import CompareConfig
from lostmid.compare.metrics import wasserstein1
from lostmid.compare.predicted import positional_predictions, predicted_theory
from lostmid.compare.run import run_compare
from lostmid.errors import UserError
from lostmid.influence.record import MeasureRecord, read_measure
from lostmid.report.html import PNG_SIGNATURE
from lostmid.stats.verdicts import CLAIM_VERDICTS
from lostmid.theory import influence_row

L, H = 64, 4
ALPHAS = [0.2, 0.35, 0.3, 0.25]


def write_measure(
    path: Path,
    length: int = L,
    residual: bool = True,
    target: int | None = None,
    noise_seed: int | None = None,
    extra: dict | None = None,
) -> Path:
    """A measurement that is the jacobian theory of ALPHAS, times 2; with
    ``noise_seed``, times independent mean-one log-normal noise per position (one
    seed of a noisy measurement)."""
    influence = 2.0 * influence_row(length, H, ALPHAS, kernel="jacobian")
    if noise_seed is not None:
        rng = np.random.default_rng(noise_seed)
        influence = influence * np.exp(0.05 * rng.standard_normal(length) - 0.05**2 / 2)
    data = {
        "influence": influence.tolist(),
        "stderr": (0.05 * influence).tolist(),
        "config": {"length": length, "layers": H, "target": target},
        **(extra or {}),
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
        read_measure(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"influence": [1, 2, 3], "config": {"length": 4, "layers": 2}}))
    with pytest.raises(UserError, match="config.length is 4 but influence has 3 values"):
        read_measure(bad)
    bad.write_text(
        json.dumps({"influence": [1, 2, 3], "residual_strength": [0.1], "config": {"layers": 2}})
    )
    with pytest.raises(UserError, match="residual_strength has 1 values but config.layers is 2"):
        read_measure(bad)


def test_compare_measurement_in_memory_target_inside() -> None:
    """The pure entry point for `reproduce`: no files, an inner target."""
    t = 40
    influence = influence_row(L, H, 0.3, kernel="jacobian", target=t)
    measured = MeasureRecord(
        influence=influence, stderr=None, residual_strength=np.full(H, 0.3), layers=H, target=t
    )
    cands = compare_measurement(measured, predict=True, kernels=("jacobian",))
    assert cands["predicted:jacobian"].metrics.wasserstein1 < 1e-12
    assert cands["fitted:jacobian"].parameters["alpha"] == pytest.approx(0.3, abs=1e-5)
    assert all(c.profile[t - 1] > 0 for c in cands.values())
    # Nothing after the target in any candidate, as in the causal measurement.
    assert all(np.all(c.profile[t:] == 0) for c in cands.values())


# -- several seeds: noise floor, out of sample, verdicts ---------------------------------


def test_several_seeds_give_floor_held_out_scores_and_verdicts(tmp_path: Path) -> None:
    files = [write_measure(tmp_path / f"m{k}.json", noise_seed=k) for k in range(3)]
    data = run(tmp_path / "out", measured=files, predict=True)
    rows = np.array([json.loads(f.read_text())["influence"] for f in files])

    # The pooled measurement: mean of the normalised seeds on the mean total.
    shares = rows / rows.sum(axis=1, keepdims=True)
    expected = shares.mean(axis=0) * rows.sum(axis=1).mean()
    np.testing.assert_allclose(data["measured"]["influence"], expected, rtol=1e-12)
    assert data["measured"]["seeds"] == 3 and data["measured"]["sources"] == list(map(str, files))

    floor = data["noise_floor"]
    assert floor["seeds"] == 3 and floor["pairs"] == 3
    w1_pairs = [wasserstein1(rows[i], rows[j]) for i, j in ((0, 1), (0, 2), (1, 2))]
    assert floor["metrics"]["wasserstein1"]["mean"] == pytest.approx(np.mean(w1_pairs))
    assert floor["metrics"]["wasserstein1"]["spread"] == pytest.approx(np.std(w1_pairs, ddof=1))

    for name, c in data["candidates"].items():
        held = c["out_of_sample"]
        assert held["folds"] == 3 and len(held["per_fold"]) == 3, name
        assert set(held["metrics"]) >= {"wasserstein1", "spearman", "binned_wasserstein1"}
    # The prediction (each seed's a_l: here ALPHAS) scored on each seed as it is.
    truth = influence_row(L, H, ALPHAS, kernel="jacobian")
    per_fold = data["candidates"]["predicted:jacobian"]["out_of_sample"]["per_fold"]
    for k, fold in enumerate(per_fold):
        assert fold["metrics"]["wasserstein1"] == pytest.approx(wasserstein1(truth, rows[k]))
        assert fold["parameters"] == {}
    ranked = data["ranking"]["out_of_sample_wasserstein1"]
    assert set(ranked) == set(data["candidates"])
    assert ranked[0] in ("predicted:jacobian", "fitted:jacobian")  # the true kernel

    claims = {c["claim"]: c for c in data["claims"]}
    w1_claim = claims["predicted:jacobian matches the measurement (W1, nothing fitted)"]
    assert w1_claim["verdict"] == "reproduced" and "seed-to-seed" in w1_claim["ours"]
    assert all(c["verdict"] in CLAIM_VERDICTS for c in data["claims"])
    clipped = [n for n in data["notes"] if "clipped to their metric's range" in n]
    assert all("positional" in n for n in data["notes"] if n not in clipped)
    # Three seeds of a near-exact prediction: some t intervals pass W1 = 0 or
    # Spearman = 1; each is cut there, flagged in the JSON and counted in one note.
    flagged = [
        (name, m, v)
        for name, c in data["candidates"].items()
        for m, v in c["out_of_sample"]["metrics"].items()
        if v["clipped"]
    ] + [("noise floor", m, v) for m, v in floor["metrics"].items() if v["clipped"]]
    assert flagged and len(clipped) == 1  # this data has some (7)
    assert clipped[0].startswith(f"{len(flagged)} 95% interval(s) clipped")
    for _, metric, v in flagged:
        assert v["ci_low"] >= (-1.0 if "spearman" in metric or "correlation" in metric else 0.0)
        assert v["ci_high"] <= (1.0 if "spearman" in metric or "correlation" in metric else 9e9)
    assert data["settings"]["fit_metric"] == "w1" and data["settings"]["spike"] == "free"
    assert set(data["settings"]["definitions"]) >= {"spike:free", "fit_metric:w1", "pooling"}


def test_one_measurement_says_there_is_no_fold(tmp_path: Path) -> None:
    data = run(tmp_path / "out", measured=[write_measure(tmp_path / "m.json", noise_seed=0)])
    assert data["noise_floor"] is None
    assert all(c["out_of_sample"] is None for c in data["candidates"].values())
    assert data["ranking"]["out_of_sample_wasserstein1"] is None
    assert any("no held-out seed" in note for note in data["notes"])


def test_pinned_spike_holds_for_every_candidate(tmp_path: Path) -> None:
    files = [write_measure(tmp_path / f"m{k}.json", noise_seed=k) for k in range(2)]
    measurements = [read_measure(f) for f in files]
    card = compare_measurements(measurements, predict=True, spike="pinned")
    share = card.measured.influence[-1] / card.measured.influence.sum()
    assert {c.kind for c in card.candidates.values()} == {"predicted", "fitted", "baseline"}
    for c in card.candidates.values():
        assert c.profile[-1] / c.profile.sum() == pytest.approx(share, rel=1e-12), c.name
        assert c.parameter_count >= 1, c.name  # the spike share is taken from the data


def test_outside_predictions_are_scored_like_the_others() -> None:
    truth = influence_row(L, H, ALPHAS, kernel="jacobian")
    wrong = influence_row(L, H, 0.9, kernel="rollout")
    measured = [
        MeasureRecord(
            influence=truth * (1 + 0.01 * k),
            stderr=None,
            residual_strength=None,
            layers=H,
            target=L,
        )
        for k in range(2)
    ]
    card = compare_measurements(
        measured, predicted={"predicted:exact": truth, "predicted:wrong": np.stack([wrong] * 2)}
    )
    exact, off = card.candidates["predicted:exact"], card.candidates["predicted:wrong"]
    assert exact.kind == "predicted" and exact.parameter_count == 0
    assert exact.metrics.wasserstein1 < 1e-12 and off.metrics.wasserstein1 > 0.01
    assert exact.out_of_sample is not None and len(exact.out_of_sample.folds) == 2
    claims = {c.claim: c.verdict for c in card.claims}
    assert claims["predicted:exact matches the measurement (W1, nothing fitted)"] == "reproduced"
    assert claims["predicted:wrong matches the measurement (W1, nothing fitted)"] != "reproduced"


def test_positional_prediction_uses_each_seeds_gains(tmp_path: Path) -> None:
    """compare feeds each seed's measured per-position gains to the position-resolved
    kernel. With gains equal over positions and layers (s_k for seed k) that kernel
    reduces to the uniform theory with a = s/(1+s): an independent reference."""
    gains = [np.full((H, L), 0.2 + 0.1 * k) for k in range(2)]
    files = [
        write_measure(
            tmp_path / f"m{k}.json",
            noise_seed=k,
            extra={
                "gain_per_position": gains[k].tolist(),
                "branch_gain": [0.3] * H,
                "residual_strength_method": "jacobian",
                "residual_strength_forward": [0.01] * H,
            },
        )
        for k in range(2)
    ]
    loaded = read_measure(files[1])
    assert loaded.residual_strength_method == "jacobian"
    np.testing.assert_array_equal(loaded.gain_per_position, gains[1])
    np.testing.assert_array_equal(loaded.residual_strength_forward, [0.01] * H)

    measurements = [read_measure(f) for f in files]
    card = compare_measurements(measurements, predict=True)
    assert {"predicted:positional", "predicted:positional-rollout"} <= set(card.candidates)
    predictions, notes = positional_predictions(measurements, ("jacobian", "rollout"))
    assert notes == []
    for name, kernel in (
        ("predicted:positional", "jacobian"),
        ("predicted:positional-rollout", "rollout"),
    ):
        rows = predictions[name].rows
        for k in range(2):
            s = 0.2 + 0.1 * k
            want = influence_row(L, H, s / (1 + s), kernel=kernel)
            np.testing.assert_allclose(rows[k] / rows[k].sum(), want / want.sum(), atol=1e-12)
    assert card.candidates["predicted:positional"].out_of_sample is not None

    old = [read_measure(write_measure(tmp_path / f"old{k}.json", noise_seed=k)) for k in range(2)]
    assert old[0].gain_per_position is None and old[0].residual_strength_method is None
    card = compare_measurements(old, predict=True)
    assert "predicted:positional" not in card.candidates
    assert any("gain_per_position" in n for n in card.notes)


def test_new_measure_keys_are_checked(tmp_path: Path) -> None:
    bad = write_measure(tmp_path / "m.json", extra={"gain_per_position": [[1.0] * L] * (H - 1)})
    with pytest.raises(UserError, match=f"'gain_per_position' must be {H} x {L} finite numbers"):
        read_measure(bad)


def test_seeds_of_different_settings_are_refused(tmp_path: Path) -> None:
    a = write_measure(tmp_path / "a.json")
    b = write_measure(tmp_path / "b.json", length=L + 1)
    with pytest.raises(UserError, match=f"has length L {L + 1} but .* has {L}; give seeds of one"):
        run(tmp_path / "out", measured=[a, b])
    with pytest.raises(UserError, match="the same file is given twice"):
        CompareConfig(measured=[a, a])
    with pytest.raises(UserError, match="--spike 'loose' unknown; choose one of free, pinned"):
        CompareConfig(measured=[a], spike="loose")


def _positional_files(tmp_path: Path, name: str, extra: dict) -> list[MeasureRecord]:
    """Two seeds whose gains vary over positions and layers, plus ``extra`` keys."""
    rng = np.random.default_rng(7)
    gains = 0.1 + rng.random((H, L))
    return [
        read_measure(
            write_measure(
                tmp_path / f"{name}{k}.json",
                noise_seed=k,
                extra={"gain_per_position": (gains * (1 + 0.1 * k)).tolist(), **extra},
            )
        )
        for k in range(2)
    ]


def _positional_rows(measurements: list[MeasureRecord]) -> dict[str, np.ndarray]:
    predictions, notes = positional_predictions(measurements, ("jacobian", "rollout"))
    assert notes == []
    return {name: p.rows for name, p in predictions.items()}


def test_positional_prediction_uses_mlp_and_layer_masks(tmp_path: Path) -> None:
    """predicted:positional takes the MLP and per-layer masks of measure.json: checked
    on cases whose answer is known without the kernel's MLP or mask code."""
    bare = _positional_rows(_positional_files(tmp_path, "bare", {}))
    # every layer causal: the single-mask result
    causal = _positional_rows(_positional_files(tmp_path, "c", {"layer_masks": ["causal"] * H}))
    # a zero MLP (coherence undefined: null) and a position-independent, coherent MLP
    # (a constant factor (1 + g) per layer in every path) both leave the shape alone
    zero = {
        "mlp_gain_per_position": [[0.0] * L] * H,
        "mlp_coherence_per_position": [[None] * L] * H,
    }
    flat = {"mlp_gain_per_position": [[0.7] * L] * H, "mlp_coherence_per_position": [[1.0] * L] * H}
    for extra in (zero, flat):
        rows = _positional_rows(_positional_files(tmp_path, f"m{len(extra)}{extra is flat}", extra))
        for name in bare:  # without the MLP: the same; with it: the same shape here
            np.testing.assert_allclose(rows[name], bare[name], rtol=1e-12, atol=1e-15)
            with_mlp = name.replace("positional", "positional-mlp")
            np.testing.assert_allclose(rows[with_mlp], bare[name], rtol=1e-10, atol=1e-15)
    for name in bare:
        np.testing.assert_allclose(causal[name], bare[name], rtol=1e-12, atol=1e-15)
    # an MLP that varies over positions, or an incoherent one, does change the prediction
    rng = np.random.default_rng(3)
    varying = {"mlp_gain_per_position": (0.5 + rng.random((H, L))).tolist()}
    moved = _positional_rows(_positional_files(tmp_path, "v", varying))
    assert (
        wasserstein1(moved["predicted:positional-mlp"][0], bare["predicted:positional"][0]) > 1e-3
    )
    incoherent = {**flat, "mlp_coherence_per_position": [[0.0] * L] * H}
    moved = _positional_rows(_positional_files(tmp_path, "i", incoherent))
    assert (
        wasserstein1(moved["predicted:positional-mlp"][0], bare["predicted:positional"][0]) > 1e-3
    )
    # sliding:1 lets each position see only itself: A = I, so every layer multiplies the
    # stream by the scalar (1 + s) and all influence stays on the target
    local = _positional_rows(_positional_files(tmp_path, "s", {"layer_masks": ["sliding:1"] * H}))
    for rows in local.values():
        np.testing.assert_allclose(rows[:, : L - 1], 0.0, atol=0)
        np.testing.assert_allclose(rows[:, L - 1], 1.0, rtol=1e-14)


def test_mixed_layer_masks_reach_both_predictions(tmp_path: Path) -> None:
    """Layers 1..H-1 see only themselves (sliding:1, a scalar per layer), layer H is
    causal: every prediction is the one-layer theory of layer H, computed independently
    with influence_row. A pooled measurement keeps the masks; other masks are refused."""
    masks = ["sliding:1"] * (H - 1) + ["causal"]
    gains = np.full((H, L), 0.4)
    gains[-1] = 0.25
    files = [
        read_measure(
            write_measure(
                tmp_path / f"x{k}.json",
                noise_seed=k,
                extra={"layer_masks": masks, "gain_per_position": gains.tolist()},
            )
        )
        for k in range(2)
    ]
    card = compare_measurements(files, predict=True, kernels=("rollout", "jacobian"))
    assert card.measured.layer_masks == tuple(masks)
    assert any("different masks" in n for n in card.notes)
    positional = _positional_rows(files)
    predicted = {name: p.rows for name, p in predicted_theory(files, ("jacobian",)).items()}
    a_last = ALPHAS[-1]  # write_measure's residual strengths
    for name, rows in positional.items():
        kernel = "rollout" if name.endswith("rollout") else "jacobian"
        want = influence_row(L, 1, 0.25 / 1.25, kernel=kernel)
        np.testing.assert_allclose(rows[0], want / want.sum(), rtol=1e-10)
    want = influence_row(L, 1, a_last, kernel="jacobian")
    np.testing.assert_allclose(predicted["predicted:jacobian"][0], want / want.sum(), rtol=1e-10)
    other = write_measure(tmp_path / "y.json", extra={"layer_masks": ["causal"] * H})
    with pytest.raises(UserError, match="has layer masks"):
        compare_measurements([files[0], read_measure(other)])
    bad = write_measure(tmp_path / "z.json", extra={"layer_masks": ["causal"] * (H - 1)})
    with pytest.raises(UserError, match="layer_masks: mask list has 3 masks but there are 4"):
        read_measure(bad)


def test_a_measurement_passed_as_theory_is_refused(tmp_path: Path) -> None:
    from lostmid.compare.inputs import load_theory

    measured = tmp_path / "m.json"
    measured.write_text(json.dumps({"influence": [2.0, 1.0, 3.0], "config": {"layers": 1}}))
    with pytest.raises(UserError, match="a measurement .* not a theory"):
        load_theory(measured)
    tagged = tmp_path / "t.json"
    tagged.write_text(json.dumps({"schema": "lostmid.measure/1", "influence": [1.0, 2.0]}))
    with pytest.raises(
        UserError, match=r"a measure result \(schema lostmid.measure/1\), not a theory"
    ):
        load_theory(tagged)
