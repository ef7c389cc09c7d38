"""The stages of one command (``reproduce``, ``remedies``) run on a backend, resumably.

:func:`run_stages` is what both commands call with their planned stages as
:class:`~lostmid.runs.jobs.Job` s. ``local`` with one job at a time runs them one
after the other in this process through :meth:`StageStore.run
<lostmid.runs.store.StageStore.run>` (an exception stops the run at once, with its
traceback); ``local`` with several jobs (``--jobs``, default the cores we may use)
runs the stages not already in the store that many at once in worker processes, and
``ray`` sends them to Ray, both through :func:`~lostmid.runs.jobs.run_jobs`: a failed
stage is reported with its one-line error, the others finish and are saved, and the run
then stops with one :class:`~lostmid.errors.UserError` naming the failed stages. Either way a
rerun with the same folder reuses every finished stage.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from lostmid.errors import UserError
from lostmid.runs.backend import Backend
from lostmid.runs.jobs import Job, UnitOutcome, run_jobs, threads_set
from lostmid.runs.progress import progress
from lostmid.runs.store import StageStore


def stage_progress(label: str, console: Console | None) -> Progress:
    """One display for a run's stages: the overall bar (``label``: done/total, elapsed
    and the estimated time left) and, under it, a line per stage running now with its
    own elapsed time (silent without console; plain lines in a log:
    :mod:`lostmid.runs.progress`)."""
    return progress(
        label,
        TextColumn("[bold]" + escape(label) + "[/]: {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[left]}"),
        console=console,
    )


def _left(progress: Progress, bar: Any, started: float) -> None:
    """The overall ETA: the mean time per finished stage times the stages left, divided
    among the stages running at once (rough, and said to be)."""
    task = progress.tasks[bar]
    done, total = task.completed, task.total or 0
    if done <= 0 or total <= done:
        progress.update(bar, left="")
        return
    per_stage = (time.perf_counter() - started) / done
    progress.update(bar, left=f"~{per_stage * (total - done) / 60:.1f} min left")


def run_stages(
    jobs: Sequence[Job],
    store: StageStore,
    backend: Backend,
    *,
    label: str,
    console: Console | None = None,
) -> dict[str, Any]:
    """Each stage's saved record, by stage name in plan order: reused from ``store``
    when saved with the same config, else computed on ``backend`` and saved there.

    ``store`` counts each stage as reused or computed (``store.reused``,
    ``store.computed``, ``store.seconds``) whichever process computed it. On an
    interrupt (Ctrl-C) one line says how many stages are saved and how to resume.
    """
    results: dict[str, Any] = {}
    with stage_progress(label, console) as progress:
        bar = progress.add_task("", total=len(jobs), left="")
        current = ""
        try:
            if backend.name == "local" and backend.local_jobs() == 1:
                started = time.perf_counter()
                for job in jobs:
                    current = job.name
                    progress.update(bar, description=job.name)
                    with threads_set(job.threads):
                        results[job.name] = store.run(
                            job.name, dict(job.config), job.compute, job.outputs
                        )
                    progress.advance(bar)
                    _left(progress, bar, started)
            else:
                _run_elsewhere(jobs, store, backend, results, progress, bar)
        except KeyboardInterrupt:
            progress.stop()
            during = f" during stage {current}" if current else ""
            (console or Console(stderr=True)).print(
                f"interrupted{during}; {len(results)} finished stages are saved in "
                f"{store.dir}; run the same command again to resume"
            )
            raise
    return {job.name: results[job.name] for job in jobs}


def _run_elsewhere(
    jobs: Sequence[Job],
    store: StageStore,
    backend: Backend,
    results: dict[str, Any],
    progress: Progress,
    bar: Any,
) -> None:
    """Reuse what is saved, run the rest in worker processes or as Ray tasks; one error
    naming every failure after the others have finished and been saved."""
    todo = []
    for job in jobs:
        saved = store.reuse(job.name, dict(job.config), job.outputs)
        if saved is None:
            todo.append(job)
        else:
            results[job.name] = saved
            progress.advance(bar)
    failed: dict[str, str] = {}
    lines: dict[str, Any] = {}
    started = time.perf_counter()

    def start(job: Job) -> None:
        lines[job.name] = progress.add_task(f"  running {job.name}", total=None, left="")

    def report(job: Job, outcome: UnitOutcome) -> None:
        if job.name in lines:
            progress.remove_task(lines.pop(job.name))
        if outcome.status == "failed":
            failed[job.name] = outcome.error or "failed"
        else:
            results[job.name] = outcome.summary
            store.computed_elsewhere(job.name, outcome.compute_seconds)
        progress.update(bar, advance=1, description=f"{outcome.status}: {job.name}")
        _left(progress, bar, started)

    def warn(why: str) -> None:
        progress.console.print(f"[yellow]warning:[/] {escape(why)}")

    where = "on Ray" if backend.name == "ray" else f"in {backend.local_jobs()} processes"
    progress.update(bar, description=f"{len(todo)} stages {where}")
    run_jobs(todo, store.dir.parent, backend, report, noun="stage", warn=warn, started=start)
    if failed:
        named = "; ".join(f"{name} ({error})" for name, error in failed.items())
        raise UserError(
            f"{len(failed)} of {len(jobs)} stages failed: {named}; the {len(results)} "
            f"finished stages are saved in {store.dir}: fix the cause and run the same "
            "command again to resume"
        )
