"""The real-checkpoint study: its three input kinds and its resumable driver (on a tiny
GGUF file standing in for a registry checkpoint)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import lostmid.reproduce.checkpoints as study
from lostmid.behaviour.tokenizers import load_tokenizer
from lostmid.errors import UserError
from lostmid.models import CHECKPOINTS, RegistryCheckpoint

sys.path.insert(0, str(Path(__file__).parents[1] / "models"))
from gguf_files import write_tiny_llama_gguf  # noqa: E402


def test_the_three_input_kinds() -> None:
    tok = load_tokenizer("bytes")
    for kind in study.INPUT_KINDS:
        ids = study.input_ids(kind, tok, 256, 3, 400, seed=4)
        assert ids.shape == (3, 400)
        assert np.array_equal(ids, study.input_ids(kind, tok, 256, 3, 400, seed=4))
        assert not np.array_equal(ids, study.input_ids(kind, tok, 256, 3, 400, seed=5))
    text = study.input_ids("text", tok, 256, 2, 400, seed=0)
    assert tok.decode(text[0].tolist()) in study.prose_text()  # windows of the prose
    records = study.input_ids("records", tok, 256, 2, 400, seed=0)
    prompt = tok.decode(records[1].tolist())
    assert prompt.startswith(study.KV_HEAD)
    key = prompt.rsplit('Key: "', 1)[1].split('"')[0]
    assert prompt.endswith(study.KV_TAIL.format(key=key))
    assert prompt.count(key) == 2  # asked about a key that is in the records


def test_bad_designs_are_refused() -> None:
    with pytest.raises(UserError, match="unknown checkpoint 'gpt5'"):
        study.StudyConfig(checkpoints=("gpt5",))
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
        twins=2, probes=1,
    )  # fmt: skip
    out = tmp_path / "study"
    built = []
    load = study.load_model

    def counted_load(*args, **kwargs):
        built.append(kwargs.get("init"))
        return load(*args, **kwargs)

    monkeypatch.setattr(study, "load_model", counted_load)
    first = study.run_study(config, out, progress=lambda m: None)
    assert set(first) == {"tiny-ckpt/L256/random", "tiny-ckpt/L256/text"}
    assert built == ["pretrained", "random", "random"]  # each model once, for both kinds
    rows = np.load(out / "profiles/tiny-ckpt/L256/random/twin1.npz")["profiles"]
    assert rows.shape == (3, 256)
    # the rows are the cell measured on its own: a fresh twin, the design's inputs and seeds
    twin = load("tiny-ckpt", init="random", seed=1)
    tok = study.tokenizer_for_model("tiny-ckpt")
    ids = study.input_ids("text", tok, twin.vocab_size, 3, 256, config.seed)
    alone = study.influence_profile(twin, ids[2:3], probes=1, seed=config.seed + 2).influence
    text_rows = np.load(out / "profiles/tiny-ckpt/L256/text/twin1.npz")["profiles"]
    np.testing.assert_array_equal(text_rows[2], alone)
    # a killed run: the last model lost its last input; only that input is measured again
    partial = out / "profiles/tiny-ckpt/L256/text/twin1.npz"
    kept = np.load(partial)["profiles"]
    study._write_rows(partial, kept[:2], {})
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
    rows_table = study.comparison_table(again)
    assert len(rows_table) == 2 and all(len(r) == len(study.TABLE_HEADER) for r in rows_table)
    assert all(cell != "-" for r in rows_table for cell in r[:4])


def test_bad_checkpoints_option_is_one_line(run_cli, tmp_path: Path) -> None:
    for value in ("huge", str(tmp_path)):  # not a scale; a folder without study.json
        code, _, err = run_cli(
            "reproduce", "--quick", "--checkpoints", value, "--out", tmp_path / "o"
        )
        assert code == 2 and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1 and f"--checkpoints {value}" in err
    assert not (tmp_path / "o").exists()  # refused before anything was written
