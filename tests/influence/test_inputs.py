"""Inputs: seeded random ids and byte-level corpus windows."""

from __future__ import annotations

import pytest
import torch

from lostmid.errors import UserError
from lostmid.influence import corpus_token_ids, random_token_ids


def test_random_ids_are_seeded_and_in_range() -> None:
    a = random_token_ids(50, 3, 20, seed=1)
    assert a.shape == (3, 20) and a.dtype == torch.long
    assert int(a.min()) >= 0 and int(a.max()) < 50
    assert torch.equal(a, random_token_ids(50, 3, 20, seed=1))
    assert not torch.equal(a, random_token_ids(50, 3, 20, seed=2))


def test_corpus_tokens_are_bytes_mod_vocab(tmp_path) -> None:
    text = "abcdefghij" * 3
    (tmp_path / "a.txt").write_text(text)
    ids = corpus_token_ids(tmp_path / "a.txt", vocab_size=100, samples=4, length=10, seed=0)
    data = [b % 100 for b in text.encode()]
    for row in ids.tolist():
        assert any(row == data[s : s + 10] for s in range(len(data) - 9))


def test_corpus_directory_reads_txt_files(tmp_path) -> None:
    (tmp_path / "one.txt").write_text("x" * 40)
    (tmp_path / "skip.md").write_text("y" * 400)
    ids = corpus_token_ids(tmp_path, vocab_size=256, samples=2, length=30, seed=0)
    assert set(ids.flatten().tolist()) <= {ord("x"), ord("\n")}


def test_corpus_errors(tmp_path) -> None:
    with pytest.raises(UserError, match="no such file or directory"):
        corpus_token_ids(tmp_path / "absent", 256, 1, 8, seed=0)
    with pytest.raises(UserError, match="holds no .txt files"):
        corpus_token_ids(tmp_path, 256, 1, 8, seed=0)
    (tmp_path / "short.txt").write_text("abc")
    with pytest.raises(UserError, match="3 bytes, fewer than --length 8"):
        corpus_token_ids(tmp_path / "short.txt", 256, 1, 8, seed=0)
