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

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from lostmid.errors import Interrupted, UserError
from lostmid.runs.backend import Backend, available_cpus
from lostmid.runs.eta import StageClock, StageCosts
from lostmid.runs.jobs import Job, UnitOutcome, run_jobs, share_the_gpu, threads_set
from lostmid.runs.progress import (
    ItemCount,
    LeftColumn,
    clock_text,
    progress,
    reporting_items,
)
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
        LeftColumn(),
        console=console,
    )


class StageItems:
    """The counts of a stage's own bars (retrieve's examples, a profile's inputs: the
    bars its work makes without a console) as a line under the run's bar: ``label:
    STAGE: what done/total``, elapsed and the time left from its cost per item, in a log
    every :data:`~lostmid.runs.progress.EVERY_S` s like the run's own lines; the run's
    clock reads the stage's share done from it (:meth:`StageClock.items`)."""

    def __init__(self, stage: str, progress: Progress, clock: StageClock) -> None:
        self.stage, self.progress, self.clock = stage, progress, clock
        self.line: Any = None
        self.bar: tuple[int, int] | None = None

    def __call__(self, bar: tuple[int, int], what: str, done: float, total: float | None) -> None:
        if bar != self.bar:  # another bar of the stage (a pilot, then the scoring)
            self.close()
            self.bar = bar
            self.line = self.progress.add_task(
                f"  {self.stage}: {what}", total=total, stage_line=True
            )
        self.progress.update(
            self.line, completed=done, total=total, description=f"  {self.stage}: {what}"
        )
        self.clock.items(self.stage, done, total)

    def close(self) -> None:
        """The stage's line goes (its bar finished, or the stage did)."""
        if self.line is not None:
            self.progress.remove_task(self.line)
            self.line = None


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
    costs = StageCosts()
    backend = share_the_gpu(jobs, backend)
    with stage_progress(label, console) as progress:
        bar = progress.add_task("", total=len(jobs))
        current = ""
        try:
            if backend.name == "local" and backend.local_jobs() == 1:
                todo = _reuse_saved(jobs, store, results, progress, bar)
                clock = _clock(todo, costs, workers=1)
                _announce(progress, bar, clock)
                for job in todo:
                    current = job.name
                    progress.update(bar, description=job.name)
                    clock.start(job.name)
                    items = StageItems(job.name, progress, clock)
                    with threads_set(job.threads), reporting_items(items):
                        results[job.name] = store.run(
                            job.name, dict(job.config), job.compute, job.outputs
                        )
                    items.close()
                    costs.remember(job.name, job.config, store.seconds[job.name])
                    clock.finish(job.name, store.seconds[job.name])
                    progress.advance(bar)
            else:
                _run_elsewhere(jobs, store, backend, results, progress, bar, costs)
        except KeyboardInterrupt as interrupt:
            progress.stop()
            if isinstance(interrupt, Interrupted):  # an inner run has said it
                raise
            during = f" during stage {current}" if current else ""
            (console or Console(stderr=True)).print(
                f"interrupted{during}; {len(results)} finished stages are saved in "
                f"{store.dir}, and a stage that saves its parts as it goes (a study's "
                f"profiles, retrieve's cells, the link's examples) keeps those under "
                f"{store.dir.parent}; run the same command again to resume",
                markup=False,
                highlight=False,
            )
            raise Interrupted() from None
    return {job.name: results[job.name] for job in jobs}


def _run_elsewhere(
    jobs: Sequence[Job],
    store: StageStore,
    backend: Backend,
    results: dict[str, Any],
    progress: Progress,
    bar: Any,
    costs: StageCosts,
) -> None:
    """Reuse what is saved, run the rest in worker processes or as Ray tasks; one error
    naming every failure after the others have finished and been saved."""
    todo = _reuse_saved(jobs, store, results, progress, bar)
    failed: dict[str, str] = {}
    lines: dict[str, Any] = {}
    clock = _clock(todo, costs, workers=min(_workers(backend), max(len(todo), 1)))
    _announce(progress, bar, clock)

    counts: dict[str, StageItems] = {}  # each running stage's own count, from its worker

    def start(job: Job) -> None:
        clock.start(job.name)
        lines[job.name] = progress.add_task(f"  running {job.name}", total=None)
        counts[job.name] = StageItems(job.name, progress, clock)

    def progressed(job: Job, count: ItemCount) -> None:
        if job.name in counts:
            counts[job.name](count.bar, count.what, count.done, count.total)

    def report(job: Job, outcome: UnitOutcome) -> None:
        if job.name in lines:
            progress.remove_task(lines.pop(job.name))
        if job.name in counts:
            counts.pop(job.name).close()
        if outcome.status == "failed":
            failed[job.name] = outcome.error or "failed"
            clock.drop(job.name)
            # said now, not only at the end: a run stopped from outside keeps the cause
            warn(f"stage {job.name} failed: {failed[job.name]} (the others go on)")
        else:
            results[job.name] = outcome.summary
            store.computed_elsewhere(job.name, outcome.compute_seconds)
            if outcome.status == "done" and outcome.compute_seconds is not None:
                costs.remember(job.name, job.config, outcome.compute_seconds)
            clock.finish(job.name, outcome.compute_seconds)
        progress.update(bar, advance=1, description=f"{outcome.status}: {job.name}")

    def warn(why: str) -> None:
        progress.console.print(Text.assemble(("warning:", "yellow"), " ", why))

    where = "on Ray" if backend.name == "ray" else f"in {backend.local_jobs()} processes"
    progress.update(bar, description=f"{len(todo)} stages {where}")
    run_jobs(
        todo,
        store.dir.parent,
        backend,
        report,
        noun="stage",
        warn=warn,
        started=start,
        progressed=progressed,
    )
    if failed:
        named = "; ".join(f"{name} ({error})" for name, error in failed.items())
        raise UserError(
            f"{len(failed)} of {len(jobs)} stages failed: {named}; the {len(results)} "
            f"finished stages are saved in {store.dir}: fix the cause and run the same "
            "command again to resume"
        )


def _reuse_saved(
    jobs: Sequence[Job], store: StageStore, results: dict[str, Any], progress: Progress, bar: Any
) -> list[Job]:
    """Put every saved result into ``results`` (counted done on the bar); the jobs left
    to compute, in plan order."""
    todo = []
    for job in jobs:
        saved = store.reuse(job.name, dict(job.config), job.outputs)
        if saved is None:
            todo.append(job)
        else:
            results[job.name] = saved
            progress.advance(bar)
    return todo


def _clock(jobs: Sequence[Job], costs: StageCosts, workers: int) -> StageClock:
    """The run's estimate over ``jobs`` in the order they start (higher priority first,
    :func:`~lostmid.runs.jobs.dispatch`), each at its remembered cost."""
    order = sorted(jobs, key=lambda job: -job.priority) if workers > 1 else list(jobs)
    return StageClock(
        [job.name for job in order],
        {job.name: costs.expected(job.name, job.config) for job in order},
        workers=workers,
    )


def _announce(progress: Progress, bar: Any, clock: StageClock) -> None:
    """Give the bar ``clock``'s estimate and, when every stage to compute has a cost
    from an earlier run, say up front how long they should take (on a shown bar)."""
    progress.update(bar, eta=clock.left)
    left = clock.left()
    if not progress.disable and clock.order and left is not None:
        progress.console.print(
            f"{len(clock.order)} stages to compute on {clock.workers} "
            f"{'worker' if clock.workers == 1 else 'workers'}: ~{clock_text(left)} by what "
            "they took in earlier runs"
        )


def _workers(backend: Backend) -> int:
    """How many stages run at once, for the estimate: ``--jobs`` locally; on a Ray
    instance of this machine its CPUs over each stage's; on a cluster, unknown here:
    as many as there are (the estimate is then a lower bound)."""
    if backend.name == "local":
        return backend.local_jobs()
    if backend.address is None:
        return max(int(available_cpus() // backend.cpus), 1)
    return 1 << 20
