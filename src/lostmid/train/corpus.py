"""Corpus and byte tokenizer: the default corpus is the Python standard library itself.

Token ids are bytes (0..255): ``encode(text) = list(text.encode("utf-8"))``. Documents
are concatenated, each followed by one newline byte, into a train stream and a held-out
stream. The split is by document and deterministic: document ``name`` is held out when

    int(sha256(f"{seed}:{name}"))[:8 bytes] / 2^64 < heldout_fraction,

so the same seed and corpus always give the same split, independent of file order.
A corpus of one document is split by bytes instead (the last ``heldout_fraction``).
"""

from __future__ import annotations

import hashlib
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from lostmid.errors import UserError
from lostmid.files import read_bytes

STDLIB = "stdlib"
_SKIP_DIRS = frozenset({"site-packages", "dist-packages", "test", "tests", "idle_test"})


def encode(text: str) -> np.ndarray:
    """UTF-8 bytes of ``text`` as token ids (uint8).

    >>> encode("hé").tolist()
    [104, 195, 169]
    """
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()


@dataclass(frozen=True)
class Corpus:
    """Train and held-out byte streams plus where they came from.

    Attributes:
        train: uint8 token stream of the training documents.
        heldout: uint8 token stream of the held-out documents.
        source: ``stdlib`` or the path given.
        train_documents, heldout_documents: document names (relative paths).
    """

    train: np.ndarray
    heldout: np.ndarray
    source: str
    train_documents: tuple[str, ...]
    heldout_documents: tuple[str, ...]

    def record(self) -> dict[str, object]:
        """The split as written to ``dynamics.json``."""
        return {
            "source": self.source,
            "train_bytes": int(self.train.size),
            "heldout_bytes": int(self.heldout.size),
            "train_documents": len(self.train_documents),
            "heldout_documents": len(self.heldout_documents),
            "heldout_names": list(self.heldout_documents),
        }


def stdlib_documents() -> list[tuple[str, bytes]]:
    """The ``*.py`` sources of the running interpreter's standard library, sorted by path.

    Third-party packages (``site-packages``) and the stdlib's own test suites are left out.
    """
    root = Path(sysconfig.get_paths()["stdlib"])
    docs = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if _SKIP_DIRS & set(rel.parts[:-1]) or "__pycache__" in rel.parts:
            continue
        docs.append((rel.as_posix(), path.read_bytes()))
    return docs


def path_documents(path: Path) -> list[tuple[str, bytes]]:
    """A text file, or every non-hidden file under a directory (sorted), as documents.

    Files containing a NUL byte are taken for binaries and skipped.
    """
    if not path.exists():
        raise UserError(f"--corpus {path}: no such file or directory")
    if not path.is_dir():  # a file; a FIFO or device is refused by read_bytes
        return [(path.name, read_bytes(path, option="--corpus"))]
    docs = []
    for file in sorted(path.rglob("*")):
        rel = file.relative_to(path)
        if not file.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        data = read_bytes(file, option="--corpus")
        if b"\0" not in data:
            docs.append((rel.as_posix(), data))
    return docs


def load_corpus(
    source: str | Path | None,
    *,
    seed: int,
    heldout_fraction: float,
    min_bytes: int,
) -> Corpus:
    """Load and split a corpus; ``None`` or ``"stdlib"`` is the standard library.

    Args:
        source: path of a text file or directory, or None for the stdlib.
        seed: picks the held-out documents (see the module docstring).
        heldout_fraction: expected fraction of documents held out.
        min_bytes: each stream must hold at least this many bytes (one window + 1).

    Raises:
        UserError: missing path, empty corpus, or too little text for one window.
    """
    if source is None or str(source) == STDLIB:
        docs, label = stdlib_documents(), STDLIB
    else:
        docs, label = path_documents(Path(source)), str(source)
    docs = [(name, data) for name, data in docs if data]
    if not docs:
        raise UserError(f"--corpus {label}: the corpus is empty (no non-empty text files)")
    if len(docs) == 1:
        name, data = docs[0]
        cut = int(len(data) * (1 - heldout_fraction))
        train, heldout = _stream([data[:cut]]), _stream([data[cut:]])
        train_names: tuple[str, ...] = (name,)
        heldout_names: tuple[str, ...] = (name,)
    else:
        scores = [_hash_fraction(seed, name) for name, _ in docs]
        held = [s < heldout_fraction for s in scores]
        if not any(held):  # always hold out at least one document
            held[int(np.argmin(scores))] = True
        if all(held):
            held[int(np.argmax(scores))] = False
        train = _stream([d for (_, d), h in zip(docs, held, strict=True) if not h])
        heldout = _stream([d for (_, d), h in zip(docs, held, strict=True) if h])
        train_names = tuple(n for (n, _), h in zip(docs, held, strict=True) if not h)
        heldout_names = tuple(n for (n, _), h in zip(docs, held, strict=True) if h)
    for stream, what in ((train, "training"), (heldout, "held-out")):
        if stream.size < min_bytes:
            raise UserError(
                f"--corpus {label}: the {what} split has {stream.size} bytes, need at least "
                f"{min_bytes} (one window of context + 1); give more text"
            )
    return Corpus(train, heldout, label, train_names, heldout_names)


def _hash_fraction(seed: int, name: str) -> float:
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _stream(docs: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(d + b"\n" for d in docs), dtype=np.uint8).copy()


# -- samplers ----------------------------------------------------------------------------


class BatchSampler(Protocol):
    """The data plug-in point: the batch of training step ``step``.

    Returns a LongTensor (batch, context + 1): inputs are ``[:, :-1]``, targets
    ``[:, 1:]``. A sampler must be a pure function of ``step`` (and its own fixed
    state): the loop asks for the batch of a step, never "the next batch", so resuming
    at any step reproduces the uninterrupted run, and the learning signal can look at
    the batches of the coming steps without disturbing training.
    """

    def batch(self, step: int) -> torch.Tensor: ...


@dataclass(frozen=True)
class RandomWindows:
    """Uniformly random windows of ``context + 1`` bytes from ``stream``.

    Window starts for step s come from ``numpy.random.default_rng([seed, s])``.
    """

    stream: np.ndarray
    batch_size: int
    context: int
    seed: int

    def batch(self, step: int) -> torch.Tensor:
        rng = np.random.default_rng([self.seed, step])
        starts = rng.integers(0, self.stream.size - self.context, size=self.batch_size)
        return windows(self.stream, starts, self.context + 1)


def windows(stream: np.ndarray, starts: np.ndarray, width: int) -> torch.Tensor:
    """Rows ``stream[s : s + width]`` for each start, as a LongTensor (len(starts), width)."""
    index = np.asarray(starts)[:, None] + np.arange(width)[None, :]
    return torch.from_numpy(stream[index].astype(np.int64))


def heldout_windows(stream: np.ndarray, count: int, context: int, seed: int) -> torch.Tensor:
    """``count`` fixed held-out windows (count, context + 1), evenly spaced over the stream.

    Evenly spaced (not random) so that every checkpoint is measured on the same text
    and the windows cover all held-out documents; ``seed`` only shifts the grid.
    """
    span = stream.size - context - 1
    offset = int(np.random.default_rng([seed, 7]).integers(0, max(span // count, 1)))
    starts = (offset + np.linspace(0, span, count, endpoint=False).astype(np.int64)) % (span + 1)
    return windows(stream, starts, context + 1)
