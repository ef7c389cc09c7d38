"""Size checks before compute: what a run will need against what this machine has.

A command estimates its peak memory (and, where the work can run for days, its time)
from its inputs before it starts, and :func:`check_budget` refuses in one line when the
estimate exceeds what is available, with the numbers and the flag that runs it anyway
(``--no-size-check``). Estimates are deliberately rough upper bounds: their purpose is
to stop a request that cannot fit (745 GiB on a 24 GiB machine) in a second, not to
predict the last byte.

>>> check_budget("theory --length 10", need_bytes=8e3, available=1e9)
>>> check_budget("theory --length 1e11", need_bytes=8e11, available=2e10)
Traceback (most recent call last):
...
lostmid.errors.UserError: theory --length 1e11 needs about 745 GiB of memory; this machine
has 18.6 GiB available; make it smaller, or pass --no-size-check to try anyway
"""

from __future__ import annotations

import os
from pathlib import Path

from lostmid.errors import UserError

MAX_HOURS = 24.0
"""A run estimated to take longer than this (one core) is refused before it starts."""
OVERRIDE = "--no-size-check"
SIZE_CHECK_HELP = (
    "Estimate memory (and time) before computing and refuse when the run cannot fit this "
    f"machine or would take over {MAX_HOURS:g} h; {OVERRIDE} runs it anyway."
)


def available_memory() -> float:
    """Bytes this process can still allocate: the kernel's ``MemAvailable``, capped by
    the cgroup's limit (a container, a Slurm job) when there is one."""
    found = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(float(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = Path("/sys/fs/cgroup/memory.current").read_text().strip()
        if limit != "max":
            found.append(float(limit) - float(used))
    except (OSError, ValueError):
        pass
    if not found:  # not Linux: all physical memory
        try:
            found.append(float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")))
        except (ValueError, OSError, AttributeError):
            return float("inf")
    return max(min(found), 0.0)


def gib(nbytes: float) -> str:
    """``745 GiB``, ``18.6 GiB``, ``0.00373 GiB``, ``41.6 TiB``: three significant digits.

    >>> gib(8e11), gib(2e10), gib(4e6), gib(4.57e13)
    ('745 GiB', '18.6 GiB', '0.00373 GiB', '41.6 TiB')
    """
    if nbytes >= 2**40:
        return f"{nbytes / 2**40:.3g} TiB"
    return f"{nbytes / 2**30:.3g} GiB"


def duration(seconds: float) -> str:
    """``3.2 h``, ``41 days``, ``1.5e+05 years``.

    >>> duration(11520), duration(3.6e6), duration(5e12)
    ('3.2 h', '41.7 days', '1.58e+05 years')
    """
    hours = seconds / 3600
    if hours < 48:
        return f"{hours:.2g} h"
    days = hours / 24
    return f"{days:.3g} days" if days < 3650 else f"{days / 365.25:.3g} years"


def check_budget(
    what: str,
    *,
    need_bytes: float,
    seconds: float | None = None,
    available: float | None = None,
    max_hours: float = MAX_HOURS,
    override: str | None = OVERRIDE,
) -> None:
    """Refuse ``what`` (e.g. ``theory --length 1e11``) in one line when it needs more
    memory than is ``available`` (default :func:`available_memory`) or would take more
    than ``max_hours``; the caller skips the check when the user passed
    ``--no-size-check``; ``override=None`` for a command without that flag."""
    have = available_memory() if available is None else available
    anyway = f", or pass {override} to try anyway" if override else ""
    if need_bytes > have:
        raise UserError(
            f"{what} needs about {gib(need_bytes)} of memory; this machine has {gib(have)} "
            f"available; make it smaller{anyway}"
        )
    if seconds is not None and seconds > max_hours * 3600:
        raise UserError(
            f"{what} would take about {duration(seconds)} on one core (a rough estimate, "
            f"more than {max_hours:g} h); make it smaller{anyway.replace('try', 'run it')}"
        )
