"""GGUF checkpoints: checked, dequantised once, then read as a plain model directory.

A ``.gguf`` file (llama.cpp's format) is read through transformers' GGUF reader, which
dequantises every tensor to float32 and rebuilds the config, the tokenizer and its chat
template from the file's metadata. That costs tens of seconds (17-70 s for the two
registry checkpoints), so it is paid once: the float weights, config and tokenizer are
saved as a plain Hugging Face directory in the cache, keyed by the file's sha256
(:func:`dequantised_dir`), and every later load is a safetensors read.

Before transformers sees a file, :func:`inspect_gguf` checks it with the ``gguf``
package's reader (a memory map; nothing in the file is executed): the magic, a header
and tensor table that fit inside the file, an architecture the reader knows and
lostmid has an adapter for, and a size that fits in memory once dequantised. Each
failure is one line (:class:`lostmid.errors.UserError`).

The cache lives in ``$LOSTMID_CACHE`` (default ``~/.cache/lostmid``):
``gguf/<sha256[:16]>/`` holds ``config.json``, ``model.safetensors``, the tokenizer
files and ``lostmid_gguf.json`` (the file's facts, written last: a folder without it is
incomplete and rebuilt).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lostmid.errors import UserError
from lostmid.files import (
    atomic_directory,
    cache_root,
    disk_full_error,
    is_disk_full,
    loads,
    quiet_transformers,
    remove_leftovers,
    write_text,
)
from lostmid.runs.lock import file_lock
from lostmid.runs.store import file_digest

GGUF_MAGIC = b"GGUF"
FACTS = "lostmid_gguf.json"
"""The file in a dequantised folder that says what it came from (written last)."""

# GGUF architectures whose transformers model has a lostmid adapter (llama-style, Gemma).
ARCHITECTURES = ("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "gpt2", "phi3")


def _stat_key(path: Path) -> str:
    """A key that changes when the file is replaced or rewritten (path, inode, size, mtime)."""
    info = path.stat()
    raw = f"{path.resolve()}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def _memo_path(path: Path) -> Path:
    return cache_root() / "gguf" / "checked" / f"{_stat_key(path)}.json"


def _recall(path: Path) -> dict[str, Any] | None:
    """What an earlier check of this very file found (None if the file changed since)."""
    try:
        memo = loads(_memo_path(path).read_text())
    except (OSError, ValueError):
        return None
    return memo if isinstance(memo, dict) and isinstance(memo.get("sha256"), str) else None


def _remember(path: Path, facts: dict[str, Any]) -> None:
    try:
        memo = _memo_path(path)
        memo.parent.mkdir(parents=True, exist_ok=True)
        write_text(memo, json.dumps(facts))
    except OSError:
        pass  # a read-only cache only costs the check again


def checked_sha256(path: Path) -> str:
    """The file's sha256, hashed once per version of the file (remembered by path, inode,
    size and modification time in the cache)."""
    path = Path(path)
    memo = _recall(path)
    if memo is not None:
        return str(memo["sha256"])
    digest = file_digest(path)
    _remember(path, {"sha256": digest})
    return digest


@dataclass(frozen=True)
class GGUFFile:
    """The facts of a checked GGUF file, as run metadata records them.

    ``quant_types`` counts tensors by ggml type (``Q4_K``, ``F32``, ...); ``parameters``
    is the number of weights once dequantised (one float each).
    """

    path: Path
    sha256: str
    architecture: str
    name: str | None
    size_bytes: int
    tensors: int
    parameters: int
    quant_types: dict[str, int] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """The JSON record of the file (what every run on it writes)."""
        return {
            "format": "gguf",
            "file": str(self.path),
            "sha256": self.sha256,
            "architecture": self.architecture,
            "name": self.name,
            "size_bytes": self.size_bytes,
            "tensors": self.tensors,
            "parameters": self.parameters,
            "quant_types": dict(sorted(self.quant_types.items())),
        }


def is_gguf(path: Path) -> bool:
    """Whether ``path`` is a regular file that starts with the GGUF magic."""
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == GGUF_MAGIC
    except OSError:
        return False


def _string_field(reader: Any, key: str) -> str | None:
    entry = reader.fields.get(key)
    if entry is None or not entry.data:
        return None
    try:
        raw = entry.parts[entry.data[0]]
        return bytes(raw).decode("utf-8", errors="replace")
    except (IndexError, TypeError, ValueError):
        return None


def _number_field(reader: Any, key: str, kinds: str = "iu") -> Any:
    """A scalar field of one of numpy's ``kinds`` (None when absent or not one number:
    an array per layer, a string)."""
    entry = reader.fields.get(key)
    if entry is None or len(entry.data) != 1:
        return None
    try:
        value = entry.parts[entry.data[0]]
        return value[0].item() if len(value) == 1 and value.dtype.kind in kinds else None
    except (IndexError, TypeError, ValueError, AttributeError):
        return None


def _int_field(reader: Any, key: str) -> int | None:
    value = _number_field(reader, key)
    return None if value is None else int(value)


def check_gguf_shape(reader: Any, architecture: str, named: str) -> None:
    """One line for metadata that disagrees with the file's own tensors or that no model
    can have, before transformers builds anything from it (a block count of 10^9 over a
    2-layer tensor table would otherwise build for hours): the block count against the
    ``blk.N`` tensors, the embedding length against ``token_embd``, attention heads of at
    least one with the key-value heads dividing them, a context of at least one token, a
    norm epsilon and a rotary base that are finite and positive."""
    layers = {
        int(match.group(1))
        for tensor in reader.tensors
        if (match := re.match(r"blk\.(\d+)\.", str(tensor.name)))
    }
    declared = _int_field(reader, f"{architecture}.block_count")
    if declared is not None and (
        declared != len(layers) or max(layers, default=-1) != len(layers) - 1
    ):
        raise UserError(
            f"{named}: its metadata says {declared} layers ({architecture}.block_count) but "
            f"its tensors hold {len(layers)}; a damaged or hand-edited file, copy it again"
        )
    width = _int_field(reader, f"{architecture}.embedding_length")
    embedding = next((t for t in reader.tensors if t.name == "token_embd.weight"), None)
    if width is not None and embedding is not None and width != int(embedding.shape[0]):
        raise UserError(
            f"{named}: its metadata says an embedding length of {width} but token_embd holds "
            f"{int(embedding.shape[0])}; a damaged or hand-edited file, copy it again"
        )
    heads = _int_field(reader, f"{architecture}.attention.head_count")
    kv = _int_field(reader, f"{architecture}.attention.head_count_kv")
    context = _int_field(reader, f"{architecture}.context_length")
    for what, value in (("attention heads", heads), ("key-value heads", kv),
                        ("context length", context)):  # fmt: skip
        if value is not None and value < 1:
            raise UserError(f"{named}: its metadata says {what} = {value}; need >= 1")
    for key in ("attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon",
                "rope.freq_base"):  # fmt: skip
        value = _number_field(reader, f"{architecture}.{key}", "f")
        if value is not None and not (math.isfinite(value) and value > 0):
            raise UserError(
                f"{named}: its metadata says {architecture}.{key} = {value}; need a finite "
                "number > 0 (a damaged or hand-edited file)"
            )
    if heads is not None and kv is not None and heads % kv:
        raise UserError(
            f"{named}: its metadata says {kv} key-value heads, which do not divide its "
            f"{heads} attention heads; a damaged or hand-edited file"
        )


def inspect_gguf(path: Path, *, option: str = "--model") -> GGUFFile:
    """Check a GGUF file without running anything from it, and read its facts.

    Raises:
        UserError: one line for a file that is missing, not GGUF, truncated or damaged,
            of an architecture lostmid cannot serve, or too large to dequantise here.
    """
    path = Path(path).expanduser()
    named = f"{option} {path}"
    if not path.is_file():
        what = "a directory" if path.is_dir() else "no such file"
        raise UserError(f"{named}: {what}; give a .gguf file")
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as err:
        raise UserError(f"{named}: cannot read it ({err.strerror or err})") from None
    if magic != GGUF_MAGIC:
        raise UserError(f"{named}: not a GGUF file (it does not start with 'GGUF')")
    memo = _recall(path)
    if memo is not None and "architecture" in memo:  # this very file, checked before
        return GGUFFile(
            path=path,
            sha256=memo["sha256"],
            architecture=memo["architecture"],
            name=memo.get("name"),
            size_bytes=int(memo["size_bytes"]),
            tensors=int(memo["tensors"]),
            parameters=int(memo["parameters"]),
            quant_types=dict(memo.get("quant_types", {})),
        )
    try:
        from gguf import GGUFReader
    except ImportError:  # pragma: no cover - installed by the set-up
        raise UserError(
            f"{named}: reading GGUF needs the 'gguf' package; run scripts/setup.sh"
        ) from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = GGUFReader(path)
            architecture = _string_field(reader, "general.architecture")
            name = _string_field(reader, "general.name")
            quant = Counter(t.tensor_type.name for t in reader.tensors)
            parameters = sum(int(t.n_elements) for t in reader.tensors)
            stored = sum(int(t.n_bytes) for t in reader.tensors)
            count = len(reader.tensors)
            if architecture in ARCHITECTURES:
                check_gguf_shape(reader, architecture, named)
    except UserError:
        raise
    except (ValueError, IndexError, KeyError, TypeError, OverflowError, OSError) as err:
        first = str(err).strip().splitlines()[0][:160] if str(err).strip() else ""
        raise UserError(
            f"{named}: a damaged or truncated GGUF file ({type(err).__name__}: {first}); "
            "copy it again"
        ) from None
    except MemoryError:
        raise UserError(f"{named}: its header describes more than fits in memory") from None
    if stored > size:
        raise UserError(
            f"{named}: its tensors claim {stored} bytes but the file has {size}: truncated"
        )
    if architecture is None:
        raise UserError(f"{named}: no general.architecture in its metadata; not a model file")
    if architecture not in ARCHITECTURES:
        raise UserError(
            f"{named}: architecture {architecture!r} is not one lostmid reads from GGUF "
            f"({', '.join(ARCHITECTURES)}); convert it to a Hugging Face directory"
        )
    from lostmid.runs.budget import available_memory, gib

    needed = 4.0 * parameters  # float32 after dequantising, once in memory
    free = available_memory()
    if needed > free:
        raise UserError(
            f"{named}: {parameters:,} weights need {gib(needed)} as float32 to dequantise, "
            f"more than the {gib(free)} free here"
        )
    checked = GGUFFile(
        path=path,
        sha256=checked_sha256(path),
        architecture=architecture,
        name=name,
        size_bytes=size,
        tensors=count,
        parameters=parameters,
        quant_types=dict(quant),
    )
    _remember(path, checked.describe())
    return checked


def find_gguf(folder: Path, *, option: str = "--model") -> Path | None:
    """The one ``.gguf`` file of a folder without ``config.json``, None when there is none.

    Raises:
        UserError: several ``.gguf`` files (which one is meant is not guessed).
    """
    folder = Path(folder)
    if (folder / "config.json").is_file():
        return None
    try:
        found = sorted(p for p in folder.glob("*.gguf") if p.is_file())
    except OSError:
        return None
    if len(found) > 1:
        names = ", ".join(p.name for p in found[:4])
        raise UserError(f"{option} {folder}: several .gguf files ({names}); give one file")
    return found[0] if found else None


def _complete(folder: Path, gguf: GGUFFile) -> bool:
    facts_path = folder / FACTS
    if not facts_path.is_file() or not (folder / "config.json").is_file():
        return False
    try:
        facts = loads(facts_path.read_text())
    except (OSError, ValueError):
        return False
    weights = folder / "model.safetensors"
    return (
        facts.get("sha256") == gguf.sha256
        and weights.is_file()
        and weights.stat().st_size == facts.get("weights_bytes")
    )


def dequantised_folder(sha256: str, *, root: Path | None = None) -> Path:
    """Where the plain model directory of the GGUF file with this sha256 is (or will be):
    ``ROOT/gguf/<sha256[:16]>`` (``lostmid list models`` names it for lm-eval)."""
    return (root or cache_root()) / "gguf" / sha256[:16]


def dequantised_dir(gguf: GGUFFile, *, root: Path | None = None, option: str = "--model") -> Path:
    """The plain model directory of a GGUF file: built on first use, then reused.

    The folder is ``ROOT/gguf/<sha256[:16]>``; it is written under a temporary name and
    renamed when complete, under a lock, so parallel runs build it once and a killed
    build leaves nothing that is read.
    """
    folder = dequantised_folder(gguf.sha256, root=root)
    base = folder.parent
    if _complete(folder, gguf):
        return folder
    try:
        with file_lock(base / f".{gguf.sha256[:16]}.lock"):
            if _complete(folder, gguf):  # built by another process while we waited
                return folder
            remove_leftovers(folder)  # a build killed before it could clean up
            # said at once on the stream progress goes to: a first load takes minutes
            said = f"{gguf.path.name}: dequantising into {folder} (once; later runs reuse it)"
            print(said, flush=True)
            start = time.perf_counter()
            with atomic_directory(folder) as tmp:
                _dequantise_into(gguf, tmp, named=f"{option} {gguf.path}")
            print(f"{gguf.path.name}: dequantised in {time.perf_counter() - start:.0f} s")
    except OSError as err:
        if is_disk_full(err):
            raise disk_full_error(folder, err) from None
        raise UserError(
            f"cache {folder}: cannot write the dequantised weights ({err.strerror or err}); "
            "set LOSTMID_CACHE to a writable folder"
        ) from None
    return folder


def _dequantise_into(gguf: GGUFFile, folder: Path, *, named: str) -> None:
    """Load the GGUF file through transformers (float32) and save it as a plain folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, name = gguf.path.parent, gguf.path.name
    try:
        with quiet_transformers(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = AutoModelForCausalLM.from_pretrained(
                source, gguf_file=name, dtype=torch.float32, local_files_only=True
            )
            tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=name, local_files_only=True)
    except (ValueError, KeyError, TypeError, RuntimeError, OSError, IndexError) as err:
        if isinstance(err, OSError) and is_disk_full(err):
            raise
        first = str(err).strip().splitlines()[0][:160] if str(err).strip() else ""
        raise UserError(
            f"{named}: transformers cannot read this GGUF file ({type(err).__name__}: {first})"
        ) from None
    # A model loaded from GGUF refuses save_pretrained while its quantiser is attached;
    # the weights are plain float32 tensors by now, so the quantisation record goes.
    setattr(model, "hf_quantizer", None)  # noqa: B010 - typed as a module attribute
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.name_or_path = gguf.name or name
    with quiet_transformers():
        model.save_pretrained(folder, safe_serialization=True)
        tokenizer.save_pretrained(folder)
    weights = folder / "model.safetensors"
    facts = {**gguf.describe(), "weights_bytes": weights.stat().st_size}
    (folder / FACTS).write_text(json.dumps(facts, indent=1) + "\n")


def gguf_facts(folder: Path) -> dict[str, Any] | None:
    """The GGUF record of a dequantised folder (None for any other folder)."""
    path = Path(folder) / FACTS
    if not path.is_file():
        return None
    try:
        facts = loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(facts, dict):
        return None
    facts.pop("weights_bytes", None)
    return facts
