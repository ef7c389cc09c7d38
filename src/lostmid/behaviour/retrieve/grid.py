"""Length x position grids (``retrieve --lengths``): which examples fill which cell.

A cell is (length, position): the length in tokens of the context (``None``: the run's
one length, ``--pairs`` or ``--length``), and the gold index (kv, mqar; 0-indexed) or
the needle depth (niah; percent). Lengths: niah fills the haystack to the length (its
prompt with the needle at the end is at most that many tokens); kv takes the most pairs
whose prompt (gold last, example 0, counted by the model's tokenizer and the chat
template when applied) fits the length; mqar takes (length - 1) // 2 pairs
(``k1 v1 ... kN vN k``).

Positions at each length: ``--gold-index`` as given (each must exist at every length);
otherwise K evenly spaced fractions q = 0, 1/(K-1), ..., 1 (default 0, 1/4, 1/2, 3/4, 1)
at gold index floor(q (pairs - 1)), Liu et al.'s 0/34/69/104/139 at 140 pairs. The
heatmap's row is the fraction as a percentage (``depth_pct``), the same at every
length; a gold index given explicitly has the row 100 * index / (pairs - 1).

Designs: ``moved`` (Liu et al.'s: example i is the same records at every position, the
gold pair moved there) and ``shared`` (one context per example i, its records in their
drawn order, the key of the record at each position asked of it: one prefill serves
every position).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np

from lostmid.behaviour.tasks.example import (
    RetrievalExample,
    check_depths,
    check_gold_indices,
    default_depths,
)
from lostmid.behaviour.tasks.plugin import IndexOptions, IndexTask
from lostmid.behaviour.tasks.registry import depth_task, index_task
from lostmid.checks import check_positive
from lostmid.errors import UserError

TokenCounter = Callable[[str], int]
DESIGNS = ("moved", "shared")


def gold_grid(
    pairs: int, gold_index: Sequence[int] | None = None, positions: int | None = None
) -> list[tuple[int, float]]:
    """(gold index, heatmap row in %) at ``pairs`` records (module doc); duplicates of
    an index keep the first row; more positions than pairs name every record once, as
    ``pairs`` positions do.

    >>> gold_grid(140)
    [(0, 0.0), (34, 25.0), (69, 50.0), (104, 75.0), (139, 100.0)]
    >>> gold_grid(11, gold_index=[5, 0])
    [(0, 0.0), (5, 50.0)]
    """
    check_positive("--pairs", pairs)
    if gold_index is not None:
        return [(i, 100.0 * i / max(pairs - 1, 1)) for i in check_gold_indices(gold_index, pairs)]
    count = 5 if positions is None else int(check_positive("--positions", positions))
    count = min(count, pairs)
    seen: dict[int, float] = {}
    for q in np.linspace(0.0, 1.0, count):
        seen.setdefault(int(np.floor(q * (pairs - 1) + 1e-9)), float(100.0 * q))
    return sorted(seen.items())


def grid_examples(
    task: str,
    *,
    lengths: Sequence[int | None],
    examples: int,
    seed: int,
    pairs: int,
    gold_index: Sequence[int] | None,
    depth: Sequence[int] | None,
    positions: int | None,
    key_chars: int,
    style: str,
    query_aware: bool,
    haystack: str,
    vocab: int,
    offset: int,
    niah_length: int,
    design: str,
    count_tokens: TokenCounter,
    options: Any = None,
    first_item: int = 0,
) -> list[RetrievalExample]:
    """Every example of the grid, grouped by (length, position), items in order; each
    carries its length cell (None for the one length of a run without ``--lengths``).
    Items are ``first_item .. first_item + examples - 1`` (a calibration pilot draws
    its own, :mod:`~lostmid.behaviour.retrieve.calibrate`); ``options``: the run's
    RetrieveConfig, read by tasks placed by depth (:mod:`~lostmid.behaviour.tasks.plugin`)."""
    out: list[RetrievalExample] = []
    items = range(first_item, first_item + examples)
    plugin = depth_task(task)
    if options is None:  # the options every task placed by depth reads
        options = SimpleNamespace(seed=seed, haystack=haystack)
    indexed = index_task(task)
    # the options every task placed by index reads, as given here
    fields = IndexOptions(pairs, key_chars, style, query_aware, vocab, offset)
    for length in lengths:
        if plugin is not None:
            depths = check_depths(depth) if depth else default_depths(positions)
            for d in depths:
                for i in items:
                    size = niah_length if length is None else length
                    found = plugin.examples(options, i, d, size, count_tokens)
                    out.extend(replace(ex, length=length) for ex in found)
            continue
        assert indexed is not None, task
        size = (
            pairs
            if length is None
            else indexed.pairs_for_length(fields, length, count_tokens, seed)
        )
        try:
            cells = gold_grid(size, gold_index, positions)
        except UserError as err:
            if length is None:
                raise
            raise UserError(f"{err} (at --lengths {length}: {size} pairs)") from None
        out.extend(_indexed(indexed, fields, design, cells, size, length, seed, items))
    return out


def _indexed(
    task: IndexTask,
    fields: Any,
    design: str,
    cells: list[tuple[int, float]],
    size: int,
    length: int | None,
    seed: int,
    items: range,
) -> list[RetrievalExample]:
    out = []
    drawn: dict[int, Sequence[Any]] = {}
    for g, row in cells:
        for i in items:
            if design == "shared":  # one drawn context per item, every gold asked of it
                if i not in drawn:
                    drawn[i] = task.draw(fields, seed, i, size)
                ex = task.ask(fields, drawn[i], g, i)
            else:
                ex = task.example(fields, seed, i, size, g)
            out.append(replace(ex, length=length, depth_pct=row))
    return out
