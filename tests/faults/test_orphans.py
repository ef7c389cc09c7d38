"""A worker process dies with lostmid: after a ``kill -9`` of the process that runs the
stages, no worker keeps computing (and writing into the run folder) beside the rerun.
Found by ``bench_faults.py --scale quick``: a killed ``reproduce`` left its two stage
workers running, parent 1, for minutes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

WORK = """
import os, time
from pathlib import Path

def sleeper(marker):
    Path(marker).write_text(str(os.getpid()))
    time.sleep(120)
    return {"slept": True}
"""

DRIVER = """
import sys
from functools import partial
from pathlib import Path
sys.path.insert(0, {folder!r})
import work
from lostmid.runs.jobs import Job, run_processes

if __name__ == "__main__":
    job = Job("sleeper", {{"n": 1}}, partial(work.sleeper, {marker!r}))
    run_processes([job], Path({out!r}), 0, lambda j, o: None, workers=1, threads=1)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by init) is gone for our purpose
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return True
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and kill -9")
def test_a_worker_ends_when_its_parent_is_killed(tmp_path: Path) -> None:
    (tmp_path / "work.py").write_text(textwrap.dedent(WORK))
    marker = tmp_path / "worker.pid"
    driver = tmp_path / "driver.py"
    driver.write_text(
        DRIVER.format(folder=str(tmp_path), marker=str(marker), out=str(tmp_path / "out"))
    )
    parent = subprocess.Popen([sys.executable, str(driver)])
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert parent.poll() is None, "the driver ended before its worker started"
            assert time.monotonic() < deadline, "the worker never started"
            time.sleep(0.2)
        worker = int(marker.read_text())
        assert _alive(worker)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(worker), "the worker outlived its killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
