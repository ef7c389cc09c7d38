"""The time a run of stages has left (lostmid.runs.eta): costs remembered from earlier
runs, scheduled the way the run schedules them, scaled by this run's speed."""

from __future__ import annotations

import io
import itertools
import json
import random
from functools import partial
from pathlib import Path

import pytest
from rich.console import Console
from rich.progress import Progress

import lostmid.runs.eta as eta
from lostmid.runs.backend import Backend
from lostmid.runs.eta import StageCosts, cost_key, makespan, scheduled_left
from lostmid.runs.jobs import Job
from lostmid.runs.stages import _clock, run_stages
from lostmid.runs.store import StageStore


def _brute_makespan(running: list[float], queued: list[float], workers: int) -> float:
    """Time steps of 0.5 s: every free worker takes the next queued stage (all costs
    here are multiples of 0.5, so the walk is exact)."""
    left = list(running) + [0.0] * max(workers - len(running), 0)
    queue = list(queued)
    t = 0.0
    while True:
        for i, rest in enumerate(left):
            while rest <= 0.0 and queue:
                rest = queue.pop(0)
            left[i] = rest
        if all(rest <= 0.0 for rest in left) and not queue:
            return t
        left = [rest - 0.5 if rest > 0.0 else rest for rest in left]
        t += 0.5


def test_makespan_equals_a_walk_through_time() -> None:
    rng = random.Random(7)
    for _ in range(200):
        workers = rng.randint(1, 4)
        running = [rng.randint(0, 12) / 2 for _ in range(rng.randint(0, workers))]
        queued = [rng.randint(1, 12) / 2 for _ in range(rng.randint(0, 8))]
        assert makespan(running, queued, workers) == _brute_makespan(running, queued, workers)


def test_more_stages_running_than_workers_are_all_counted() -> None:
    # Ray may run more at once than it was told: each running stage holds its own slot
    assert makespan([5.0, 4.0, 3.0], [1.0], workers=2) == 5.0
    # a cluster of unknown size: as many workers as stages, no slot list that big
    assert makespan([], [2.0, 1.0], workers=1 << 40) == 2.0
    with pytest.raises(ValueError):
        makespan([], [1.0], workers=0)


def test_the_estimate_follows_the_run_s_speed_and_its_unknowns() -> None:
    order = ["long", "a", "b"]
    known = {"long": 600.0, "a": 60.0, "b": 60.0}
    # nothing done yet: the remembered costs as they are, on 2 workers
    assert scheduled_left(order, known, {}, {}, workers=2) == 600.0
    # one worker: everything in a row
    assert scheduled_left(order, known, {}, {}, workers=1) == 720.0
    # a finished in half its remembered time: the rest is expected at half too
    assert scheduled_left(order, known, {"a": 30.0}, {"long": 100.0}, workers=2) == 200.0
    # twice as slow: twice
    assert scheduled_left(order, known, {"a": 120.0}, {"long": 100.0}, workers=2) == 1100.0
    # a running stage past its cost is not nearly done: unknown until it says how far it is
    assert scheduled_left(order, known, {"a": 60.0}, {"long": 900.0, "b": 0.0}, workers=2) is None
    # ... then its measured cost per item: 900 s for 3/4 of its items, 300 s left
    over = {"long": 900.0, "b": 0.0}
    assert scheduled_left(order, known, {"a": 60.0}, over, 2, done={"long": 0.75}) == 300.0
    # a stage never computed costs the mean of this run's finished stages...
    unknown = dict(known, b=None)
    assert scheduled_left(order, unknown, {"long": 600.0, "a": 60.0}, {}, workers=2) == 330.0
    # ... and with none finished there is nothing to go on: unknown, not a guess
    assert scheduled_left(order, unknown, {}, {"long": 1.0}, workers=2) is None
    # all done
    assert scheduled_left(order, known, dict.fromkeys(order, 1.0), {}, workers=2) == 0.0


def test_costs_are_remembered_by_stage_and_configuration(tmp_path: Path) -> None:
    path = tmp_path / "costs.json"
    first, second = StageCosts(path), StageCosts(path)
    first.remember("train-seed0", {"steps": 100}, 41.5)
    second.remember("train-seed1", {"steps": 100}, 43.0)  # merged with first's, not over it
    again = StageCosts(path)
    assert again.expected("train-seed0", {"steps": 100}) == 41.5
    assert again.expected("train-seed1", {"steps": 100}) == 43.0
    assert again.expected("train-seed0", {"steps": 300}) is None  # another configuration
    assert again.expected("train-seed2", {"steps": 100}) is None
    assert cost_key("x", {"a": 1, "b": 2}) == cost_key("x", {"b": 2, "a": 1})  # key order
    for bad in (float("nan"), -1.0, float("inf")):
        again.remember("bad", {}, bad)
    assert StageCosts(path).expected("bad", {}) is None


def test_the_newest_entries_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eta, "MAX_ENTRIES", 3)
    clock = itertools.count(1000.0)
    monkeypatch.setattr(eta.time, "time", lambda: next(clock))
    costs = StageCosts(tmp_path / "costs.json")
    for i in range(5):
        costs.remember(f"s{i}", {}, float(i))
    kept = StageCosts(costs.path)
    assert [kept.expected(f"s{i}", {}) for i in range(5)] == [None, None, 2.0, 3.0, 4.0]


def test_a_damaged_or_unwritable_memory_costs_the_estimate_not_the_run(tmp_path: Path) -> None:
    damaged = tmp_path / "costs.json"
    damaged.write_text('{"stages": {"a@1": {"seconds": 3')  # cut off mid-write
    costs = StageCosts(damaged)
    assert costs.expected("a", {}) is None
    costs.remember("a", {}, 2.0)  # written whole again
    assert StageCosts(damaged).expected("a", {}) == 2.0
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"stages": {cost_key("a", {}): {"seconds": "soon"}}}))
    assert StageCosts(wrong).expected("a", {}) is None
    blocked = tmp_path / "folder"
    blocked.mkdir()  # a folder where the file should be: cannot be written
    StageCosts(blocked).remember("a", {}, 1.0)  # no exception
    assert blocked.is_dir()


def _square(x: float) -> float:
    return x * x


def _jobs() -> list[Job]:
    return [Job(f"sq-{x}", {"x": x}, partial(_square, float(x))) for x in (1, 2, 3)]


def _logged_run(folder: Path) -> str:
    """What one in-process run of :func:`_jobs` into ``folder`` prints to a log."""
    log = io.StringIO()
    run_stages(
        _jobs(), StageStore(folder), Backend(), label="sq", console=Console(file=log, width=160)
    )
    return log.getvalue()


def test_a_run_remembers_what_it_computed_and_says_what_the_next_should_take(
    tmp_path: Path,
) -> None:
    eta.costs_path().unlink(missing_ok=True)
    assert "stages to compute" not in _logged_run(tmp_path / "one")  # nothing remembered yet
    costs = StageCosts()
    assert all(costs.expected(job.name, job.config) is not None for job in _jobs())
    # make the remembered costs long and known, then run again into a fresh folder
    for job in _jobs():
        costs.remember(job.name, job.config, 1200.0)
    text = _logged_run(tmp_path / "two")
    assert "3 stages to compute on 1 worker: ~1:00:00 by what they took in earlier runs" in text
    # the first line after a stage uses the run's own speed: the stages took far less than
    # their 1,200 s, so the time left is about nothing, not rich's or the mean's guess
    first = next(line for line in text.splitlines() if "1/3 done" in line)
    assert "~0:00:00 left" in first
    # a rerun into the same folder reuses everything: nothing to compute, nothing said
    assert "stages to compute" not in _logged_run(tmp_path / "two")


def test_the_clock_orders_stages_as_dispatch_starts_them() -> None:
    jobs = [
        Job("small", {}, partial(_square, 1.0)),
        Job("big", {}, partial(_square, 2.0), priority=1),
    ]
    assert _clock(jobs, StageCosts(), workers=2).order == ["big", "small"]
    assert _clock(jobs, StageCosts(), workers=1).order == ["small", "big"]


def test_the_terminal_bar_shows_the_clock_s_estimate_at_every_refresh() -> None:
    from lostmid.runs.progress import LeftColumn

    log = io.StringIO()
    estimates = iter([65.0, None])
    with Progress(console=Console(file=log, force_terminal=True)) as bar:
        with_eta = bar.add_task("", total=2, eta=lambda: next(estimates))
        without = bar.add_task("", total=2)
        column = LeftColumn()
        assert column.render(bar.tasks[with_eta]).plain == "~0:01:05 left"
        assert column.render(bar.tasks[with_eta]).plain == "~? left"  # unknown, not a guess
        assert column.render(bar.tasks[without]).plain == ""
        bar.update(with_eta, completed=2)
        assert column.render(bar.tasks[with_eta]).plain == ""  # done


def _counted(items: int, seconds_each: float, now: list[float]) -> float:
    """A stage whose work has its own bar and no console, as retrieve's does in a stage:
    ``items`` items of ``seconds_each`` (on the shared fake clock ``now``)."""
    from lostmid.runs.progress import progress

    with progress("retrieve", console=None) as bar:
        task = bar.add_task("scoring", total=items)
        for _ in range(items):
            now[0] += seconds_each
            bar.advance(task)
    return float(items)


def test_a_stage_s_own_items_show_under_the_command_and_set_its_time_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a stage that runs long, its items are counted on a line under the run's
    label (not the inner command's), and the time left is the stage's cost per item so
    far times the items left, even past the stage's remembered cost."""
    import lostmid.runs.stages as stages

    now = [0.0]
    seen: list[float | None] = []
    made: list[eta.StageClock] = []

    def clock(todo, costs, workers):  # the run's clock on the fake time, kept to read
        made.append(eta.StageClock([j.name for j in todo], {"long": 2.0}, workers, lambda: now[0]))
        return made[-1]

    monkeypatch.setattr(stages, "_clock", clock)
    original = eta.StageClock.items

    def items(self, name, done, total):  # what the run's estimate says after each item
        original(self, name, done, total)
        seen.append(self.left())

    monkeypatch.setattr(eta.StageClock, "items", items)
    log = io.StringIO()
    job = Job("long", {"n": 4}, partial(_counted, 4, 10.0, now))
    run_stages(
        [job],
        StageStore(tmp_path),
        Backend(),
        label="diagnose",
        console=Console(file=log, width=160),
    )
    # 10 s an item, remembered as 2 s in all: after 1, 2, 3 items 30, 20, 10 s are left
    assert seen[-4:-1] == [30.0, 20.0, 10.0]
    text = log.getvalue()
    assert "diagnose:" in text and "reproduce:" not in text and "retrieve:" not in text
    assert "long: scoring" in text  # the stage's own line, in the log too
