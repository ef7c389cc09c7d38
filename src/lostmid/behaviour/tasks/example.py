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

import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lostmid.checks import check_positive
from lostmid.errors import UserError

# what --data files hold (lostmid.behaviour.formats.records): Liu's multi-document QA, RULER records
# without a needle lostmid can move, LongBench-style records
DATA_TASKS = ("qa", "ruler", "longbench")
_TASK_IDS = {"kv": 1, "niah": 2, "mqar": 3}
MATCHES = ("any", "all")
# the keys lostmid adds to a field's record when it writes one (RetrievalExample.record)
_OWN_KEYS = (
    "task",
    "prompt",
    "target",
    "gold_index",
    "depth",
    "depth_pct",
    "length_cell",
    "item",
    "pairs",
)


@dataclass(frozen=True)
class NeedlePlacement:
    """Where the needles of one designed needle prompt sit, in context order.

    Attributes:
        arrangement: ``factorial`` (the gold at a depth, the distractors placed to give
            it a rank) or ``ends`` (the distractors fixed at both ends of the haystack,
            the gold moved between them).
        rank: the gold's rank among the needles: ``first``, ``middle`` or ``last``.
        values: every needle's value, in the order the needles appear in the context.
        gold: the gold needle's index in ``values`` (0-indexed).
        gaps: filler tokens between each pair of neighbouring needles (sentence by
            sentence, as the depth is counted): ``len(values) - 1`` of them.
        gold_depth: the share of the filler before the gold needle, in % (the depth as
            placed, after snapping to a sentence end).
    """

    arrangement: str
    rank: str
    values: tuple[str, ...]
    gold: int
    gaps: tuple[int, ...]
    gold_depth: float


@dataclass(frozen=True)
class RetrievalExample:
    """One retrieval question with its answer and where the answer sits.

    Attributes:
        task: ``kv``, ``niah`` or ``mqar``; from a ``--data`` file also ``qa``,
            ``ruler`` or ``longbench``.
        prompt: the text given to the model (for mqar a readable rendering of
            ``prompt_ids``; the ids are what a model reads). It ends with
            ``answer_prefix``, which a chat template puts after the generation prompt.
        key: what is asked for; value: the answer (the first of ``answers``).
        target: the continuation that is scored under teacher forcing (``" " + value``
            after Liu's and RULER's prompts, ``value`` after a compact kv prompt).
        gold_index: 0-indexed record holding the answer (kv, mqar), else None.
        depth: needle depth in percent of the haystack (niah), else None.
        records: kv: the ordered (key, value) pairs of the JSON object.
        spans: per record (kv, mqar) or for the needle (niah), ``[start, end)`` offsets:
            characters of ``prompt`` (kv, niah) or tokens of ``prompt_ids`` (mqar).
        prompt_ids, target_ids: token ids of a token-level task (mqar), else None.
        answers: every reference answer (default: ``(value,)``); ``match`` says whether
            any one (``any``: QA alternatives) or all of them (``all``: RULER's
            outputs) must be found for the answer to be correct.
        answer_prefix: the end of ``prompt`` that starts the answer (RULER's ``The
            special magic number for ... is``), empty when the prompt asks and stops.
        query_start: where the question about the gold record begins (characters of
            ``prompt``, tokens of ``prompt_ids``): ``prompt[:query_start]`` is the context
            that ``--design shared`` encodes once for every record; None when the
            question is not at the end (query-aware prompts, needles, QA).
        pairs: the number of records (kv, mqar, qa documents), else None.
        length: the length cell in tokens (``--lengths``), else None.
        depth_pct: the gold position as a percentage of the records (kv, mqar, qa: the
            grid fraction, or 100 * gold_index / (pairs - 1)) or the needle depth (niah,
            ruler, longbench: exact, before snapping to a cell): the heatmap's row.
        context: ``[start, end)`` characters of the whole context when it is more than
            the records' spans (needles: the haystack), else None (:attr:`context_span`).
        item: which item (seeded example or data record) this is; examples with the same
            item are the same records or haystack at different positions.
        source: the record of a ``--data`` file this example came from (gold moved),
            for writing it back in its format.
        needles: where every needle of a designed needle prompt sits
            (:class:`NeedlePlacement`: ``--needle-order factorial``), else None.
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
    answers: tuple[str, ...] = ()
    match: str = "any"
    answer_prefix: str = ""
    query_start: int | None = None
    pairs: int | None = None
    length: int | None = None
    depth_pct: float | None = None
    item: int = 0
    source: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    context: tuple[int, int] | None = None
    needles: NeedlePlacement | None = field(default=None, compare=False, repr=False)

    @property
    def context_span(self) -> tuple[int, int]:
        """``[start, end)`` characters of the context the question is about: ``context``
        when the task states it (needles: the whole haystack), else from the first
        record's start to the last record's end."""
        if self.context is not None:
            return self.context
        return self.spans[0][0], self.spans[-1][1]

    @property
    def position(self) -> int:
        """The gold position: ``gold_index`` (kv, mqar, qa) or ``depth`` (niah, ruler,
        longbench; a whole percentage)."""
        # every task's example has one of the two (a bare example, built only to count
        # tokens, has neither and is never asked)
        return self.depth if self.gold_index is None else self.gold_index  # type: ignore[return-value]

    @property
    def references(self) -> tuple[str, ...]:
        """The reference answers: ``answers``, or ``(value,)``."""
        return self.answers or (self.value,)

    def record(self, tokens: int | None = None) -> dict[str, Any]:
        """The JSON-lines form (``--export``): the field's record for the task plus
        lostmid's keys (the formats: :mod:`lostmid.behaviour.formats.records`). kv: Liu's
        ``ordered_kv_records``, ``key``, ``value``; niah: RULER's ``index``, ``input``,
        ``outputs``, ``length`` (``tokens``, the prompt's token count, when given),
        ``answer_prefix``; from a ``--data`` file: the record read, gold moved; mqar:
        lostmid's. Added: ``task``, ``prompt``, ``target``, ``gold_index`` or ``depth``,
        ``depth_pct``, ``length_cell``, ``item``, ``pairs``; token ids for mqar.

        >>> ex = RetrievalExample("kv", "p", "c", "d", " d", 1, records=(("a", "b"), ("c", "d")))
        >>> r = ex.record()
        >>> r["ordered_kv_records"], r["key"], r["value"], r["gold_index"]
        ([['a', 'b'], ['c', 'd']], 'c', 'd', 1)
        """
        if self.source is not None:
            out: dict[str, Any] = {k: v for k, v in self.source.items() if k not in _OWN_KEYS}
        elif self.records:  # text records (kv): Liu's layout
            out = {
                "ordered_kv_records": [list(p) for p in self.records],
                "key": self.key,
                "value": self.value,
            }
        elif self.depth is not None:  # a needle task: RULER's record
            cut = len(self.prompt) - len(self.answer_prefix)
            out = {
                "index": self.item,
                "input": self.prompt[:cut],
                "outputs": list(self.references),
                "length": tokens if tokens is not None else self.length,
                "answer_prefix": self.answer_prefix,
                "key": self.key,
                # RULER's pred/call_api.py carries `others` into its prediction files:
                # where the needle sat, so `lostmid score --format ruler` can pool them
                "others": {"depth": self.depth, "item": self.item, "length_cell": self.length},
            }
        else:  # token-id records (mqar): lostmid's own record
            out = {"key": self.key, "value": self.value}
        out.update(task=self.task, prompt=self.prompt, target=self.target)
        if self.gold_index is not None:
            out["gold_index"] = self.gold_index
        if self.depth is not None:
            out["depth"] = self.depth
        out.update(depth_pct=self.depth_pct, length_cell=self.length, item=self.item)
        out["pairs"] = self.pairs
        if self.prompt_ids is not None:
            out["prompt_ids"] = list(self.prompt_ids)
            out["target_ids"] = list(self.target_ids or ())
        return out


def example_seed(seed: int, task: str, index: int) -> int:
    """The integer seed of example ``index`` of ``task`` under run seed ``seed`` (a task
    registered later draws under the CRC-32 of its name)."""
    task_id = _TASK_IDS.get(task) or zlib.crc32(task.encode())
    state = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, task_id, int(index)])
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
        # more positions than records name every record, as ``pairs`` of them do
        grid = np.linspace(0.0, 1.0, min(int(count), int(pairs)))
    return tuple(sorted({int(np.floor(q * (pairs - 1) + 1e-9)) for q in grid}))


def default_depths(count: int | None = None) -> tuple[int, ...]:
    """Needle depths in percent: 0, 25, 50, 75, 100, or ``count`` evenly spaced.

    >>> default_depths(3)
    (0, 50, 100)
    """
    if count is None:
        return (0, 25, 50, 75, 100)
    check_positive("--positions", count)
    # more than 101 name every whole percentage, as 101 do
    return tuple(sorted({int(round(d)) for d in np.linspace(0, 100, min(int(count), 101))}))


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


def largest_fitting(tokens: Callable[[int], int], length: int, start: int) -> int:
    """The largest n >= ``start`` with ``tokens(n) <= length``, for a ``tokens`` that grows
    with n and ``tokens(start) <= length`` (the caller checks that one): doubling, then
    bisection, about 2 log2(n) calls.

    >>> largest_fitting(lambda n: 10 + 3 * n, 100, 0)  # 10 + 3 * 30 = 100
    30
    """
    lo, hi = start, max(2 * start, start + 1)
    while tokens(hi) <= length:
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # tokens(lo) <= length < tokens(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if tokens(mid) <= length else (lo, mid)
    return lo
