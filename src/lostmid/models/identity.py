"""What a run knows a model by: its content, not the name or path it was typed as.

A run folder is claimed by its resolved configuration (:mod:`lostmid.runs.claim`); a
model given as a path is a promise about bytes that a path does not keep (a fine-tune
written into the same folder, a file replaced). So a run's claim holds each local
model's *content*: the sha256 of a GGUF file, or of a folder's files (every regular
file at its top level but documentation: the weights, the config, the tokenizer's
files, any code the config names), and the path's spelling is normalised (one
resolved, absolute form). A rerun on changed bytes is then another configuration,
refused or recomputed under ``--overwrite`` as a changed option is; the same bytes
resume whatever the path's spelling.

Registry checkpoints (:data:`lostmid.models.CHECKPOINTS`) are pinned by their sha256
(checked at every load) and presets are built from the package's own configs: both
are known by name. A GGUF file whose bytes are a registry checkpoint's is that
checkpoint, whatever its path (:func:`registry_by_sha256`): it gets the checkpoint's
published facts (the twin's initialiser range) as the name does.

Every digest is computed once per version of a file (remembered by path, inode, size
and modification time: :func:`lostmid.models.gguf.checked_sha256`), so a second run
does not read gigabytes again (benchmarks/bench_identity.py).

Torch-free.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lostmid.models.checkpoints import CHECKPOINTS, RegistryCheckpoint
from lostmid.models.gguf import checked_sha256, find_gguf, is_gguf
from lostmid.models.presets import MODEL_PRESETS

NOT_CONTENT = ("readme", "license", "licence", "notice", "citation")
"""Stems of the files of a model folder that are not part of what it computes (any
``*.md`` file too, and hidden files)."""
CONTENT_KEY = "content"
"""The key of a claim (and a run's metadata) that holds its models' digests."""


def registry_by_sha256(sha256: str) -> RegistryCheckpoint | None:
    """The registry checkpoint whose file has these bytes, if any.

    >>> registry_by_sha256(CHECKPOINTS["smollm2-135m"].sha256).name
    'smollm2-135m'
    >>> registry_by_sha256("0" * 64) is None
    True
    """
    for checkpoint in CHECKPOINTS.values():
        if checkpoint.sha256 == sha256:
            return checkpoint
    return None


def _content_files(folder: Path) -> list[Path]:
    """The files of a model folder whose bytes decide what it computes (module doc)."""
    files = []
    for path in sorted(folder.iterdir()):
        name = path.name.lower()
        if name.startswith(".") or name.endswith(".md") or name.split(".")[0] in NOT_CONTENT:
            continue
        if path.is_file():
            files.append(path)
    return files


def folder_sha256(folder: Path) -> str:
    """One sha256 for a folder's content files: of their names and their own digests,
    in name order (a renamed, added, removed or rewritten file changes it)."""
    digest = hashlib.sha256()
    for path in _content_files(folder):
        digest.update(f"{path.name}\0{checked_sha256(path)}\n".encode())
    return digest.hexdigest()


def _hub_folder(name: str) -> Path | None:
    """The cached snapshot folder of a hub id, when it is in the local cache."""
    if "/" not in name or Path(name).expanduser().exists():
        return None
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached (or no hub library): nothing to digest
        return None


def content_of(name: str | None) -> dict[str, Any] | None:
    """How a model (or tokenizer) spec is known: None for a registry checkpoint or a
    preset by name (pinned); else ``{"path", "sha256"}`` (and ``"registry"`` when the
    bytes are a registry checkpoint's) for a local file or folder or a cached hub id;
    None when the spec names nothing local (a loader refuses it in its own words)."""
    if name is None or name in CHECKPOINTS or name in MODEL_PRESETS:
        return None
    path = Path(name).expanduser()
    if not path.exists():
        path = _hub_folder(name) or path
        if not path.exists():
            return None
    resolved = path.resolve()
    if resolved.is_dir():
        found = find_gguf(resolved)
        if found is None:
            return {"path": str(resolved), "sha256": folder_sha256(resolved)}
        resolved = found.resolve()
    if not (resolved.is_file() and (resolved.suffix.lower() == ".gguf" or is_gguf(resolved))):
        return {"path": str(resolved), "sha256": checked_sha256(resolved)}
    sha = checked_sha256(resolved)
    registry = registry_by_sha256(sha)
    return {"path": str(resolved), "sha256": sha} | (
        {"registry": registry.name} if registry else {}
    )


def canonical_name(name: str, content: Mapping[str, Any] | None) -> str:
    """The one spelling of a model in a claim: the registry name when its bytes are a
    registry checkpoint's, the resolved path for any other local model, else as typed.

    >>> canonical_name("smollm2-135m", None)
    'smollm2-135m'
    >>> canonical_name("./m", {"path": "/abs/m", "sha256": "ab"})
    '/abs/m'
    """
    if content is None:
        return name
    return str(content.get("registry") or content["path"])


def identified(record: Mapping[str, Any], names: Iterable[str | None]) -> dict[str, Any]:
    """A run's claim (its resolved configuration, ``record``) with its models known by
    content: every string value that is one of ``names`` (the models and tokenizers the
    run loads, as typed) is replaced by its :func:`canonical_name`, and ``content``
    maps each local one to its sha256 (a registry checkpoint's file by its path is the
    checkpoint by name: pinned, no digest). A record whose models are all pinned by name
    is returned unchanged, so folders claimed before this existed resume."""
    contents = {n: c for n in dict.fromkeys(names) if n and (c := content_of(n)) is not None}
    if not contents:
        return dict(record)
    spelled = {typed: canonical_name(typed, c) for typed, c in contents.items()}

    def swap(value: Any) -> Any:
        if isinstance(value, str):
            return spelled.get(value, value)
        if isinstance(value, list | tuple):
            return [swap(v) for v in value]
        if isinstance(value, Mapping):
            return {k: swap(v) for k, v in value.items()}
        return value

    found = {spelled[t]: c["sha256"] for t, c in contents.items() if "registry" not in c}
    swapped = swap(dict(record))
    return swapped | ({CONTENT_KEY: dict(sorted(found.items()))} if found else {})
