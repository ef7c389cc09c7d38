"""A run knows its model by content (lostmid.models.identity): a model changed in place
is another configuration, a path spelled another way is the same one, and a registry
checkpoint's file is that checkpoint whatever its path."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from lostmid.models import CHECKPOINTS
from lostmid.models.identity import (
    CONTENT_KEY,
    content_of,
    folder_sha256,
    identified,
    registry_by_sha256,
)
from lostmid.models.spec import ModelSpec

Cli = object


def _copy(folder: Path, tmp_path: Path, name: str = "model") -> Path:
    target = tmp_path / name
    shutil.copytree(folder, target)
    return target


def test_a_folder_digest_follows_its_content_not_its_documentation(
    bpe_model_dir: Path, tmp_path: Path
) -> None:
    folder = _copy(bpe_model_dir, tmp_path)
    before = folder_sha256(folder)
    (folder / "README.md").write_text("notes that compute nothing\n")
    (folder / ".hidden").write_text("x")
    assert folder_sha256(folder) == before
    config = json.loads((folder / "config.json").read_text())
    config["rope_theta"] = 1234.0
    (folder / "config.json").write_text(json.dumps(config))
    after_config = folder_sha256(folder)
    assert after_config != before
    (folder / "extra.py").write_text("# code a config may name\n")
    assert folder_sha256(folder) != after_config


def test_the_same_bytes_resume_whatever_the_path_spelling(
    bpe_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _copy(bpe_model_dir, tmp_path)
    monkeypatch.chdir(tmp_path)
    spellings = ["model", "./model", "model/", str(folder), f"{tmp_path}/./model"]
    claims = [identified({"model": s, "seed": 0}, [s]) for s in spellings]
    assert all(c == claims[0] for c in claims)
    assert claims[0]["model"] == str(folder.resolve())
    assert claims[0][CONTENT_KEY] == {str(folder.resolve()): folder_sha256(folder)}


def test_presets_and_registry_names_are_pinned_and_unchanged() -> None:
    record = {"model": "tiny-qwen2", "trained": ["smollm2-135m"], "tokenizer": None}
    assert identified(record, ["tiny-qwen2", "smollm2-135m", None]) == record
    assert content_of("smollm2-135m") is None and content_of("tiny-gpt2") is None
    assert content_of("no/such-model-anywhere") is None  # the loader refuses it itself


def test_a_registry_file_by_its_path_is_the_checkpoint() -> None:
    path = CHECKPOINTS["smollm2-135m"].locate()
    assert registry_by_sha256(CHECKPOINTS["gemma3-270m"].sha256).name == "gemma3-270m"
    content = content_of(str(path))
    assert content is not None and content["registry"] == "smollm2-135m"
    # its claim is the name's: a run by name resumes by path, and the other way round
    by_path = identified({"model": str(path)}, [str(path)])
    assert by_path == {"model": "smollm2-135m"}


def test_the_twin_of_the_registry_file_by_path_is_initialised_as_by_name() -> None:
    """The published initialiser range follows the bytes, not the name typed."""
    from lostmid.models.load import gguf_checkpoint

    path = CHECKPOINTS["smollm2-135m"].locate()
    by_name = gguf_checkpoint("smollm2-135m")
    by_path = gguf_checkpoint(str(path))
    assert by_name is not None and by_path is not None
    assert by_path[1]["preset"] == "smollm2-135m"
    from lostmid.models.load import resolve_config

    assert resolve_config(str(path)).initializer_range == pytest.approx(1 / 24)
    assert resolve_config("smollm2-135m").initializer_range == pytest.approx(1 / 24)


def test_spec_claim_names_the_tokenizer_by_content(bpe_model_dir: Path, tmp_path: Path) -> None:
    folder = _copy(bpe_model_dir, tmp_path)
    spec = ModelSpec("tiny-qwen2", tokenizer=str(folder))
    claim = spec.claim({"model": "tiny-qwen2", "tokenizer": str(folder)})
    assert claim["tokenizer"] == str(folder.resolve()) and list(claim[CONTENT_KEY]) == [
        str(folder.resolve())
    ]


def _rewrite_weights(folder: Path, scale: float) -> None:
    """A fine-tune written into the same folder: new weights, same path."""
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    tensors = load_file(path)
    save_file({k: (v * scale).contiguous() for k, v in tensors.items()}, path)
    os.utime(path, None)


def test_a_model_changed_in_place_is_refused_then_recomputed(
    bpe_model_dir: Path, tmp_path: Path, run_cli
) -> None:
    folder = _copy(bpe_model_dir, tmp_path)
    args = ("retrieve", "--model", folder, "--pairs", "3", "--key-chars", "2",
            "--examples", "2", "--passes", "teacher", "--out", tmp_path / "run")  # fmt: skip
    assert run_cli(*args)[0] == 0
    first = json.loads((tmp_path / "run" / "retrieve.json").read_text())
    _rewrite_weights(folder, 3.0)
    code, _, err = run_cli(*args)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "another configuration (content." in err and "--overwrite" in err
    # nothing of the earlier run is lost to the refusal
    assert json.loads((tmp_path / "run" / "retrieve.json").read_text()) == first
    assert run_cli(*args, "--overwrite")[0] == 0
    redone = json.loads((tmp_path / "run" / "retrieve.json").read_text())
    assert redone["metadata"]["stages"]["reused"] == []
    fresh_args = [a if a != tmp_path / "run" else tmp_path / "fresh" for a in args]
    assert run_cli(*fresh_args)[0] == 0
    fresh = json.loads((tmp_path / "fresh" / "retrieve.json").read_text())
    assert redone["cells"] == fresh["cells"] != first["cells"]
    # the same bytes by another spelling resume
    spelled = [a if a != folder else f"{folder}/" for a in args]
    code, stdout, err = run_cli(*spelled)
    assert code == 0, err


def test_a_study_measures_a_model_changed_in_place_again(tmp_path: Path) -> None:
    from lostmid.pretrained.cells import rows_to_keep

    rows = torch.ones(3, 8).numpy()
    content = {"path": "/m", "sha256": "new"}
    assert (
        rows_to_keep(rows, {"init_facts": {}, "content_sha256": "old"}, "pretrained", content).size
        == 0
    )
    assert rows_to_keep(
        rows, {"init_facts": {}, "content_sha256": "new"}, "pretrained", content
    ).size
    assert rows_to_keep(rows, {"init_facts": {}}, "pretrained", content).size == 0  # unknown
    pinned = {"path": "/r", "sha256": "x", "registry": "smollm2-135m"}
    assert rows_to_keep(rows, {"init_facts": {}}, "pretrained", pinned).size  # by name


def test_a_sweep_unit_knows_its_model_by_content(bpe_model_dir: Path, tmp_path: Path) -> None:
    from lostmid.errors import UserError
    from lostmid.sweep import grid_from_flags
    from lostmid.sweep.run import SweepConfig, run_sweep

    folder = _copy(bpe_model_dir, tmp_path)
    grid = grid_from_flags(
        "measure", models=str(folder), params=["length=16", "samples=2", "probes=1"]
    )
    config = SweepConfig(grids=(grid,))
    first = run_sweep(config, out=tmp_path / "sweep")
    assert first.counts() == {"done": 1, "reused": 0, "failed": 0}
    key = first.units[0].unit.key
    assert run_sweep(config, out=tmp_path / "sweep").counts()["reused"] == 1
    _rewrite_weights(folder, 3.0)
    with pytest.raises(UserError, match="another configuration"):
        run_sweep(config, out=tmp_path / "sweep")
    again = run_sweep(config, out=tmp_path / "sweep", overwrite=True)
    assert again.counts() == {"done": 1, "reused": 0, "failed": 0}
    assert again.units[0].unit.key != key  # the new bytes are a new unit
