"""lostmid.runs.lock: one holder per --out, counted re-entry, a dead holder's lock taken
over, a bounded wait, and the temporaries of killed writers cleared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lostmid.errors import UserError
from lostmid.runs.lock import LOCK_FILE, holds_out, lock_out, owner, remove_stale_temporaries

HOLD = (
    "import sys, time; from pathlib import Path; from lostmid.runs.lock import lock_out\n"
    "with lock_out(Path(sys.argv[1]), 'measure'):\n"
    "    print('held', flush=True); time.sleep(float(sys.argv[2]))\n"
)


def hold(out: Path, seconds: float) -> subprocess.Popen[bytes]:
    """Another process holding ``out`` for ``seconds`` (returned once it holds it)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out), str(seconds)], stdout=subprocess.DEVNULL
    )
    deadline = time.perf_counter() + 60
    while (owner(out) or {}).get("pid") != proc.pid:
        assert proc.poll() is None and time.perf_counter() < deadline
        time.sleep(0.01)
    return proc


def test_a_held_folder_is_refused_naming_its_holder(tmp_path: Path) -> None:
    other = hold(tmp_path, 30)
    try:
        with pytest.raises(UserError) as refused, lock_out(tmp_path, "theory", wait=0):
            pass
        assert f"is in use by lostmid measure (pid {other.pid}, since " in str(refused.value)
        assert "--wait SECONDS" in str(refused.value)
    finally:
        other.kill()
        other.wait()


def test_waiting_takes_the_lock_when_the_holder_ends(tmp_path: Path) -> None:
    other = hold(tmp_path, 0.5)
    start = time.perf_counter()
    with lock_out(tmp_path, "theory", wait=30):
        assert owner(tmp_path)["pid"] == os.getpid()
        assert other.poll() is not None  # we got it only after it ended
    assert 0.3 < time.perf_counter() - start < 30


def test_a_dead_holder_is_taken_over(tmp_path: Path) -> None:
    other = hold(tmp_path, 30)
    other.kill()  # SIGKILL: its lock file stays, its kernel lock goes
    other.wait()
    assert owner(tmp_path)["pid"] == other.pid
    with lock_out(tmp_path, "theory", wait=0):
        assert owner(tmp_path)["command"] == "theory"
    assert not (tmp_path / LOCK_FILE).exists()


def test_the_same_process_may_lock_a_folder_again(tmp_path: Path) -> None:
    @holds_out("inner")
    def inner(*, out: Path) -> str:
        return owner(out)["command"]

    @holds_out("outer")
    def outer(*, out: Path) -> str:
        return inner(out=out)

    assert outer(out=tmp_path) == "outer"  # counted, not taken twice
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_refused_run_leaves_no_folder_it_created(tmp_path: Path) -> None:
    @holds_out("theory")
    def refused(*, out: Path) -> None:
        raise UserError("bad option")

    with pytest.raises(UserError):
        refused(out=tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(UserError, match="is a file"):
        (tmp_path / "f").write_text("x")
        with lock_out(tmp_path / "f", "theory"):
            pass


def test_temporaries_of_dead_writers_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(dead.stdout)
    (tmp_path / "stages").mkdir()
    stale = tmp_path / "stages" / f".a.json.{pid}.0123abcd.tmp"
    stale_dir = tmp_path / f".step_000010.{pid}.89abcdef.tmp"
    live = tmp_path / f".b.json.{os.getpid()}.0123abcd.tmp"
    other = tmp_path / ".hidden.tmp"
    stale.write_text("half")
    stale_dir.mkdir()
    (stale_dir / "model.safetensors").write_bytes(b"half")
    live.write_text("being written")
    other.write_text("not ours")
    removed = remove_stale_temporaries(tmp_path)
    assert sorted(removed) == sorted([stale, stale_dir])
    assert live.exists() and other.exists() and not stale.exists()
    assert json.dumps(sorted(p.name for p in tmp_path.iterdir()))
