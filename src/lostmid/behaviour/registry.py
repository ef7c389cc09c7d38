"""Which retrieval tasks ``lostmid retrieve`` knows: kv and mqar (placed by gold index),
and the tasks placed by depth, registered plug-ins (:class:`~lostmid.behaviour.plugin.
DepthTask`): RULER's single needle and its multi-key, multi-value and multi-query
variants. A new task placed by depth is one module and one entry in
:data:`DEPTH_TASKS`.

>>> task_names()
('kv', 'mqar', 'niah', 'niah-multikey', 'niah-multivalue', 'niah-multiquery')
>>> depth_task("niah-multikey").knob, depth_task("kv")
('distractors', None)
"""

from __future__ import annotations

from lostmid.behaviour.needles import NEEDLE_TASKS
from lostmid.behaviour.niah import NIAH_TASK
from lostmid.behaviour.plugin import DepthTask

INDEX_TASKS = ("kv", "mqar")
DEPTH_TASKS: dict[str, DepthTask] = {t.name: t for t in (NIAH_TASK, *NEEDLE_TASKS)}


def task_names() -> tuple[str, ...]:
    """Every ``--task`` value."""
    return INDEX_TASKS + tuple(DEPTH_TASKS)


def depth_task(name: str) -> DepthTask | None:
    """The registered task placed by depth called ``name``, or None (kv, mqar)."""
    return DEPTH_TASKS.get(name)
