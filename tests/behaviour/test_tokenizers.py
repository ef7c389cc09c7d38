"""Tokenizer resolution: local files, lostmid byte checkpoints, and one-line failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lostmid.behaviour.decoding.tokenizers import (
    ByteTokenizer,
    HFTokenizer,
    load_tokenizer,
    tokenizer_for_model,
    write_byte_marker,
)
from lostmid.errors import UserError


def test_local_bpe_tokenizer_round_trips(bpe_model_dir: Path) -> None:
    tok = load_tokenizer(str(bpe_model_dir))
    text = 'Key: "4f3a"\nCorresponding value: 1234567.'
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert len(ids) < len(text.encode())  # merges were learnt
    assert tokenizer_for_model(str(bpe_model_dir)).encode(text) == ids


def test_byte_tokenizer_is_utf8() -> None:
    tok = load_tokenizer("bytes")
    assert tok.encode("aé") == list("aé".encode())
    assert tok.decode(tok.encode("naïve")) == "naïve"


def test_lostmid_checkpoints_get_the_byte_tokenizer(tmp_path: Path) -> None:
    run = tmp_path / "run"
    step = run / "checkpoints" / "step_000010"
    step.mkdir(parents=True)
    (step / "config.json").write_text("{}")
    with pytest.raises(UserError, match="has no tokenizer"):
        tokenizer_for_model(str(step))
    (run / "dynamics.json").write_text(json.dumps({"schema": "lostmid.train.dynamics/1"}))
    assert isinstance(tokenizer_for_model(str(step)), ByteTokenizer)
    other = tmp_path / "elsewhere"
    other.mkdir()
    write_byte_marker(other, task="kv")
    assert isinstance(load_tokenizer(str(other)), ByteTokenizer)


def test_a_model_without_a_tokenizer_fails_with_one_line(tmp_path: Path) -> None:
    for model in ("tiny-qwen2", str(tmp_path)):
        with pytest.raises(UserError, match="has no tokenizer; pass --tokenizer") as err:
            tokenizer_for_model(model)
        assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="no tokenizer files in that directory"):
        load_tokenizer(str(tmp_path))


def test_a_directory_tokenizer_is_built_once_while_its_files_are_unchanged(
    bpe_model_dir: Path, tmp_path: Path
) -> None:
    import shutil

    folder = tmp_path / "tok"
    shutil.copytree(bpe_model_dir, folder)
    first, again = load_tokenizer(str(folder)), tokenizer_for_model(str(folder))
    assert isinstance(first, HFTokenizer) and isinstance(again, HFTokenizer)
    assert again.tokenizer is first.tokenizer  # the same object: not rebuilt
    # a changed tokenizer file is read again: one more special token in its config
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["additional_special_tokens"] = ["<extra>"]
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    changed = load_tokenizer(str(folder))
    assert isinstance(changed, HFTokenizer) and changed.tokenizer is not first.tokenizer
    assert changed.encode("<extra>") != first.encode("<extra>")
