"""lostmid.runs.budget: the size verdict comes out either way, with the numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from lostmid.errors import UserError
from lostmid.runs.budget import available_memory, check_budget


def test_fits_refused_and_too_long() -> None:
    check_budget("x", need_bytes=9e9, seconds=3600, available=1e10)  # fits: no error
    with pytest.raises(UserError, match=r"^x needs about 9.31 GiB of memory; this machine has"):
        check_budget("x", need_bytes=1e10, available=9e9)
    with pytest.raises(UserError, match=r"would take about 41.7 days on one core"):
        check_budget("x", need_bytes=1, seconds=3.6e6, available=1e10)
    check_budget("x", need_bytes=1, seconds=3.6e6, available=1e10, max_hours=2000)


def test_available_memory_is_what_the_kernel_says() -> None:
    found = available_memory()
    meminfo = {
        line.split(":")[0]: float(line.split()[1]) * 1024
        for line in Path("/proc/meminfo").read_text().splitlines()
    }
    assert 0 < found <= meminfo["MemTotal"]
