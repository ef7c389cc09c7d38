"""The stages of one command (``reproduce``, ``remedies``) run on a backend, resumably.

:func:`run_stages` is what both commands call with their planned stages as
:class:`~lostmid.runs.jobs.Job` s. ``local`` runs them one after the other in this
process through :meth:`StageStore.run <lostmid.runs.store.StageStore.run>` (an exception
stops the run at once, with its traceback); ``ray`` sends every stage not already in the
store to Ray at once, through the sweep's own machinery
(:func:`~lostmid.runs.jobs.run_jobs`), and waits for all of them: a failed stage is
reported with its one-line error, the others finish and are saved, and the run then
stops with one :class:`~lostmid.errors.UserError` naming the failed stages. Either way a
rerun with the same folder reuses every finished stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from lostmid.errors import UserError
from lostmid.runs.backend import Backend
from lostmid.runs.jobs import Job, UnitOutcome, run_jobs
from lostmid.runs.store import StageStore


def stage_progress(label: str, console: Console | None) -> Progress:
    """A bar over stages: ``label: STAGE``, done/total, elapsed (silent without console)."""
    return Progress(
        TextColumn("[bold]" + escape(label) + "[/]: {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("stages"),
        TimeElapsedColumn(),
        console=console,
        disable=console is None,
        transient=True,
    )


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
        bar = progress.add_task("", total=len(jobs))
        current = ""
        try:
            if backend.name == "local":
                for job in jobs:
                    current = job.name
                    progress.update(bar, description=job.name)
                    results[job.name] = store.run(job.name, dict(job.config), job.compute)
                    progress.advance(bar)
            else:
                _run_on_ray(jobs, store, backend, results, progress, bar)
        except KeyboardInterrupt:
            progress.stop()
            during = f" during stage {current}" if current else ""
            (console or Console(stderr=True)).print(
                f"interrupted{during}; {len(results)} finished stages are saved in "
                f"{store.dir}; run the same command again to resume"
            )
            raise
    return {job.name: results[job.name] for job in jobs}


def _run_on_ray(
    jobs: Sequence[Job],
    store: StageStore,
    backend: Backend,
    results: dict[str, Any],
    progress: Progress,
    bar: Any,
) -> None:
    """Reuse what is saved, run the rest as Ray tasks; one error naming every failure."""
    todo = []
    for job in jobs:
        saved = store.reuse(job.name, dict(job.config))
        if saved is None:
            todo.append(job)
        else:
            results[job.name] = saved
            progress.advance(bar)
    failed: dict[str, str] = {}

    def report(job: Job, outcome: UnitOutcome) -> None:
        if outcome.status == "failed":
            failed[job.name] = outcome.error or "failed"
        else:
            results[job.name] = outcome.summary
            store.computed_elsewhere(job.name, outcome.compute_seconds)
        progress.update(bar, advance=1, description=f"{outcome.status}: {job.name}")

    def warn(why: str) -> None:
        progress.console.print(f"[yellow]warning:[/] {escape(why)}")

    progress.update(bar, description=f"{len(todo)} stages on Ray")
    run_jobs(todo, store.dir.parent, backend, report, noun="stage", warn=warn)
    if failed:
        named = "; ".join(f"{name} ({error})" for name, error in failed.items())
        raise UserError(
            f"{len(failed)} of {len(jobs)} stages failed: {named}; the {len(results)} "
            f"finished stages are saved in {store.dir}: fix the cause and run the same "
            "command again to resume"
        )
