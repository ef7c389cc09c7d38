"""The run folder: the three ways a command treats a second run into its ``--out``
(refuse, resume by stages, resume a saved state), declared once per command, and every
command's run function holding its folder's lock."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from lostmid.capabilities import CAPABILITIES
from lostmid.errors import UserError
from lostmid.runs.folder import CONTRADICTION, RunFolder
from lostmid.runs.lock import owner

ONCE = RunFolder("demo", writes=("demo.json", "plots"))
STAGES = RunFolder("demo", resumes="stages", result="demo.json")
STATE = RunFolder("demo", writes=("demo.json", "resume.pt", "checkpoints"), resumes="state",
                  state="resume.pt")  # fmt: skip


def test_a_one_shot_run_refuses_what_it_would_replace(tmp_path: Path) -> None:
    out = tmp_path / "run"
    opened = ONCE.open(out)
    assert out.is_dir() and not opened.resumed and not opened.overwrite
    (out / "plots").mkdir()  # an empty folder it writes holds nothing yet
    ONCE.open(out)
    (out / "plots" / "a.png").write_bytes(b"png")
    with pytest.raises(UserError, match="plots already exists; pass --overwrite"):
        ONCE.open(out)
    (out / "other.txt").write_text("not ours")  # files it does not write are not its concern
    assert ONCE.open(out, overwrite=True).overwrite


def test_a_file_as_out_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    for folder in (ONCE, STAGES, STATE):
        with pytest.raises(UserError, match="is a file; give a directory"):
            folder.open(path, {"a": 1})


def test_a_stage_run_resumes_the_same_configuration_and_refuses_another(tmp_path: Path) -> None:
    first = STAGES.open(tmp_path, {"steps": 4})
    assert not first.resumed
    first.stages().run("one", {"x": 1}, lambda: {"y": 2})
    again = STAGES.open(tmp_path, {"steps": 4})
    assert again.resumed
    assert again.stages().run("one", {"x": 1}, lambda: 1 / 0) == {"y": 2}  # reused
    with pytest.raises(UserError, match=r"another configuration \(steps: 4 there, 8 now\)"):
        STAGES.open(tmp_path, {"steps": 8})
    replaced = STAGES.open(tmp_path, {"steps": 8}, overwrite=True)
    assert replaced.stages().run("one", {"x": 1}, lambda: {"y": 3}) == {"y": 3}  # fresh


def test_a_stage_store_is_made_only_when_asked(tmp_path: Path) -> None:
    opened = STAGES.open(tmp_path, {"a": 1})
    assert not (tmp_path / "stages").exists()
    assert opened.stages() is opened.stages()
    assert (tmp_path / "stages").is_dir()


def test_a_saved_state_is_resumed_only_with_resume(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="resume.pt does not exist; run without --resume"):
        STATE.open(tmp_path, resume=True)
    (tmp_path / "demo.json").write_text("{}")  # started, stopped before its first state
    with pytest.raises(UserError, match="before its first saved state; start again with"):
        STATE.open(tmp_path, resume=True)
    (tmp_path / "resume.pt").write_bytes(b"state")
    with pytest.raises(UserError, match="add --resume to the same command to continue it"):
        STATE.open(tmp_path)
    with pytest.raises(UserError, match=CONTRADICTION):
        STATE.open(tmp_path, resume=True, overwrite=True)
    assert STATE.open(tmp_path, resume=True).resumed


def test_overwrite_clears_the_folders_and_state_it_writes_once_asked(tmp_path: Path) -> None:
    (tmp_path / "checkpoints" / "step_1").mkdir(parents=True)
    (tmp_path / "resume.pt").write_bytes(b"state")
    (tmp_path / "demo.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("the user's")
    opened = STATE.open(tmp_path, overwrite=True)
    assert (tmp_path / "resume.pt").exists()  # nothing is removed by the checks
    opened.clear()
    assert not (tmp_path / "checkpoints").exists() and not (tmp_path / "resume.pt").exists()
    assert (tmp_path / "demo.json").exists() and (tmp_path / "notes.txt").exists()
    (tmp_path / "resume.pt").write_bytes(b"state")
    STATE.open(tmp_path, resume=True).clear()  # without --overwrite: nothing
    assert (tmp_path / "resume.pt").exists()


def test_the_metadata_names_the_kind_of_result(tmp_path: Path) -> None:
    kinds = RunFolder("train", kind="train-retrieval")
    meta = kinds.open(tmp_path).metadata({"a": 1}, 3, {"total": 1.0})
    assert meta["command"] == "train-retrieval" and meta["seed"] == 3
    assert meta["config"] == {"a": 1} and meta["timings_s"] == {"total": 1.0}
    assert ONCE.open(tmp_path).metadata({}, None, {})["command"] == "demo"


def test_a_declaration_that_contradicts_itself_is_refused() -> None:
    with pytest.raises(ValueError, match="saved state"):
        RunFolder("x", resumes="state")
    with pytest.raises(ValueError, match="saved state"):
        RunFolder("x", state="resume.pt")


@pytest.mark.parametrize("cap", CAPABILITIES, ids=lambda c: c.name)
def test_every_command_runs_in_its_declared_folder(cap, tmp_path: Path) -> None:
    """Each capability's run function is wrapped by its module's RunFolder (the lock is
    held in the command's name) and opens that folder: no command sets up --out any
    other way."""
    run = cap.run_function()
    assert run is not inspect.unwrap(run), f"{cap.name}: its run function holds no lock"
    module = inspect.getmodule(inspect.unwrap(run))
    folders = [v for v in vars(module).values() if isinstance(v, RunFolder)]
    assert len(folders) == 1, f"{cap.name}: one RunFolder in {module.__name__}"
    folder = folders[0]
    assert folder.command == cap.command
    assert (folder.kind or folder.command) == cap.name
    source = inspect.getsource(inspect.unwrap(run))
    assert "FOLDER.open(" in source or "_check_out(" in source
    # the lock is held in the command's name while the run function runs
    seen = []

    def probe(*_: object, out: Path, **__: object) -> None:
        seen.append(owner(out))

    folder.holds(probe)(out=tmp_path)
    assert seen[0]["command"] == cap.command


# -- a folder belongs to the run that made it -------------------------------------------

OTHER_RUNS = {  # a finished run of another command, as each kind of folder says so
    "a claim (stages)": lambda out: (out / ".lostmid.run.json").write_text(
        '{"command": "diagnose", "config": {"scale": "quick"}}'
    ),
    "a result file": lambda out: (out / "theory.json").write_text(
        '{"schema": "lostmid.theory/1", "metadata": {"command": "theory"}}'
    ),
}


@pytest.mark.parametrize("made_by", list(OTHER_RUNS))
@pytest.mark.parametrize("folder", [ONCE, STAGES, STATE], ids=["once", "stages", "state"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_overwrite_replaces_only_a_run_of_the_same_command(
    tmp_path: Path, made_by: str, folder: RunFolder, overwrite: bool
) -> None:
    out = tmp_path / "run"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "study.json").write_text("{}")  # a name the demo writes too
    OTHER_RUNS[made_by](out)
    other = "diagnose" if "claim" in made_by else "theory"
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    with pytest.raises(UserError) as refused:
        folder.open(out, {"steps": 1}, overwrite=overwrite)
    assert str(refused.value) == (
        f"--out {out} holds a lostmid {other} run, not a demo run; choose another --out "
        "(--overwrite replaces only a demo run)"
    )
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before  # nothing touched


def test_an_out_inside_another_run_is_refused_naming_it(tmp_path: Path, run_cli) -> None:
    from lostmid.runs.lock import lock_out

    run = tmp_path / "diag"
    run.mkdir()
    OTHER_RUNS["a claim (stages)"](run)
    for inside in (run / "stages", run / "real-behaviour" / "x", run / "new"):
        code, _, err = run_cli("theory", "--length", "8", "--out", inside)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"inside the folder of a lostmid diagnose run ({run})" in err
        assert not inside.exists() or not any(inside.iterdir())
    busy = tmp_path / "busy"  # a run that is computing: only its lock says so
    with lock_out(busy, "sweep"):
        code, _, err = run_cli("theory", "--length", "8", "--out", busy / "units" / "u")
    assert code == 2 and "inside the folder of a lostmid sweep run" in err, err
    code, _, err = run_cli("theory", "--length", "8", "--out", tmp_path / "beside")
    assert code == 0, err  # beside it, not inside: runs
