"""Fixtures for the training tests: a micro model and a small, learnable corpus."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from lostmid.train import TrainConfig, preset


def make_text(lines: int = 400) -> str:
    """Deterministic, highly repetitive text: a micro model learns it in a few steps."""
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    return "".join(
        f"def {words[i % 5]}_{i % 7}(x):\n    return x + {i % 3}\n" for i in range(lines)
    )


def write_corpus(folder: Path) -> Path:
    """Six small repetitive documents in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(6):
        (folder / f"doc{k}.txt").write_text(make_text(150 + 10 * k))
    return folder


@pytest.fixture(scope="session")
def corpus_writer() -> Callable[[Path], Path]:
    return write_corpus


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus")


@pytest.fixture
def micro(corpus_dir: Path) -> TrainConfig:
    """2 layers x 32 wide, context 32, 30 steps, on the repetitive corpus."""
    return replace(preset("micro"), corpus=str(corpus_dir), heldout_fraction=0.3)


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """Micro models gain nothing from threads, and on a shared machine oversubscribed
    OpenMP threads make them many times slower; restored after each test."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
