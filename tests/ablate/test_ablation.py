"""The ablation ladder: known answers on tiny models, rung structure, resuming, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from lostmid.ablate import run as ablation
from lostmid.ablate.config import RUNGS, AblationConfig
from lostmid.ablate.run import run_ablate
from lostmid.ablate.rungs import build_rung
from lostmid.errors import UserError

TINY = {"model": "tiny-gpt2", "length": 16, "samples": 1, "probes": 1}


def test_depth_one_uniform_rung_is_the_exact_theory(tmp_path: Path) -> None:
    """Rung (i), one layer, one repeated token (every x_j equal, positions removed), exact
    norms: d y_t / d x_j = J / t for j < t with one J, so the measured profile off the
    target is the jacobian theory's with a = s/(1+s) to rounding; the spike over the rest
    is t (1 - a) / a up to the cross term 2 tr(J) / (t d) of this one model."""
    config = AblationConfig(
        **TINY,
        seeds=1,
        rungs="uniform",
        layers=1,
        vocab_size=1,
        exact=True,
        dtype="float64",
        output="residual",
    )
    result = run_ablate(config, out=tmp_path, console=None)
    rung = result.rungs[0]
    measured = rung.measured
    t = config.length
    for name in ("predicted:jacobian", "predicted:positional"):
        predicted = rung.candidates[name].profile
        ratio = measured[: t - 1] / predicted[: t - 1]
        np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)
        assert rung.candidates[name].wasserstein1.mean < 1e-3
    a = float(rung.seeds[0].measurement.residual_strength[0])
    spike = measured[t - 1] / measured[: t - 1].mean()
    assert spike == pytest.approx(t * (1 - a) / a, rel=0.05)
    # the uniform theory with a from the forward-free Jacobian gain, not a fit: the rollout
    # kernel (linear, no quadrature) has a different spike and misses
    assert rung.candidates["predicted:rollout"].wasserstein1.mean > 10 * (
        rung.candidates["predicted:jacobian"].wasserstein1.mean
    )


def _hidden(loaded, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        x = loaded.adapter.token_embedding(loaded.model)(ids)
        return loaded.adapter.base(loaded.model)(inputs_embeds=x).last_hidden_state


def test_each_rung_differs_from_the_previous_by_its_ingredient() -> None:
    """Switching a rung's ingredient off by hand (zeroing the weights, not through the
    ablation switches) gives the previous rung's model exactly; left on, it changes it."""
    config = AblationConfig(**TINY, seeds=1)
    models = {rung: build_rung(config, rung, seed=0) for rung in RUNGS}
    ids = models["uniform"][1]
    for _, other_ids, _ in models.values():
        assert torch.equal(other_ids, ids)  # one input for every rung
    out = {rung: _hidden(m, ids) for rung, (m, _, _) in models.items()}
    d = models["real"][0].hidden_size

    def blocks(rung: str):
        loaded = models[rung][0]
        return loaded.adapter.blocks(loaded.model)

    steps = [
        ("mlp", "uniform", lambda b: (b.mlp.c_proj.weight, b.mlp.c_proj.bias)),
        (
            "logits",
            "mlp",
            lambda b: (b.attn.c_attn.weight[:, : 2 * d], b.attn.c_attn.bias[: 2 * d]),
        ),
    ]
    for rung, previous, params in steps:
        assert not torch.allclose(out[rung], out[previous])
        with torch.no_grad():
            for block in blocks(rung):
                for p in params(block):
                    p.zero_()
        torch.testing.assert_close(_hidden(models[rung][0], ids), out[previous], rtol=0, atol=0)
    # (iv) adds the learned position table, which (iii) has zeroed
    assert not torch.allclose(out["real"], out["logits"])
    with torch.no_grad():
        models["real"][0].model.transformer.wpe.weight.zero_()
    torch.testing.assert_close(_hidden(models["real"][0], ids), out["logits"], rtol=0, atol=0)
    # scaled embeddings: the real model's table times 30
    real = build_rung(config, "real", seed=0)[0]
    scaled = models["scaled-embeddings"][0]
    np.testing.assert_allclose(
        scaled.adapter.token_embedding(scaled.model).weight.numpy(),
        30 * real.adapter.token_embedding(real.model).weight.numpy(),
        rtol=1e-6,
    )
    # frozen norms: (ii) with every norm's 1/sigma one number, the mean over positions
    frozen = models["frozen-norm"][0]
    norms = [m for m in frozen.model.modules() if type(m).__name__ == "FrozenScaleNorm"]
    assert len(norms) == 2 * frozen.num_layers + 1  # ln_1, ln_2 per block, ln_f
    assert not torch.allclose(out["frozen-norm"], out["mlp"])
    assert models["frozen-norm"][2][:2] == models["mlp"][2][:2]  # positions off, uniform


def test_resumes_each_rung_and_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = AblationConfig(**TINY, seeds=2, rungs="uniform,real")
    calls: list[tuple[str, int]] = []
    measure = ablation.measure_rung

    def counting(config, rung, seed):
        calls.append((rung, seed))
        if len(calls) == 3 and fail["on"]:
            raise KeyboardInterrupt  # interrupted during the third measurement
        return measure(config, rung, seed)

    fail = {"on": True}
    monkeypatch.setattr(ablation, "measure_rung", counting)
    with pytest.raises(KeyboardInterrupt):
        run_ablate(config, out=tmp_path, console=None)
    assert len(list((tmp_path / "stages").glob("*.json"))) == 2
    fail["on"] = False
    calls.clear()
    first = run_ablate(config, out=tmp_path, console=None)
    assert calls == [("real", 0), ("real", 1)]  # only what was missing
    assert first.metadata["stages"]["reused"] == ["uniform-seed0", "uniform-seed1"]
    calls.clear()
    again = run_ablate(config, out=tmp_path, console=None)
    assert calls == [] and len(again.metadata["stages"]["reused"]) == 4
    for a, b in zip(first.rungs, again.rungs, strict=True):
        np.testing.assert_array_equal(a.measured, b.measured)
    written = json.loads((tmp_path / "ablation.json").read_text())
    assert [r["rung"] for r in written["rungs"]] == ["uniform", "real"]
    real = written["rungs"][1]
    assert real["noise_floor"]["seeds"] == 2 and len(real["per_seed"]) == 2
    assert {"predicted:rollout", "predicted:jacobian", "predicted:positional"} <= set(
        real["candidates"]
    )
    assert real["switches"] == [] and written["metadata"]["command"] == "ablate"
    assert (tmp_path / "ablation.png").stat().st_size > 10_000
    # a changed setting is another run: refused in this folder (issue 28), nothing
    # measured; --overwrite measures everything again
    calls.clear()
    before = (tmp_path / "ablation.json").read_bytes()
    with pytest.raises(UserError, match="holds an ablate run with another configuration"):
        run_ablate(AblationConfig(**{**TINY, "samples": 2}, seeds=2, rungs="uniform"), out=tmp_path)
    assert calls == [] and (tmp_path / "ablation.json").read_bytes() == before
    run_ablate(config, out=tmp_path, overwrite=True)
    assert len(calls) == 4


def test_gap_rung_is_the_first_ladder_rung_off_the_floor() -> None:
    """opens_gap needs the floor; cross rungs are never the gap rung."""
    from lostmid.ablate import RUNG_SPECS, AblationResult, CandidateScore, RungResult
    from lostmid.compare.scoring import NoiseFloor
    from lostmid.stats.intervals import MeanSpread

    def rung(name: str, w1: float, floor: float | None) -> RungResult:
        score = CandidateScore(
            "predicted:jacobian",
            "predicted",
            0,
            MeanSpread(w1, 0.0, 2),
            MeanSpread(w1, 0, 2),
            np.ones(4),
        )
        noise = None
        if floor is not None:
            noise = NoiseFloor(2, (), {"wasserstein1": MeanSpread(floor, 0.0, 1)})
        return RungResult(RUNG_SPECS[name], (), np.ones(4), None, {score.name: score}, noise, ())

    config = AblationConfig(**TINY)
    ladder = [rung("uniform", 0.004, 0.003), rung("frozen-norm", 0.5, 0.001)]
    assert AblationResult(config, (*ladder, rung("real", 0.03, 0.004)), {}).gap_rung == "real"
    assert AblationResult(config, tuple(ladder), {}).gap_rung is None  # 0.004 < 0.005
    assert rung("mlp", 0.03, None).opens_gap is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rungs": "uniform,nope"}, "--rungs 'nope' unknown; choose one of uniform, mlp"),
        ({"rungs": " , "}, "--rungs is empty; give some of uniform"),
        ({"rungs": "mlp,mlp"}, "--rungs names a rung twice"),
        ({"seeds": 0}, "--seeds must be positive, got 0"),
        ({"embedding_scale": 0.0}, "--embedding-scale must be positive"),
        ({"output": "bogus"}, "--output 'bogus' unknown"),
        ({"layers": 0}, "--layers must be positive, got 0"),
    ],
)
def test_bad_config_is_one_line(kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        AblationConfig(**{**TINY, **kwargs})


def test_cli_ablate_and_its_errors(tmp_path: Path, run_cli) -> None:
    args = ["ablate", "--model", "tiny-gpt2", "-L", "12", "--seeds", "1", "--samples", "1"]
    code, out, err = run_cli(*args, "--probes", "1", "--rungs", "real", "--out", tmp_path / "a")
    assert code == 0, err
    assert "Ablation ladder of tiny-gpt2" in out and "(iv)" in out
    written = json.loads((tmp_path / "a" / "ablation.json").read_text())
    assert written["config"]["rungs"] == ["real"] and written["gap_rung"] is None
    code, _, err = run_cli(*args, "-L", "500", "--out", tmp_path / "b")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--length 500 exceeds the maximum 128 of tiny-gpt2" in err
    assert not (tmp_path / "b").exists()  # failed before any stage


def test_a_rung_that_overflows_is_skipped_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lostmid.influence.passes import NonFiniteError

    measure = ablation.measure_rung

    def overflowing(config, rung, seed):
        if rung == "frozen-norm":
            raise NonFiniteError("non-finite values first appear in layer 6 of 24")
        return measure(config, rung, seed)

    monkeypatch.setattr(ablation, "measure_rung", overflowing)
    config = AblationConfig(**TINY, seeds=1, rungs="mlp,frozen-norm")
    result = run_ablate(config, out=tmp_path / "a")
    assert [r.spec.name for r in result.rungs] == ["mlp"]
    assert "layer 6 of 24" in result.skipped["frozen-norm"]
    written = json.loads((tmp_path / "a" / "ablation.json").read_text())
    assert list(written["skipped"]) == ["frozen-norm"]
    with pytest.raises(UserError, match="no rung could be measured; seed 0: non-finite"):
        run_ablate(AblationConfig(**TINY, seeds=1, rungs="frozen-norm"), out=tmp_path / "b")


def test_a_device_map_gives_the_undivided_ladder_and_refuses_offloaded_switches(
    tmp_path: Path, run_cli
) -> None:
    """A block on disk (as measure's device-map test offloads it): the real rung, which
    edits no weight, measures what the undivided model measures; a rung whose switches
    edit weights says that offloaded weights cannot be edited, rather than ignoring them."""
    config = AblationConfig(**TINY, seeds=2, rungs="real", gain_directions=1)
    offload = json.dumps({"transformer.h.1": "disk", "": "cpu"})
    split = run_ablate(
        AblationConfig(**TINY, seeds=2, rungs="real", gain_directions=1, device_map=offload),
        out=tmp_path / "split",
    )
    whole = run_ablate(config, out=tmp_path / "whole")
    for a, b in zip(split.rungs[0].seeds, whole.rungs[0].seeds, strict=True):
        a, b = a.measurement, b.measurement
        assert a.facts["device_map"]["transformer.h.1"] == "disk" and b.facts["device_map"] is None
        np.testing.assert_allclose(a.influence, b.influence, rtol=1e-5)
        np.testing.assert_allclose(a.branch_gain, b.branch_gain, rtol=1e-5)
    code, _, err = run_cli(
        "ablate", "--model", "tiny-gpt2", "--length", "16", "--rungs", "uniform,real",
        "--device-map", offload, "--out", tmp_path / "cli",
    )  # fmt: skip
    assert code == 2
    assert err.strip() == (
        "error: --device-map offloads weights that rung uniform must edit (offloaded weights "
        "load from cpu/disk at each forward); give a map that keeps every module on a "
        "device, or --rungs real"
    )
