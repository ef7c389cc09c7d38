"""A study's cells on disk: one ``.npz`` a model, a length and an input kind
(``OUT/profiles/<checkpoint>/L<L>/<kind>/<model>.npz``), a row an input's influence
profile and the facts of the model that made them; written after every input, so a
killed study resumes where it stopped."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.files import loads, write_bytes
from lostmid.models.spec import model_slug


def profiles_path(out: Path, checkpoint: str, length: int, kind: str, model: str) -> Path:
    """Where a cell's profiles are: a registry name as is, any other spec (a folder, a
    .gguf file) as its file-name slug."""
    return out / "profiles" / model_slug(checkpoint) / f"L{length}" / kind / f"{model}.npz"


def read_rows(path: Path) -> np.ndarray:
    return read_cell(path)[0]


def read_cell(path: Path) -> tuple[np.ndarray, dict[str, Any]]:
    """A cell's saved rows (one influence profile an input) and the facts saved with them."""
    if not path.is_file():
        return np.zeros((0, 0)), {}
    try:
        with np.load(path) as data:
            rows = np.asarray(data["profiles"], dtype=np.float64)
            facts = loads(str(data["facts"])) if "facts" in data else {}
    except (OSError, ValueError, KeyError):
        return np.zeros((0, 0)), {}  # damaged: recomputed
    return rows, facts if isinstance(facts, dict) else {}


def write_rows(path: Path, rows: np.ndarray, facts: dict[str, Any]) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, profiles=rows, facts=json.dumps(facts))
    write_bytes(path, buffer.getvalue())


def rows_to_keep(
    rows: np.ndarray,
    facts: dict[str, Any],
    init: str,
    content: dict[str, Any] | None = None,
) -> np.ndarray:
    """Saved rows a resumed study keeps: a twin's only when its facts say which init facts
    built it (twins saved before the published initialiser range was read are rebuilt);
    for a local model (``content``: :func:`lostmid.models.identity.content_of`), only
    rows made from the same bytes (a model changed in place is measured again)."""
    if init == "random" and "init_facts" not in facts:
        return np.zeros((0, 0))
    if content is not None and "registry" not in content:
        if facts.get("content_sha256") != content["sha256"]:
            return np.zeros((0, 0))
    return rows
