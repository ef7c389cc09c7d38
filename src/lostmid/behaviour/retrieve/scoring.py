"""Scoring a ``lostmid retrieve`` run's examples in stages: which examples a stage
holds (every depth of a few items, read from a shared prefix), the model's greedy
answers and teacher-forced scores, and the rows of ``predictions.jsonl``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lostmid.behaviour.decoding.answers import answer_correct, cut_at_eos
from lostmid.behaviour.decoding.generate import (
    TeacherScores,
    greedy_decode,
    padded_batches_pay,
    teacher_forced,
)
from lostmid.behaviour.decoding.prompts import (
    Encoded,
)
from lostmid.behaviour.decoding.tokenizers import Tokenizer
from lostmid.behaviour.retrieve.config import RetrieveConfig
from lostmid.behaviour.score import (
    contains_ids,
)
from lostmid.behaviour.tasks.example import RetrievalExample
from lostmid.behaviour.tasks.needle_design import named_needle
from lostmid.errors import UserError

# fields that do not change a cell's numbers (a rerun that changes only these reuses cells)
NOT_IN_CELLS = ("export", "export_lm_eval", "scoring", "margin")


def guard_lengths(
    examples: Sequence[RetrievalExample],
    encoded: Encoded,
    new_tokens: int,
    passes: Sequence[str],
    model_max: int | None,
    option_max: int | None,
) -> None:
    """One line and no compute when a prompt (plus what is generated or scored after it)
    exceeds the model's maximum positions or ``--max-length``: never a silent cut."""
    limits = [(m, w) for m, w in ((model_max, "the model"), (option_max, "--max-length")) if m]
    if not limits:
        return
    limit, who = min(limits)
    for i, (p, t) in enumerate(zip(encoded.prompts, encoded.targets, strict=True)):
        after = max(new_tokens - 1 if "generate" in passes else 0, len(t) - 1)
        if len(p) + after > limit:
            ex = examples[i]
            cell = f", length cell {ex.length}" if ex.length is not None else ""
            raise UserError(
                f"example {i} ({ex.task}, position {ex.position}{cell}) needs {len(p) + after} "
                f"tokens (prompt {len(p)} + {after} after it) but {who} takes at most {limit}; "
                "use shorter --lengths/--length, fewer --pairs, or another model"
            )


ITEMS_PER_STAGE = 4
"""A depth sweep's stage: every depth of this many items (their prompts share the
haystack up to the shallowest needle, read once: :mod:`lostmid.behaviour.decoding.shared`)."""


def item_stages(
    examples: Sequence[RetrievalExample], shared: bool, axis: str
) -> list[tuple[str, list[int]]]:
    """(stage name, example indices): one stage per length (shared design), per block
    of :data:`ITEMS_PER_STAGE` items at every depth (a depth sweep: an item's prompts
    begin alike), else per cell.

    >>> from lostmid.behaviour.tasks.example import RetrievalExample
    >>> def ex(item, depth):
    ...     return RetrievalExample("niah", "p", "k", "v", " v", None, depth=depth, item=item)
    >>> item_stages([ex(i, d) for d in (0, 50) for i in range(6)], False, "depth")
    [('items-0-3', [0, 1, 2, 3, 6, 7, 8, 9]), ('items-4-7', [4, 5, 10, 11])]
    """
    groups: dict[str, list[int]] = {}
    by_items = not shared and axis == "depth" and len({ex.position for ex in examples}) > 1
    for i, ex in enumerate(examples):
        length = "" if ex.length is None else f"L{ex.length}"
        if shared:
            name = f"shared-{length or 'one'}"
        elif by_items:
            lo = ex.item - ex.item % ITEMS_PER_STAGE
            name = f"items-{length + '-' if length else ''}{lo}-{lo + ITEMS_PER_STAGE - 1}"
        else:
            name = f"cell-{length}-{axis}{ex.position}" if length else f"cell-{axis}{ex.position}"
        groups.setdefault(name, []).append(i)
    return list(groups.items())


def score_members(
    loaded: Any,
    encoded: Encoded,
    members: list[int],
    passes: Sequence[str],
    new_tokens: int,
    config: RetrieveConfig,
    shared: bool,
    progress: Callable[[int], None] | None = None,
    reading: dict[str, int] | None = None,
) -> list[dict[str, Any]]:
    """The raw result of examples ``members``: greedy ids and teacher-forced scores;
    ``progress`` is called with the examples done as they finish (a long stage reports
    before its end); ``reading`` counts the prompt tokens and those read where prompts
    are read from shared prefixes (:func:`~lostmid.behaviour.decoding.shared.shared_scores`)."""
    prompts = [encoded.prompts[i] for i in members]
    targets = [encoded.targets[i] for i in members]
    limits = {"max_length": loaded.max_length, "vocab_size": loaded.vocab_size}
    teacher: TeacherScores | None = None
    generated: list[list[int]] | None = None
    # the moved design from one prefill per prompt (its last token read from the cache,
    # exact as --design shared is): with both passes half the compute of two; also for
    # one pass where padded batches do not pay (a CPU)
    one_prefill = (
        not shared
        and (len(passes) == 2 or not padded_batches_pay(loaded.input_device))
        and config.device_map is None
        and all(len(p) > 1 for p in prompts)
    )
    if shared or one_prefill:
        from lostmid.behaviour.decoding.shared import shared_scores

        if shared:
            assert encoded.contexts is not None and encoded.questions is not None
            contexts = [encoded.contexts[i] for i in members]
            questions = [encoded.questions[i] for i in members]
        else:
            contexts, questions = [p[:-1] for p in prompts], [p[-1:] for p in prompts]
        check_vocab(prompts, targets, loaded.vocab_size)
        teacher, generated = shared_scores(
            loaded.model,
            loaded.adapter,
            contexts,
            questions,
            targets,
            teacher="teacher" in passes,
            new_tokens=new_tokens if "generate" in passes else None,
            batch_size=config.batch_size,
            device=loaded.input_device,
            progress=progress,
            reading=reading,
        )
    else:
        if "generate" in passes:
            generated = greedy_decode(
                loaded.model,
                prompts,
                new_tokens,
                batch_size=config.batch_size,
                device=loaded.input_device,
                progress=progress,
                **limits,
            )
        if "teacher" in passes:
            teacher = teacher_forced(
                loaded.model,
                prompts,
                targets,
                batch_size=config.batch_size,
                padding=config.padding,
                device=loaded.input_device,
                progress=None if "generate" in passes else progress,
                **limits,
            )
    rows = []
    for j in range(len(members)):
        row: dict[str, Any] = {}
        if generated is not None:
            row["ids"] = [int(t) for t in generated[j]]
        if teacher is not None:
            row["logprob"] = float(teacher.logprob[j])
            row["teacher_correct"] = bool(teacher.argmax[j])
        rows.append(row)
    return rows


def check_vocab(prompts: list[list[int]], targets: list[list[int]], vocab: int) -> None:
    top = max(max(max(p), max(t)) for p, t in zip(prompts, targets, strict=True))
    if top >= vocab:
        raise UserError(
            f"token id {top} is outside the model's vocabulary (size {vocab}); "
            "the tokenizer (or --vocab for mqar) does not match the model"
        )


# -- results ------------------------------------------------------------------------------


def prediction_rows(
    examples: Sequence[RetrievalExample],
    raw: Sequence[dict[str, Any]],
    tokens: Sequence[int],
    tokenizer: Tokenizer | None,
    rule: str,
    passes: Sequence[str],
) -> list[dict[str, Any]]:
    eos = None if tokenizer is None else tokenizer.eos_id
    out = []
    for ex, r, n in zip(examples, raw, tokens, strict=True):
        row: dict[str, Any] = {
            "item": ex.item,
            "position": ex.position,
            "gold_index": ex.gold_index,
            "depth": ex.depth,
            "depth_pct": ex.depth_pct,
            "length": ex.length,
            "pairs": ex.pairs,
            "tokens": n,
            "key": ex.key,
            "value": ex.value,
        }
        if "generate" in passes:
            ids = r["ids"]
            if ex.target_ids is not None:
                row["answer"] = " ".join(str(t) for t in ids)
                row["generate_correct"] = contains_ids(ex.target_ids, ids)
            else:
                assert tokenizer is not None
                text = tokenizer.decode(cut_at_eos(ids, eos))
                row["answer"] = text
                row["generate_correct"] = answer_correct(rule, text, ex.references, ex.match)
        if "teacher" in passes:
            row["logprob"] = r["logprob"]
            row["teacher_correct"] = r["teacher_correct"]
        if ex.needles is not None:  # a designed needle prompt: where its needles sat
            placed = ex.needles
            row.update(
                arrangement=placed.arrangement,
                rank=placed.rank,
                gold_rank=placed.gold + 1,
                needles=list(placed.values),
                gap_min=min(placed.gaps),
                gold_depth=placed.gold_depth,
            )
            if "generate" in passes:
                row["named"] = named_needle(row["answer"], row["generate_correct"], placed)
        out.append(row)
    return out
