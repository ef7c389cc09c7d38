"""The record files ``retrieve --data`` reads and ``--export`` writes: JSON lines, gzipped
JSON lines or one JSON list, counted and sized against free memory before they are
read (a compressed file's expansion bounded as it is inflated).
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lostmid.behaviour.tasks.example import (
    RetrievalExample,
)
from lostmid.errors import UserError
from lostmid.files import parse_json, read_bytes

# -- reading ------------------------------------------------------------------------------


def loads_records(text: str, where: str) -> Any:
    """One JSON document; malformed, nested too deeply or with a key twice in one object
    is one line naming ``where`` (``--data FILE line 3``)."""
    return parse_json(text, where)


GUNZIP_SHARE = 8
"""A ``.gz`` file may decompress to at most 1/GUNZIP_SHARE of the free memory: its records
as Python objects take several times their text."""


def check_text_size(size: int, path: Path, limit: float | None = None) -> None:
    """One line for a ``--data`` text larger than the free memory / :data:`GUNZIP_SHARE`
    (its records, parsed and made prompts, take several times the text: they would not
    fit), the rule :func:`gunzip_within` applies to a compressed file's text."""
    from lostmid.runs.budget import available_memory, gib

    limit = available_memory() / GUNZIP_SHARE if limit is None else limit
    if size > limit:
        raise UserError(
            f"--data {path}: {gib(size)} of text, more than {gib(limit)} (1/{GUNZIP_SHARE} "
            "of the free memory: its records would not fit); give a smaller file, or split it"
        )


def count_records(path: Path) -> int:
    """The records of a ``.jsonl`` file without parsing them (its non-blank lines, read a
    block at a time); 1 for any other file (a ``.json`` list, a compressed file: counted
    when read). The size check's count, a second or so for a million records."""
    path = Path(path)
    if not path.name.endswith(".jsonl"):
        return 1
    count, rest = 0, b""
    try:
        with open(path, "rb") as handle:
            while block := handle.read(1 << 22):
                *lines, rest = (rest + block).split(b"\n")  # rest: a line not ended yet
                count += sum(1 for line in lines if line.strip())
    except OSError:
        return 1  # unreadable: read_records says so in its own line
    return max(1, count + bool(rest.strip()))


def gunzip_within(data: bytes, path: Path, limit: float | None = None) -> bytes:
    """``data`` gunzipped a piece at a time (every member), refused in one line once the
    text passes ``limit`` bytes (default: the free memory / :data:`GUNZIP_SHARE`), so a
    small file that inflates to gigabytes stops before it fills the memory."""
    from lostmid.runs.budget import available_memory, gib

    limit = available_memory() / GUNZIP_SHARE if limit is None else limit
    pieces, size, rest = [], 0, data
    try:
        while rest:
            inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            left = rest
            while left and not inflate.eof:
                piece = inflate.decompress(left, 1 << 22)
                size += len(piece)
                if size > limit:
                    raise UserError(
                        f"--data {path}: decompresses to more than {gib(limit)} (1/"
                        f"{GUNZIP_SHARE} of the free memory: its records would not fit); "
                        "give a smaller file, or split it"
                    )
                pieces.append(piece)
                left = inflate.unconsumed_tail
            if not inflate.eof:
                raise EOFError("the compressed stream ended before its end")
            rest = inflate.unused_data.lstrip(b"\0")  # trailing padding is no member
    except (EOFError, OSError, zlib.error) as err:
        raise UserError(
            f"--data {path}: not a whole gzip file ({' '.join(str(err).split())[:120]}); "
            "it is truncated or damaged: download or export it again"
        ) from None
    return b"".join(pieces)


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a ``.jsonl``, ``.jsonl.gz`` or ``.json`` (a list) file.

    Raises:
        UserError: a missing or unreadable file, a truncated ``.gz``, a line that is not
            a JSON object (malformed, nested too deeply, a key twice), an empty file.
    """
    path = Path(path)
    data = read_bytes(path, option="--data", what="a .jsonl, .jsonl.gz or .json file of records")
    if path.name.endswith(".gz"):
        data = gunzip_within(data, path)
    else:
        check_text_size(len(data), path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"--data {path}: not a text file (not UTF-8)") from None
    if path.name.endswith(".json"):
        records = loads_records(text, f"--data {path}")
        if not isinstance(records, list):
            raise UserError(f"--data {path}: a .json file must hold a list of records")
    else:
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                records.append(loads_records(line, f"--data {path} line {number}"))
    if not records:
        raise UserError(f"--data {path}: no records")
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise UserError(f"--data {path}: record {number} is not a JSON object")
    return records


# -- writing ------------------------------------------------------------------------------


def write_records(
    examples: Sequence[RetrievalExample], path: Path, tokens: Sequence[int] | None = None
) -> Path:
    """Write each example's record (:meth:`RetrievalExample.record`, its field's format),
    one JSON object a line (``.gz``: gzipped), to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        for i, example in enumerate(examples):
            count = None if tokens is None else int(tokens[i])
            f.write(json.dumps(example.record(count), ensure_ascii=False) + "\n")
    return path
