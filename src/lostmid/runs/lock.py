"""One run at a time in each ``--out``: a lock file naming its owner.

Every command that writes into ``--out`` holds ``OUT/.lostmid.lock`` while it runs
(:func:`holds_out`, one line on each ``run_X``). The file says who holds it (pid, host,
command, start time); the lock itself is the kernel's (``flock``), so it ends with its
process however that process ends (a crash, ``kill -9``): a lock left by a dead process
is taken over by the next run, and the file is removed when its run ends. A second run on
the same ``--out`` refuses in one line naming the owner, or waits for it when asked
(``lostmid --wait SECONDS COMMAND ...``, or ``LOSTMID_WAIT=SECONDS`` in the environment,
which Ray workers and subprocesses inherit).

The same process may lock a folder again (a command calling another on the same
``--out``): the lock is counted, not taken twice.

Ours rather than ``filelock``: its Unix lock is the same ``flock`` (so neither needs
stale-lock logic), but a refused run here names the holder (pid, host, command, start)
from the lock file's contents, and file systems without ``flock`` fall back to that pid.

>>> import tempfile
>>> out = Path(tempfile.mkdtemp())
>>> with lock_out(out, "theory"):
...     owner(out)["command"]
'theory'
>>> owner(out) is None
True
"""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from lostmid.errors import UserError
from lostmid.files import check_out_dir, disk_full_error, is_disk_full, loads

LOCK_FILE = ".lostmid.lock"
WAIT_ENV = "LOSTMID_WAIT"
_POLL_S = 0.2

HELP = {
    "wait": "Seconds to wait for another lostmid run that holds the same --out (default 0: "
    f"refuse at once, naming it); also ${WAIT_ENV}.",
}

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class LockConfig:
    """How a run meets another one holding its ``--out``: ``wait`` seconds (0: refuse)."""

    wait: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.wait, bool) or not self.wait >= 0:
            raise UserError(f"--wait must be a number of seconds >= 0, got {self.wait!r}")


def wait_seconds() -> float:
    """The wait asked for in ``$LOSTMID_WAIT`` (0 when unset)."""
    text = os.environ.get(WAIT_ENV, "").strip()
    if not text:
        return 0.0
    try:
        return LockConfig(float(text)).wait
    except ValueError:
        raise UserError(f"${WAIT_ENV} must be a number of seconds >= 0, got {text!r}") from None


# folder (resolved) -> [open lock file descriptor, how many times this process holds it]
_HELD: dict[Path, list[int]] = {}


def owner(out: Path) -> dict[str, Any] | None:
    """What the lock file in ``out`` says about its holder, or None without one."""
    try:
        data = loads((Path(out) / LOCK_FILE).read_text() or "null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _describe(info: dict[str, Any] | None) -> str:
    if not info:
        return "another lostmid run"
    host = info.get("host")
    where = "" if host in (None, socket.gethostname()) else f" on {host}"
    since = f", since {info['started_utc']}" if info.get("started_utc") else ""
    return f"lostmid {info.get('command', '?')} (pid {info.get('pid', '?')}{where}{since})"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """One process at a time past this point (a cache entry being built): the kernel's
    ``flock`` on ``path``, waited for, released with the block or its process.

    >>> import tempfile
    >>> with file_lock(Path(tempfile.mkdtemp()) / "x.lock"):
    ...     pass
    """
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _try_flock(fd: int) -> bool:
    """Take the kernel lock on ``fd`` without blocking; False when someone holds it."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as err:
        if err.errno in (errno.EAGAIN, errno.EACCES):
            return False
        if err.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
            return _pid_lock_free(fd)  # a file system without flock: trust the pid
        raise
    return True


def _pid_lock_free(fd: int) -> bool:
    """Without ``flock``: free when the file names no live process on this host."""
    try:
        data = loads(os.pread(fd, 1 << 16, 0).decode() or "null")
    except ValueError:
        return True
    if not isinstance(data, dict) or data.get("host") != socket.gethostname():
        return not data
    pid = data.get("pid")
    return not (isinstance(pid, int) and pid != os.getpid() and _pid_alive(pid))


def _still_there(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (its last holder may have removed
    it between our open and our lock: then we locked a file nobody else will see)."""
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _acquire(out: Path, command: str, wait: float) -> int:
    """Open and lock ``out/.lostmid.lock``; write who holds it. Returns the descriptor."""
    path = out / LOCK_FILE
    deadline = time.monotonic() + wait
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            if _try_flock(fd) and _still_there(fd, path):
                info = {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "command": command,
                    "started_utc": datetime.now(UTC).isoformat(timespec="seconds"),
                }
                os.ftruncate(fd, 0)
                os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
                return fd
        except BaseException:  # e.g. a full disk while writing who holds it
            os.close(fd)
            raise
        holder = owner(out)
        os.close(fd)
        if time.monotonic() >= deadline:
            hint = "wait for it to finish" if wait == 0 else f"waited {wait:g} s; wait longer"
            raise UserError(
                f"--out {out} is in use by {_describe(holder)}; {hint}, choose another "
                f"--out, or pass --wait SECONDS (lostmid --wait 600 {command} ...) to wait"
            )
        time.sleep(min(_POLL_S, max(deadline - time.monotonic(), 0.0)))


@contextmanager
def lock_out(out: Path, command: str, wait: float | None = None) -> Iterator[Path]:
    """Hold the lock of ``out`` (created if missing) for the ``with`` block; ``wait``
    seconds for another holder (None: :func:`wait_seconds`). Yields ``out``."""
    out = Path(out)
    check_out_dir(out)
    created = _first_missing(out)  # removed again if the run leaves nothing there
    try:
        out.mkdir(parents=True, exist_ok=True)
        key = out.resolve()
        held = _HELD.get(key)
        if held is not None:
            held[1] += 1
        else:
            fd = _acquire(out, command, wait_seconds() if wait is None else wait)
            _HELD[key] = [fd, 1]
            try:
                remove_stale_temporaries(out)
            except BaseException:
                _release(key)
                raise
    except BaseException as err:
        if created is not None:
            _remove_empty(out, created)
        if not isinstance(err, OSError):
            raise
        if is_disk_full(err):
            raise disk_full_error(out / LOCK_FILE, err) from None
        raise UserError(
            f"--out {out}: cannot write there ({err.strerror or err}); choose another --out"
        ) from None
    try:
        yield out
    finally:
        _release(key)
        if created is not None:
            _remove_empty(out, created)


_TEMPORARY = re.compile(r"^\..+\.(\d+)\.[0-9a-f]{8}\.(?:tmp|old)$")


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Remove the temporary files and folders that writers killed mid-write left under
    ``out`` (:mod:`lostmid.files` names them ``.NAME.PID.RANDOM.tmp``; nothing ever
    reads them): those whose PID is no longer alive. Called with the lock held, so no
    other run is writing here. Returns what was removed."""
    removed = []
    for root, dirs, files in os.walk(out):
        for name in [*files, *dirs]:
            match = _TEMPORARY.match(name)
            if match is None or _pid_alive(int(match.group(1))):
                continue
            path = Path(root) / name
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
                dirs.remove(name)
            else:
                path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _first_missing(path: Path) -> Path | None:
    """The outermost folder of ``path`` that does not exist yet (None: it exists)."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing = folder
    return missing


def _remove_empty(path: Path, up_to: Path) -> None:
    """Remove ``path`` and its parents up to ``up_to`` while they are empty: a run
    refused before it wrote anything leaves no folder behind."""
    for folder in (path, *path.parents):
        try:
            folder.rmdir()
        except OSError:  # not empty (or gone): keep it and everything above
            return
        if folder == up_to:
            return


def _release(key: Path) -> None:
    held = _HELD[key]
    held[1] -= 1
    if held[1] > 0:
        return
    del _HELD[key]
    try:
        (key / LOCK_FILE).unlink(missing_ok=True)  # still ours: we hold the flock
    except OSError:
        pass
    os.close(held[0])  # releases the kernel lock


def holds_out(command: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a ``run_X(config, *, out, ...)``: it runs holding the lock of ``out``
    (:func:`lock_out`), so two runs never write one folder at once.

    >>> @holds_out("demo")
    ... def run_demo(*, out: Path) -> str:
    ...     return owner(out)["command"]
    >>> import tempfile
    >>> run_demo(out=Path(tempfile.mkdtemp()))
    'demo'
    """

    def decorate(run: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(run)
        def locked(*args: P.args, **kwargs: P.kwargs) -> R:
            out = kwargs.get("out")
            if out is None:
                return run(*args, **kwargs)
            with lock_out(Path(str(out)), command):
                return run(*args, **kwargs)

        return locked

    return decorate
