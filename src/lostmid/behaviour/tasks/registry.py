"""Which retrieval tasks ``lostmid retrieve`` knows, each a registered plug-in
(:mod:`~lostmid.behaviour.tasks.plugin`): the tasks placed by gold index among records
(:class:`~lostmid.behaviour.tasks.plugin.IndexTask`: Liu's kv and MQAR, the ones small models
are trained on) and the tasks placed by depth (:class:`~lostmid.behaviour.tasks.plugin.
DepthTask`: RULER's single needle and its multi-key, multi-value and multi-query
variants). A new task is one module and one entry in :data:`INDEX_TASKS` or
:data:`DEPTH_TASKS`.

>>> task_names()
('kv', 'mqar', 'niah', 'niah-multikey', 'niah-multivalue', 'niah-multiquery')
>>> depth_task("niah-multikey").knob, depth_task("kv"), index_task("mqar").text
('distractors', None, False)
"""

from __future__ import annotations

from lostmid.behaviour.tasks.kv import KV_TASK
from lostmid.behaviour.tasks.mqar import MQAR_TASK
from lostmid.behaviour.tasks.needle_design import DESIGNED_NEEDLE_TASKS
from lostmid.behaviour.tasks.niah import NIAH_TASK
from lostmid.behaviour.tasks.plugin import DepthTask, IndexTask
from lostmid.checks import check_choice

INDEX_TASKS: dict[str, IndexTask] = {t.name: t for t in (KV_TASK, MQAR_TASK)}
DEPTH_TASKS: dict[str, DepthTask] = {t.name: t for t in (NIAH_TASK, *DESIGNED_NEEDLE_TASKS)}


def task_names() -> tuple[str, ...]:
    """Every ``--task`` value."""
    return tuple(INDEX_TASKS) + tuple(DEPTH_TASKS)


def depth_task(name: str) -> DepthTask | None:
    """The registered task placed by depth called ``name``, or None (kv, mqar)."""
    return DEPTH_TASKS.get(name)


def index_task(name: str) -> IndexTask | None:
    """The registered task placed by gold index called ``name``, or None (a needle)."""
    return INDEX_TASKS.get(name)


def trainable_task(name: str) -> IndexTask:
    """The task ``lostmid train --task`` takes (those placed by index), or one line."""
    check_choice("--task", name, tuple(INDEX_TASKS))
    return INDEX_TASKS[name]


def task_of(name: str) -> DepthTask | IndexTask:
    """The registered task called ``name``, or one line naming those there are."""
    check_choice("--task", name, task_names())
    return DEPTH_TASKS.get(name) or INDEX_TASKS[name]


def is_depth_task(name: str) -> bool:
    """Whether task ``name`` places its answer by depth (a needle in a haystack).

    >>> is_depth_task("niah-multikey"), is_depth_task("kv")
    (True, False)
    """
    return name in DEPTH_TASKS


def inference_tasks() -> tuple[str, ...]:
    """The tasks ``lostmid remedies`` runs its inference remedies on (each task says).

    >>> inference_tasks()
    ('kv', 'niah-multikey', 'niah-multivalue', 'niah-multiquery')
    """
    tasks: list[DepthTask | IndexTask] = [*INDEX_TASKS.values(), *DEPTH_TASKS.values()]
    return tuple(t.name for t in tasks if t.inference_remedies)


def task_is_text(name: str) -> bool:
    """Whether the prompts of task ``name`` are text (needles and kv; not mqar's ids)."""
    indexed = INDEX_TASKS.get(name)
    return indexed is None or indexed.text
