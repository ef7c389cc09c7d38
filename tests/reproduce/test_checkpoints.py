"""The real-checkpoint section of reproduce (lostmid.reproduce.checkpoints): its option
refused in one line, a saved study judged again through the command."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

import lostmid.reproduce.checkpoints as section
from lostmid.pretrained.cells import profiles_path, write_rows
from lostmid.pretrained.study import StudyConfig


def test_bad_checkpoints_option_is_one_line(run_cli, tmp_path: Path) -> None:
    for value in ("huge", str(tmp_path)):  # not a scale; a folder without study.json
        code, _, err = run_cli(
            "reproduce", "--quick", "--checkpoints", value, "--out", tmp_path / "o"
        )
        assert code == 2 and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1 and f"--checkpoints {value}" in err
    assert not (tmp_path / "o").exists()  # refused before anything was written


def _write_study(folder: Path, inputs: int, decades: float, seed: int) -> None:
    """A finished study in the folder format ``reproduce --checkpoints DIR`` reads: SmolLM2
    at L = 2048, three cells, pretrained and 3 twins sharing one expected profile (the
    pretrained one ``decades`` deeper), the pretrained inputs noisier: lognormal 1.3 nats
    a position with rare 30x spikes, twins 0.1."""
    from lostmid.compare.nulls import deepened, noisy_inputs, u_profile

    kinds = ("random", "text", "records")
    config = StudyConfig(checkpoints=("smollm2-135m",), lengths=(2048,), kinds=kinds, inputs=inputs)
    (folder / "study.json").parent.mkdir(parents=True, exist_ok=True)
    (folder / "study.json").write_text(json.dumps(dataclasses.asdict(config)))
    rng = np.random.default_rng(seed)
    twin = u_profile(2048)
    for kind in kinds:
        models = {"pretrained": noisy_inputs(deepened(twin, decades), inputs, 1.3, rng, 0.002)}
        models |= {f"twin{s}": noisy_inputs(twin, inputs, 0.1, rng) for s in range(3)}
        for label, rows in models.items():
            path = profiles_path(folder, "smollm2-135m", 2048, kind, label)
            write_rows(path, rows, {"model": label, "init_facts": {}})


def test_reproduce_rejudges_a_saved_study_and_noise_does_not_pass(run_cli, tmp_path) -> None:
    """Through the command a user runs: a study whose pretrained profiles are only noisier
    (4 inputs) is never judged deeper, in any of its 3 cells; one whose valley is truly
    1.5 decades deeper at the same noise (8 inputs) is, in at least 2 of 3 (the power at
    this noise is about 0.85-0.9 a cell: docs/BENCHMARKS.md). Under the single-position
    readout, shown beside, the null reads deeper."""
    core = ["--models", "tiny-gpt2", "--length", "16", "--seeds", "1", "--samples", "1"]
    core += ["--probes", "1", "--train-steps", "0", "--behaviour-steps", "0", "--dose", "off"]
    core += ["--real-behaviour", "off"]
    said = {}
    for name, inputs, decades in (("null", 4, 0.0), ("deeper", 8, 1.5)):
        _write_study(tmp_path / name, inputs, decades, seed=7)
        out = tmp_path / f"out-{name}"
        code, _, err = run_cli("reproduce", *core, "--checkpoints", tmp_path / name, "--out", out)
        assert code == 0, err
        record = json.loads((out / "reproduce.json").read_text())
        claims = [c for c in record["claims"] if c["claim"] == section.DEEPEN_CLAIM]
        assert len(claims) == 3 and all("binned readout" in c["ours"] for c in claims)
        said[name] = [c["verdict"] for c in claims]
        earlier = record["checkpoints"]["earlier_readout"]["cells"]
        said[f"{name}, single"] = [c["deepens"]["verdict"] for c in earlier.values()]
        assert "U persists" in (out / "report.html").read_text()
    assert "reproduced" not in said["null"]
    assert said["null, single"].count("reproduced") >= 2  # the readout it replaces
    assert said["deeper"].count("reproduced") >= 2 and "not reproduced" not in said["deeper"]


def test_an_empty_study_folder_is_one_line(run_cli, tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "study.json").write_text("{}")
    code, _, err = run_cli(
        "reproduce", "--quick", "--checkpoints", tmp_path / "s", "--out", tmp_path / "o"
    )
    assert code == 2 and "Traceback" not in err and "no cell of the study" in err
    assert len(err.strip().splitlines()) == 1


def _variant_study(folder: Path, *, untrained: bool = False, name: str = "smollm2-135m") -> None:
    """A study of one cell with the twin controls: the pretrained valley 1.5 decades
    deeper than the stated twins', the same depth as twins at std 0.02 (a twin that
    starts deeper), and quantised twins as the stated ones."""
    from lostmid.compare.nulls import deepened, noisy_inputs, u_profile

    controls = ("twin-inits", "quantised-twins")
    config = StudyConfig(
        checkpoints=(name,), lengths=(512,), kinds=("records",), inputs=8,
        twins=2, controls=controls,
    )  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "study.json").write_text(json.dumps(dataclasses.asdict(config)))
    rng = np.random.default_rng(0)
    twin = u_profile(512)
    pre = deepened(twin, 1.5)
    init = {"initializer_range": {"value": 0.0417, "from": "config.json of SmolLM2"}}
    # as the study writes it (lostmid.models.untrained.untrained_facts)
    weights = {"untrained": untrained, "norm_tensors": 9, "constant_norm_tensors": 9 * untrained}
    models = {"pretrained": (pre, {"untrained": weights})}
    for s in range(2):
        models[f"twin{s}"] = (twin, {"twin_init": init["initializer_range"]})
        models[f"qtwin{s}"] = (twin, {})
        models[f"init0.02-twin{s}"] = (pre, {})  # as deep as the pretrained model
        models[f"init0.08-twin{s}"] = (twin, {})
    for label, (expected, facts) in models.items():
        rows = noisy_inputs(expected, 8, 0.05, rng)
        path = profiles_path(folder, name, 512, "records", label)
        write_rows(path, rows, {"model": label, "init_facts": init} | facts)


def _rows(folder: Path) -> dict[str, object]:
    found = section.CheckpointSection.of(str(folder), {}, folder, ())
    assert found is not None
    return {c.claim: c for c in found.claims}


def test_a_change_that_one_twin_initialisation_undoes_is_not_robust(tmp_path: Path) -> None:
    _variant_study(tmp_path / "s")
    rows = _rows(tmp_path / "s")
    deepens = rows[section.DEEPEN_CLAIM]
    assert deepens.verdict == "not robust"
    assert "twins at std 0.02: largest" in deepens.ours and "quantised twins:" in deepens.ours
    assert "twins initialised with std 0.0417 (config.json of SmolLM2)" in deepens.ours
    assert "the readings disagree" in deepens.ours and "every peak" in deepens.rule
    # every reading against the stated, 0.08 and quantised twins says reproduced
    stated = deepens.ours.split("stated twins: ")[1].split(";")[0]
    assert stated.count("reproduced") == 4 and "not reproduced" not in stated


def test_claims_about_pretraining_are_not_applicable_to_a_model_at_init(tmp_path: Path) -> None:
    _variant_study(tmp_path / "s", untrained=True, name="./runs/my-model")  # a path, slashes
    rows = _rows(tmp_path / "s")
    for claim in (section.DEEPEN_CLAIM, section.PERSIST_CLAIM, section.MIDDLE_CLAIM):
        assert rows[claim].verdict == "not applicable"
        assert "the model is at initialisation" in rows[claim].ours
