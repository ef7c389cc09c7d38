"""Progress that reaches a log: rich's live bar on a terminal, plain lines elsewhere.

rich draws its bar only on a terminal; with the output going to a file or a pipe
(``make reproduce > log 2>&1``) it shows nothing until the run ends. :func:`progress`
makes the bar every long command uses (train, retrieve, remedies, sweep, reproduce's
stages), and when its console is not a terminal it also prints a plain line when a task
starts (how much there is to do: the first step can take minutes) and one when a step
or unit finishes: the first, then at most one every :data:`EVERY_S` seconds, and
the last, each with the count, the elapsed time and the time left (the task's ``eta``
field when it has one, a function of no arguments: the stage runner's
:class:`~lostmid.runs.eta.StageClock`; else rich's estimate from the recent rate; where
steps are slower than rich's 30 s window, the mean rate of this run's steps:
:func:`time_left`), and what finished last: the task's ``last``
field (sweep's unit and its status), else its description (the stage runner's stage).

>>> import io
>>> from rich.console import Console
>>> log = io.StringIO()
>>> with progress("sweep", console=Console(file=log, width=80), every=0.0) as bar:
...     task = bar.add_task("", total=2)
...     bar.advance(task)
...     bar.advance(task)
>>> [line.split(",")[0] for line in log.getvalue().splitlines() if line]
['sweep: started', 'sweep: 1/2 done (50%)', 'sweep: 2/2 done (100%)']
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import Progress, ProgressColumn, Task, TaskID
from rich.text import Text

EVERY_S = 10.0
LINE_WIDTH = 80
"""A progress line in a log fits this width: else what finished last goes on a line of
its own."""
"""The least time between two progress lines in a log (the last is always printed)."""


def clock_text(seconds: float | None) -> str:
    """``0:01:05``; ``?`` when unknown.

    >>> clock_text(65.2), clock_text(None)
    ('0:01:05', '?')
    """
    if seconds is None or not math.isfinite(seconds):
        return "?"
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def time_left(
    recent: float | None, elapsed: float | None, done: float, total: float | None
) -> float | None:
    """Seconds left: rich's ``recent`` estimate, else the mean rate of the ``done`` steps
    finished in ``elapsed`` seconds (None when nothing finished or the total is unknown).

    >>> time_left(None, 170.0, 2, 60)  # two 85-s steps done: 58 left
    4930.0
    >>> time_left(12.0, 170.0, 2, 60), time_left(None, 0.0, 0, 60)
    (12.0, None)
    """
    if recent is not None:
        return recent
    if total is None or not elapsed or done <= 0:
        return None
    return (total - done) * elapsed / done


@dataclass(frozen=True)
class ItemCount:
    """A stage's own count as a worker process sends it to the driver: which of its bars
    (``bar``), the bar's description, items done and their total."""

    bar: tuple[int, int]
    what: str
    done: float
    total: float | None


class ItemSender:
    """The sink of a stage run in a worker process (:func:`reporting_items`): each count
    sent to the driver through ``send`` as an :class:`ItemCount`, at most one a
    ``every`` seconds per bar but always a bar's first and last (done = total).

    >>> sent = []
    >>> sink = ItemSender(sent.append, every=3600.0)
    >>> for done in range(4):
    ...     sink((1, 0), "scoring", done, 3)
    >>> [count.done for count in sent]
    [0, 3]
    """

    def __init__(self, send: Callable[[ItemCount], None], every: float = 1.0) -> None:
        self.send, self.every = send, every
        self._last: dict[tuple[int, int], float] = {}

    def __call__(self, bar: tuple[int, int], what: str, done: float, total: float | None) -> None:
        now = time.monotonic()
        final = total is not None and done >= total
        if bar in self._last and not final and now - self._last[bar] < self.every:
            return
        self._last[bar] = now
        self.send(ItemCount(bar, what, done, total))


ItemsSink = Callable[[tuple[int, int], str, float, float | None], None]
"""Where a silent bar's counts go: (which bar, its description, items done, total)."""

_ITEMS: ContextVar[ItemsSink | None] = ContextVar("lostmid_stage_items", default=None)


@contextmanager
def reporting_items(sink: ItemsSink) -> Iterator[None]:
    """While inside, every bar made without a console (the work of a stage: retrieve's
    examples, the link's, a profile's inputs) sends its counts to ``sink``: the stage
    runner shows them under the command's name and reads the time left from them.

    >>> seen = []
    >>> with reporting_items(lambda key, what, done, total: seen.append((done, total))):
    ...     with progress("retrieve", console=None) as bar:
    ...         task = bar.add_task("scoring", total=2)
    ...         bar.advance(task)
    >>> seen
    [(0, 2), (1, 2)]
    """
    token = _ITEMS.set(sink)
    try:
        yield
    finally:
        _ITEMS.reset(token)


class LoggedProgress(Progress):
    """:class:`rich.progress.Progress` that, on a console that is not a terminal, also
    prints a line as work finishes (module doc), and without a console sends its counts
    to the stage runner's sink when there is one (:func:`reporting_items`). Everything
    else is rich's."""

    def __init__(
        self,
        *columns: str | ProgressColumn,
        label: str,
        every: float,
        sink: ItemsSink | None = None,
        **kwargs: Any,
    ):
        super().__init__(*columns, **kwargs)
        self.label = label
        self.every = every
        self.sink = sink
        self.logging = not kwargs.get("disable", False) and not self.console.is_terminal
        self._done: dict[TaskID, float] = {}
        self._resumed: dict[TaskID, float] = {}  # completed when added (not this run's)
        self._printed = -math.inf

    def update(self, task_id: TaskID, **kwargs: Any) -> None:
        super().update(task_id, **kwargs)
        self._log(task_id)
        self._send(task_id)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._log(task_id)
        self._send(task_id)

    def _send(self, task_id: TaskID) -> None:
        task = self._tasks[task_id]
        if self.sink is not None and not task.fields.get("stage_line"):  # not a stage's own
            what = str(task.fields.get("last") or task.description or self.label).strip()
            self.sink((id(self), int(task_id)), what, task.completed, task.total)

    def add_task(self, description: str, *args: Any, **kwargs: Any) -> TaskID:
        task_id = super().add_task(description, *args, **kwargs)
        self._send(task_id)
        task = self._tasks[task_id]
        self._done[task_id] = task.completed  # resumed work is not news
        self._resumed[task_id] = task.completed
        if self.logging and task.total:  # said at once: the first step can take minutes
            saved = f" ({task.completed:g} already saved)" if task.completed else ""
            self.console.print(
                f"{self.label}: started, {task.total:g} to do{saved}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        return task_id

    def _log(self, task_id: TaskID) -> None:
        if not self.logging:
            return
        task = self._tasks[task_id]
        before = self._done.get(task_id, 0.0)
        if task.completed <= before:
            return
        first = not math.isfinite(self._printed)
        last = task.total is not None and task.completed >= task.total
        now = time.monotonic()
        if not (first or last or now - self._printed >= self.every):
            return
        self._done[task_id] = task.completed
        self._printed = now
        total = "?" if task.total is None else f"{task.total:g}"
        share = f" ({100 * task.completed / task.total:.0f}%)" if task.total else ""
        resumed = self._resumed.get(task_id, 0.0)
        eta = task.fields.get("eta")
        left = (
            0.0
            if last
            else eta()
            if callable(eta)
            else time_left(
                task.time_remaining,
                task.elapsed,
                task.completed - resumed,
                None if task.total is None else task.total - resumed,
            )
        )
        text = str(task.fields.get("last") or task.description).strip()
        about = f"; last: {text}" if text and text != self.label else ""
        line = (
            f"{self.label}: {task.completed:g}/{total} done{share}, {clock_text(task.elapsed)} "
            f"elapsed, ~{clock_text(left)} left"
        )
        lines = [line + about]
        if len(lines[0]) > LINE_WIDTH and about:  # a log's lines fit 80 columns
            lines = [line, f"  last: {text}"]
        for one in lines:
            self.console.print(one, highlight=False, markup=False, soft_wrap=True)


class LeftColumn(ProgressColumn):
    """``~0:12:05 left`` from the task's ``eta`` field (the same function the log lines
    call), recomputed at every refresh; blank for a task without one or when done."""

    def render(self, task: Task) -> Text:
        eta = task.fields.get("eta")
        if eta is None or task.finished:
            return Text("")
        return Text(f"~{clock_text(eta())} left", style="progress.remaining")


def count_bar(label: str, console: Console | None) -> LoggedProgress:
    """The bar of work counted in items (samples, examples): description, bar, done/total
    and time left; kept on screen when done, plain lines in a log."""
    from rich.progress import BarColumn, MofNCompleteColumn, TimeRemainingColumn

    return progress(
        label,
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def progress(
    label: str,
    *columns: str | ProgressColumn,
    console: Console | None,
    every: float = EVERY_S,
    transient: bool = True,
) -> LoggedProgress:
    """The bar of a long command (``label``: ``train``, ``sweep``...): rich's
    ``columns`` on a terminal, plain lines in a log; without ``console`` silent, or,
    inside a stage, its counts sent to the stage runner (:func:`reporting_items`)."""
    return LoggedProgress(
        *columns,
        label=label,
        every=every,
        sink=_ITEMS.get() if console is None else None,
        console=console,
        disable=console is None,
        transient=transient,
    )
