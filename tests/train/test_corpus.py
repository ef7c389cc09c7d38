from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lostmid.errors import UserError
from lostmid.train.corpus import (
    RandomWindows,
    heldout_windows,
    load_corpus,
    stdlib_documents,
)


def test_split_is_deterministic_and_disjoint(corpus_dir: Path) -> None:
    a = load_corpus(corpus_dir, seed=3, heldout_fraction=0.3, min_bytes=33)
    b = load_corpus(corpus_dir, seed=3, heldout_fraction=0.3, min_bytes=33)
    assert a.heldout_documents == b.heldout_documents
    assert np.array_equal(a.train, b.train)
    assert set(a.heldout_documents).isdisjoint(a.train_documents)
    assert len(a.heldout_documents) >= 1 and len(a.train_documents) >= 1
    assert len(a.heldout_documents) + len(a.train_documents) == 6


def test_single_file_is_split_by_bytes(tmp_path: Path) -> None:
    path = tmp_path / "one.txt"
    path.write_bytes(bytes(range(256)) * 4)
    c = load_corpus(path, seed=0, heldout_fraction=0.25, min_bytes=10)
    assert c.train.size == 768 + 1 and c.heldout.size == 256 + 1  # + the newline byte


def test_stdlib_corpus_is_the_standard_library() -> None:
    docs = stdlib_documents()
    names = [name for name, _ in docs]
    assert names == sorted(names)
    assert "os.py" in names and "json/decoder.py" in names
    assert not any("site-packages" in n or n.startswith("test/") for n in names)


def test_missing_and_empty_corpus(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file or directory"):
        load_corpus(tmp_path / "nope", seed=0, heldout_fraction=0.1, min_bytes=10)
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(UserError, match="corpus is empty"):
        load_corpus(tmp_path, seed=0, heldout_fraction=0.1, min_bytes=10)
    (tmp_path / "short.txt").write_text("x" * 20)
    with pytest.raises(UserError, match="need at least 100"):
        load_corpus(tmp_path / "short.txt", seed=0, heldout_fraction=0.1, min_bytes=100)


def test_sampler_is_a_pure_function_of_step() -> None:
    stream = np.arange(1000, dtype=np.int64).astype(np.uint8)
    sampler = RandomWindows(stream, batch_size=4, context=16, seed=1)
    first = sampler.batch(5)
    sampler.batch(6)
    assert first.shape == (4, 17)
    assert np.array_equal(first.numpy(), sampler.batch(5).numpy())
    assert not np.array_equal(first.numpy(), sampler.batch(6).numpy())
    # each row is a contiguous window of the stream
    assert np.all(np.diff(first.numpy().astype(np.int64), axis=1) % 256 == 1)


def test_heldout_windows_fixed_and_in_range() -> None:
    stream = np.arange(500, dtype=np.int64).astype(np.uint8)
    w = heldout_windows(stream, 8, 32, seed=0)
    assert w.shape == (8, 33)
    assert np.array_equal(w.numpy(), heldout_windows(stream, 8, 32, seed=0).numpy())
