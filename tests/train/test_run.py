from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from scipy.stats import wasserstein_distance

from lostmid.errors import UserError
from lostmid.runinfo import to_jsonable
from lostmid.train import (
    Checkpoint,
    Interventions,
    ModelVariant,
    RandomWindows,
    TrainConfig,
    preset,
    run_training,
)
from lostmid.train.corpus import load_corpus
from lostmid.train.run import checkpoint_dir

RECORD_FIELDS = {
    "step",
    "tokens_seen",
    "lr",
    "train_loss",
    "train_loss_running",
    "heldout_loss",
    "heldout_loss_per_position",
    "peak_to_valley",
    "influence",
    "residual_strength",
    "theory",
    "learning_signal",
    "agreement",
    "timings_s",
}


def w1_by_cdf(a: np.ndarray, b: np.ndarray) -> float:
    """W1 between the profiles as distributions on positions (j-1)/(L-1), by scipy
    (an implementation independent of lostmid's)."""
    positions = np.linspace(0.0, 1.0, a.size)
    return float(wasserstein_distance(positions, positions, u_weights=a, v_weights=b))


@pytest.fixture(scope="module")
def finished(
    tmp_path_factory: pytest.TempPathFactory, corpus_writer: Callable[[Path], Path]
) -> tuple[Path, dict, TrainConfig]:
    """One micro run (30 steps) shared by the tests below."""
    root = tmp_path_factory.mktemp("run")
    corpus = corpus_writer(root / "corpus")
    config = replace(preset("micro"), corpus=str(corpus), heldout_fraction=0.3)
    out = root / "out"
    threads = torch.get_num_threads()  # module-scoped: set up before the autouse fixture
    torch.set_num_threads(1)
    try:
        run_training(config, out=out)
    finally:
        torch.set_num_threads(threads)
    return out, json.loads((out / "dynamics.json").read_text()), config


def test_checkpoints_at_promised_steps(finished: tuple[Path, dict, TrainConfig]) -> None:
    out, dynamics, _ = finished
    assert dynamics["checkpoint_steps"] == [0, 10, 30]
    assert [r["step"] for r in dynamics["records"]] == [0, 10, 30]
    saved = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert saved == ["step_000000", "step_000010", "step_000030"]
    assert (checkpoint_dir(out, 30) / "config.json").is_file()
    assert (checkpoint_dir(out, 30) / "model.safetensors").is_file()


def test_dynamics_fields(finished: tuple[Path, dict, TrainConfig]) -> None:
    out, dynamics, _ = finished
    assert dynamics["complete"] is True
    assert dynamics["schema"] == "lostmid.train.dynamics/2"
    assert {"config", "model", "corpus", "metadata", "records"} <= set(dynamics)
    assert dynamics["metadata"]["command"] == "train"
    context, layers = 32, 2
    for r in dynamics["records"]:
        assert RECORD_FIELDS <= set(r)
        assert r["tokens_seen"] == r["step"] * 8 * context
        assert len(r["heldout_loss_per_position"]) == context
        assert len(r["influence"]["profile"]) == context
        assert len(r["learning_signal"]["profile"]) == context
        assert len(r["learning_signal"]["rho"]) == context
        assert len(r["residual_strength"]) == layers
        influence = np.asarray(r["influence"]["profile"])
        assert r["peak_to_valley"] == pytest.approx(influence.max() / influence[:-1].min())
        assert r["heldout_loss"] == pytest.approx(np.mean(r["heldout_loss_per_position"]))
        # the reader inverts the writer: no key written under one name and read under another
        assert to_jsonable(Checkpoint.from_record(r)) == r
        agreement = r["agreement"]
        assert set(agreement["influence_vs_theory"]) == {"rollout", "jacobian"}
        for kernel, metrics in agreement["influence_vs_theory"].items():
            theory = np.asarray(r["theory"][kernel])
            assert metrics["wasserstein1"] == pytest.approx(w1_by_cdf(theory, influence))
        eta, rho = (np.asarray(r["learning_signal"][k]) for k in ("profile", "rho"))
        assert agreement["learning_signal_vs_rho"]["wasserstein1"] == pytest.approx(
            w1_by_cdf(rho, eta)
        )
        assert agreement["learning_signal_vs_flat"]["wasserstein1"] == pytest.approx(
            w1_by_cdf(np.ones(context), eta)
        )
    first, last = dynamics["records"][0], dynamics["records"][-1]
    assert first["train_loss_running"] is None
    assert last["heldout_loss"] < first["heldout_loss"] - 0.5  # the model learns
    for name in ("profiles.png", "peak_to_valley.png", "learning_signal.png"):
        assert (out / name).stat().st_size > 1000


def test_refuses_to_overwrite(finished: tuple[Path, dict, TrainConfig]) -> None:
    out, _, config = finished
    with pytest.raises(
        UserError, match="holds a run with its saved state .resume.pt.: add --resume"
    ):
        run_training(config, out=out)


class _Interrupting:
    """A sampler that simulates Ctrl-C when asked for the batch of step ``stop``."""

    def __init__(self, inner: RandomWindows, stop: int) -> None:
        self.inner, self.stop = inner, stop

    def batch(self, step: int):
        if step == self.stop:
            raise KeyboardInterrupt
        return self.inner.batch(step)


def test_resume_after_interruption_equals_uninterrupted(micro: TrainConfig, tmp_path: Path) -> None:
    config = replace(micro, steps=20, resume_every=4)
    straight = run_training(config, out=tmp_path / "a", make_plots=False)

    corpus = load_corpus(config.corpus, seed=0, heldout_fraction=0.3, min_bytes=34)
    sampler = RandomWindows(corpus.train, config.batch_size, config.model.context, config.seed)
    from rich.console import Console

    said = Console(record=True, width=200)
    with pytest.raises(KeyboardInterrupt):
        run_training(
            config,
            out=tmp_path / "b",
            interventions=Interventions(sampler=_Interrupting(sampler, 13)),
            make_plots=False,
            console=said,
        )
    partial = json.loads((tmp_path / "b" / "dynamics.json").read_text())
    assert [r["step"] for r in partial["records"]] == [0, 10] and not partial["complete"]
    # what Ctrl-C says is what the same command does (issue 28): without --resume it
    # refuses, saying to add --resume, and keeps the saved state byte for byte
    assert "add --resume to the same command" in said.export_text()
    state = (tmp_path / "b" / "resume.pt").read_bytes()
    with pytest.raises(UserError, match="add --resume to the same command to continue it"):
        run_training(config, out=tmp_path / "b", make_plots=False)
    assert (tmp_path / "b" / "resume.pt").read_bytes() == state
    resumed = run_training(config, out=tmp_path / "b", resume=True, make_plots=False)

    assert resumed.metadata["config"]["resumed_from_step"] == 13
    a = load_file(checkpoint_dir(tmp_path / "a", 20) / "model.safetensors")
    b = load_file(checkpoint_dir(tmp_path / "b", 20) / "model.safetensors")
    assert a.keys() == b.keys()
    for key in a:
        assert np.array_equal(a[key].numpy(), b[key].numpy()), key
    # steps 0 and 10 of the resumed run were read back from dynamics.json
    for ca, cb in zip(straight.checkpoints, resumed.checkpoints, strict=True):
        assert (ca.step, ca.train_loss_running) == (cb.step, cb.train_loss_running)
        ma, mb = ca.measurement, cb.measurement
        assert np.array_equal(ma.heldout_loss_per_position, mb.heldout_loss_per_position)
        assert np.array_equal(ma.influence, mb.influence)
        assert ma.learning_signal_vs_rho == mb.learning_signal_vs_rho


def test_resume_without_state(micro: TrainConfig, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot resume"):
        run_training(micro, out=tmp_path, resume=True)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--preset", "huge"], "--preset 'huge' unknown; choose one of tiny, small, micro"),
        (["--steps", "0"], "steps must be positive, got 0"),
        (["--corpus", "/definitely/not/here"], "no such file or directory"),
    ],
)
def test_cli_bad_input(run_cli, tmp_path: Path, args: list[str], message: str) -> None:
    code, _, err = run_cli("train", *args, "--out", tmp_path / "out")
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_cli_empty_corpus(run_cli, tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.txt").write_text("")
    code, _, err = run_cli(
        "train", "--preset", "micro", "--corpus", tmp_path / "c", "--out", tmp_path / "o"
    )
    assert code == 2 and "corpus is empty" in err and len(err.strip().splitlines()) == 1


def test_cli_config_file_unknown_key(run_cli, tmp_path: Path) -> None:
    (tmp_path / "cfg.json").write_text(json.dumps({"model": {"layerz": 3}}))
    code, _, err = run_cli("train", "--config", tmp_path / "cfg.json", "--out", tmp_path / "o")
    assert code == 2 and "unknown model key(s): 'layerz'" in err


def test_cli_runs_micro(run_cli, corpus_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "cfg.json").write_text(
        json.dumps({"heldout_fraction": 0.3, "model": {"family": "gpt2"}})
    )
    code, out, err = run_cli(
        "train",
        "--preset",
        "micro",
        "--steps",
        "3",
        "--corpus",
        corpus_dir,
        "--config",
        tmp_path / "cfg.json",
        "--seed",
        "2",
        "--out",
        tmp_path / "o",
    )
    assert code == 0, err
    dynamics = json.loads((tmp_path / "o" / "dynamics.json").read_text())
    assert dynamics["config"]["seed"] == 2 and dynamics["config"]["steps"] == 3
    assert dynamics["model"]["family"] == "gpt2"
    assert [r["step"] for r in dynamics["records"]] == [0, 3]
    assert "lostmid train: dynamics" in out


def test_model_variant_is_applied(micro: TrainConfig, tmp_path: Path) -> None:
    """A variant that freezes the (tied) embeddings: they must not change in training."""

    def freeze_embeddings(model):
        model.get_input_embeddings().weight.requires_grad_(False)
        return model

    variant = ModelVariant("frozen-embeddings", freeze_embeddings)
    config = replace(micro, steps=10, probe=replace(micro.probe, enabled=False))
    run_training(config, out=tmp_path, interventions=Interventions(variant=variant, name="frozen"))
    before = load_file(checkpoint_dir(tmp_path, 0) / "model.safetensors")
    after = load_file(checkpoint_dir(tmp_path, 10) / "model.safetensors")
    key = "model.embed_tokens.weight"
    assert np.array_equal(before[key].numpy(), after[key].numpy())
    changed = [k for k in before if not np.array_equal(before[k].numpy(), after[k].numpy())]
    assert changed  # everything else trains
    dynamics = json.loads((tmp_path / "dynamics.json").read_text())
    assert dynamics["interventions"] == "frozen"
