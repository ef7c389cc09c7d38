"""The local backend with several jobs: worker processes, each job's result saved by
whichever process computed it, failures (an exception, a dead worker) reported per job,
and the same numbers as the sequential run."""

from __future__ import annotations

import json
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from cli_args import SECTIONS_OFF

from lostmid.runs.backend import Backend
from lostmid.runs.jobs import Job, UnitOutcome, run_jobs
from lostmid.runs.store import StageStore

sys.path.insert(0, str(Path(__file__).parent))
import jobs_helpers  # noqa: E402  (importable by name in the spawned workers too)


def run(jobs: list[Job], out: Path, backend: Backend) -> tuple[dict[str, UnitOutcome], list[str]]:
    outcomes: dict[str, UnitOutcome] = {}
    started: list[str] = []
    run_jobs(
        jobs,
        out,
        backend,
        lambda job, outcome: outcomes.__setitem__(job.name, outcome),
        started=lambda job: started.append(job.name),
    )
    return outcomes, started


def test_worker_processes_compute_save_and_report_each_job(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # for the spawned workers
    jobs = [Job(f"sq{x}", {"x": x}, partial(jobs_helpers.square, x)) for x in range(4)]
    jobs.append(Job("bad", {"x": 9}, partial(jobs_helpers.fail, 9)))
    jobs.append(Job("dead", {"x": 7}, partial(jobs_helpers.die, 7)))
    jobs.append(Job("after", {"x": 5}, partial(jobs_helpers.square, 5)))
    outcomes, started = run(jobs, tmp_path, Backend(jobs=2))
    assert started == [j.name for j in jobs]  # in plan order
    for x in range(4):
        assert outcomes[f"sq{x}"].status == "done" and outcomes[f"sq{x}"].summary["y"] == x * x
        saved = StageStore(tmp_path).load(f"sq{x}", {"x": x})
        assert saved is not None and saved["y"] == x * x  # saved by the worker
    pids = {outcomes[f"sq{x}"].summary["pid"] for x in range(4)}
    # long-lived workers: at most one per concurrent job, none of them this process
    assert 1 <= len(pids) <= 2 and os.getpid() not in pids
    assert outcomes["bad"].status == "failed" and "ValueError: bad input 9" in outcomes["bad"].error
    assert outcomes["dead"].status == "failed"  # a dead worker is reported, never dropped
    # ... and the job after it runs in a worker that is alive
    assert outcomes["after"].status == "done" and outcomes["after"].summary["y"] == 25


@pytest.mark.parametrize("workers", [1, 2])
def test_jobs_of_higher_priority_start_first(tmp_path: Path, monkeypatch, workers: int) -> None:
    """The longest jobs (reproduce's real-checkpoint stages) start before the rest, in
    one process or in workers; plan order among equals."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    priorities = [0, 0, 1, 0, 1]
    jobs = [
        Job(f"sq{x}", {"x": x}, partial(jobs_helpers.square, x), priority=p)
        for x, p in enumerate(priorities)
    ]
    outcomes, started = run(jobs, tmp_path, Backend(jobs=workers))
    assert started == ["sq2", "sq4", "sq0", "sq1", "sq3"]
    assert all(outcomes[f"sq{x}"].summary["y"] == x * x for x in range(5))


def test_a_job_that_does_not_pickle_is_one_line(tmp_path: Path) -> None:
    from lostmid.errors import UserError

    jobs = [Job("a", {}, lambda: 1), Job("b", {}, lambda: 2)]
    with pytest.raises(UserError, match="cannot run in a worker process"):
        run(jobs, tmp_path, Backend(jobs=2))


def _numbers(folder: Path) -> Any:
    """reproduce.json without what depends on when and how the run went."""
    record = json.loads((folder / "reproduce.json").read_text())
    record.pop("metadata")

    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            drop = ("folder", "figures")  # paths under each run's own --out
            return {k: strip(v) for k, v in x.items() if "seconds" not in k and k not in drop}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    return strip(record)


def test_parallel_reproduce_gives_the_sequential_numbers(tmp_path: Path, run_cli) -> None:
    args = ["reproduce", "--models", "tiny-gpt2,tiny-qwen2", "--length", "16", "--seeds", "2"]
    args += [
        "--samples",
        "2",
        *SECTIONS_OFF,
    ]
    code, _, err = run_cli(*args, "--jobs", "1", "--out", tmp_path / "seq")
    assert code == 0, err
    code, _, err = run_cli(*args, "--jobs", "2", "--out", tmp_path / "par")
    assert code == 0, err
    assert _numbers(tmp_path / "par") == _numbers(tmp_path / "seq")
    assert json.loads((tmp_path / "par" / "claims.json").read_text()) == json.loads(
        (tmp_path / "seq" / "claims.json").read_text()
    )
    meta = json.loads((tmp_path / "par" / "reproduce.json").read_text())["metadata"]
    assert meta["backend"]["jobs"] == 2 and len(meta["stages"]["computed"]) == 4


def test_reproduce_starts_its_real_checkpoint_stages_first(tmp_path: Path) -> None:
    """At the default scale the real-checkpoint stages are the longest (330-438 s against
    23-129 s): they get the priority that starts them first, and nothing else does."""
    from lostmid.reproduce.config import ReproduceConfig
    from lostmid.reproduce.run import plan_stages

    plan = plan_stages(ReproduceConfig.at_scale("default"), "cpu", tmp_path)
    first = {s.name for s in plan if s.priority > 0}
    assert first == {
        "checkpoints-default",
        "real-behaviour-default-smollm2-135m",
        "real-behaviour-default-gemma3-270m",
        "real-behaviour-default-smollm2-135m-fixed-order",
        "real-behaviour-default-gemma3-270m-fixed-order",
    }


def test_a_stage_failing_in_a_worker_is_said_when_it_fails(tmp_path: Path) -> None:
    # said as it happens (a run stopped from outside keeps the cause in its log), then
    # named again in the one-line error once the others have finished and been saved
    import io
    import math

    from rich.console import Console

    from lostmid.errors import UserError
    from lostmid.runs.stages import run_stages

    jobs = [
        Job("root-minus-1", {"x": -1.0}, partial(math.sqrt, -1.0)),
        Job("root-9", {"x": 9.0}, partial(math.sqrt, 9.0)),
    ]
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False)
    with pytest.raises(UserError, match="1 of 2 stages failed: root-minus-1"):
        run_stages(jobs, StageStore(tmp_path), Backend(jobs=2), label="roots", console=console)
    assert "stage root-minus-1 failed: ValueError: math domain error" in out.getvalue()
    assert StageStore(tmp_path).load("root-9", {"x": 9.0}) == 3.0


def test_stages_that_ask_for_a_gpu_share_it_one_at_a_time(tmp_path: Path) -> None:
    # started together, each as wide as the cores allow, they ran a GPU out of memory:
    # without --jobs they run one after the other in this process; --jobs still decides
    from lostmid.runs.jobs import Resources
    from lostmid.runs.stages import run_stages

    gpu = Resources(cpus=1.0, gpus=1.0)
    jobs = [Job(f"pid-{i}", {"i": i}, os.getpid, gpu) for i in range(3)]
    got = run_stages(jobs, StageStore(tmp_path / "a"), Backend(), label="pids")
    assert set(got.values()) == {os.getpid()}
    if os.cpu_count() and os.cpu_count() > 1:
        got = run_stages(jobs, StageStore(tmp_path / "b"), Backend(jobs=2), label="pids")
        assert os.getpid() not in set(got.values())


def _interrupt() -> None:
    raise KeyboardInterrupt


def test_an_interrupt_says_what_is_kept_and_how_to_resume(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from lostmid.runs.stages import run_stages

    jobs = [Job("one", {"i": 1}, partial(int, 1)), Job("stop", {"i": 2}, _interrupt)]
    out = io.StringIO()
    console = Console(file=out, width=300, force_terminal=False)
    with pytest.raises(KeyboardInterrupt):
        run_stages(jobs, StageStore(tmp_path / "stages"), Backend(jobs=1), label="x",
                   console=console)  # fmt: skip
    said = " ".join(out.getvalue().split())
    assert "interrupted during stage stop; 1 finished stages are saved in" in said
    assert f"keeps those under {tmp_path}" in said and "run the same command again" in said
    assert StageStore(tmp_path / "stages").load("one", {"i": 1}) == 1


def test_a_stage_in_a_worker_process_sends_its_own_count_to_the_run(tmp_path: Path) -> None:
    """Stages in worker processes (the default on 2 cores) are not silent: each one's
    own bar reaches the driver's display and log, under the command's name."""
    import io

    import items_helpers
    from rich.console import Console

    from lostmid.runs.stages import run_stages

    jobs = [Job(f"n{i}", {"i": i}, partial(items_helpers.counted, 3, 0.4)) for i in range(2)]
    log = io.StringIO()
    done = run_stages(
        jobs, StageStore(tmp_path / "stages"), Backend(jobs=2), label="diagnose",
        console=Console(file=log, width=160),
    )  # fmt: skip
    assert [r["items"] for r in done.values()] == [3, 3]
    text = log.getvalue()
    assert "n0: scoring" in text and "n1: scoring" in text  # each stage's own line
    assert "diagnose:" in text and "retrieve:" not in text


def test_ctrl_c_on_worker_processes_is_one_line_and_no_worker_traceback(tmp_path: Path) -> None:
    """sweep --jobs 2 and diagnose's stages run in worker processes: SIGINT reaches the
    whole process group; the workers ignore it (no KeyboardInterrupt traceback from
    them), the driver stops them and says once what is kept."""
    import subprocess
    import sys

    script = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from functools import partial
from pathlib import Path
import jobs_helpers
from lostmid.runs.backend import Backend
from lostmid.runs.jobs import Job
from lostmid.runs.stages import run_stages
from lostmid.runs.store import StageStore
from lostmid.errors import Interrupted
jobs = [Job(f"j{{x}}", {{"x": x}}, partial(jobs_helpers.interrupt_the_group, x)) for x in range(2)]
try:
    run_stages(jobs, StageStore(Path({str(tmp_path)!r})), Backend(jobs=2), label="x")
except Interrupted:
    sys.exit(130)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        start_new_session=True,  # its own process group: the SIGINT stays inside it
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 130, said
    assert "Traceback" not in said and "KeyboardInterrupt" not in said, said
    assert " ".join(said.split()).count("interrupted") == 1, said
