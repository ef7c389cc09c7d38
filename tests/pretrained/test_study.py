"""The real-checkpoint study (lostmid.pretrained.study): its checked design and its
resumable driver, on a tiny GGUF file standing in for a registry checkpoint."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import lostmid.pretrained.study as study
from lostmid.behaviour.decoding.tokenizers import tokenizer_for_spec
from lostmid.errors import UserError
from lostmid.influence import influence_profile
from lostmid.models import CHECKPOINTS, RegistryCheckpoint
from lostmid.models.spec import ModelSpec
from lostmid.pretrained.cells import read_cell, write_rows
from lostmid.pretrained.inputs import input_ids

sys.path.insert(0, str(Path(__file__).parents[1] / "models"))
from gguf_files import write_tiny_llama_gguf  # noqa: E402


def test_bad_designs_are_refused() -> None:
    with pytest.raises(UserError, match="at least one model"):
        study.StudyConfig(checkpoints=())
    with pytest.raises(UserError, match="at least one model"):
        study.StudyConfig(checkpoints=(" ",))
    with pytest.raises(UserError, match="unknown input kind 'audio'"):
        study.StudyConfig(kinds=("audio",))
    with pytest.raises(UserError, match=">= 2 inputs"):
        study.StudyConfig(inputs=1)


class _Local(RegistryCheckpoint):
    def locate(self, root: Path | None = None) -> Path:
        return Path(self.parts[0][1])

    def check(self, sha256: str) -> None:
        pass


def test_the_study_resumes_and_reads_back(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LOSTMID_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "tiny.gguf"
    write_tiny_llama_gguf(path)
    fake = _Local("tiny-ckpt", "tiny", "none", path.name, "0" * 64, (("x", str(path)),))
    monkeypatch.setitem(CHECKPOINTS, "tiny-ckpt", fake)
    config = study.StudyConfig(
        checkpoints=("tiny-ckpt",), lengths=(256,), kinds=("random", "text"), inputs=3,
        twins=2, probes=1, controls=("requantised",),
    )  # fmt: skip
    out = tmp_path / "study"
    built = []
    load = ModelSpec.load

    def counted_load(self, **kwargs):
        built.append(kwargs.get("init"))
        return load(self, **kwargs)

    monkeypatch.setattr(ModelSpec, "load", counted_load)
    first = study.run_study(config, out, progress=lambda m: None)
    assert set(first) == {"tiny-ckpt/L256/random", "tiny-ckpt/L256/text"}
    assert built == ["pretrained", "random", "random", "pretrained"]  # each once, both kinds
    # the control: the pretrained weights quantised once more, its shift judged per cell
    _, control = read_cell(out / "profiles/tiny-ckpt/L256/text/requantised.npz")
    assert control["requantised"]["matrices"] > 0
    assert 0.01 < control["requantised"]["relative_rms_change"] < 0.3
    assert all(c.quantisation is not None for c in first.values())
    rows = np.load(out / "profiles/tiny-ckpt/L256/random/twin1.npz")["profiles"]
    assert rows.shape == (3, 256)
    # the rows are the cell measured on its own: a fresh twin, the design's inputs and seeds
    twin = load(ModelSpec("tiny-ckpt"), init="random", seed=1)
    tok = tokenizer_for_spec(ModelSpec("tiny-ckpt"))
    ids = input_ids("text", tok, twin.vocab_size, 3, 256, config.seed)
    alone = influence_profile(twin, ids[2:3], probes=1, seed=config.seed + 2).influence
    text_rows = np.load(out / "profiles/tiny-ckpt/L256/text/twin1.npz")["profiles"]
    np.testing.assert_array_equal(text_rows[2], alone)
    # a killed run: the last model lost its last input; only that input is measured again
    partial = out / "profiles/tiny-ckpt/L256/text/twin1.npz"
    kept, facts = read_cell(partial)
    assert facts["init_facts"]["initializer_range"]["from"].startswith("transformers' default")
    write_rows(partial, kept[:2], facts)
    calls = []
    real = study.influence_profile

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(study, "influence_profile", counting)
    built.clear()
    again = study.run_study(config, out, progress=lambda m: None)
    assert len(calls) == 1 and built == ["random"]  # only twin1 is built again
    assert np.allclose(np.load(partial)["profiles"], kept)
    for cell, comparison in first.items():
        assert comparison.record() == again[cell].record()
    # a twin saved before twins recorded their init facts is measured again, whole
    write_rows(partial, kept, {k: v for k, v in facts.items() if k != "init_facts"})
    calls.clear()
    study.run_study(config, out, progress=lambda m: None)
    assert len(calls) == 3 and np.allclose(np.load(partial)["profiles"], kept)
    rows_table = study.comparison_table(again)
    assert len(rows_table) == 2 and all(len(r) == len(study.TABLE_HEADER) for r in rows_table)
    assert all(cell != "-" for r in rows_table for cell in r[:4])
