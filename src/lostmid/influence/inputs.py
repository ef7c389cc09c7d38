"""Inputs for measurement: random token ids, or byte-level tokens from a text corpus.

No tokenizer files are needed: a corpus is tokenized byte by byte, token id = byte
value mod vocab_size, so the text's statistics (repetition, structure) reach the model
without downloading anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import torch

from lostmid.errors import UserError

if TYPE_CHECKING:
    from lostmid.models import LoadedModel


def random_token_ids(vocab_size: int, samples: int, length: int, seed: int) -> torch.LongTensor:
    """Token ids drawn uniformly from 0..vocab_size-1, shape (samples, length).

    >>> random_token_ids(256, 2, 5, seed=0).shape
    torch.Size([2, 5])
    """
    if samples < 1 or length < 1:
        raise UserError(f"samples and length must be >= 1, got {samples} and {length}")
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, (samples, length), generator=gen)  # (S, L)


def read_corpus_bytes(path: Path) -> bytes:
    """All bytes of a text file, or of the ``*.txt`` files of a directory (sorted by name)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise UserError(f"--corpus {path}: no such file or directory")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.txt") if p.is_file())
        if not files:
            raise UserError(f"--corpus {path}: the directory holds no .txt files")
        data = b"\n".join(p.read_bytes() for p in files)
    else:
        data = path.read_bytes()
    if not data:
        raise UserError(f"--corpus {path}: empty")
    return data


def corpus_token_ids(
    path: Path, vocab_size: int, samples: int, length: int, seed: int
) -> torch.LongTensor:
    """``samples`` windows of ``length`` byte tokens at seeded random offsets, (samples, length).

    Token id = byte value mod ``vocab_size``. Windows may overlap when the corpus is short.
    """
    if samples < 1 or length < 1:
        raise UserError(f"samples and length must be >= 1, got {samples} and {length}")
    data = read_corpus_bytes(path)
    if len(data) < length:
        raise UserError(
            f"--corpus {path}: {len(data)} bytes, fewer than --length {length}; "
            "give more text or a shorter length"
        )
    tokens = torch.frombuffer(bytearray(data), dtype=torch.uint8).long() % vocab_size  # (N,)
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(data) - length + 1, (samples,), generator=gen)
    return torch.stack([tokens[s : s + length] for s in starts.tolist()])  # (S, L)


def check_fits_model(loaded: LoadedModel, input_ids: torch.Tensor) -> None:
    """Non-empty (samples, length) ids no longer than the model takes, inside its vocabulary.

    Call it after checking that samples and length are positive (an empty tensor has no
    smallest id).
    """
    loaded.check_length(input_ids.shape[1])
    if int(input_ids.min()) < 0 or int(input_ids.max()) >= loaded.vocab_size:
        raise UserError(f"token ids must lie in 0..{loaded.vocab_size - 1} for {loaded.spec}")
