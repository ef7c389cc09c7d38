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


FLOPS_PER_S = 1e11
"""A generous rate for time estimates (a fast machine's passes): only a run that would
take longer than :data:`MAX_HOURS` even at this rate is refused."""
LAYER_PASS_S = 1e-4
"""The least one forward and backward pass spends in one transformer block, however
small (Python and kernel launches): 40x below the 4 ms measured for a 32-wide block at
L = 128 on the 2-core development box, so only a sure overrun is refused."""
STEP_FLOOR_S = 1e-3
"""The least one pass of a whole model, or one training step, takes (the same margin)."""
STAGE_FLOOR_S = 0.1
"""The least one stage (a model built and measured, a training run set up and scored)
takes beyond its passes: 8x below the 0.8 s an ``ablate`` stage of tiny-gpt2 took on the
loaded development box."""


def pass_seconds(
    *, layers: float, parameters: float, tokens: float, backward: bool = True
) -> float:
    """A lower bound on one pass over ``tokens`` tokens of a model of ``parameters``
    weights in ``layers`` blocks: the largest of its FLOPs (2 N T forward, 6 N T with
    the backward) at :data:`FLOPS_PER_S`, the per-block floor :data:`LAYER_PASS_S` and
    the per-pass floor :data:`STEP_FLOOR_S`.

    >>> pass_seconds(layers=2, parameters=1e4, tokens=128)  # the floor of one pass
    0.001
    >>> pass_seconds(layers=1000, parameters=1e7, tokens=128)  # 1000 blocks
    0.1
    >>> pass_seconds(layers=24, parameters=5e8, tokens=1024)  # 6 N T / 1e11
    30.72
    """
    flops = (6.0 if backward else 2.0) * parameters * tokens
    blocks = layers * LAYER_PASS_S * (1.0 if backward else 0.5)
    return max(flops / FLOPS_PER_S, blocks, STEP_FLOOR_S)


def check_work(
    what: str,
    *,
    passes: float,
    seconds_each: float,
    need_bytes: float = 0.0,
    available: float | None = None,
    override: str | None = OVERRIDE,
) -> None:
    """Refuse ``what`` (e.g. ``train --steps 1e11``) when ``passes`` passes of at least
    ``seconds_each`` each would take over :data:`MAX_HOURS`, or ``need_bytes`` exceed the
    free memory (:func:`check_budget`, with the count in the message and ``override``:
    the flag that skips the check, None for a command without one).

    >>> check_work("train --steps 100", passes=100, seconds_each=0.01)
    >>> check_work("train --steps 1e11", passes=1e11, seconds_each=1e-3)
    Traceback (most recent call last):
    ...
    lostmid.errors.UserError: train --steps 1e11 would take about 1.16e+03 days on one core
    (a rough estimate, more than 24 h); make it smaller, or pass --no-size-check to run it anyway
    """
    check_budget(
        what,
        need_bytes=need_bytes,
        seconds=passes * seconds_each,
        available=available,
        override=override,
    )


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
