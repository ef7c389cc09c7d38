"""Running units: one unit with its retries, and the two backends (in-process, Ray).

Both backends do the same thing per unit, :func:`execute_unit`: compute it through the
stage store of the sweep folder (so its result is saved the moment it finishes, by
whichever process computed it) and return a :class:`UnitOutcome`. With Ray each unit is
one Ray task. On a cluster of several machines, every node needs the same lostmid (and
Ray) installed, and the sweep folder must be on a file system every node sees; on one
machine both hold by themselves.
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lostmid.errors import UserError
from lostmid.stages import StageStore
from lostmid.sweep.grid import Unit
from lostmid.sweep.units import TaskSpec

UNITS_DIR = "units"
STATUSES = ("done", "reused", "failed")
RAY_MISSING = "--backend ray needs Ray: pip install 'lostmid[cluster]'"


@dataclass(frozen=True)
class UnitOutcome:
    """What became of one unit in this run.

    ``status``: ``done`` (computed now), ``reused`` (found in the stage store) or
    ``failed`` (``error`` says why, after ``attempts`` tries). ``seconds``: time spent
    on it in this run; ``compute_seconds``: what its result cost when computed.
    ``summary``: the runner's headline numbers, with ``file`` the result file in the
    unit's folder.
    """

    key: str
    status: str
    seconds: float
    compute_seconds: float | None
    attempts: int
    summary: dict[str, Any] | None = None
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


def unit_folder(out: Path, unit: Unit) -> Path:
    """Where the unit's runner writes its files: ``out/units/KEY``."""
    return out / UNITS_DIR / unit.key


def saved_outcome(store: StageStore, unit: Unit, out: Path) -> UnitOutcome | None:
    """The unit as ``reused`` if the store holds its result and its file is still there."""
    start = time.perf_counter()
    saved = store.load(unit.key, unit.record())
    if saved is None or not (unit_folder(out, unit) / str(saved.get("file", ""))).is_file():
        return None
    return UnitOutcome(
        key=unit.key,
        status="reused",
        seconds=time.perf_counter() - start,
        compute_seconds=_saved_seconds(store, unit),
        attempts=0,
        summary=saved,
    )


def _saved_seconds(store: StageStore, unit: Unit) -> float | None:
    import json

    try:
        return float(json.loads(store.path(unit.key).read_text()).get("seconds"))
    except (OSError, ValueError, TypeError):
        return None


def execute_unit(unit: Unit, spec: TaskSpec, out: Path, retries: int) -> UnitOutcome:
    """Build, run and store one unit; retry an exception up to ``retries`` more times.

    The unit is computed even if the store holds it (the caller decided it must be:
    see :func:`saved_outcome`); its result replaces the stored one. A
    :class:`UserError` (bad input: the same on every try) is not retried. Never raises
    for a failure of the unit: the outcome carries the error.
    """
    start = time.perf_counter()
    store = StageStore(out, fresh=True)
    folder = unit_folder(out, unit)
    attempts = 0
    error: BaseException | None = None
    trace = None
    while attempts <= retries:
        attempts += 1
        try:
            config = spec.build(unit.params_dict())
            summary = store.run(
                unit.key, unit.record(), lambda config=config: spec.run(config, folder)
            )
        except Exception as err:  # reported in the outcome, never dropped
            error, trace = err, traceback.format_exc()
            if isinstance(err, UserError):
                break
            continue
        return UnitOutcome(
            key=unit.key,
            status="done",
            seconds=time.perf_counter() - start,
            compute_seconds=store.seconds.get(unit.key),
            attempts=attempts,
            summary=summary,
        )
    assert error is not None
    return UnitOutcome(
        key=unit.key,
        status="failed",
        seconds=time.perf_counter() - start,
        compute_seconds=None,
        attempts=attempts,
        error=_one_line(error),
        traceback=trace,
    )


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


Report = Callable[[Unit, UnitOutcome], None]


def run_local(
    units: Sequence[tuple[Unit, TaskSpec]], out: Path, retries: int, report: Report
) -> None:
    """Run the units one after the other in this process (today's behaviour)."""
    for unit, spec in units:
        report(unit, execute_unit(unit, spec, out, retries))


def import_ray() -> Any:
    """The ``ray`` module, or one line saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UserError(RAY_MISSING) from None
    return ray


def available_cpus() -> int:
    """CPUs this process may use (its affinity mask), for a local Ray instance."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def check_address(address: str) -> tuple[str, int] | None:
    """``auto``, or ``[ray://]HOST:PORT`` split into host and port; else one line.

    >>> check_address("10.0.0.5:6379"), check_address("auto")
    (('10.0.0.5', 6379), None)
    """
    if address == "auto":
        return None
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UserError(f"--address {address!r}: give auto or HOST:PORT, e.g. 10.0.0.5:6379")
    return host.strip("[]"), int(port)


def start_ray(address: str | None) -> bool:
    """Connect to Ray (``auto``, ``HOST:PORT``) or start a local instance (``None``) unless
    one is already running in this process. Returns whether this call started it.

    A HOST:PORT where nothing answers fails at once (Ray itself would retry for
    minutes)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    target = None if address is None else check_address(address)
    if target is not None:
        try:
            socket.create_connection(target, timeout=10).close()
        except OSError as err:
            raise UserError(
                f"--address {address}: nothing answers there ({err.strerror or err}); start "
                "a cluster with `ray start --head`, or omit --address for a local instance"
            ) from None
    quiet = {"log_to_driver": False, "logging_level": "ERROR", "configure_logging": True}
    try:
        if address is None:
            ray.init(num_cpus=available_cpus(), include_dashboard=False, **quiet)
        else:
            ray.init(address=address, **quiet)
    except ConnectionError as err:
        raise UserError(
            f"--address {address}: cannot connect to a Ray cluster ({_one_line(err)}); "
            "start one with `ray start --head` or omit --address for a local instance"
        ) from None
    return True


def _ray_unit(unit: Unit, spec: TaskSpec, out: str, retries: int) -> UnitOutcome:
    """The body of a unit's Ray task: torch threads = the CPUs the task asked for."""
    threads = max(1, int(unit.resources.cpus or 1))
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    return execute_unit(unit, spec, Path(out), retries)


def infeasible(units: Sequence[Unit], cluster: dict[str, float]) -> str | None:
    """Why some unit can never be scheduled on a cluster with ``cluster`` resources
    (``ray.cluster_resources()``), or None when every unit fits.

    >>> from lostmid.sweep.grid import Resources
    >>> unit = Unit.make("measure", {"seed": 0}, Resources(cpus=1, gpus=1))
    >>> infeasible([unit], {"CPU": 2.0}).split("; ")[1]
    'the Ray cluster has 0 GPU (set --gpus-per-unit)'
    """
    for unit in units:
        asks = (
            (unit.resources.cpus or 0, cluster.get("CPU", 0.0), "CPU", "--cpus-per-unit"),
            (unit.resources.gpus or 0, cluster.get("GPU", 0.0), "GPU", "--gpus-per-unit"),
            (
                (unit.resources.memory_gb or 0),
                cluster.get("memory", 0.0) / 2**30,
                "GiB",
                "--memory-per-unit",
            ),
        )
        for want, have, name, flag in asks:
            if want > have:
                return (
                    f"unit {unit.key} asks for {want:g} {name}; the Ray cluster has "
                    f"{have:.3g} {name} (set {flag})"
                )
    return None


def run_ray(
    units: Sequence[tuple[Unit, TaskSpec]],
    out: Path,
    retries: int,
    report: Report,
) -> None:
    """Run every unit as a Ray task with its resource request; report each as it ends.

    Needs a connected Ray (:func:`start_ray`). Exceptions inside a unit are retried by
    :func:`execute_unit`; a lost worker (killed, out of memory) is retried by Ray
    (``max_retries``) and then reported as failed.
    """
    ray = import_ray()
    remote = ray.remote(_ray_unit)
    pending: dict[Any, Unit] = {}
    for unit, spec in units:
        res = unit.resources
        options: dict[str, Any] = {
            "num_cpus": res.cpus if res.cpus is not None else 1,
            "num_gpus": res.gpus or 0,
            "max_retries": retries,
        }
        if res.memory_gb:
            options["memory"] = int(res.memory_gb * 2**30)
        ref = remote.options(**options).remote(unit, spec, str(out), retries)
        pending[ref] = unit
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            unit = pending.pop(ref)
            try:
                outcome = ray.get(ref)
            except Exception as err:  # a lost task is reported, never dropped
                outcome = UnitOutcome(
                    key=unit.key,
                    status="failed",
                    seconds=0.0,
                    compute_seconds=None,
                    attempts=retries + 1,
                    error=_one_line(err),
                    traceback=traceback.format_exc(),
                )
            report(unit, outcome)
