"""The kill harness: run a lostmid command, SIGKILL it after random delays, rerun it to
completion, and compare what it wrote with an uninterrupted run's.

Used by ``tests/faults/test_kills.py`` (micro scale, in the default suite) and by
``benchmarks/bench_faults.py`` (full scale, table). A run is a real process killed by
a real ``SIGKILL``:

* ``fork`` (the tests): a child forked from this already-imported process runs the
  CLI's ``main`` with the command's argv, so a run costs its work and not the seconds
  of importing torch and transformers;
* ``exec`` (the benchmark): ``python -c "from lostmid.cli import main; main()" ARGS``,
  exactly what a user's shell runs.

Results are compared as JSON with the fields that legitimately differ between runs
removed (:data:`VOLATILE`: timings, provenance, reuse counts) and the two output
folders' paths replaced by ``OUT``; everything else must be equal value for value
(floats as written: bit for bit). Checkpoint weights (``.safetensors``) are compared
byte for byte.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VOLATILE = frozenset(
    {
        "metadata",  # argv, versions, finished_utc, timings: provenance of one invocation
        "seconds",
        "compute_seconds",
        "cpu_seconds",
        "timings_s",
        "tokens_per_second",
        "train_seconds",
        "wall_seconds",
        "gain_seconds",
        "started_utc",
        "attempts",  # tries in this invocation (0 for a unit reused from the store)
        "counts",  # sweep.json: done vs reused differs by design after a resume
        "output_sha256",  # a stage file's digests of files that hold their own timings
    }
)
STATUS_SAME = {"done": "ok", "reused": "ok"}  # a sweep unit computed now or reused
SPEED_IN_TEXT = re.compile(r"[0-9][0-9,.]* tokens/s")  # a timing quoted in a paragraph


def strip(obj: Any, outs: Sequence[str]) -> Any:
    """``obj`` without :data:`VOLATILE` keys, unit statuses folded, paths of ``outs``
    replaced by ``OUT`` and a speed quoted in text (the training section's "(N tokens/s)")
    by ``SPEED``."""
    if isinstance(obj, dict):
        clean = {}
        for key, value in obj.items():
            if key in VOLATILE:
                continue
            if key == "status" and value in STATUS_SAME:
                value = STATUS_SAME[value]
            clean[key] = strip(value, outs)
        return clean
    if isinstance(obj, list):
        return [strip(v, outs) for v in obj]
    if isinstance(obj, str):
        for out in outs:
            obj = obj.replace(out, "OUT")
        return SPEED_IN_TEXT.sub("SPEED", obj)
    return obj


def is_temporary(path: Path) -> bool:
    """A writer's temporary name (``.NAME.PID.RANDOM.tmp``, files or folders)."""
    return path.name.startswith(".") and path.name.endswith((".tmp", ".old"))


def snapshot(out: Path, outs: Sequence[str]) -> dict[str, Any]:
    """Every result under ``out`` by relative path: JSON documents stripped
    (:func:`strip`), JSON lines the same line by line, weights as bytes."""
    found: dict[str, Any] = {}
    for path in sorted(out.rglob("*")):
        if not path.is_file() or any(is_temporary(p) for p in path.relative_to(out).parents):
            continue
        rel = path.relative_to(out).as_posix()
        if is_temporary(path) or path.name == ".lostmid.lock":
            continue
        if path.suffix == ".json":
            found[rel] = strip(json.loads(path.read_text()), outs)
        elif path.suffix == ".jsonl":
            found[rel] = [strip(json.loads(line), outs) for line in path.read_text().splitlines()]
        elif path.suffix == ".safetensors":
            found[rel] = path.read_bytes()
    return found


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Where two snapshots (or values) differ, as ``path.key: a != b`` lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        lines = [f"{where}/{k}: only in the first" for k in a.keys() - b.keys()]
        lines += [f"{where}/{k}: only in the second" for k in b.keys() - a.keys()]
        for key in sorted(a.keys() & b.keys()):
            lines += differences(a[key], b[key], f"{where}/{key}")
        return lines
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            line
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for line in differences(x, y, f"{where}[{i}]")
        ]
    if a != b or type(a) is not type(b):
        shown = (repr(a)[:80], repr(b)[:80]) if not isinstance(a, bytes) else ("bytes", "bytes")
        return [f"{where}: {shown[0]} != {shown[1]}"]
    return []


def unreadable_json(out: Path) -> list[str]:
    """The JSON files under ``out`` that do not parse (a partial write would)."""
    bad = []
    for path in out.rglob("*.json"):
        if is_temporary(path) or any(is_temporary(p) for p in path.parents):
            continue
        try:
            json.loads(path.read_text())
        except ValueError:
            bad.append(str(path.relative_to(out)))
    return bad


# -- one run ----------------------------------------------------------------------------


class Run:
    """One lostmid process: ``fork`` (a child of this process) or ``exec`` (a fresh
    interpreter). :meth:`kill` sends SIGKILL; :meth:`wait` returns the exit code."""

    def __init__(
        self,
        argv: Sequence[str],
        log: Path,
        mode: str = "fork",
        *,
        more_memory: int | None = None,
    ) -> None:
        """``more_memory`` (fork only): the bytes of address space the child may add to
        what it inherits (``RLIMIT_AS``): an allocation past it is a ``MemoryError`` in
        the child instead of the machine's OOM killer."""
        self.argv = list(argv)
        self.mode = mode
        self.started = time.perf_counter()
        log.parent.mkdir(parents=True, exist_ok=True)
        if mode == "exec":
            code = "from lostmid.cli import main; main()"
            with log.open("ab") as sink:
                self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                    [sys.executable, "-c", code, *self.argv], stdout=sink, stderr=sink
                )
            self.pid = self._proc.pid
            return
        self._proc = None
        preload()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: the CLI, then _exit (never back into the caller)
            code = 1
            try:
                # A forked child inherits the parent's OpenMP state but not its worker
                # threads: once the parent has run a parallel region (any earlier test's
                # matmul on 2 threads), the child's first one waits forever for threads
                # that do not exist (libgomp is not fork-safe; CI hung 600 s per run).
                # One thread never starts a team. Micro runs are small-model stages,
                # which run on one thread anyway (lostmid.runs.jobs.stage_threads).
                import torch

                torch.set_num_threads(1)
                if more_memory is not None:
                    import resource

                    size = resource.getpagesize() * int(
                        Path("/proc/self/statm").read_text().split()[0]
                    )
                    resource.setrlimit(resource.RLIMIT_AS, (size + more_memory, size + more_memory))
                fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                # the streams too: under pytest's capture sys.stdout is not fd 1
                sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
                sys.argv = ["lostmid", *self.argv]
                from lostmid.cli import main

                try:
                    main()
                    code = 0
                except SystemExit as stop:
                    code = stop.code if isinstance(stop.code, int) else (0 if not stop.code else 1)
            except BaseException:  # a traceback, as a real process would print it
                import traceback

                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        self.pid = pid
        self._code: int | None = None

    def poll(self) -> int | None:
        """The exit code if the process has ended (-9: killed), else None."""
        if self._proc is not None:
            return self._proc.poll()
        if self._code is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._code = os.waitstatus_to_exitcode(status)
        return self._code

    def wait(self, timeout: float = 600) -> int:
        deadline = time.perf_counter() + timeout
        while (code := self.poll()) is None:
            if time.perf_counter() > deadline:
                self.kill()
                raise TimeoutError(f"lostmid {' '.join(self.argv)} ran over {timeout} s")
            time.sleep(0.01)
        return code

    def kill(self) -> bool:
        """SIGKILL the process; True when it was still running."""
        if self.poll() is not None:
            return False
        os.kill(self.pid, signal.SIGKILL)
        self.wait()
        return True


PRELOAD = (
    "lostmid.cli",
    "lostmid.theory.run",
    "lostmid.influence.run",
    "lostmid.train.run",
    "lostmid.behaviour.retrieve.run",
    "lostmid.behaviour.training.run",
    "lostmid.remedies.run",
    "lostmid.reproduce.run",
    "lostmid.sweep.run",
    "matplotlib.pyplot",
)


def preload() -> None:
    """Import what every command imports, once, here: ``fork`` children then start with
    it (a run costs its work, not seconds of imports)."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)


def run_to_end(
    argv: Sequence[str], log: Path, mode: str, timeout: float = 600
) -> tuple[int, float]:
    """Run once, uninterrupted: (exit code, seconds)."""
    run = Run(argv, log, mode)
    code = run.wait(timeout)
    return code, time.perf_counter() - run.started


# -- kills ------------------------------------------------------------------------------


@dataclass
class KillReport:
    """What :func:`survive_kills` saw for one command."""

    name: str
    kills: int = 0  # SIGKILLs that hit a running process
    missed: int = 0  # delays after which the process had already finished
    reruns: int = 0  # runs after the first kill, to completion included
    reference_seconds: float = 0.0
    final_code: int | None = None
    unreadable: list[str] = field(default_factory=list)  # JSON that did not parse, ever
    stale_temporaries: list[str] = field(default_factory=list)  # left after the last run
    differences: list[str] = field(default_factory=list)
    saved_at_kill: list[int] = field(default_factory=list)  # JSON files there at each kill

    @property
    def identical(self) -> bool:
        return self.final_code == 0 and not self.differences

    def row(self) -> dict[str, Any]:
        return {
            "command": self.name,
            "kills": self.kills,
            "missed": self.missed,
            "reruns": self.reruns,
            "reference s": round(self.reference_seconds, 1),
            "identical": self.identical,
            "partial JSON seen": len(self.unreadable),
            "temporaries left": len(self.stale_temporaries),
            "JSON files at each kill": self.saved_at_kill,
        }


def survive_kills(
    name: str,
    argv: Callable[[Path], list[str]],
    root: Path,
    *,
    kills: int = 2,
    seed: int = 0,
    mode: str = "fork",
    rerun_argv: Callable[[Path], list[str]] | None = None,
    timeout: float = 600,
    within: tuple[float, float] = (0.1, 0.9),
) -> KillReport:
    """Run ``argv(out)`` uninterrupted into ``root/reference``; then into ``root/killed``
    start it, SIGKILL it after a random delay (a fraction ``within`` of the reference's
    time), ``kills`` times, each restart resuming what the last left (``rerun_argv(out)``
    when given: e.g. ``train --resume``); finally run it to completion and compare.

    After every kill each JSON file must parse (no partial file is left under a real
    name); after the last run no writer's temporary may remain.
    """
    rng = random.Random(seed)
    report = KillReport(name)
    reference, killed = root / "reference", root / "killed"
    code, report.reference_seconds = run_to_end(
        argv(reference), root / "reference.log", mode, timeout
    )
    if code != 0:
        raise AssertionError(f"{name}: the uninterrupted run failed (exit {code}); see {root}")
    again = rerun_argv or argv
    for attempt in range(kills):
        run = Run((argv if attempt == 0 else again)(killed), root / "killed.log", mode)
        if attempt > 0:
            report.reruns += 1
        low, high = within
        time.sleep(rng.uniform(low, high) * report.reference_seconds)
        saved = len(list(killed.rglob("*.json"))) if killed.exists() else 0
        if run.kill():
            report.saved_at_kill.append(saved)
            report.kills += 1
        else:
            report.missed += 1
        report.unreadable += unreadable_json(killed)
    report.reruns += 1
    report.final_code, _ = run_to_end(
        (again if kills else argv)(killed), root / "killed.log", mode, timeout
    )
    report.unreadable += unreadable_json(killed)
    report.stale_temporaries = [
        str(p.relative_to(killed)) for p in killed.rglob("*") if is_temporary(p)
    ]
    outs = [str(reference), str(killed)]
    report.differences = differences(snapshot(reference, outs), snapshot(killed, outs))
    return report
