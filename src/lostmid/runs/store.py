"""Resumable stages: a long job split into named steps whose results are saved as they
finish, so an interrupted run restarted with the same ``--out`` redoes only what is
missing.

A stage is identified by its name and its configuration; a saved stage is reused only
when the saved configuration equals the requested one (same scale, seeds, models...),
otherwise it is recomputed and replaced. A stage that writes files besides its record
(its ``outputs``) saves each one's SHA-256 with it, and is reused only while every file
is the one it wrote: a file copied from another stage, edited or replaced is said in one
line and the stage recomputed.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lostmid.errors import UserError
from lostmid.files import read_json
from lostmid.runinfo import to_jsonable, write_json


class StageStore:
    """Saves and reuses stage results under ``root/stages/NAME.json``.

    >>> import tempfile
    >>> store = StageStore(Path(tempfile.mkdtemp()))
    >>> store.run("square", {"x": 3}, lambda: {"y": 9})
    {'y': 9}
    >>> store.run("square", {"x": 3}, lambda: 1 / 0)  # reused, not recomputed
    {'y': 9}
    """

    def __init__(
        self, root: Path, *, fresh: bool = False, warn: Callable[[str], None] | None = None
    ) -> None:
        self.dir = root / "stages"
        self.warn = warn or _to_stderr
        self.dir.mkdir(parents=True, exist_ok=True)
        self.fresh = fresh
        self.reused: list[str] = []
        self.computed: list[str] = []
        self.seconds: dict[str, float] = {}  # compute time per stage, reused ones too
        self._saved_seconds: dict[str, float] = {}

    def path(self, name: str) -> Path:
        return self.dir / f"{name}.json"

    def load(self, name: str, config: dict[str, Any], outputs: Sequence[Path] = ()) -> Any | None:
        """The saved result of ``name`` if it was computed with ``config`` and each of
        its ``outputs`` (files the stage wrote besides its record) is still the file it
        wrote, else None (recomputed)."""
        path = self.path(name)
        if self.fresh or not path.is_file():
            return None
        saved = self._read(path)
        if saved is None or saved.get("config") != to_jsonable(config) or "result" not in saved:
            return None
        digests = saved.get("output_sha256")
        for output in outputs:
            if not self.output_intact(name, output):
                return None
            if digests is None:
                continue  # a record saved before digests: read back whole is all we know
            wanted = digests.get(output.name) if isinstance(digests, dict) else None
            if wanted != file_digest(output):
                self.warn(
                    f"{name}: {output} is not the file this stage wrote (replaced, copied "
                    "or edited since); recomputing it"
                )
                return None
        self._saved_seconds[name] = saved.get("seconds", 0.0)
        return saved.get("result")

    def output_intact(self, name: str, output: Path) -> bool:
        """Whether a file stage ``name`` wrote is there and, for JSON, reads back whole;
        a damaged one (truncated, edited) is said in one line and the stage recomputed."""
        if not output.is_file():
            return False
        if output.suffix != ".json":
            return True
        try:
            read_json(output)
        except UserError as err:
            self.warn(f"{name}: {err}; recomputing it")
            return False
        return True

    @staticmethod
    def _read(path: Path) -> dict[str, Any] | None:
        """A stage file as saved, or None when it is damaged (recomputed, never trusted;
        :meth:`run` writes atomically, so only a hand-edited or foreign file is)."""
        try:
            saved = read_json(path)
        except UserError:
            return None
        return saved if isinstance(saved, dict) else None

    def saved_seconds(self, name: str) -> float | None:
        """What the saved result of ``name`` cost when it was computed, if it is saved."""
        saved = self._read(self.path(name)) if self.path(name).is_file() else None
        seconds = None if saved is None else saved.get("seconds")
        if not isinstance(seconds, int | float | str):
            return None
        try:
            return float(seconds)
        except ValueError:
            return None

    def reuse(self, name: str, config: dict[str, Any], outputs: Sequence[Path] = ()) -> Any | None:
        """:meth:`load`, counting a found result as reused (in ``reused`` and ``seconds``)."""
        saved = self.load(name, config, outputs)
        if saved is not None:
            self.reused.append(name)
            self.seconds[name] = float(self._saved_seconds.get(name, 0.0))
        return saved

    def computed_elsewhere(self, name: str, seconds: float | None) -> None:
        """Count stage ``name`` as computed now, by another process that saved it here."""
        self.computed.append(name)
        self.seconds[name] = float(seconds or 0.0)

    def record(self) -> dict[str, Any]:
        """What this run did with its stages, the one layout every command's metadata
        carries under ``"stages"``: names reused and computed, and each one's compute
        seconds (a reused stage: what it cost when it was computed)."""
        return {
            "reused": list(self.reused),
            "computed": list(self.computed),
            "seconds": {name: round(sec, 6) for name, sec in self.seconds.items()},
        }

    def run(
        self,
        name: str,
        config: dict[str, Any],
        compute: Callable[[], Any],
        outputs: Sequence[Path] = (),
    ) -> Any:
        """Return the saved result of stage ``name`` (its ``outputs`` intact) or compute,
        save and return it."""
        saved = self.reuse(name, config, outputs)
        if saved is not None:
            return saved
        start = time.perf_counter()
        result = to_jsonable(compute())
        self.seconds[name] = time.perf_counter() - start
        record = {"config": config, "result": result, "seconds": self.seconds[name]}
        if outputs:
            record["output_sha256"] = {o.name: file_digest(o) for o in outputs if o.is_file()}
        write_json(self.path(name), record)
        self.computed.append(name)
        return result


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in blocks (hex)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _to_stderr(line: str) -> None:
    print(f"note: {line}", file=sys.stderr, flush=True)
