"""The two shapes of a retrieval task, plug-ins that :mod:`~lostmid.behaviour.tasks.registry`
lists: a task placed by depth (:class:`DepthTask`: RULER's needles; its generator, its
position axis in % of a haystack, its checks, its answer rule and its difficulty knob)
and a task placed by gold index among records (:class:`IndexTask`: Liu's key-value
task and MQAR; its records, its question, its length rule, its checks and the rows a
small model is trained on).

Adding a task is one module that builds one of them and one entry in
:data:`lostmid.behaviour.tasks.registry.DEPTH_TASKS` or ``INDEX_TASKS``; ``lostmid retrieve
--task NAME``, ``--lengths`` grids, ``--export`` and ``--calibrate`` (and, for a task
placed by index, ``--design shared``, ``lostmid train --task`` and the training-time
remedies) then take it with no other edit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lostmid.behaviour.tasks.example import RetrievalExample, check_gold_indices

TokenCounter = Callable[[str], int]
# (run options, item, depth %, length in tokens, token counter) -> the example; the options
# are the run's RetrieveConfig (seed, haystack and the task's own fields)
Generator = Callable[[Any, int, int, int, TokenCounter], RetrievalExample]
# the same arguments -> every example of the item at the depth under a design that places
# one item several ways at a depth, or None where the options ask for no such design
Designer = Callable[[Any, int, int, int, TokenCounter], list[RetrievalExample] | None]


def no_check(options: Any) -> None:
    """A task with no options of its own to check."""


@dataclass(frozen=True)
class DepthTask:
    """A retrieval task whose answer sits at a depth (percent) of a filler context.

    Attributes:
        name: ``--task`` value.
        summary: one line for help and the docs.
        generate: the example of an item at a depth and length (:data:`Generator`);
            example ``i`` of a run is a function of (seed, i) only and the depth moves
            only what is asked, so examples at different depths are paired.
        knob: the option ``--calibrate`` moves (a RetrieveConfig field, e.g.
            ``distractors``); accuracy is expected to fall as it grows.
        ladder: the knob's values the calibration searches, easiest first.
        check: raises a one-line UserError for options the task cannot take.
        rule: the default answer rule (``--scoring auto``).
        query_aware: the generator can state the question before the haystack too
            (``--query-aware``, and the query-aware remedy).
        inference_remedies: ``lostmid remedies`` may run its inference remedies on it
            (query-aware, attention calibration, Ms-PoE need a text prompt with the
            question after the context and a distractor knob).
        design: the examples of an item at a depth when the options ask for a design
            that places it several ways there (:data:`Designer`; the needles' factorial
            design), else None.
    """

    name: str
    summary: str
    generate: Generator
    knob: str
    ladder: tuple[int, ...]
    check: Callable[[Any], None] = no_check
    rule: str = "substring"
    query_aware: bool = True
    inference_remedies: bool = True
    design: Designer | None = None

    axis = "depth"
    """What a position is: a depth in % of the haystack."""

    def examples(
        self, options: Any, index: int, depth: int, length: int, count: TokenCounter
    ) -> list[RetrievalExample]:
        """Every example of item ``index`` at ``depth``: the design's when the options ask
        for one (:attr:`design`), else the one :attr:`generate` makes."""
        if self.design is not None:
            found = self.design(options, index, depth, length, count)
            if found is not None:
                return found
        return [self.generate(options, index, depth, length, count)]

    def supports_query_aware(self, options: Any) -> bool:
        """Whether ``--query-aware`` applies with these options."""
        return self.query_aware


# (options, seed, item, pairs) -> the item's records, gold first (the caller orders them)
Drawer = Callable[[Any, int, int, int], Sequence[Any]]
# (options, records in order, gold index, item) -> the question about records[gold]
Asker = Callable[[Any, Sequence[Any], int, int], RetrievalExample]
# (options, seed, index, golds) -> (token ids of a training row, its answers: (start,
# stop, gold) spans of ids that are loss tokens, each weighed by its gold's weight)
RowMaker = Callable[[Any, int, int, Sequence[int]], tuple[list[int], list[tuple[int, int, int]]]]


@dataclass(frozen=True)
class IndexOptions:
    """The fields a task placed by index reads, for callers that hold them as arguments
    rather than in a RetrieveConfig or RetrievalTask."""

    pairs: int
    key_chars: int
    style: str
    query_aware: bool
    vocab: int
    offset: int


def byte_vocabulary(options: Any) -> int:
    """A byte-level task's vocabulary."""
    return 256


def never(options: Any) -> bool:
    """A capability the task does not have, whatever the options."""
    return False


def no_chance(options: Any) -> float | None:
    """No chance level stated (free text)."""
    return None


@dataclass(frozen=True)
class IndexTask:
    """A retrieval task whose answer is one of the records of the context, placed by
    its gold index (0-indexed; Liu et al.'s convention).

    ``options`` below is any object with the task's fields as attributes (the run's
    RetrieveConfig, a training RetrievalTask): ``pairs``, ``key_chars``, ``style``,
    ``query_aware``, ``vocab``, ``offset``, ``queries``, as the task reads them.

    Attributes:
        name: ``--task`` value.
        summary: one line for help and the docs.
        draw: the records of item ``i`` (:data:`Drawer`), a function of (seed, i) only,
            so the examples at different gold indices are paired.
        ask: the question about one record of records kept in order (:data:`Asker`);
            example ``i`` at gold ``g`` is ``ask(draw(i)`` with the gold record moved
            to ``g``) and ``--design shared`` asks every gold of one drawn context.
        pairs_for_length: the most records whose prompt fits a length in tokens
            (options, length, token counter, seed) for ``--lengths``.
        check: raises a one-line UserError for options the task cannot take.
        text: prompts are text (False: token ids, no tokenizer, no lead-in or lm-eval).
        vocab_size: the vocabulary a model trained on it needs.
        chance: accuracy by guessing (None where not stated).
        training_row: one training row with its loss spans (:data:`RowMaker`).
        context_end: characters (or ids) after the last record that still belong to
            the context (kv's closing brace: 1).
        preset: ``lostmid train --task NAME``'s default retrieval preset.
        query_aware: whether ``--query-aware`` applies with the given options.
        inference_remedies: ``lostmid remedies`` may run its inference remedies on it.
    """

    name: str
    summary: str
    draw: Drawer
    ask: Asker
    pairs_for_length: Callable[[Any, int, TokenCounter, int], int]
    training_row: RowMaker
    preset: str
    check: Callable[[Any], None] = no_check
    text: bool = True
    vocab_size: Callable[[Any], int] = byte_vocabulary
    chance: Callable[[Any], float | None] = no_chance
    context_end: int = 0
    query_aware: Callable[[Any], bool] = never
    inference_remedies: bool = False

    axis = "index"
    """What a position is: the gold record's index (0-indexed)."""

    def supports_query_aware(self, options: Any) -> bool:
        """Whether ``--query-aware`` applies with these options."""
        return self.query_aware(options)

    def example(
        self, options: Any, seed: int, item: int, pairs: int, gold: int
    ) -> RetrievalExample:
        """Item ``item`` with its gold record (the first drawn) moved to index ``gold``."""
        check_gold_indices([gold], pairs)
        drawn = list(self.draw(options, seed, item, pairs))
        ordered = drawn[1:]
        ordered.insert(gold, drawn[0])
        return self.ask(options, ordered, gold, item)
