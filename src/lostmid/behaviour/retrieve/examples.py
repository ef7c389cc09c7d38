"""The examples a ``lostmid retrieve`` run reads: its task's grid or its ``--data`` file,
the lead-in appended, and the greedy budget they need.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lostmid.behaviour.decoding.prompts import (
    Encoded,
    PromptFormat,
    with_lead_in,
)
from lostmid.behaviour.decoding.tokenizers import Tokenizer
from lostmid.behaviour.retrieve.config import LEARN, NIAH_LENGTH, RetrieveConfig
from lostmid.behaviour.tasks.example import RetrievalExample

# -- examples -----------------------------------------------------------------------------


def retrieval_examples(
    config: RetrieveConfig, tokenizer: Tokenizer | None, fmt: PromptFormat, first_item: int = 0
) -> tuple[list[RetrievalExample], dict[str, Any] | None]:
    """The examples ``config`` asks for (its task's grid, or its ``--data`` file), lengths
    counted in ``tokenizer``'s tokens as ``fmt`` renders them; and the data file's record
    (None for generated examples)."""
    if config.data is not None:
        from lostmid.behaviour.formats.records import data_examples

        fmt_name, found, left_out = data_examples(
            config.data,
            gold_index=config.gold_index,
            depth=config.depth,
            positions=config.positions,
            examples=config.resolved_examples,
            lengths=config.lengths,
            query_aware=config.query_aware,
            style=config.style,
            shared=config.design == "shared",
            task=config.task,
        )
        found = with_lead_in(found, fixed_lead_in(config))
        return found, {"path": str(config.data), "format": fmt_name, "left_out": left_out}
    from lostmid.behaviour.retrieve.grid import grid_examples

    def count(text: str) -> int:
        if tokenizer is None:
            return len(text)
        example = RetrievalExample("kv", text, "", "", "")
        return len(tokenizer.encode(fmt.text(example, tokenizer), special=fmt.add_special_tokens))

    found = grid_examples(
        config.task,
        lengths=config.resolved_lengths(),
        examples=int(config.resolved_examples or 1),
        seed=config.seed,
        pairs=config.pairs,
        gold_index=config.gold_index,
        depth=config.depth,
        positions=config.positions,
        key_chars=config.key_chars,
        style=config.style,
        query_aware=config.query_aware,
        haystack=config.haystack,
        vocab=config.vocab,
        offset=config.offset,
        niah_length=config.resolved_length() or NIAH_LENGTH,
        design=config.design,
        count_tokens=count,
        options=config,
        first_item=first_item,
    )
    return with_lead_in(found, fixed_lead_in(config)), None


def fixed_lead_in(config: RetrieveConfig) -> str:
    """The lead-in to append (none while ``learn`` is still to be learnt)."""
    return "" if config.lead_in == LEARN else config.lead_in


def prefix_text(example: RetrievalExample, fmt: PromptFormat) -> str | None:
    """The answer prefix as the model reads it (None: the prompt asks and stops)."""
    if not example.answer_prefix:
        return None
    return example.answer_prefix.lstrip() if fmt.prefix_in_answer else example.answer_prefix


def answer_budget(examples: Sequence[RetrievalExample], encoded: Encoded, extra: int) -> int:
    """Greedy decoding's new tokens: the longest target, plus ``extra`` for each answer an
    example asks for all of (``match == "all"``: RULER's multi-value and multi-query
    needles; one for the others). A model lists several answers in its own format (a
    bullet and a newline before each), which the target's ", " does not count: with
    one ``extra`` for the list, SmolLM2 ran out one digit before the end of its second
    value and a two-value needle read 0 of 12.

    >>> from lostmid.behaviour.decoding.prompts import Encoded
    >>> one = RetrievalExample("niah", "p", "k", "1", " 1", None, depth=0)
    >>> two = RetrievalExample("niah", "p", "k", "1", " 1, 2", None, depth=0, answers=("1", "2"),
    ...                        match="all")
    >>> answer_budget([one, two], Encoded([[0], [0]], [[1], [1, 2, 3]]), 4)
    11
    """
    return max(
        len(target) + extra * (len(ex.references) if ex.match == "all" else 1)
        for ex, target in zip(examples, encoded.targets, strict=True)
    )
