"""Two runs on one ``--out`` at once: the second refuses in one line naming the first
(its pid and command), or waits for it when asked; nothing is mixed or lost. A lock
left by a killed run is taken over."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from harness import Run
from hostile import assert_one_line

from lostmid.runs.lock import LOCK_FILE, owner

RunCli = Callable[..., tuple[int, str, str]]
SWEEP = ["sweep", "--task", "theory", "--lengths", "8,16,32,64,128,256", "--param", "layers=2"]


def holding(out: Path, run: Run, timeout: float = 60) -> dict[str, object]:
    """Wait until ``run`` holds the lock of ``out``; its owner record."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        info = owner(out)
        if info is not None and info.get("pid") == run.pid:
            return info
        assert run.poll() is None, "the first run ended before it was seen holding --out"
        time.sleep(0.01)
    raise TimeoutError("the first run never took the lock")


def test_a_second_run_refuses_naming_the_first(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = Run([*SWEEP, "--out", str(out)], tmp_path / "first.log")
    info = holding(out, first)
    assert info["command"] == "sweep"
    code, stdout, err = run_cli(*SWEEP, "--out", out)
    assert_one_line(code, stdout, err, f"--out {out} is in use by lostmid sweep (pid {first.pid}")
    assert first.wait() == 0
    record = json.loads((out / "sweep.json").read_text())
    assert record["complete"] and len(record["units"]) == 6  # the first run was not disturbed
    assert not (out / LOCK_FILE).exists()  # released at its end


def test_a_second_run_that_waits_finds_the_work_done(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = Run([*SWEEP, "--out", str(out)], tmp_path / "first.log")
    holding(out, first)
    code, _, err = run_cli("--wait", "120", *SWEEP, "--out", out)
    assert code == 0, err
    # it waited for the first run's work: all six units reused below. The first process
    # may still be tearing down its interpreter after releasing the lock (a loaded box).
    assert first.wait(timeout=120) == 0
    statuses = [u["status"] for u in json.loads((out / "sweep.json").read_text())["units"]]
    assert statuses == ["reused"] * 6  # nothing computed twice, nothing mixed


def test_a_lock_left_by_a_killed_run_is_taken_over(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = Run([*SWEEP, "--out", str(out)], tmp_path / "first.log")
    holding(out, first)
    assert first.kill()
    assert owner(out)["pid"] == first.pid  # its lock file is still there
    code, _, err = run_cli(*SWEEP, "--out", out)
    assert code == 0, err
    assert not (out / LOCK_FILE).exists()


def test_the_wait_is_bounded(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = Run([*SWEEP, "--out", str(out)], tmp_path / "first.log")
    holding(out, first)
    start = time.perf_counter()
    code, stdout, err = run_cli("--wait", "0.3", *SWEEP, "--out", out)
    waited = time.perf_counter() - start
    assert "LOSTMID_WAIT" not in os.environ  # --wait is this invocation's, not the process's
    assert first.poll() is None  # a sweep of six units outlasts the wait
    assert_one_line(code, stdout, err, "waited 0.3 s", f"pid {first.pid}")
    assert waited >= 0.3
    assert first.wait() == 0
