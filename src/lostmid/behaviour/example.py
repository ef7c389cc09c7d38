"""One retrieval example (:class:`RetrievalExample`), its seed, and its gold positions.

Conventions (positions): ``gold_index`` is 0-indexed over the records (Liu et al.'s
convention: "gold at 0" is the first record, ``pairs - 1`` the last); ``depth`` is a
percentage 0..100 of the haystack (RULER's convention); ``spans`` are half-open
``[start, end)`` character offsets into ``prompt`` (kv, niah) or token offsets into
``prompt_ids`` (mqar).

>>> default_gold_indices(5), check_depths([100, 0, 0])
((0, 1, 2, 3, 4), (0, 100))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.checks import check_positive
from lostmid.errors import UserError

TASKS = ("kv", "niah", "mqar")
_TASK_IDS = {"kv": 1, "niah": 2, "mqar": 3}


@dataclass(frozen=True)
class RetrievalExample:
    """One retrieval question with its answer and where the answer sits.

    Attributes:
        task: ``kv``, ``niah`` or ``mqar``.
        prompt: the text given to the model (for mqar a readable rendering of
            ``prompt_ids``; the ids are what a model reads).
        key: what is asked for; value: the answer.
        target: the continuation that is scored under teacher forcing (``" " + value``
            after Liu's and RULER's prompts, ``value`` after a compact kv prompt).
        gold_index: 0-indexed record holding the answer (kv, mqar), else None.
        depth: needle depth in percent of the haystack (niah), else None.
        records: kv: the ordered (key, value) pairs of the JSON object.
        spans: per record (kv, mqar) or for the needle (niah), ``[start, end)`` offsets:
            characters of ``prompt`` (kv, niah) or tokens of ``prompt_ids`` (mqar).
        prompt_ids, target_ids: token ids of a token-level task (mqar), else None.
    """

    task: str
    prompt: str
    key: str
    value: str
    target: str
    gold_index: int | None = None
    depth: int | None = None
    records: tuple[tuple[str, str], ...] = ()
    spans: tuple[tuple[int, int], ...] = ()
    prompt_ids: tuple[int, ...] | None = None
    target_ids: tuple[int, ...] | None = None

    @property
    def position(self) -> int:
        """The gold position: ``gold_index`` (kv, mqar) or ``depth`` (niah)."""
        return self.depth if self.gold_index is None else self.gold_index  # type: ignore[return-value]

    def record(self) -> dict[str, Any]:
        """The JSON-lines form (``--export``): prompt, key, value, gold_index or depth,
        records for kv, token ids for mqar."""
        out: dict[str, Any] = {
            "task": self.task,
            "prompt": self.prompt,
            "key": self.key,
            "value": self.value,
            "target": self.target,
        }
        if self.gold_index is not None:
            out["gold_index"] = self.gold_index
        if self.depth is not None:
            out["depth"] = self.depth
        if self.task == "kv":
            out["records"] = [list(pair) for pair in self.records]
        if self.prompt_ids is not None:
            out["prompt_ids"] = list(self.prompt_ids)
            out["target_ids"] = list(self.target_ids or ())
        return out


def example_seed(seed: int, task: str, index: int) -> int:
    """The integer seed of example ``index`` of ``task`` under run seed ``seed``."""
    state = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, _TASK_IDS[task], int(index)])
    return int(state.generate_state(2, np.uint64)[0])


# -- positions ---------------------------------------------------------------------------


def default_gold_indices(pairs: int, count: int | None = None) -> tuple[int, ...]:
    """Gold indices (0-indexed): 0, 1/4, 1/2, 3/4 and the last, floored as Liu et al.
    (140 pairs: 0, 34, 69, 104, 139); ``count`` K: K evenly spaced, first and last
    included (duplicates dropped when K > pairs).

    >>> default_gold_indices(140)
    (0, 34, 69, 104, 139)
    >>> default_gold_indices(10, count=4)
    (0, 3, 6, 9)
    """
    check_positive("--pairs", pairs)
    if count is None:
        grid = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    else:
        check_positive("--positions", count)
        grid = np.linspace(0.0, 1.0, int(count))
    return tuple(sorted({int(np.floor(q * (pairs - 1) + 1e-9)) for q in grid}))


def default_depths(count: int | None = None) -> tuple[int, ...]:
    """Needle depths in percent: 0, 25, 50, 75, 100, or ``count`` evenly spaced.

    >>> default_depths(3)
    (0, 50, 100)
    """
    if count is None:
        return (0, 25, 50, 75, 100)
    check_positive("--positions", count)
    return tuple(sorted({int(round(d)) for d in np.linspace(0, 100, int(count))}))


def check_gold_indices(indices: Iterable[int], pairs: int) -> tuple[int, ...]:
    """Sorted unique gold indices, each in 0..pairs-1 (0-indexed, Liu et al.'s convention)."""
    found = tuple(sorted({int(i) for i in indices}))
    if not found:
        raise UserError("--gold-index needs at least one index")
    for i in found:
        if not 0 <= i < pairs:
            raise UserError(
                f"--gold-index must be in 0..{pairs - 1} (0-indexed, as Liu et al.), got {i}"
            )
    return found


def check_depths(depths: Iterable[int]) -> tuple[int, ...]:
    """Sorted unique depths, each a whole percentage in 0..100."""
    found = tuple(sorted({int(d) for d in depths}))
    if not found:
        raise UserError("--depth needs at least one depth")
    for d in found:
        if not 0 <= d <= 100:
            raise UserError(f"--depth must be a percentage in 0..100, got {d}")
    return found
