"""Jobs and where they run: one job with its retries, in this process or on Ray.

A :class:`Job` is one named piece of work whose result the stage store keeps: a sweep's
unit, a stage of ``reproduce`` or ``remedies``. Both backends do the same thing per
job, :func:`execute_job`: compute it through the stage store of the run's folder (so its
result is saved the moment it finishes, by whichever process computed it) and return a
:class:`UnitOutcome`. With Ray each job is one Ray task, so its ``compute`` must pickle:
a module-level function, a :func:`functools.partial` of one, or a closure over picklable
values (Ray pickles with cloudpickle). On a cluster of several machines, every node
needs the same lostmid (and Ray) installed, and the run's folder must be on a file
system every node sees; on one machine both hold by themselves.

This is the bottom layer of the run machinery: it knows no capability. ``reproduce``,
``remedies`` and ``sweep`` build their jobs and hand them here.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lostmid.errors import UserError
from lostmid.recordable import fields_record
from lostmid.runs.backend import Backend, import_ray, infeasible, one_line, start_ray
from lostmid.runs.progress import ItemCount, ItemSender, reporting_items
from lostmid.runs.store import StageStore

STATUSES = ("done", "reused", "failed")


@dataclass(frozen=True)
class Resources:
    """What one unit asks of a Ray cluster (ignored by the local backend).

    ``cpus`` also sets the unit's torch threads; ``memory_gb`` reserves memory for
    scheduling (Ray does not cap it). ``None`` fields keep the task's default.
    """

    cpus: float | None = None
    gpus: float | None = None
    memory_gb: float | None = None

    def __post_init__(self) -> None:
        for name in ("cpus", "gpus", "memory_gb"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not value >= 0):
                raise UserError(f"resources {name} must be a number >= 0, got {value!r}")
        if self.cpus is not None and self.cpus == 0:
            raise UserError("resources cpus must be > 0 (fractions such as 0.5 are allowed)")

    def over(self, base: Resources) -> Resources:
        """These resources, falling back to ``base`` where a field is None."""
        return Resources(
            cpus=base.cpus if self.cpus is None else self.cpus,
            gpus=base.gpus if self.gpus is None else self.gpus,
            memory_gb=base.memory_gb if self.memory_gb is None else self.memory_gb,
        )

    def record(self) -> dict[str, float | None]:
        return fields_record(self)


@dataclass(frozen=True)
class Job:
    """One piece of work: the stage ``name`` its result is saved under, the ``config``
    that identifies that result, how to ``compute`` it (no arguments; returns something
    :func:`~lostmid.runinfo.to_jsonable` takes) and what it asks of a Ray cluster."""

    name: str
    config: Mapping[str, Any]
    compute: Callable[[], Any]
    resources: Resources = Resources(cpus=1.0)
    threads: int | None = None
    """Torch threads the job is worth on the local backend (a small model runs as fast
    on one thread as on two, and leaves the other core to another job); None: its share
    of the cores (:meth:`~lostmid.runs.backend.Backend.local_threads`)."""
    outputs: tuple[Path, ...] = ()
    """Files the job writes besides its stage record (``runs/.../retrieval.json``): a
    saved result is reused only while they are there and read back whole."""
    priority: int = 0
    """Jobs of higher priority start first (:func:`dispatch`; plan order among equals):
    the longest ones, so that they do not start last and leave cores idle at the end."""


@dataclass(frozen=True)
class UnitOutcome:
    """What became of one job (a sweep's unit, a stage) in this run.

    ``status``: ``done`` (computed now), ``reused`` (found in the stage store) or
    ``failed`` (``error`` says why, after ``attempts`` tries). ``seconds``: time spent
    on it in this run; ``compute_seconds``: what its result cost when computed.
    ``summary``: the job's result as saved (for a sweep unit, the runner's headline
    numbers, with ``file`` the result file in the unit's folder).
    """

    key: str
    status: str
    seconds: float
    compute_seconds: float | None
    attempts: int
    summary: Any = None
    error: str | None = None
    traceback: str | None = None

    def record(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "seconds": round(self.seconds, 4),
            "compute_seconds": None
            if self.compute_seconds is None
            else round(self.compute_seconds, 4),
            "attempts": self.attempts,
            "summary": self.summary,
            "error": self.error,
            "traceback": self.traceback,
        }


def execute_job(job: Job, out: Path, retries: int) -> UnitOutcome:
    """Compute and store one job; retry an exception up to ``retries`` more times.

    The job is computed even if the store holds it (the caller decided it must be); its
    result replaces the stored one. A :class:`UserError` (bad input: the same on every
    try) is not retried. Never raises for a failure of the job: the outcome carries the
    error.
    """
    start = time.perf_counter()
    store = StageStore(out, fresh=True)
    attempts = 0
    error: BaseException | None = None
    trace = None
    while attempts <= retries:
        attempts += 1
        try:
            summary = store.run(job.name, dict(job.config), job.compute, job.outputs)
        except Exception as err:  # reported in the outcome, never dropped
            error, trace = err, traceback.format_exc()
            if isinstance(err, UserError):
                break
            continue
        return UnitOutcome(
            key=job.name,
            status="done",
            seconds=time.perf_counter() - start,
            compute_seconds=store.seconds.get(job.name),
            attempts=attempts,
            summary=summary,
        )
    assert error is not None
    return UnitOutcome(
        key=job.name,
        status="failed",
        seconds=time.perf_counter() - start,
        compute_seconds=None,
        attempts=attempts,
        error=one_line(error),
        traceback=trace,
    )


Report = Callable[[Job, UnitOutcome], None]


SMALL_MODEL = 1_000_000
"""Parameters below which a model's stage runs on one thread (docs/BENCHMARKS.md,
"threads by work size": two threads buy at most 1.08x there, measured quiet on 2 cores,
and take a core from the others; from 1.6M parameters on they buy 1.3-1.9x)."""


def stage_threads(parameters: int) -> int | None:
    """The torch threads a stage on a model of ``parameters`` is worth: one below
    :data:`SMALL_MODEL`, else None (its share of the cores, :class:`Job`'s default).

    >>> stage_threads(430_000), stage_threads(1_130_000)
    (1, None)
    """
    return 1 if parameters < SMALL_MODEL else None


def set_threads(threads: int) -> None:
    """Torch's intra-op threads in this process."""
    import torch

    torch.set_num_threads(max(1, int(threads)))


@contextmanager
def threads_set(threads: int | None) -> Iterator[None]:
    """Torch's intra-op threads ``threads`` inside (unchanged for None), restored after."""
    if threads is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    set_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _ray_job(job: Job, out: str, retries: int) -> UnitOutcome:
    """The body of a job's Ray task: torch threads = the CPUs the task asked for."""
    set_threads(int(job.resources.cpus or 1))
    return execute_job(job, Path(out), retries)


def die_with_parent(parent: int) -> None:
    """End this worker process when its parent ``parent`` ends, however it ends: a
    ``kill -9`` of lostmid must not leave its workers computing (and writing into the run
    folder) beside the rerun. On Linux the kernel sends SIGKILL on the parent's death
    (``prctl(PR_SET_PDEATHSIG)``); everywhere, a daemon thread checks once a second that
    the parent is still the same process."""
    import os
    import signal
    import sys
    import threading

    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no libc: the thread does it
            pass

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(1.0)

    if os.getppid() != parent:  # it died before we could ask
        os._exit(1)
    threading.Thread(target=watch, name="lostmid-parent-watch", daemon=True).start()


@contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored in this process for the block (in the main thread; elsewhere
    nothing changes): a worker started inside it ignores Ctrl-C from its first
    instruction, so only the driver answers it (it stops the workers, says once what is
    kept and how to resume) and no worker prints a KeyboardInterrupt traceback."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _worker_loop(out: str, retries: int, conn: Any, parent: int | None = None) -> None:
    """The body of a long-lived worker process: it imports the library once and then runs
    the jobs it is sent, one at a time, until it is sent None. Each job is computed and
    saved (the stage store under ``out``), then its outcome is sent back without the
    result (the parent reads that from the store), so the message stays small whatever
    the result's size. The worker ends with ``parent`` (:func:`die_with_parent`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    if parent is not None:
        die_with_parent(parent)
    while True:
        message = conn.recv()
        if message is None:
            break
        job, threads = message
        set_threads(threads)
        with reporting_items(ItemSender(conn.send)):  # the stage's own counts, as it goes
            outcome = execute_job(job, Path(out), retries)
        conn.send(replace(outcome, summary=None))
    conn.close()


Started = Callable[[Job], None]
Progressed = Callable[[Job, ItemCount], None]
"""Told a running job's own count (:class:`~lostmid.runs.progress.ItemCount`), as its
worker process sends it."""


def run_processes(
    jobs: Sequence[Job],
    out: Path,
    retries: int,
    report: Report,
    *,
    workers: int,
    threads: int,
    started: Started | None = None,
    progressed: Progressed | None = None,
) -> None:
    """Run the jobs ``workers`` at once in long-lived worker processes, each job with
    ``threads`` torch threads (fewer when the job asks), in plan order (the next starts as
    one ends); report each as it ends, and pass ``progressed`` the counts of the bars a
    job's work makes without a console, as its worker sends them.

    A worker imports torch, transformers and lostmid once and runs one job after another
    (an interpreter's start and those imports cost seconds a job: docs/BENCHMARKS.md,
    "reproduce"). A worker that dies (killed, out of memory) takes only its job with it:
    that job is reported as failed, a fresh worker takes the next one, the others go on.
    The workers are spawned (no forked torch state), so a job's ``compute`` must pickle,
    as on Ray. On an interrupt the workers are stopped (results are written atomically:
    nothing half-done is ever saved) and the queued jobs never start."""
    import multiprocessing
    import os
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("spawn")
    queue = list(jobs)
    idle: list[tuple[Any, Any]] = []  # (process, connection) waiting for a job
    running: dict[Any, tuple[Any, Any, Job, float]] = {}  # conn -> (process, conn, job, t0)

    def worker() -> tuple[Any, Any]:
        if idle:
            return idle.pop()
        mine, theirs = context.Pipe(duplex=True)
        process = context.Process(
            target=_worker_loop, args=(str(out), retries, theirs, os.getpid()), daemon=True
        )
        with sigint_ignored():  # inherited through exec: quiet from the first import
            process.start()
        theirs.close()
        return process, mine

    def launch() -> None:
        while queue and len(running) < workers:
            job = queue.pop(0)
            process, conn = worker()
            wanted = threads if job.threads is None else min(job.threads, threads)
            try:
                conn.send((job, wanted))
            except Exception as err:  # e.g. a compute that does not pickle
                idle.append((process, conn))
                raise UserError(
                    f"job {job.name} cannot run in a worker process: {one_line(err)}"
                ) from None
            running[conn] = (process, conn, job, time.perf_counter())
            if started is not None:
                started(job)

    def finish(conn: Any) -> None:
        try:
            outcome: UnitOutcome | ItemCount | None = conn.recv()
        except (EOFError, OSError):  # the worker died before it could say anything
            outcome = None
        if isinstance(outcome, ItemCount):  # the job's own count: it is still running
            if progressed is not None:
                progressed(running[conn][2], outcome)
            return
        process, _, job, t0 = running.pop(conn)
        if outcome is None:
            process.join()
            conn.close()
            outcome = UnitOutcome(
                key=job.name,
                status="failed",
                seconds=time.perf_counter() - t0,
                compute_seconds=None,
                attempts=1,
                error=f"its worker process ended with exit code {process.exitcode}",
            )
        else:
            idle.append((process, conn))
            if outcome.status == "done":
                saved = StageStore(out).load(job.name, dict(job.config))
                outcome = replace(outcome, summary=saved)
        report(job, outcome)

    try:
        launch()
        while running:
            for conn in wait(list(running)):
                finish(conn)
            launch()
        for _, conn in idle:  # done: each worker ends its loop
            conn.send(None)
            conn.close()
        for process, _ in idle:
            process.join(timeout=30)
    except BaseException:
        for process, conn in [*idle, *((p, c) for p, c, _, _ in running.values())]:
            process.terminate()
            process.join()
            conn.close()
        raise


def run_ray(jobs: Sequence[Job], out: Path, retries: int, report: Report) -> None:
    """Run every job as a Ray task with its resource request; report each as it ends.

    Needs a connected Ray (:func:`start_ray`). Exceptions inside a job are retried by
    :func:`execute_job`; a lost worker (killed, out of memory) is retried by Ray
    (``max_retries``) and then reported as failed.
    """
    ray = import_ray()
    remote = ray.remote(_ray_job)
    pending: dict[Any, Job] = {}
    for job in jobs:
        res = job.resources
        options: dict[str, Any] = {
            "num_cpus": res.cpus if res.cpus is not None else 1,
            "num_gpus": res.gpus or 0,
            "max_retries": retries,
        }
        if res.memory_gb:
            options["memory"] = int(res.memory_gb * 2**30)
        try:
            ref = remote.options(**options).remote(job, str(out), retries)
        except TypeError as err:  # e.g. a compute that does not pickle
            raise UserError(f"job {job.name} cannot be sent to Ray: {one_line(err)}") from None
        pending[ref] = job
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            job = pending.pop(ref)
            try:
                outcome = ray.get(ref)
            except Exception as err:  # a lost task is reported, never dropped
                outcome = UnitOutcome(
                    key=job.name,
                    status="failed",
                    seconds=0.0,
                    compute_seconds=None,
                    attempts=retries + 1,
                    error=one_line(err),
                    traceback=traceback.format_exc(),
                )
            report(job, outcome)


@contextmanager
def open_backend(
    jobs: Sequence[Job],
    backend: Backend,
    *,
    noun: str = "unit",
    warn: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Ready ``backend`` for ``jobs``: with Ray, connect to ``backend.address`` or start a
    local instance (stopped again on exit, also on an error or interrupt, unless it was
    running before; nothing starts for no jobs). A job the cluster can never hold is an
    error on a local instance (it would wait forever) and a warning (``warn``) on a
    cluster, whose autoscaler may still provide it."""
    if backend.name == "local" or not jobs:
        yield
        return
    ray = import_ray()
    started = start_ray(backend.address)
    try:
        why = infeasible([(j.name, j.resources) for j in jobs], ray.cluster_resources(), noun)
        if why is not None and backend.address is None:
            raise UserError(why)
        if why is not None and warn is not None:
            warn(why)
        yield
    finally:
        if started:
            ray.shutdown()


def dispatch(
    jobs: Sequence[Job],
    out: Path,
    backend: Backend,
    report: Report,
    retries: int = 0,
    started: Started | None = None,
    progressed: Progressed | None = None,
) -> None:
    """:func:`run_ray`, :func:`run_processes` (local, several jobs at once) or one after
    the other in this process, inside :func:`open_backend`; jobs of higher
    :attr:`Job.priority` first, plan order among equals. ``progressed``: a job's own
    counts from a worker process (in this process the stage runner reads them itself)."""
    jobs = sorted(jobs, key=lambda job: -job.priority)  # stable
    if backend.name == "ray":
        run_ray(jobs, out, retries, report)
    elif backend.local_jobs() > 1 and len(jobs) > 1:
        workers = min(backend.local_jobs(), len(jobs))
        run_processes(
            jobs,
            out,
            retries,
            report,
            workers=workers,
            threads=backend.local_threads(),
            started=started,
            progressed=progressed,
        )
    else:
        for job in jobs:
            if started is not None:
                started(job)
            report(job, execute_job(job, out, retries))


def share_the_gpu(jobs: Sequence[Job], backend: Backend) -> Backend:
    """The local backend for ``jobs``: one job at a time when any asks for a GPU and
    ``--jobs`` was not given (the jobs of a run share one device: started together,
    each as wide as the cores allow, they ran the H200 out of memory); else ``backend``.

    >>> gpu = [Job("a", {}, print, Resources(gpus=1.0))]
    >>> share_the_gpu(gpu, Backend()).local_jobs(), share_the_gpu(gpu, Backend(jobs=3)).jobs
    (1, 3)
    """
    if backend.name != "local" or backend.jobs is not None:
        return backend
    if any((job.resources.gpus or 0) > 0 for job in jobs):
        return replace(backend, jobs=1)
    return backend


def run_jobs(
    jobs: Sequence[Job],
    out: Path,
    backend: Backend,
    report: Report,
    *,
    retries: int = 0,
    noun: str = "unit",
    warn: Callable[[str], None] | None = None,
    started: Started | None = None,
    progressed: Progressed | None = None,
) -> None:
    """Compute every job on ``backend`` into the stage store under ``out`` (none is looked
    up there first: the caller decided), reporting each as it ends; Ray is set up and
    stopped by :func:`open_backend`."""
    backend = share_the_gpu(jobs, backend)
    with open_backend(jobs, backend, noun=noun, warn=warn):
        dispatch(jobs, out, backend, report, retries, started, progressed)
