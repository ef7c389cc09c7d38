"""lostmid.files: the reader boundary (kinds by schema tag, one line per failure) and the
atomic writers (whole or absent; a full disk is one line and leaves no temporary)."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from lostmid.errors import UserError
from lostmid.files import (
    RESULT_KINDS,
    atomic_directory,
    atomic_write,
    is_disk_full,
    kind_of,
    read_json,
    read_result,
    save_torch,
    schema_of,
    write_text,
)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("kind", sorted(RESULT_KINDS))
def test_each_kind_is_read_by_its_tag_and_refused_elsewhere(kind: str, tmp_path: Path) -> None:
    path = write_text(tmp_path / "r.json", json.dumps({"schema": schema_of(kind), "x": 1}))
    assert read_result(path, kind)["x"] == 1
    other = next(k for k in RESULT_KINDS if k != kind)
    with pytest.raises(UserError) as refused:
        read_result(path, other, option="--in")
    assert str(refused.value).startswith(f"--in {path}: a {kind} result (schema ")
    assert f"not a {other} result" in str(refused.value)


def test_untagged_files_are_known_by_their_command(tmp_path: Path) -> None:
    old = write_text(tmp_path / "old.json", json.dumps({"metadata": {"command": "measure"}}))
    assert read_result(old, "measure") == {"metadata": {"command": "measure"}}
    with pytest.raises(UserError, match="a measure result .written by lostmid measure."):
        read_result(old, "theory")
    bare = write_text(tmp_path / "bare.json", "{}")
    assert kind_of({}) is None and read_result(bare, "theory") == {}


def test_another_version_or_an_unknown_tag_is_refused(tmp_path: Path) -> None:
    newer = write_text(tmp_path / "n.json", json.dumps({"schema": "lostmid.train.dynamics/9"}))
    with pytest.raises(UserError, match="this lostmid reads 'lostmid.train.dynamics/2'"):
        read_result(newer, "training")
    alien = write_text(tmp_path / "a.json", json.dumps({"schema": "peer.results/1"}))
    with pytest.raises(UserError, match="unknown schema 'peer.results/1'"):
        read_result(alien, "theory")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not valid JSON"),
        (b'{"a": [1,', "not valid JSON (Expecting value at line 1)"),
        (b"\xff\xfe\x00", "not a text file (not UTF-8)"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_unreadable_json_is_one_line(data: bytes, message: str, tmp_path: Path) -> None:
    (tmp_path / "f.json").write_bytes(data)
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_json(tmp_path / "f.json", option="--x")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = write_text(tmp_path / "a.json", "old")

    def half_then_fail(tmp: Path) -> None:
        tmp.write_text("half")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        atomic_write(path, half_then_fail)
    assert path.read_text() == "old" and leftovers(tmp_path) == []


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    def no_space(tmp: Path) -> None:
        tmp.write_text("part")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(UserError, match="a.json: no space left on the device; free some"):
        atomic_write(tmp_path / "a.json", no_space)
    assert list(tmp_path.iterdir()) == []


def test_full_disk_is_recognised_in_an_exception_chain() -> None:
    try:
        try:
            raise OSError(errno.EDQUOT, "Disk quota exceeded")
        except OSError as inner:
            raise RuntimeError("writer failed") from inner
    except RuntimeError as outer:
        assert is_disk_full(outer)
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert is_disk_full(RuntimeError("failed: No space left on device (os error 28)"))


def test_written_files_get_the_usual_permissions(tmp_path: Path) -> None:
    import os

    umask = os.umask(0o022)
    os.umask(umask)
    path = write_text(tmp_path / "r.json", "{}")
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_directory_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "step_1"
    with atomic_directory(target) as tmp:
        (tmp / "a").write_text("1")
        assert not target.exists()
    assert (target / "a").read_text() == "1"
    with pytest.raises(RuntimeError), atomic_directory(target) as tmp:
        (tmp / "a").write_text("2")
        raise RuntimeError("killed")
    assert (target / "a").read_text() == "1" and leftovers(tmp_path) == []
    with atomic_directory(target) as tmp:  # a replacement replaces the whole folder
        (tmp / "b").write_text("3")
    assert sorted(p.name for p in target.iterdir()) == ["b"] and leftovers(tmp_path) == []


def test_torch_files_round_trip_and_a_hostile_one_never_runs(tmp_path: Path) -> None:
    import sys

    import torch

    from lostmid.files import load_torch

    state = {"step": 3, "w": torch.arange(4.0)}
    loaded = load_torch(save_torch(state, tmp_path / "s.pt"))
    assert loaded["step"] == 3 and torch.equal(loaded["w"], state["w"])
    sys.path.insert(0, str(Path(__file__).parent / "faults"))
    from hostile import evil_pickle

    marker = tmp_path / "ran"
    (tmp_path / "evil.pt").write_bytes(evil_pickle(marker))
    with pytest.raises(UserError, match="evil.pt: not a readable torch file .weights_only"):
        load_torch(tmp_path / "evil.pt")
    assert not marker.exists()
    (tmp_path / "cut.pt").write_bytes((tmp_path / "s.pt").read_bytes()[:100])
    with pytest.raises(UserError, match="cut.pt: not a readable torch file"):
        load_torch(tmp_path / "cut.pt")


# -- one JSON rule, also for the files lostmid reads back itself ----------------------------

HOSTILE_JSON = {
    "a key twice": '{"a": 1, "a": 2}',
    "200,000 deep": "[" * 200_000 + "]" * 200_000,
    "5,000 digits": "1" + "0" * 5000,
    "cut short": '{"a": ',
}


@pytest.mark.parametrize("text", list(HOSTILE_JSON.values()), ids=list(HOSTILE_JSON))
def test_every_reader_of_its_own_files_treats_hostile_json_as_damaged(
    tmp_path: Path, text: str
) -> None:
    """A cache, a lock or a resumable log lostmid wrote and something else changed: read
    by the one rule (lostmid.files.loads), each is damaged (recomputed, taken over) and
    never a RecursionError or a silent pick of one of two keys."""
    import numpy as np

    from lostmid.behaviour.link.run import read_examples
    from lostmid.files import loads
    from lostmid.models.placement import parse_device_map
    from lostmid.pretrained.cells import read_cell
    from lostmid.runs.lock import LOCK_FILE, owner

    with pytest.raises(ValueError):
        loads(text)
    (tmp_path / LOCK_FILE).write_text(text)
    assert owner(tmp_path) is None
    log = tmp_path / "examples.jsonl"
    log.write_text('{"depth": 0}\n' + text + "\n")
    assert read_examples(log) == [{"depth": 0}]  # the damaged line dropped, to recompute
    cell = tmp_path / "cell.npz"
    np.savez(cell, profiles=np.ones((2, 3)), facts=np.array(text))
    rows, facts = read_cell(cell)
    assert rows.shape == (0, 0) and facts == {}
    with pytest.raises(UserError, match="--device-map"):
        parse_device_map(text)
