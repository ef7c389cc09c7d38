"""One run per folder: a rerun into the same ``--out`` resumes only the same run.

A command that resumes from a folder (its stage store, its unit files) would otherwise
let a rerun with other options replace the earlier run's files one by one. Before it
computes anything it calls :func:`claim_out` with its resolved configuration: the first
run writes ``OUT/.lostmid.run.json`` (the command and that configuration); a later run
with the same configuration resumes; one with another configuration, or another
command, is refused in one line naming the first difference, and nothing is touched. A
claim over a folder that holds nothing else (its run was refused before computing)
binds nobody.
``--overwrite`` replaces the claim (the run then recomputes everything). A folder
written before the claim existed is judged by its result file's ``"config"``.

>>> import tempfile
>>> out = Path(tempfile.mkdtemp())
>>> claim_out(out, "demo", {"steps": 4}, overwrite=False)
False
>>> _ = (out / "demo.json").write_text("{}")  # the run computes something
>>> claim_out(out, "demo", {"steps": 4}, overwrite=False)  # the same run: resume
True
>>> claim_out(out, "demo", {"steps": 8}, overwrite=False)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lostmid.errors.UserError: ... holds a demo run with another configuration (steps: 4 there,
8 now); the same options resume it; pass --overwrite to replace it, or choose another --out
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lostmid.errors import UserError
from lostmid.files import read_json
from lostmid.runinfo import to_jsonable, write_json
from lostmid.runs.lock import LOCK_FILE

CLAIM_FILE = ".lostmid.run.json"


def first_difference(old: Any, new: Any, where: str = "") -> str | None:
    """``"steps: 4 there, 8 now"``: the first place two JSON values differ, or None.

    >>> first_difference({"a": [1, 2]}, {"a": [1, 3]})
    'a[1]: 2 there, 3 now'
    """
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            inner = f"{where}.{key}" if where else str(key)
            if key not in old:
                return f"{inner}: absent there, {_short(new[key])} now"
            if key not in new:
                return f"{inner}: {_short(old[key])} there, absent now"
            found = first_difference(old[key], new[key], inner)
            if found:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    if old == new and type(old) is type(new):
        return None
    return f"{where or 'config'}: {_short(old)} there, {_short(new)} now"


def _a(noun: str) -> str:
    """``a remedies``, ``an ablate``."""
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def claim_out(
    out: Path,
    command: str,
    config: Any,
    *,
    overwrite: bool,
    result: str | None = None,
    saved_config: Callable[[dict[str, Any]], Any] | None = None,
    grows: Callable[[Any, Any], bool] | None = None,
) -> bool:
    """Refuse ``out`` when it holds another run; else claim it for this one.

    Call it after every other check of the run and before anything is computed or
    removed. Returns True when ``out`` already held this very run (a rerun resumes).

    Args:
        out: the run folder (created if missing).
        command: the command's name (a folder of ``sweep`` is not one of ``remedies``).
        config: the run's resolved configuration (what decides its results; not where it
            runs): JSON-ready or :func:`~lostmid.runinfo.to_jsonable`.
        overwrite: the user's ``--overwrite``: claim the folder whatever it holds.
        result: the command's result file (``remedies.json``): a folder written before
            the claim file existed is judged by that file's configuration.
        saved_config: that configuration from the result document (default: its
            ``"config"``).
        grows: ``grows(saved, wanted)`` is True when the wanted configuration extends
            the saved one without dropping or changing any of its results (a sweep with
            more units): accepted, and the claim becomes the wanted one.

    Raises:
        UserError: ``out`` holds a run of another command or configuration, or its claim
            file is damaged, and not ``overwrite``.
    """
    out = Path(out)  # a file as ``out`` was refused by the caller (RunFolder.open)
    wanted = {"command": command, "config": to_jsonable(config)}
    path = out / CLAIM_FILE
    refuse_other_owner(out, (command,))
    if not overwrite and _holds_files(out):
        saved = _saved_claim(out, path, command, result, saved_config)
        if saved is not None:
            if saved.get("command") != command:
                raise UserError(
                    f"--out {out} holds a lostmid {saved.get('command')} run, not {_a(command)} "
                    "run; choose another --out"
                )
            difference = first_difference(saved.get("config"), wanted["config"])
            if (
                difference is not None
                and grows is not None
                and grows(saved["config"], wanted["config"])
            ):
                write_json(path, wanted)
                return True
            if difference is not None:
                raise UserError(
                    f"--out {out} holds {_a(command)} run with another configuration "
                    f"({difference}); the same options resume it; pass --overwrite to "
                    "replace it, or choose another --out"
                )
            if not path.is_file():  # an older folder of the same run: claim it now
                write_json(path, wanted)
            return True
    out.mkdir(parents=True, exist_ok=True)
    write_json(path, wanted)
    return False


RESULT_FILES = {
    "theory.json": "theory",
    "measure.json": "measure",
    "compare.json": "compare",
    "score.json": "score",
    "dynamics.json": "train",
    "retrieval.json": "train-retrieval",
}
"""The result files of the commands that write no claim (``resumes="no"`` or ``"state"``),
by the command that writes each: a folder holding one holds that command's run."""

CLEARING_RESULTS = {"dynamics.json": "train", "retrieval.json": "train-retrieval"}
"""The result files of the runs without a claim that clear folders of their own on
``--overwrite`` (``train``'s ``checkpoints/``)."""


def run_owner(folder: Path, results: Mapping[str, str] = RESULT_FILES) -> str | None:
    """The lostmid command whose run ``folder`` holds: its claim's command, the command
    that writes one of its ``results`` files (when the file says so: a file of another
    kind under that name is a misplaced file, refused by its reader by name), or the
    command holding its lock now; None when it holds no run."""
    from lostmid.files import kind_of
    from lostmid.runs.lock import owner

    folder = Path(folder)
    if (folder / CLAIM_FILE).is_file():
        try:
            saved = read_json(folder / CLAIM_FILE)
        except UserError:
            saved = None
        if isinstance(saved, dict) and isinstance(saved.get("command"), str):
            return str(saved["command"])
    for name, command in results.items():
        if not (folder / name).is_file():
            continue
        try:
            document = read_json(folder / name)
        except UserError:
            continue
        if not isinstance(document, dict):
            continue
        metadata = document.get("metadata")
        said = metadata.get("command") if isinstance(metadata, dict) else None
        kind = kind_of(document)
        if said == command or (kind is not None and kind.command == command):
            return command
    holder = owner(folder) if (folder / LOCK_FILE).is_file() else None
    if holder is not None and isinstance(holder.get("command"), str):
        return str(holder["command"])
    return None


def refuse_other_owner(out: Path, commands: tuple[str, ...]) -> None:
    """One line when ``out`` holds a run of a command not in ``commands`` (its own name
    and the kind its results are known by): ``--overwrite`` replaces only a run of the
    same command, never another command's files. A folder that holds nothing but a
    claim (a run refused before it computed) binds nobody."""
    if not _holds_files(Path(out)):
        return
    found = run_owner(out)
    if found is not None and found not in commands:
        raise UserError(
            f"--out {out} holds a lostmid {found} run, not {_a(commands[0])} run; "
            f"choose another --out (--overwrite replaces only {_a(commands[0])} run)"
        )


def refuse_inside_run(out: Path, command: str) -> None:
    """One line when ``out`` lies inside the folder of a run that resumes, replaces or
    clears what is under it (a claimed run: its ``stages/``, its sections' folders; a
    training: its ``checkpoints/``; any run computing now). The folders a run makes for
    its own stages are opened by the run itself, not here. A folder that holds only
    one-shot results (``theory.json``, ``measure.json``) may hold other runs' folders.
    """
    path = Path(out).absolute()
    for folder in path.parents:
        found = run_owner(folder, CLEARING_RESULTS)
        if found is not None:
            raise UserError(
                f"--out {out} is inside the folder of a lostmid {found} run ({folder}); "
                f"choose an --out outside it for {_a(command)} run"
            )


def _holds_files(out: Path) -> bool:
    """Whether ``out`` holds anything a run wrote besides its claim and lock (a claim
    over an empty folder, left by a run refused before it computed, binds nobody)."""
    if not out.is_dir():
        return False
    ignored = {CLAIM_FILE, LOCK_FILE}
    return any(p.name not in ignored and not p.is_dir() for p in out.rglob("*"))


def _saved_claim(
    out: Path,
    path: Path,
    command: str,
    result: str | None,
    saved_config: Callable[[dict[str, Any]], Any] | None,
) -> dict[str, Any] | None:
    """The claim saved in ``out`` (or, for an older folder, made from its result file);
    None for a folder that holds no run."""
    if path.is_file():
        try:
            saved = read_json(path)
        except UserError as err:
            raise UserError(
                f"{err}; it says which run --out {out} holds: pass --overwrite to replace "
                "that run, or choose another --out"
            ) from None
        if not isinstance(saved, dict):
            raise UserError(
                f"{path}: damaged (not a JSON object); pass --overwrite to replace the run "
                f"in --out {out}, or choose another --out"
            )
        return saved
    if result is None or not (out / result).is_file():
        return None
    try:
        document = read_json(out / result)
    except UserError:
        return None  # a damaged result is recomputed by the run itself
    if not isinstance(document, dict):
        return None
    old = saved_config(document) if saved_config is not None else document.get("config")
    return None if old is None else {"command": command, "config": old}
