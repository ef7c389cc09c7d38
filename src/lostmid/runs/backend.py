"""Where work runs: in this process (``local``) or as Ray tasks (``ray``), and Ray's set-up.

Light to import (Ray is imported only when a run asks for it): the CLI builds a
:class:`Backend` from ``--backend``, ``--address``, ``--cpus-per-job`` and
``--gpus-per-job`` (one name for a stage of a run and a unit of a sweep: both are jobs,
:class:`lostmid.runs.jobs.Job`; ``--cpus-per-stage`` and ``--cpus-per-unit`` are aliases)
before any work starts.

>>> Backend("ray", address="10.0.0.5:6379").record()["address"]
'10.0.0.5:6379'
>>> Backend("local", address="auto")
Traceback (most recent call last):
...
lostmid.errors.UserError: --address is for --backend ray; add --backend ray or drop it
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lostmid.checks import check_choice
from lostmid.errors import UserError
from lostmid.recordable import fields_record

BACKENDS = ("local", "ray")
RAY_MISSING = "--backend ray needs Ray: pip install 'lostmid[cluster]'"
HELP = {  # the help of each Backend field: the options every command with stages shares
    "name": "local (one stage after the other, in-process) | ray (independent stages "
    "in parallel, one Ray task each).",
    "address": "Ray cluster: auto | HOST:PORT (default: a local Ray instance).",
    "cpus": "Ray: CPUs per stage (its torch threads; default 1).",
    "gpus": "Ray: GPUs per stage (default 1 when the stages run on cuda, else 0).",
    "jobs": "local: stages run at once, each in its own process with its share of the "
    "cores as torch threads (default: the cores this process may use; 1: one after the "
    "other in this process).",
}


@dataclass(frozen=True)
class Backend:
    """Where the stages of a run go, and what each asks of a Ray cluster.

    Attributes:
        name: ``local`` (in this process, one after the other: nothing is pickled) or
            ``ray`` (one Ray task per stage, as many at once as the cluster holds).
        address: for ``ray`` only: ``auto`` (the cluster this machine belongs to),
            ``HOST:PORT`` (its head node) or None (a local Ray instance on this machine,
            with as many CPUs as this process may use).
        cpus: CPUs each stage asks for on Ray (also its torch threads there).
        gpus: GPUs each stage asks for; None: 1 when the run's device is cuda, else 0.
        jobs: ``local`` only: how many stages run at once, each in a process of its own
            with ``cores // jobs`` torch threads (:meth:`local_jobs`; None: the cores
            this process may use; 1: one after the other in this process).
    """

    name: str = "local"
    address: str | None = None
    cpus: float = 1.0
    gpus: float | None = None
    jobs: int | None = None

    def __post_init__(self) -> None:
        check_choice("--backend", self.name, BACKENDS)
        if self.address is not None:
            if self.name != "ray":
                raise UserError("--address is for --backend ray; add --backend ray or drop it")
            check_address(self.address)
        if isinstance(self.cpus, bool) or not self.cpus > 0:
            raise UserError(f"--cpus-per-job must be > 0, got {self.cpus!r}")
        if self.gpus is not None and (isinstance(self.gpus, bool) or not self.gpus >= 0):
            raise UserError(f"--gpus-per-job must be >= 0, got {self.gpus!r}")
        if self.jobs is not None:
            if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
                raise UserError(f"--jobs must be a whole number >= 1, got {self.jobs!r}")
            if self.name != "local":
                raise UserError("--jobs is for --backend local; Ray runs as many as fit")
        if self.name == "ray":
            import_ray()  # one line now if Ray is missing, not after planning

    def stage_gpus(self, device: str) -> float:
        """The GPUs a stage running on ``device`` asks for.

        >>> Backend().stage_gpus("cuda:0"), Backend(gpus=0.5).stage_gpus("cpu")
        (1.0, 0.5)
        """
        if self.gpus is not None:
            return float(self.gpus)
        return 1.0 if device.startswith("cuda") else 0.0

    def local_jobs(self) -> int:
        """Stages at once on the local backend: ``jobs``, or :func:`default_jobs`."""
        return self.jobs if self.jobs is not None else default_jobs()

    def local_threads(self) -> int:
        """Torch threads of each stage on the local backend: the cores we may use shared
        evenly among the stages at once (at least 1).

        >>> Backend(jobs=1).local_threads() >= 1
        True
        """
        return max(1, available_cpus() // self.local_jobs())

    def record(self) -> dict[str, Any]:
        return fields_record(self, jobs=self.local_jobs() if self.name == "local" else None)


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


def default_jobs() -> int:
    """Stages at once on the local backend when ``--jobs`` is not given: the cores this
    process may use (:func:`available_cpus`)."""
    return available_cpus()


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


def one_line(err: BaseException) -> str:
    """An exception as one line: its type and its message, blanks collapsed.

    >>> one_line(ValueError("bad\\n  value"))
    'ValueError: bad value'
    """
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


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
            f"--address {address}: cannot connect to a Ray cluster ({one_line(err)}); "
            "start one with `ray start --head` or omit --address for a local instance"
        ) from None
    return True


def infeasible(
    asks: Iterable[tuple[str, Any]], cluster: Mapping[str, float], noun: str = "unit"
) -> str | None:
    """Why some piece of work can never be scheduled on a cluster with ``cluster``
    resources (``ray.cluster_resources()``), or None when every one fits.

    Args:
        asks: (name, :class:`~lostmid.runs.jobs.Resources`) of each piece of work.
        noun: what a piece is called (``unit``, ``stage``).

    >>> from lostmid.runs.jobs import Resources
    >>> infeasible([("m-0", Resources(cpus=1, gpus=1))], {"CPU": 2.0}).split("; ")[1]
    'the Ray cluster has 0 GPU (set --gpus-per-job)'
    """
    for name, res in asks:
        wants = (
            (res.cpus or 0, cluster.get("CPU", 0.0), "CPU", "--cpus-per-job"),
            (res.gpus or 0, cluster.get("GPU", 0.0), "GPU", "--gpus-per-job"),
            (
                res.memory_gb or 0,
                cluster.get("memory", 0.0) / 2**30,
                "GiB",
                "--memory-per-job",
            ),
        )
        for want, have, what, flag in wants:
            if want > have:
                return (
                    f"{noun} {name} asks for {want:g} {what}; the Ray cluster has "
                    f"{have:.3g} {what} (set {flag})"
                )
    return None
