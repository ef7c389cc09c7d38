"""The run folder: what a command's ``--out`` holds and how a run takes it, declared once.

Every command declares one :class:`RunFolder` beside its run function: its name, the
files it writes, and how a second run into the same folder is treated:

* ``resumes="no"``: a one-shot result (``theory``, ``measure``, ``compare``): a run
  refuses to replace the files it writes unless ``--overwrite``;
* ``resumes="stages"``: finished pieces are kept (``retrieve``, ``remedies``,
  ``ablate``, ``sweep``, ``reproduce``): the run claims the folder with its resolved
  configuration (:func:`lostmid.runs.claim.claim_out`), so the same options resume it,
  other options are refused unless ``--overwrite``, and ``stages()`` is its store;
* ``resumes="state"``: a trainer's saved state (``train``): ``--resume`` continues it,
  a plain rerun is refused pointing at ``--resume``, and the two flags contradict.

``@FOLDER.holds`` runs the function holding the folder's lock (:mod:`lostmid.runs.lock`:
one run per folder, the kernel's lock, released however the process ends). Inside it
``FOLDER.open(out, ...)`` makes every check of the folder before anything is computed
and returns an :class:`OpenRun`: the folder, whether it resumes, its stage store and the
metadata block every result carries. That is the whole life of ``--out``; no command
checks or claims its folder any other way.

>>> import tempfile
>>> THEORY = RunFolder("theory", writes=("theory.json",))
>>> out = Path(tempfile.mkdtemp())
>>> THEORY.open(out).resumed
False
>>> _ = (out / "theory.json").write_text("{}")
>>> THEORY.open(out)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lostmid.errors.UserError: .../theory.json already exists; pass --overwrite or choose another --out
>>> THEORY.open(out, overwrite=True).overwrite
True
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

from lostmid.errors import UserError
from lostmid.files import check_out_dir
from lostmid.runinfo import run_metadata
from lostmid.runs.claim import claim_out, refuse_other_owner
from lostmid.runs.lock import holds_out, lock_out
from lostmid.runs.store import StageStore

Resumes = Literal["no", "stages", "state"]
P = ParamSpec("P")
R = TypeVar("R")

CONTRADICTION = "--resume continues a run and --overwrite starts it again; give one"


@dataclass(frozen=True)
class RunFolder:
    """What one command writes into ``--out`` and how a rerun there is treated.

    Attributes:
        command: the command's name (the lock's owner, the claim's, the metadata's).
        writes: the files (and folders) a run writes; with ``resumes="no"`` or
            ``"state"`` a run refuses to replace them unless ``--overwrite``.
        resumes: ``"no"``, ``"stages"`` or ``"state"`` (the module docstring).
        result: ``"stages"``: the result file a folder written before claims existed is
            judged by.
        state: ``"state"``: the file the saved state is in (``resume.pt``).
        kind: the ``metadata.command`` its results are known by, when it is not the
            command's name (``train --task`` writes ``train-retrieval`` results).
    """

    command: str
    writes: tuple[str, ...] = ()
    resumes: Resumes = "no"
    result: str | None = None
    state: str | None = None
    kind: str | None = None

    def __post_init__(self) -> None:
        if (self.resumes == "state") != (self.state is not None):
            raise ValueError(f"{self.command}: a saved state file goes with resumes='state'")

    def holds(self, run: Callable[P, R]) -> Callable[P, R]:
        """Decorate ``run_X(config, *, out, ...)``: it runs holding the lock of ``out``."""
        return holds_out(self.command)(run)

    def lock(self, out: Path) -> AbstractContextManager[Path]:
        """Hold the lock of ``out`` for a ``with`` block (a run whose folder is not its
        ``out`` keyword)."""
        return lock_out(Path(out), self.command)

    def open(
        self,
        out: Path,
        config: Any = None,
        *,
        overwrite: bool = False,
        resume: bool = False,
        saved_config: Callable[[dict[str, Any]], Any] | None = None,
        grows: Callable[[Any, Any], bool] | None = None,
    ) -> OpenRun:
        """Check ``out`` for this run and create it; call it after the run's own checks
        of its options and before anything is computed or removed.

        Args:
            config: ``resumes="stages"``: the resolved configuration that claims the
                folder (what decides the results, not where they are computed).
            resume: ``resumes="state"``: continue the saved run (``--resume``).
            saved_config, grows: ``resumes="stages"``: how the claim of a result file
                is read and which larger configurations extend a saved one
                (:func:`lostmid.runs.claim.claim_out`).

        Raises:
            UserError: ``out`` is a file; it holds files this run would replace (or a
                run of another command or configuration) without ``overwrite``;
                ``--resume`` with ``--overwrite`` or with no saved state.
        """
        out = check_out_dir(Path(out))
        if self.resumes != "stages":  # claim_out checks the claim's command
            refuse_other_owner(out, (self.command, self.kind or self.command))
        if self.resumes == "stages":
            same = claim_out(
                out,
                self.command,
                config,
                overwrite=overwrite,
                result=self.result,
                saved_config=saved_config,
                grows=grows,
            )
            return OpenRun(out, self, overwrite=overwrite, resumed=same)
        if resume:
            if self.resumes != "state":
                raise ValueError(f"{self.command} has no saved state to resume")
            if overwrite:
                raise UserError(CONTRADICTION)
            self._check_saved_state(out)
            return OpenRun(out, self, overwrite=False, resumed=True)
        self._refuse_replacing(out, overwrite)
        out.mkdir(parents=True, exist_ok=True)
        return OpenRun(out, self, overwrite=overwrite, resumed=False)

    def _refuse_replacing(self, out: Path, overwrite: bool) -> None:
        if overwrite:
            return
        if self.state is not None and (out / self.state).is_file():
            raise UserError(
                f"--out {out} holds a run with its saved state ({self.state}): add --resume "
                "to the same command to continue it, or pass --overwrite to start again "
                "(discarding it)"
            )
        existing = [name for name in self.writes if _holds(out / name)]
        if existing:
            raise UserError(
                f"{out / existing[0]} already exists; pass --overwrite or choose another --out"
            )

    def _check_saved_state(self, out: Path) -> None:
        assert self.state is not None
        if (out / self.state).is_file():
            return
        started = any(_holds(out / name) for name in self.writes if name != self.state)
        why = "; the run stopped before its first saved state" if started else ""
        fix = "start again with --overwrite" if started else "run without --resume"
        raise UserError(f"cannot resume: {out / self.state} does not exist{why}; {fix}")


def _holds(path: Path) -> bool:
    """Whether ``path`` holds something a run wrote: a file, or a folder with anything
    in it (an empty one, left by a run stopped before it wrote there, holds nothing)."""
    if path.is_dir():
        return any(path.iterdir())
    return path.exists()


@dataclass
class OpenRun:
    """A run's folder once :meth:`RunFolder.open` has checked it.

    Attributes:
        path: the folder.
        folder: its declaration.
        overwrite: the run replaces what the folder holds (its stages are recomputed).
        resumed: the folder held this very run (stages) or its saved state (``--resume``).
    """

    path: Path
    folder: RunFolder
    overwrite: bool = False
    resumed: bool = False
    _store: StageStore | None = field(default=None, repr=False)

    def clear(self) -> None:
        """What ``--overwrite`` discards before the run writes again (the folders it
        writes and its saved state; its files are replaced as they are written): call it
        once every check of the run has passed, so a refused run keeps the earlier one
        whole. Nothing without ``overwrite``."""
        if not self.overwrite:
            return
        for name in self.folder.writes:
            if (self.path / name).is_dir():
                shutil.rmtree(self.path / name, ignore_errors=True)
        if self.folder.state is not None:
            (self.path / self.folder.state).unlink(missing_ok=True)

    def stages(self) -> StageStore:
        """The folder's stage store (``stages/``), made at the first call: a run that
        stops before computing anything leaves no ``stages/`` behind."""
        if self._store is None:
            self._store = StageStore(self.path, fresh=self.overwrite)
        return self._store

    def metadata(
        self, config: Mapping[str, Any], seed: int | None, timings: Mapping[str, float]
    ) -> dict[str, Any]:
        """The block every result file carries (:func:`lostmid.runinfo.run_metadata`),
        in this command's name."""
        return run_metadata(self.folder.kind or self.folder.command, config, seed, timings)
