"""The shape of a retrieval task placed by depth (:class:`DepthTask`), a plug-in that
:mod:`~lostmid.behaviour.registry` lists: its generator, its position axis (depth in %
of a haystack), its checks, its answer rule and its difficulty knob.

Adding such a task is one module that builds a :class:`DepthTask` and one entry in
:data:`lostmid.behaviour.registry.DEPTH_TASKS`; ``lostmid retrieve --task NAME``,
``--lengths`` grids, ``--export`` and ``--calibrate`` then take it with no other edit.
(kv and mqar, placed by gold index and served by ``--design shared`` and training, are
not plug-ins yet.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lostmid.behaviour.example import RetrievalExample

TokenCounter = Callable[[str], int]
# (run options, item, depth %, length in tokens, token counter) -> the example; the options
# are the run's RetrieveConfig (seed, haystack and the task's own fields)
Generator = Callable[[Any, int, int, int, TokenCounter], RetrievalExample]


def no_check(options: Any) -> None:
    """A task with no options of its own to check."""


@dataclass(frozen=True)
class DepthTask:
    """A retrieval task whose answer sits at a depth (percent) of a filler context.

    Attributes:
        name: ``--task`` value.
        summary: one line for help and the README.
        generate: the example of an item at a depth and length (:data:`Generator`);
            example ``i`` of a run is a function of (seed, i) only and the depth moves
            only what is asked, so examples at different depths are paired.
        knob: the option ``--calibrate`` moves (a RetrieveConfig field, e.g.
            ``distractors``); accuracy is expected to fall as it grows.
        ladder: the knob's values the calibration searches, easiest first.
        check: raises a one-line UserError for options the task cannot take.
        rule: the default answer rule (``--scoring auto``).
    """

    name: str
    summary: str
    generate: Generator
    knob: str
    ladder: tuple[int, ...]
    check: Callable[[Any], None] = no_check
    rule: str = "substring"
