"""Module-level job bodies for the worker-process tests (a spawned worker imports them
by name, as it would any stage's compute)."""

from __future__ import annotations

import os


def square(x: int) -> dict[str, int]:
    return {"y": x * x, "pid": os.getpid()}


def fail(x: int) -> dict[str, int]:
    raise ValueError(f"bad input {x}")


def die(x: int) -> dict[str, int]:
    os._exit(3)  # the worker process dies, as when killed or out of memory


def interrupt_the_group(x: int) -> dict[str, int]:
    """Ctrl-C as a terminal sends it: SIGINT to every process of the foreground group
    (the driver and its workers). The worker must ignore it; the driver stops."""
    import signal
    import time

    os.kill(0, signal.SIGINT)
    time.sleep(30)  # the driver terminates this worker long before
    return {"x": x}
