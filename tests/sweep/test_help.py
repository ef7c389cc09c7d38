"""The sweep's help and its registry cannot drift: the help is read from the registry."""

from __future__ import annotations

from lostmid.sweep.run import HELP
from lostmid.sweep.units import TASKS


def test_task_help_names_every_registered_task() -> None:
    listed = HELP["task"].removeprefix("The task of every unit: ").rstrip(".").split(" | ")
    assert listed == list(TASKS)
    assert "train-retrieval" in listed  # the one the hand-kept list had lost
