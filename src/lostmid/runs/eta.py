"""How long a run of stages has left: each stage's cost remembered from earlier runs,
scheduled on the run's workers.

The mean time of the stages finished so far says little when the longest stages start
first (``reproduce`` starts its real-checkpoint stages first, :attr:`Job.priority
<lostmid.runs.jobs.Job.priority>`): nothing finishes for minutes, then one long stage
makes every stage left look long (a default run said 1:45:26 left at 5 minutes and
ended at 18:41). What a stage costs is known once it has run somewhere with the same
configuration: :class:`StageCosts` remembers the seconds of every stage computed
(``$LOSTMID_CACHE/stage-seconds.json``, keyed by the stage's name and a digest of its
configuration, the key that decides whether a saved result is reused) and
:func:`scheduled_left` schedules what is left the way the run does (the stages running now
for what is left of their cost, then the queue in order on the first free worker),
with every remembered cost scaled by how this run's finished stages compared with
theirs (another machine, another load, threads). A stage never computed before costs
the mean of this run's finished stages; with nothing to go on the estimate is None
("?"), never a guess presented as a number.

The memory is advisory: a damaged or unwritable file is ignored (the estimate falls
back, the run goes on), and two runs finishing stages at once may each keep only their
own new entries (last writer wins; the file is whole either way).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lostmid.errors import UserError
from lostmid.files import cache_root, read_json, write_text
from lostmid.runinfo import to_jsonable

COSTS_FILE = "stage-seconds.json"
MAX_ENTRIES = 2000
"""Entries kept (the most recently computed): a few hundred runs' stages."""


def costs_path() -> Path:
    """The memory's file: ``$LOSTMID_CACHE/stage-seconds.json``."""
    return cache_root() / COSTS_FILE


def cost_key(name: str, config: Mapping[str, Any]) -> str:
    """``name@digest``: the stage and its configuration (what decides reuse).

    >>> cost_key("train-seed0", {"steps": 100}) == cost_key("train-seed0", {"steps": 100})
    True
    >>> cost_key("train-seed0", {"steps": 100}) == cost_key("train-seed0", {"steps": 300})
    False
    """
    text = json.dumps(to_jsonable(dict(config)), sort_keys=True, separators=(",", ":"))
    return f"{name}@{hashlib.sha256(text.encode()).hexdigest()[:16]}"


class StageCosts:
    """Seconds each stage took when last computed, by :func:`cost_key`, in ``path``
    (default ``$LOSTMID_CACHE/stage-seconds.json``).

    >>> import tempfile
    >>> costs = StageCosts(Path(tempfile.mkdtemp()) / "costs.json")
    >>> costs.expected("train-seed0", {"steps": 100}) is None
    True
    >>> costs.remember("train-seed0", {"steps": 100}, 41.5)
    >>> StageCosts(costs.path).expected("train-seed0", {"steps": 100})
    41.5
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else costs_path()
        self._entries = self._read()

    def _read(self) -> dict[str, dict[str, float]]:
        try:
            saved = read_json(self.path) if self.path.is_file() else {}
        except (UserError, OSError):
            return {}
        entries = saved.get("stages") if isinstance(saved, dict) else None
        if not isinstance(entries, dict):
            return {}
        return {
            key: entry
            for key, entry in entries.items()
            if isinstance(entry, dict) and _seconds(entry.get("seconds")) is not None
        }

    def expected(self, name: str, config: Mapping[str, Any]) -> float | None:
        """The seconds stage ``name`` with ``config`` took when last computed, if known."""
        entry = self._entries.get(cost_key(name, config))
        return None if entry is None else _seconds(entry.get("seconds"))

    def remember(self, name: str, config: Mapping[str, Any], seconds: float) -> None:
        """Keep what stage ``name`` with ``config`` took now (merged into the file as it
        is on disk; nothing is raised when it cannot be written)."""
        if _seconds(seconds) is None:
            return
        self._entries = {**self._read(), **self._entries}
        self._entries[cost_key(name, config)] = {
            "seconds": round(float(seconds), 3),
            "at": round(time.time(), 1),
        }
        newest = sorted(self._entries.items(), key=lambda item: -item[1].get("at", 0.0))
        self._entries = dict(newest[:MAX_ENTRIES])
        document = {"schema": "lostmid.stage_seconds/1", "stages": self._entries}
        try:
            write_text(self.path, json.dumps(document, indent=0, sort_keys=True))
        except (UserError, OSError):
            pass  # advisory: a read-only or full cache costs the estimate, not the run


def _seconds(value: Any) -> float | None:
    """``value`` as a finite number of seconds >= 0, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0.0 <= value < float("inf") else None


def makespan(running: Sequence[float], queued: Sequence[float], workers: int) -> float:
    """Seconds until the last stage ends: the ``running`` stages' remaining seconds
    hold a worker each, the ``queued`` ones start in order on the first free worker.

    >>> makespan([], [4.0, 1.0, 1.0, 1.0], workers=2)  # 4 | 1 1 1
    4.0
    >>> makespan([3.0], [2.0, 2.0], workers=2)  # 3 2 | then 2 on the one free at 2
    4.0
    >>> makespan([], [], workers=2)
    0.0
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    slots = list(running) + [0.0] * max(min(workers - len(running), len(queued)), 0)
    if not slots:
        return 0.0
    heapq.heapify(slots)
    for cost in queued:
        heapq.heappush(slots, heapq.heappop(slots) + cost)
    return max(slots)


def scheduled_left(
    order: Sequence[str],
    expected: Mapping[str, float | None],
    finished: Mapping[str, float],
    running: Mapping[str, float],
    workers: int,
    done: Mapping[str, float] | None = None,
) -> float | None:
    """Seconds until the stages in ``order`` (the order they start in) are done.

    ``expected``: each stage's remembered cost (None: never computed with its
    configuration); ``finished``: the seconds each stage finished in this run took;
    ``running``: the seconds each running stage has run so far; ``done``: the share of
    its items (0..1) a running stage has reported finished. Remembered costs are
    scaled by this run's speed against them (finished stages' seconds over their
    remembered costs); a stage never computed before costs the mean of this run's
    finished stages. A running stage that reports its items has left what its items
    so far cost each, times the items left: the measured cost per item, corrected with
    every item. A running stage past its cost that reports nothing has an unknown time
    left (it is not nearly done just because it took longer than remembered). None when
    a stage left has no cost to go on.

    >>> order = ["long", "a", "b", "c"]
    >>> known = {"long": 300.0, "a": 60.0, "b": 60.0, "c": 60.0}
    >>> scheduled_left(order, known, {}, {"long": 100.0, "a": 30.0}, workers=2)  # 200 | 30 60 60
    200.0
    >>> slower = {"long": 200.0, "b": 0.0}  # a took twice its 60 s: so will the rest
    >>> scheduled_left(order, known, {"a": 120.0}, slower, workers=2)
    400.0
    >>> scheduled_left(order, dict(known, c=None), {}, {"long": 1.0}, workers=2) is None
    True
    >>> over = {"long": 400.0}  # past its 300 s: 3 of 4 items done, so 400/3 s left
    >>> scheduled_left(["long"], known, {}, over, 1) is None, scheduled_left(
    ...     ["long"], known, {}, over, 1, done={"long": 0.75})
    (True, 133.33333333333334)
    """
    left = [name for name in order if name not in finished]
    paired = [
        (finished[name], cost)
        for name in finished
        if (cost := expected.get(name)) is not None and cost > 0
    ]
    speed = sum(took for took, _ in paired) / sum(cost for _, cost in paired) if paired else 1.0
    fallback = sum(finished.values()) / len(finished) if finished else None

    def cost_of(name: str) -> float | None:
        cost = expected.get(name)
        return fallback if cost is None else cost * speed

    costs: dict[str, float] = {}
    for name in left:
        cost = cost_of(name)
        if cost is None:
            return None
        costs[name] = cost
    busy = []
    for name in left:
        if name not in running:
            continue
        share = (done or {}).get(name, 0.0)
        if share > 0:  # the stage's own items: measured cost per item, items left
            busy.append(running[name] * (1.0 - min(share, 1.0)) / share)
        elif running[name] > costs[name]:
            return None  # past its remembered cost with nothing to say how far it is
        else:
            busy.append(costs[name] - running[name])
    queued = [costs[name] for name in left if name not in running]
    return makespan(busy, queued, workers)


class StageClock:
    """The estimate of one run as it goes: :func:`scheduled_left` over the stages to compute
    (``order``, their remembered ``expected`` costs) on ``workers``, told which start
    and which finish.

    >>> now = [0.0]
    >>> clock = StageClock(["a", "b"], {"a": 10.0, "b": 10.0}, workers=1, now=lambda: now[0])
    >>> clock.start("a"); now[0] = 4.0; clock.left()
    16.0
    >>> clock.finish("a", 20.0); clock.start("b"); clock.left()  # 2x slower than remembered
    20.0
    """

    def __init__(
        self,
        order: Sequence[str],
        expected: Mapping[str, float | None],
        workers: int,
        now: Any = time.perf_counter,
    ) -> None:
        self.order = list(order)
        self.expected = dict(expected)
        self.workers = workers
        self._now = now
        self._started: dict[str, float] = {}
        self._done: dict[str, float] = {}
        self.finished: dict[str, float] = {}

    def start(self, name: str) -> None:
        self._started[name] = self._now()

    def items(self, name: str, done: float, total: float | None) -> None:
        """Running stage ``name`` has finished ``done`` of its ``total`` items (its own
        progress bar's count): its time left is then read from its cost per item."""
        if total and total > 0 and name in self._started:
            self._done[name] = max(0.0, min(done / total, 1.0))

    def finish(self, name: str, seconds: float | None = None) -> None:
        """Stage ``name`` is done; ``seconds``: what it cost (default: since it started)."""
        began = self._started.pop(name, None)
        self._done.pop(name, None)
        took = seconds if seconds is not None else (0.0 if began is None else self._now() - began)
        self.finished[name] = float(took)

    def drop(self, name: str) -> None:
        """Stage ``name`` failed: it costs no more time and says nothing of the speed."""
        self._started.pop(name, None)
        self._done.pop(name, None)
        self.order = [other for other in self.order if other != name]

    def left(self) -> float | None:
        """Seconds left (None: a stage left has no cost to go on)."""
        now = self._now()
        running = {name: now - began for name, began in self._started.items()}
        return scheduled_left(
            self.order, self.expected, self.finished, running, self.workers, self._done
        )
